// Command helm renders deploy/ from the Helm chart deploy/helm/otel-k8sevents
// with deploy/helm/deploy-values.yaml (make deploy): the plain manifests and
// the chart are one source.
//
// Usage: go run . <repository root>
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: helm <repository root>")
		os.Exit(2)
	}
	quietSymlinks()
	files, err := deployManifests(os.Args[1])
	if err == nil {
		err = writeDeploy(os.Args[1], files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
	fmt.Printf("deploy: wrote %d files of deploy/ from the chart\n", len(files))
}
