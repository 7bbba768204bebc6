package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// What the install test runs of a release as kubelet would: the built
// collector with a workload's ConfigMap and its container's environment,
// and the helm test pod's script with bash and kubectl.

// collectorBinary is bin/otelcol-k8sevents (make otelcol); missing, the
// test skips (fails under CI=true).
func collectorBinary(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(root, "bin", "otelcol-k8sevents"))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the collector (make otelcol): %v", err)
		}
		t.Skipf("the collector (make otelcol): %v", err)
	}
	return bin
}

var kubectlBuild struct {
	once sync.Once
	path string
	err  error
}

// kubectl builds ./internal/kubectl once per test binary, with -race as
// make test's lint vets this module: its packages are compiled by then,
// only the link is left (without DWARF: seconds). A test that needs it
// later starts the build early, in the background: go buildKubectl().
func kubectl(t *testing.T) string {
	t.Helper()
	buildKubectl()
	require.NoError(t, kubectlBuild.err)
	return kubectlBuild.path
}

func buildKubectl() {
	kubectlBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "helm-kubectl-")
		if err != nil {
			kubectlBuild.err = err
			return
		}
		kubectlBuild.path = filepath.Join(dir, "kubectl")
		out, err := exec.Command("go", "build", "-race", "-ldflags=-w", "-o", kubectlBuild.path, "./internal/kubectl").CombinedOutput()
		if err != nil {
			kubectlBuild.err = fmt.Errorf("go build ./internal/kubectl: %w\n%s", err, out)
		}
	})
}

// podEnv is a container's environment as kubelet gives it to the pod
// name (of uid) in namespace ns on loopback: values as they are, the
// downward API's fields resolved.
func podEnv(t *testing.T, c corev1.Container, ns, name, uid string) []string {
	t.Helper()
	var env []string
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			require.NotNil(t, e.ValueFrom.FieldRef, "env %s", e.Name)
			v = map[string]string{"metadata.namespace": ns, "metadata.name": name, "metadata.uid": uid,
				"status.podIP": "127.0.0.1"}[e.ValueFrom.FieldRef.FieldPath]
			require.NotEmpty(t, v, "env %s: field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

// configFiles are a workload's ConfigMap's files, in the order its
// container's --config flags name them.
func configFiles(t *testing.T, c corev1.Container, cm *corev1.ConfigMap) []string {
	t.Helper()
	var files []string
	for i, a := range c.Args {
		if a == "--config" {
			key := strings.TrimPrefix(c.Args[i+1], "/etc/otelcol/")
			require.Contains(t, cm.Data, key, "--config %s", c.Args[i+1])
			files = append(files, cm.Data[key])
		}
	}
	require.Len(t, files, 2, "the ready configuration and the chart's")
	return files
}

// effectiveConfig is what the collector makes of a workload's
// configuration files with its environment: print-config merges them as
// a start would, validates, and prints the result.
func effectiveConfig(t *testing.T, files, env []string) map[string]any {
	t.Helper()
	args := []string{"print-config", "--mode", "unredacted"}
	dir := t.TempDir()
	for i, f := range files {
		path := filepath.Join(dir, fmt.Sprintf("config-%d.yaml", i))
		require.NoError(t, os.WriteFile(path, []byte(f), 0o600))
		args = append(args, "--config", path)
	}
	cmd := exec.Command(collectorBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "print-config: %s", stderr.String())
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(out, &cfg))
	return cfg
}

// workload is one collector of an installed release, run here as its pod
// would: its container's environment, its ConfigMap's files, its
// ServiceAccount's token; only its listeners move to loopback ports (a
// last --config of the test's, and env) and its storage to a temporary
// directory.
type workload struct {
	c       *collectorproc.Collector
	metrics string // its metrics' URL
}

// runWorkload runs the workload name of namespace ns (its pod template
// pod), with env added to its own.
func runWorkload(ctx context.Context, t *testing.T, srv *kubetest.Server, ns, name string, pod corev1.PodTemplateSpec, env ...string) workload {
	t.Helper()
	cm, err := srv.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	c := pod.Spec.Containers[0]
	files := configFiles(t, c, cm)
	dir := t.TempDir()
	token := srv.ServiceAccountToken(t, ns, pod.Spec.ServiceAccountName, time.Hour)
	env = append(append(podEnv(t, c, ns, name+"-0", "uid-"+name+"-0"), "K8S_AUTH_TYPE=kubeConfig",
		"KUBECONFIG="+srv.KubeconfigFor(t, name, token), "STORAGE_DIR="+filepath.Join(dir, "storage")), env...)
	health, metrics, exact := freePort(t), freePort(t), freePort(t)
	ports := fmt.Sprintf(`extensions:
  health_check: {endpoint: "127.0.0.1:%d"}
service:
  telemetry:
    metrics:
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}
`, health, metrics)
	if strings.Contains(files[1], "exact-counts") {
		ports += fmt.Sprintf("exporters:\n  prometheus: {endpoint: \"127.0.0.1:%d\"}\n", exact)
	}
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	col, err := collectorproc.Start(startCtx, collectorproc.Options{
		Binary: collectorBinary(t), Config: files[0], Overlays: []string{files[1], ports}, Dir: dir, Env: env,
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", health),
	})
	require.NoError(t, err, name)
	t.Cleanup(func() {
		_ = col.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, col.LogTail(8192))
		}
	})
	return workload{c: col, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)}
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := childproc.FreePort()
	require.NoError(t, err)
	return p
}

// writtenBy lists the Events of controller in ns.
func writtenBy(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, controller string) []corev1.Event {
	t.Helper()
	l, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reportingComponent=" + controller})
	require.NoError(t, err)
	return l.Items
}

// assertEffective checks keys of an effective configuration (path joined
// by "::", as the collector's --set names them) against their values.
func assertEffective(t *testing.T, cfg map[string]any, want map[string]any, msg string) {
	t.Helper()
	for path, v := range want {
		assert.Equal(t, v, dig(cfg, strings.Split(path, "::")...), "%s: %s", msg, path)
	}
}
