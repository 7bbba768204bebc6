package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
)

// imageTar is what make image writes (tools/image).
const imageTar = "bin/otelcol-k8sevents-image.tar"

// ociDescriptor, ociIndex, ociManifest and ociConfig are the parts of the
// OCI image spec the test reads.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	MediaType string          `json:"mediaType"`
	Config    ociDescriptor   `json:"config"`
	Layers    []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
		User       string   `json:"User"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// TestImage unpacks the image make image wrote with plain tar and JSON, as
// a loader would: every blob is the content its digest names; index.json
// names one image index, tagged, holding this machine's platform's image
// (make test builds that one alone; tools/image's tests check an index of
// two platforms) and each image's SBOM (checkImageSBOM); the OCI layout
// and the docker-archive manifest name the same config and layer, the
// config runs the binary as a non-root user, and the binary taken out of
// the layer is static and validates every ready configuration shipped next
// to it in the image.
func TestImage(t *testing.T) {
	parallel(t)
	root, err := childproc.ModuleRoot()
	require.NoError(t, err)
	tarPath := filepath.Join(root, imageTar)
	if _, err := os.Stat(tarPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (make image writes it)", err)
		}
		t.Skipf("%v (make image writes it)", err)
	}
	files := readTar(t, tarPath)

	assert.JSONEq(t, `{"imageLayoutVersion":"1.0.0"}`, string(files["oci-layout"]))
	var top ociIndex
	require.NoError(t, json.Unmarshal(files["index.json"], &top))
	require.Len(t, top.Manifests, 1)
	assert.Equal(t, "application/vnd.oci.image.index.v1+json", top.Manifests[0].MediaType, "a multi-platform image index")
	assert.Equal(t, "0.1.0", top.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	var idx ociIndex
	require.NoError(t, json.Unmarshal(blob(t, files, top.Manifests[0]), &idx))
	var host *ociDescriptor
	images, sboms := map[string]bool{}, map[string]ociDescriptor{}
	for i, d := range idx.Manifests {
		require.NotNil(t, d.Platform, "index entry %d names no platform", i)
		if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
			assert.Equal(t, "unknown/unknown", d.Platform.OS+"/"+d.Platform.Architecture, "an attestation manifest's platform")
			sboms[d.Annotations["vnd.docker.reference.digest"]] = d
			continue
		}
		assert.Equal(t, "linux", d.Platform.OS)
		assert.Contains(t, []string{"amd64", "arm64"}, d.Platform.Architecture)
		images[d.Digest] = true
		if d.Platform.Architecture == runtime.GOARCH {
			host = &idx.Manifests[i]
		}
	}
	require.NotNil(t, host, "no linux/%s image in the index", runtime.GOARCH)
	for d := range images {
		assert.Contains(t, sboms, d, "the SBOM of image %s", d)
	}
	assert.Len(t, sboms, len(images), "one SBOM per image, none of another")
	var m ociManifest
	require.NoError(t, json.Unmarshal(blob(t, files, *host), &m))
	assert.Equal(t, "application/vnd.oci.image.manifest.v1+json", m.MediaType)
	require.Len(t, m.Layers, 1, "one layer on an empty base")
	var cfg ociConfig
	require.NoError(t, json.Unmarshal(blob(t, files, m.Config), &cfg))
	assert.Equal(t, "linux", cfg.OS)
	assert.Equal(t, runtime.GOARCH, cfg.Architecture)
	assert.Equal(t, []string{"/otelcol-k8sevents"}, cfg.Config.Entrypoint)
	assert.Equal(t, []string{"--config", "/etc/otelcol/config.yaml"}, cfg.Config.Cmd, "where deploy/ mounts its ConfigMap")
	assert.Equal(t, "65532:65532", cfg.Config.User)
	assert.NotRegexp(t, `^(0|root)?(:|$)`, cfg.Config.User, "not root")

	// docker load reads manifest.json: the same blobs, tagged.
	var docker []struct{ Config, RepoTags, Layers any }
	require.NoError(t, json.Unmarshal(files["manifest.json"], &docker))
	require.Len(t, docker, 1)
	assert.Equal(t, "blobs/sha256/"+strings.TrimPrefix(m.Config.Digest, "sha256:"), docker[0].Config)
	assert.Equal(t, []any{"blobs/sha256/" + strings.TrimPrefix(m.Layers[0].Digest, "sha256:")}, docker[0].Layers)
	assert.Equal(t, []any{"otelcol-k8sevents:0.1.0"}, docker[0].RepoTags)

	layer := blob(t, files, m.Layers[0])
	assert.Equal(t, "application/vnd.oci.image.layer.v1.tar+gzip", m.Layers[0].MediaType)
	dir := t.TempDir()
	diffID := unpackLayer(t, layer, dir)
	assert.Equal(t, []string{diffID}, cfg.RootFS.DiffIDs, "the config's diff_id is the uncompressed layer's digest")

	bin := filepath.Join(dir, "otelcol-k8sevents")
	assertStatic(t, bin)
	checkImageSBOM(t, files, sboms[host.Digest], host.Digest, bin)
	configs, err := filepath.Glob(filepath.Join(dir, "etc/otelcol-k8sevents/*.yaml"))
	require.NoError(t, err)
	ready, err := filepath.Glob(filepath.Join(root, "testdata/config/*.yaml"))
	require.NoError(t, err)
	require.Len(t, configs, len(ready), "every ready configuration is in the image")
	for _, c := range configs {
		t.Run(filepath.Base(c), func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(root, "testdata/config", filepath.Base(c)))
			require.NoError(t, err)
			got, err := os.ReadFile(c)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "the image's copy is the ready configuration")
			out, err := exec.Command(bin, "validate", "--config", c).CombinedOutput()
			assert.NoError(t, err, "%s", out)
		})
	}
}

// readTar reads every regular file of the image tar into memory (the
// compressed layer is a few tens of MB).
func readTar(t *testing.T, p string) map[string][]byte {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			out[path.Clean(h.Name)] = b
		}
	}
}

// blob returns the blob a descriptor names, checking its size and digest.
func blob(t *testing.T, files map[string][]byte, d ociDescriptor) []byte {
	t.Helper()
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	require.True(t, ok, "digest %q", d.Digest)
	b, ok := files["blobs/sha256/"+hexDigest]
	require.True(t, ok, "blob %s missing", d.Digest)
	sum := sha256.Sum256(b)
	require.Equal(t, hexDigest, hex.EncodeToString(sum[:]), "blob content does not match its digest")
	require.Equal(t, d.Size, int64(len(b)))
	return b
}

// unpackLayer writes the layer's regular files under dir (modes kept) and
// returns the uncompressed layer's digest.
func unpackLayer(t *testing.T, layer []byte, dir string) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	require.NoError(t, err)
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(zr, h))
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		name := path.Clean(hd.Name)
		require.False(t, strings.HasPrefix(name, "..") || path.IsAbs(name), "unsafe path %q", hd.Name)
		assert.Zero(t, hd.Uid, "%s: owned by root, not writable by the image's user", name)
		switch hd.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		case tar.TypeReg:
			p := filepath.Join(dir, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hd.Mode).Perm())
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		default:
			t.Errorf("%s: unexpected entry type %c", name, hd.Typeflag)
		}
	}
	_, err = io.Copy(h, zr) // the tar's end padding
	require.NoError(t, err)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// assertStatic checks that the binary needs no loader or libc: the image's
// base is empty.
func assertStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "dynamically linked: it cannot start in an image from an empty base")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	assert.Empty(t, libs)
}
