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
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// staticHello builds a tiny static binary to put in a test image.
func staticHello(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	// -trimpath and CGO_ENABLED=0, as the distribution: from empty caches
	// the standard library it needs is then compiled already.
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build a static binary: %v\n%s", err, out)
	}
	return bin
}

func testSpec(t *testing.T) spec {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "ready.yaml")
	if err := os.WriteFile(cfg, []byte("receivers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return spec{Binary: staticHello(t), Configs: []string{cfg}, Tag: "otelcol-k8sevents:0.1.0", User: "65532:65532",
		ConfigDir: "/etc/otelcol-k8sevents", Created: time.Unix(0, 0).UTC()}
}

// The tar reads back with go-containerregistry's own readers as an OCI
// layout and as a docker-archive (what crane push reads), both valid
// images with the same config; the same inputs make the same digest; and
// what crane push would send arrives in a registry on loopback.
func TestImageReadsBackAndPushes(t *testing.T) {
	s := testSpec(t)
	dir := t.TempDir()
	s.CABundle = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(s.CABundle, []byte("not checked\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	digest, err := build(s, out)
	if err != nil {
		t.Fatal(err)
	}
	again, err := build(s, filepath.Join(dir, "again.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if again != digest {
		t.Errorf("the same inputs made %s, then %s", digest, again)
	}

	idx, err := layout.ImageIndexFromPath(untar(t, out))
	if err != nil {
		t.Fatal(err)
	}
	fromLayout, err := idx.Image(digest)
	if err != nil {
		t.Fatalf("the layout has no image %s: %v", digest, err)
	}
	fromArchive, err := crane.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for name, img := range map[string]v1.Image{"OCI layout": fromLayout, "docker-archive": fromArchive} {
		if err := validate.Image(img); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		checkConfig(t, name, img)
	}
	wantFiles := map[string]int64{"otelcol-k8sevents": 0o755, "etc/otelcol-k8sevents/ready.yaml": 0o644,
		"etc/ssl/certs/ca-certificates.crt": 0o644, "tmp": 0o1777}
	if got := files(t, fromLayout); !maps.Equal(got, wantFiles) {
		t.Errorf("layer files %v, want %v", got, wantFiles)
	}
	layoutCfg, _ := fromLayout.ConfigName()
	archiveCfg, _ := fromArchive.ConfigName()
	if layoutCfg != archiveCfg {
		t.Errorf("config %s in the layout, %s in manifest.json", layoutCfg, archiveCfg)
	}

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/otelcol-k8sevents:0.1.0"
	if err := crane.Push(fromArchive, ref); err != nil {
		t.Fatal(err)
	}
	pulled, err := crane.Pull(ref)
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, "pushed", pulled)
}

func checkConfig(t *testing.T, name string, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != inImage {
		t.Errorf("%s: entrypoint %q", name, got)
	}
	if cf.Config.User != "65532:65532" || cf.OS != "linux" || cf.Architecture == "" {
		t.Errorf("%s: user %q, os %q, architecture %q", name, cf.Config.User, cf.OS, cf.Architecture)
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

// A dynamically linked binary is refused: it cannot start on an empty base.
func TestDynamicBinaryRefused(t *testing.T) {
	s := testSpec(t)
	s.Binary = "/bin/sh"
	if _, err := staticArch(s.Binary); err == nil {
		t.Skip("/bin/sh is static here")
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	_, err := build(s, out)
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("err = %v, want a dynamically linked binary refused", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused build left %s: %v", out, err)
	}
}

// untar unpacks the image tar into a directory.
func untar(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(dst, dir+string(os.PathSeparator)) {
			t.Fatalf("unsafe path %q", h.Name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := os.Create(dst)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
