// Command run shares API servers between the tests of a command (kubepool):
//
//	go run ./internal/harness/kubepool/run -servers 6 -- make test-e2e test-race
//
// It exits with the command's exit code.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubepool"
)

func main() {
	servers := flag.Int("servers", 4, "API servers to share")
	flag.Parse()
	dir, err := os.MkdirTemp("", "kubepool-")
	if err == nil {
		err = kubepool.Run(dir, *servers, flag.Args())
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
