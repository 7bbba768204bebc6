package kubelocal_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
)

// TestStartOwnDirKubeconfigStop covers what kubetest does not: a directory
// made (and removed) by Start, the kubeconfig file, and Stop being idempotent.
func TestStartOwnDirKubeconfigStop(t *testing.T) {
	kubelocal.RequireBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := kubelocal.Start(ctx, kubelocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	dir := c.Dir()
	if !strings.Contains(filepath.Base(dir), "kubelocal-") {
		t.Errorf("Dir() = %s, want a kubelocal- temp dir", dir)
	}

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	if cfg.Insecure || len(cfg.CAData) == 0 {
		t.Error("kubeconfig does not verify the server certificate")
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace default via kubeconfig: %v", err)
	}
	if tail := c.LogTail(5); !strings.Contains(tail, "kube-apiserver.log") {
		t.Errorf("LogTail does not show the kube-apiserver log:\n%s", tail)
	}

	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s behind (stat: %v)", dir, err)
	}
}

func TestStartMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	_, err := kubelocal.Start(context.Background(), kubelocal.Options{BinDir: t.TempDir(), Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("Start without binaries: err = %v, want not found", err)
	}
}

func TestStartCanceled(t *testing.T) {
	kubelocal.RequireBinaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "cluster")
	c, err := kubelocal.Start(ctx, kubelocal.Options{Dir: dir})
	if err == nil {
		_ = c.Stop()
		t.Fatal("Start with a canceled context succeeded")
	}
	// A caller's Dir is left in place (with the logs) for the caller to read.
	if _, serr := os.Stat(filepath.Join(dir, "etcd.log")); serr != nil {
		t.Errorf("etcd.log missing after a failed Start: %v", serr)
	}
}
