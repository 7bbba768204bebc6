package main

import (
	"archive/tar"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// staticHello builds a tiny static binary for linux/goarch to put in a
// test image: a cross-compile of it costs seconds, of the distribution
// minutes.
func staticHello(t *testing.T, goarch string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello-"+goarch)
	// -trimpath and CGO_ENABLED=0, as the distribution: from empty caches
	// the standard library it needs is then compiled already.
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, "GOWORK=off", "GOFLAGS=")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build a static binary for %s: %v\n%s", goarch, err, out)
	}
	return bin
}

func testSpec(t *testing.T, binaries ...string) spec {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "ready.yaml")
	if err := os.WriteFile(cfg, []byte("receivers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return spec{Binaries: binaries, Configs: []string{cfg}, Tag: "otelcol-k8sevents:0.1.0", User: "65532:65532",
		ConfigDir: "/etc/otelcol-k8sevents", Created: time.Unix(0, 0).UTC()}
}

// TestImageIndexReadsBackAndPushes: from an amd64 and an arm64 binary, the
// tar reads back with go-containerregistry's own readers as an OCI layout
// holding one valid index: an image per platform, in the binaries' order,
// each with the right architecture and files, and an SBOM attestation per
// image naming it (checkSBOM); as a docker-archive, the first binary's
// image; the same inputs make the same digest; and make push-image's push
// delivers the whole index to a registry on loopback, whose tag then
// serves the built digest and each platform's image.
func TestImageIndexReadsBackAndPushes(t *testing.T) {
	s := testSpec(t, staticHello(t, "amd64"), staticHello(t, "arm64"))
	dir := t.TempDir()
	s.CABundle = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(s.CABundle, []byte("not checked\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	b, err := build(s, out)
	if err != nil {
		t.Fatal(err)
	}
	again, err := build(s, filepath.Join(dir, "again.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Index != b.Index {
		t.Errorf("the same inputs made %s, then %s", b.Index, again.Index)
	}

	layoutDir := t.TempDir()
	if err := untar(out, layoutDir); err != nil {
		t.Fatal(err)
	}
	root, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Manifests) != 1 || rm.Manifests[0].Digest != b.Index || rm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "0.1.0" {
		t.Fatalf("index.json: %+v, want the index %s tagged 0.1.0", rm.Manifests, b.Index)
	}
	idx, err := root.ImageIndex(b.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Errorf("index: %v", err)
	}
	checkIndex(t, idx, s, b)

	fromArchive, err := crane.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(fromArchive); err != nil {
		t.Errorf("docker-archive: %v", err)
	}
	first, err := idx.Image(b.Platforms[0].Manifest)
	if err != nil {
		t.Fatal(err)
	}
	firstCfg, _ := first.ConfigName()
	archiveCfg, _ := fromArchive.ConfigName()
	if archiveCfg != firstCfg {
		t.Errorf("docker-archive: config %s, want the first binary's image's %s", archiveCfg, firstCfg)
	}

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref, err := name.NewTag(strings.TrimPrefix(reg.URL, "http://") + "/otelcol-k8sevents:0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	digest, err := push(t.Context(), out, ref)
	if err != nil {
		t.Fatal(err)
	}
	if digest != b.Index.String() {
		t.Errorf("push answered %s, want the built index %s", digest, b.Index)
	}
	pushed, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, pushed, s, b)
	arm, err := remote.Image(ref, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "arm64"}))
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, "pulled linux/arm64", arm, "arm64")
}

// checkIndex checks an index build wrote for s: per binary an image
// for its platform (valid, its config and files) and its SBOM, nothing
// else.
func checkIndex(t *testing.T, idx v1.ImageIndex, s spec, b built) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2*len(s.Binaries) {
		t.Fatalf("%d manifests in the index, want an image and an SBOM per binary (%d)", len(im.Manifests), len(s.Binaries))
	}
	for i, p := range b.Platforms {
		d := im.Manifests[i]
		if d.Platform == nil || d.Platform.String() != p.Platform || d.Digest != p.Manifest {
			t.Errorf("manifest %d: %s for %v, want %s for %s", i, d.Digest, d.Platform, p.Manifest, p.Platform)
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("%s: %v", p.Platform, err)
		}
		checkConfig(t, p.Platform, img, d.Platform.Architecture)
		wantFiles := map[string]int64{"otelcol-k8sevents": 0o755, "etc/otelcol-k8sevents/ready.yaml": 0o644,
			"etc/ssl/certs/ca-certificates.crt": 0o644, "tmp": 0o1777}
		if got := files(t, img); !maps.Equal(got, wantFiles) {
			t.Errorf("%s: layer files %v, want %v", p.Platform, got, wantFiles)
		}
		checkSBOM(t, idx, im.Manifests[len(b.Platforms)+i], s.Binaries[i], p)
	}
}

func checkConfig(t *testing.T, name string, img v1.Image, arch string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != inImage {
		t.Errorf("%s: entrypoint %q", name, got)
	}
	if cf.Config.User != "65532:65532" || cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("%s: user %q, os %q, architecture %q, want 65532:65532, linux, %s", name, cf.Config.User, cf.OS, cf.Architecture, arch)
	}
}

// files lists the image's files and directories (but not the parents
// made for them) with their modes.
func files(t *testing.T, img v1.Image) map[string]int64 {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: owned by %d:%d, want root", h.Name, h.Uid, h.Gid)
		}
		if name := strings.TrimSuffix(h.Name, "/"); h.Typeflag == tar.TypeReg || name == "tmp" {
			out[name] = h.Mode
		}
	}
}

// A dynamically linked binary is refused: it cannot start on an empty
// base; and so is a second binary for a platform the index has already.
func TestBinariesRefused(t *testing.T) {
	hello := staticHello(t, "amd64")
	for _, c := range []struct {
		binaries []string
		want     string
	}{
		{[]string{hello, "/bin/sh"}, "dynamically linked"},
		{[]string{hello, hello}, "a second binary for linux/amd64"},
	} {
		if _, err := staticArch(c.binaries[1]); err == nil && c.binaries[1] == "/bin/sh" {
			t.Log("/bin/sh is static here")
			continue
		}
		out := filepath.Join(t.TempDir(), "image.tar")
		_, err := build(testSpec(t, c.binaries...), out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.binaries, err, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a refused build left %s: %v", out, err)
		}
	}
}
