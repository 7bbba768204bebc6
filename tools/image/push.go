package main

import (
	"archive/tar"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushMain is `image push`: it pushes the index of an image tar as built
// (every platform's image and SBOM) and prints the digest the registry
// serves under the tag, alone on standard output, to pin the image by.
func pushMain(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	in := fs.String("in", "bin/otelcol-k8sevents-image.tar", "the image tar make image wrote")
	image := fs.String("image", "", "where to push it: registry/repository:tag (required)")
	insecure := fs.Bool("insecure", false, "allow plain HTTP to the registry (localhost and 127.0.0.1 always may)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("push: unexpected arguments %q", fs.Args())
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.NewTag(*image, opts...)
	if *image == "" || err != nil {
		return fmt.Errorf("push: -image %q: want registry/repository:tag: %v", *image, err)
	}
	digest, err := push(context.Background(), *in, ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "image: pushed %s as %s\n", *in, ref.Context().Digest(digest))
	fmt.Println(digest)
	return nil
}

// push writes the image index of the tar in to ref, then asks the
// registry which digest it serves under ref's tag: the index's digest,
// unchanged by the push, or an error. The OCI layout is pushed as built
// (OCI media types): not the tar's docker-archive side, which would make
// another manifest with another digest.
func push(ctx context.Context, in string, ref name.Tag, opts ...remote.Option) (string, error) {
	dir, err := os.MkdirTemp("", "image-push-")
	if err != nil {
		return "", fmt.Errorf("push: temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := untar(in, dir); err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	layoutIdx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return "", fmt.Errorf("push: %s is not an OCI layout: %w", in, err)
	}
	m, err := layoutIdx.IndexManifest()
	if err != nil {
		return "", fmt.Errorf("push: %s: %w", in, err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return "", fmt.Errorf("push: %s: want one image index in index.json (make image writes one), have %d entries", in, len(m.Manifests))
	}
	want := m.Manifests[0].Digest
	idx, err := layoutIdx.ImageIndex(want)
	if err != nil {
		return "", fmt.Errorf("push: %s: %w", in, err)
	}
	opts = append(opts, remote.WithContext(ctx))
	if err := remote.WriteIndex(ref, idx, opts...); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		return "", fmt.Errorf("push %s: read it back: %w", ref, err)
	}
	if desc.Digest != want {
		return "", fmt.Errorf("push %s: the registry serves %s under the tag, not the pushed index %s", ref, desc.Digest, want)
	}
	return want.String(), nil
}

// untar unpacks the regular files of the tar at p into dir (what make
// image writes has no other kind); a path leaving dir is refused.
func untar(p, dir string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(dst, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("%s: unsafe path %q", p, h.Name)
		}
		if err := writeFile(dst, tr); err != nil {
			return fmt.Errorf("%s: %s: %w", p, h.Name, err)
		}
	}
}

func writeFile(dst string, r io.Reader) (err error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	w, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	_, err = io.Copy(w, r)
	return err
}
