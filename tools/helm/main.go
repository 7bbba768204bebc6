// Command helm renders deploy/ from the Helm chart deploy/helm/otel-k8sevents
// with deploy/helm/deploy-values.yaml (make deploy): the plain manifests and
// the chart are one source.
//
// deploy-values.yaml names the image by a placeholder digest that no image
// has. With -image and -digest (make deploy IMAGE=... DIGEST=...) the
// workloads run that pushed image instead, pinned by its digest.
//
// Usage: go run . [-image registry/repository[:tag] -digest sha256:...] <repository root>
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var pin pinnedImage
	flag.StringVar(&pin.ref, "image", "", "the pushed image, registry/repository[:tag] (what make push-image took); with -digest")
	flag.StringVar(&pin.digest, "digest", "", "its digest, sha256:<64 hex> (what make push-image printed); with -image")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: helm [-image registry/repository[:tag] -digest sha256:...] <repository root>")
		os.Exit(2)
	}
	quietSymlinks()
	var p *pinnedImage
	if pin.ref != "" || pin.digest != "" {
		p = &pin
	}
	root := flag.Arg(0)
	files, err := deployManifests(root, p)
	if err == nil {
		err = writeDeploy(root, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
	fmt.Printf("deploy: wrote %d files of deploy/ from the chart\n", len(files))
}
