package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeArchive writes idx as an OCI image layout in layoutDir, adds the
// docker-archive manifest.json naming docker's image (one of idx's) by the
// same blobs, and tars the whole into out. The layout's index names idx by
// its tag (the annotations podman and containerd read); manifest.json
// gives docker load its RepoTags.
func writeArchive(idx v1.ImageIndex, docker v1.Image, ref name.Tag, layoutDir, out string) error {
	p, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.String(),
	})); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	dm, err := dockerManifest(docker, ref)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(layoutDir, "manifest.json"), dm, 0o644); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	return tarDir(layoutDir, out)
}

// dockerManifest is docker-archive's manifest.json for img, its blobs
// where the OCI layout keeps them.
func dockerManifest(img v1.Image, ref name.Tag) ([]byte, error) {
	cfg, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	d := tarball.Descriptor{Config: blobPath(cfg), RepoTags: []string{ref.String()}}
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return nil, fmt.Errorf("manifest.json: %w", err)
		}
		d.Layers = append(d.Layers, blobPath(h))
	}
	return json.Marshal(tarball.Manifest{d})
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// tarDir writes the regular files under dir into out, sorted by path.
func tarDir(dir, out string) error {
	var files []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	}); err != nil {
		return fmt.Errorf("read the layout: %w", err)
	}
	sort.Strings(files)
	return writeTar(out, func(tw *tar.Writer) error {
		for _, p := range files {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			if err := copyFile(tw, &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Format: tar.FormatPAX}, p); err != nil {
				return fmt.Errorf("image tar: %s: %w", rel, err)
			}
		}
		return nil
	})
}

// writeTar creates out and writes a tar into it with fill.
func writeTar(out string, fill func(*tar.Writer) error) (err error) {
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	tw := tar.NewWriter(f)
	if err := fill(tw); err != nil {
		return err
	}
	return tw.Close()
}

// copyFile writes the regular file src into the tar under the header h
// (its name, mode and time), with src's size.
func copyFile(tw *tar.Writer, h *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("changed while read (%d of %d bytes)", n, fi.Size())
	}
	return err
}
