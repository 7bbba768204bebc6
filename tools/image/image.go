package main

import (
	"archive/tar"
	"debug/elf"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// staticArch reads the binary's ELF header: its architecture as OCI names
// it, or an error when the binary is not a statically linked Linux
// executable. An image from an empty base has no dynamic loader and no libc,
// so a dynamically linked binary (a cgo build, CGO_ENABLED=1) would fail to
// start in it with "no such file or directory".
func staticArch(binary string) (string, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return "", fmt.Errorf("read %s as an ELF executable: %w", binary, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s is dynamically linked (it names a program interpreter): an image from an empty base has no loader or libc; build it with CGO_ENABLED=0 (ocb's default)", binary)
		}
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "", fmt.Errorf("%s is not an executable (ELF type %s)", binary, f.Type)
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	case elf.EM_PPC64:
		return "ppc64le", nil
	case elf.EM_S390:
		return "s390x", nil
	}
	return "", fmt.Errorf("%s: ELF machine %s has no OCI architecture name here", binary, f.Machine)
}

// image is the one-layer image of s with binary (for linux/arch) on an
// empty base, with OCI media types; the layer's tar is written under dir.
func image(s spec, binary, arch, dir string) (v1.Image, error) {
	layerTar := filepath.Join(dir, "layer.tar")
	if err := writeLayer(s, binary, layerTar); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromFile(layerTar, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "tools/image: the collector, its ready configurations, /tmp", Comment: "make image"},
	})
	if err != nil {
		return nil, fmt.Errorf("append the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: s.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{inImage},
		Cmd:        []string{"--config", "/etc/otelcol/config.yaml"}, // where deploy/ mounts its ConfigMap
		User:       s.User,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "otelcol-k8sevents",
			"org.opencontainers.image.description": "OpenTelemetry Collector distribution with the k8sevents receiver, eventseries processor and k8sevents exporter",
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	return img, nil
}

// entry is one file of the layer.
type entry struct {
	name string // in the image, without the leading slash
	src  string // host file; "" for a directory
	mode int64
}

// writeLayer writes the layer's tar: root-owned files with fixed times, so
// that the same inputs make the same layer digest.
func writeLayer(s spec, binary, out string) error {
	entries := []entry{
		{name: "tmp/", mode: 0o1777},
		{name: strings.TrimPrefix(inImage, "/"), src: binary, mode: 0o755},
	}
	dirs := map[string]bool{}
	addDirs := func(p string) {
		var parts []string
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			parts = append([]string{d}, parts...)
		}
		for _, d := range parts {
			if !dirs[d] {
				dirs[d] = true
				entries = append(entries, entry{name: d + "/", mode: 0o755})
			}
		}
	}
	for _, c := range s.Configs {
		name := strings.TrimPrefix(path.Join(s.ConfigDir, filepath.Base(c)), "/")
		addDirs(name)
		entries = append(entries, entry{name: name, src: c, mode: 0o644})
	}
	if s.CABundle != "" {
		name := "etc/ssl/certs/ca-certificates.crt"
		addDirs(name)
		entries = append(entries, entry{name: name, src: s.CABundle, mode: 0o644})
	}
	return writeTar(out, func(tw *tar.Writer) error {
		for _, e := range entries {
			if err := writeEntry(tw, e, s); err != nil {
				return fmt.Errorf("layer: %s: %w", e.name, err)
			}
		}
		return nil
	})
}

func writeEntry(tw *tar.Writer, e entry, s spec) error {
	h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: s.Created, Format: tar.FormatPAX, Typeflag: tar.TypeDir}
	if e.src == "" {
		return tw.WriteHeader(h)
	}
	return copyFile(tw, h, e.src)
}
