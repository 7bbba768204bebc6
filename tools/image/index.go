package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// built is what build wrote: the index's digest and, per platform in the
// order of the binaries, its image's and its SBOM's manifest digests.
type built struct {
	Index     v1.Hash
	Platforms []builtPlatform
}

type builtPlatform struct {
	Platform string // os/architecture
	Manifest v1.Hash
	SBOM     v1.Hash // the attestation manifest
}

// build writes the image index of s to out (through a temporary file, so
// that a failed run leaves no image behind): an image per binary, each
// followed in the index by its SBOM's attestation manifest.
func build(s spec, out string) (built, error) {
	if len(s.Binaries) == 0 {
		return built{}, fmt.Errorf("no binary")
	}
	ref, err := name.NewTag(s.Tag)
	if err != nil {
		return built{}, fmt.Errorf("-tag %q: %w", s.Tag, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".image-")
	if err != nil {
		return built{}, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	var b built
	var images, sboms []mutate.IndexAddendum
	var first v1.Image
	for i, binary := range s.Binaries {
		arch, err := staticArch(binary)
		if err != nil {
			return built{}, err
		}
		platform := v1.Platform{OS: "linux", Architecture: arch}
		for _, p := range b.Platforms {
			if p.Platform == platform.String() {
				return built{}, fmt.Errorf("%s: a second binary for %s", binary, p.Platform)
			}
		}
		dir := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return built{}, fmt.Errorf("temp dir: %w", err)
		}
		img, err := image(s, binary, arch, dir)
		if err != nil {
			return built{}, err
		}
		digest, err := img.Digest()
		if err != nil {
			return built{}, fmt.Errorf("%s: image digest: %w", platform, err)
		}
		att, err := sbomAttestation(s, ref, binary, platform, digest)
		if err != nil {
			return built{}, err
		}
		attDigest, err := att.Digest()
		if err != nil {
			return built{}, fmt.Errorf("%s: SBOM digest: %w", platform, err)
		}
		images = append(images, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
		sboms = append(sboms, mutate.IndexAddendum{Add: att, Descriptor: attestationDescriptor(digest)})
		b.Platforms = append(b.Platforms, builtPlatform{Platform: platform.String(), Manifest: digest, SBOM: attDigest})
		if first == nil {
			first = img
		}
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), append(images, sboms...)...)
	if b.Index, err = idx.Digest(); err != nil {
		return built{}, fmt.Errorf("index digest: %w", err)
	}
	part := filepath.Join(tmp, "image.tar")
	if err := writeArchive(idx, first, ref, filepath.Join(tmp, "layout"), part); err != nil {
		return built{}, err
	}
	if err := os.Rename(part, out); err != nil {
		return built{}, fmt.Errorf("move the image to %s: %w", out, err)
	}
	return b, nil
}
