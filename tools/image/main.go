// Command image writes the collector distribution as an OCI image, without
// a container daemon: one layer on an empty base with the static binary, the
// ready configurations and an empty /tmp; entrypoint the binary, a non-root
// user. The output is one tar file that is both an OCI image layout
// (oci-layout, index.json, blobs/) and a docker-archive (manifest.json
// naming the same blobs), so docker load, podman load and crane push read it.
//
// Usage (make image):
//
//	go run . -binary ../../bin/otelcol-k8sevents -configs ../../testdata/config -out ../../bin/otelcol-k8sevents-image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// spec is what goes into the image.
type spec struct {
	Binary    string   // the collector, host path
	Configs   []string // ready configurations, host paths
	CABundle  string   // a CA bundle to ship as /etc/ssl/certs/ca-certificates.crt; "" for none
	Tag       string   // repository:tag the loaders name the image
	User      string   // uid:gid
	ConfigDir string   // where the configurations go in the image
	Created   time.Time
}

// inImage is where the binary goes in the image.
const inImage = "/otelcol-k8sevents"

func main() {
	var s spec
	var configs, out, created string
	flag.StringVar(&s.Binary, "binary", "bin/otelcol-k8sevents", "the collector binary (static: the base is empty)")
	flag.StringVar(&configs, "configs", "testdata/config", "directory whose *.yaml go into the image under -config-dir")
	flag.StringVar(&s.ConfigDir, "config-dir", "/etc/otelcol-k8sevents", "where the configurations go in the image")
	flag.StringVar(&s.CABundle, "ca-bundle", "", "a CA bundle to ship as /etc/ssl/certs/ca-certificates.crt (empty: none; the empty base has no CA certificates)")
	flag.StringVar(&s.Tag, "tag", "otelcol-k8sevents:0.1.0", "the name docker load and podman load give the image")
	flag.StringVar(&s.User, "user", "65532:65532", "uid:gid the container runs as (not root)")
	flag.StringVar(&created, "created", "1970-01-01T00:00:00Z", "the image's creation time (fixed, so that the same binary makes the same image)")
	flag.StringVar(&out, "out", "bin/otelcol-k8sevents-image.tar", "the image tar to write")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
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
	digest, err := build(s, out)
	if err != nil {
		fail(err)
	}
	fmt.Printf("image: wrote %s (%s, manifest %s)\n", out, s.Tag, digest)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}

// build writes the image of s to out (through a temporary file, so that a
// failed run leaves no image behind) and returns its manifest digest.
func build(s spec, out string) (v1.Hash, error) {
	arch, err := staticArch(s.Binary)
	if err != nil {
		return v1.Hash{}, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".image-")
	if err != nil {
		return v1.Hash{}, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	img, err := image(s, arch, tmp)
	if err != nil {
		return v1.Hash{}, err
	}
	part := filepath.Join(tmp, "image.tar")
	if err := writeArchive(img, s.Tag, filepath.Join(tmp, "layout"), part); err != nil {
		return v1.Hash{}, err
	}
	if err := os.Rename(part, out); err != nil {
		return v1.Hash{}, fmt.Errorf("move the image to %s: %w", out, err)
	}
	return img.Digest()
}
