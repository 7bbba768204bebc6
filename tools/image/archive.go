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

// writeArchive writes img as an OCI image layout in layoutDir, adds the
// docker-archive manifest.json naming the same blobs, and tars the whole
// into out. The layout's index names the image by its tag (the annotations
// podman and containerd read); manifest.json gives docker load its RepoTags.
func writeArchive(img v1.Image, tag, layoutDir, out string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %w", tag, err)
	}
	p, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.String(),
	})); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	dm, err := dockerManifest(img, ref)
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
func tarDir(dir, out string) (err error) {
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
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("image tar: %w", err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	tw := tar.NewWriter(f)
	for _, p := range files {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if err := addFile(tw, p, filepath.ToSlash(rel)); err != nil {
			return fmt.Errorf("image tar: %s: %w", rel, err)
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, p, name string) error {
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: fi.Size(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}
