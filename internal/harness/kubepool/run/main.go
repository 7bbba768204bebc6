// Command run shares API servers between the tests of a command (kubepool):
//
//	go run ./internal/harness/kubepool/run -servers 6 -server-with-flags --watch-cache=false -- make test-race
//
// It exits with the command's exit code.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubepool"
)

// withFlags collects -server-with-flags: one server each, started with the
// value's space-separated API server flags.
type withFlags [][]string

func (w *withFlags) String() string { return fmt.Sprint(*w) }

func (w *withFlags) Set(v string) error {
	*w = append(*w, strings.Fields(v))
	return nil
}

func main() {
	servers := flag.Int("servers", 4, "API servers to share, with kubelocal's flags")
	var flagged withFlags
	flag.Var(&flagged, "server-with-flags", "one more server, started with these API server flags (space-separated); repeatable")
	flag.Parse()
	dir, err := os.MkdirTemp("", "kubepool-")
	if err == nil {
		// The flagged servers start first: each is the only one its tests
		// can lease, and a test that finds it not ready yet starts its own.
		err = kubepool.Run(dir, append(flagged, make([][]string, *servers)...), flag.Args())
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
