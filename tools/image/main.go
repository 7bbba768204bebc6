// Command image writes the collector distribution as a multi-platform OCI
// image, without a container daemon, and pushes it.
//
// Each -binary (one per platform, its architecture read from its ELF
// header) becomes one image: one layer on an empty base with the static
// binary, the ready configurations and an empty /tmp; entrypoint the
// binary, a non-root user. Next to each image goes its SBOM: an SPDX 2.3
// JSON document made from the binary's Go build information, in an in-toto
// statement in an attestation manifest, as docker buildx attaches SBOMs.
// An OCI image index names them all. The output is one tar file that is
// both an OCI image layout (oci-layout, index.json, blobs/) and a
// docker-archive of the first -binary's image (manifest.json naming the
// same blobs), so docker load, podman load, skopeo and crane read it.
//
// Usage (make image, make push-image):
//
//	go run . -binary ../../bin/otelcol-k8sevents -binary ../../bin/linux-arm64/otelcol-k8sevents \
//	    -configs ../../testdata/config -tag otelcol-k8sevents:0.1.0 -out ../../bin/otelcol-k8sevents-image.tar
//	go run . push -in ../../bin/otelcol-k8sevents-image.tar -image REGISTRY/otelcol-k8sevents:0.1.0
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// spec is what goes into the image.
type spec struct {
	Binaries  []string // the collector, one per platform, host paths
	Configs   []string // ready configurations, host paths
	CABundle  string   // a CA bundle to ship as /etc/ssl/certs/ca-certificates.crt; "" for none
	Tag       string   // repository:tag the loaders name the image; its tag is the version
	User      string   // uid:gid
	ConfigDir string   // where the configurations go in the image
	Created   time.Time
}

// inImage is where the binary goes in the image.
const inImage = "/otelcol-k8sevents"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "push" {
		if err := pushMain(os.Args[2:]); err != nil {
			fail(err)
		}
		return
	}
	var s spec
	var configs, out, created string
	flag.Func("binary", "the collector binary for one platform (static: the base is empty); repeat for each platform, the first one is docker load's", func(v string) error {
		s.Binaries = append(s.Binaries, v)
		return nil
	})
	flag.StringVar(&configs, "configs", "testdata/config", "directory whose *.yaml go into the image under -config-dir")
	flag.StringVar(&s.ConfigDir, "config-dir", "/etc/otelcol-k8sevents", "where the configurations go in the image")
	flag.StringVar(&s.CABundle, "ca-bundle", "", "a CA bundle to ship as /etc/ssl/certs/ca-certificates.crt (empty: none; the empty base has no CA certificates)")
	flag.StringVar(&s.Tag, "tag", "otelcol-k8sevents:0.1.0", "the name docker load and podman load give the image; its tag is the version the SBOM states")
	flag.StringVar(&s.User, "user", "65532:65532", "uid:gid the container runs as (not root)")
	flag.StringVar(&created, "created", "1970-01-01T00:00:00Z", "the image's creation time (fixed, so that the same binaries make the same image)")
	flag.StringVar(&out, "out", "bin/otelcol-k8sevents-image.tar", "the image tar to write")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	if len(s.Binaries) == 0 {
		s.Binaries = []string{"bin/otelcol-k8sevents"}
	}
	var err error
	if s.Created, err = time.Parse(time.RFC3339, created); err != nil {
		fail(fmt.Errorf("-created: %w", err))
	}
	if s.Configs, err = filepath.Glob(filepath.Join(configs, "*.yaml")); err != nil {
		fail(fmt.Errorf("-configs: %w", err))
	}
	if len(s.Configs) == 0 {
		fail(fmt.Errorf("-configs %s: no *.yaml there", configs))
	}
	b, err := build(s, out)
	if err != nil {
		fail(err)
	}
	fmt.Printf("image: wrote %s (%s, index %s)\n", out, s.Tag, b.Index)
	for _, p := range b.Platforms {
		fmt.Printf("image:   %s manifest %s, SBOM %s\n", p.Platform, p.Manifest, p.SBOM)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}
