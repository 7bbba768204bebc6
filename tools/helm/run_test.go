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
	"helm.sh/helm/v4/pkg/action"
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
// only the link is left.
func kubectl(t *testing.T) string {
	t.Helper()
	kubectlBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "helm-kubectl-")
		if err != nil {
			kubectlBuild.err = err
			return
		}
		kubectlBuild.path = filepath.Join(dir, "kubectl")
		out, err := exec.Command("go", "build", "-race", "-o", kubectlBuild.path, "./internal/kubectl").CombinedOutput()
		if err != nil {
			kubectlBuild.err = fmt.Errorf("go build ./internal/kubectl: %w\n%s", err, out)
		}
	})
	require.NoError(t, kubectlBuild.err)
	return kubectlBuild.path
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

// runMirror runs the mirror of the release in namespace ns as its pod
// would: its StatefulSet's container environment, its ConfigMap's files,
// its ServiceAccount's token; only its ports move to free loopback ones
// (a last --config of the test's) and its storage to a temporary
// directory. It returns once the receiver's watch is open.
func runMirror(ctx context.Context, t *testing.T, srv *kubetest.Server, ns, name string) {
	t.Helper()
	cs := srv.Clientset()
	ss, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	c := ss.Spec.Template.Spec.Containers[0]
	files := configFiles(t, c, cm)
	dir := t.TempDir()
	token := srv.ServiceAccountToken(t, ns, ss.Spec.Template.Spec.ServiceAccountName, time.Hour)
	env := append(podEnv(t, c, ns, name+"-0", "uid-"+name+"-0"), "K8S_AUTH_TYPE=kubeConfig",
		"KUBECONFIG="+srv.KubeconfigFor(t, "mirror", token), "STORAGE_DIR="+filepath.Join(dir, "storage"))
	health, metrics, exact := freePort(t), freePort(t), freePort(t)
	ports := fmt.Sprintf(`extensions:
  health_check: {endpoint: "127.0.0.1:%d"}
exporters:
  prometheus: {endpoint: "127.0.0.1:%d"}
service:
  telemetry:
    metrics:
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}
`, health, exact, metrics)
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	col, err := collectorproc.Start(startCtx, collectorproc.Options{
		Binary: collectorBinary(t), Config: files[0], Overlays: []string{files[1], ports}, Dir: dir, Env: env,
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", health),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = col.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("mirror log:\n%s", col.LogTail(8192))
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)
	require.Eventually(t, func() bool {
		m, err := col.Metrics(ctx, url)
		return err == nil && m.Sum("otelcol_receiver_k8sevents_watches_open") == 1
	}, 2*time.Minute, 200*time.Millisecond, "the mirror's watch is open\n%s", col.LogTail(4096))
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := childproc.FreePort()
	require.NoError(t, err)
	return p
}

// helmTest is helm test RELEASE, with the test playing kubelet: Helm
// creates the hook's ServiceAccount, Role, RoleBinding and pod (admitted
// by the namespace's Pod Security); the pod's script runs here with bash
// and kubectl, as the pod's ServiceAccount with the pod's environment, and
// its exit status becomes the pod's phase, which Helm waits for. It
// returns Helm's error and the script's output.
func helmTest(ctx context.Context, t *testing.T, cfg *action.Configuration, srv *kubetest.Server, ns, release string) (error, string) {
	t.Helper()
	cs := srv.Clientset()
	rt := action.NewReleaseTesting(cfg)
	rt.Namespace, rt.Timeout = ns, 3*time.Minute
	done := make(chan error, 1)
	go func() {
		_, _, err := rt.Run(release)
		done <- err
	}()
	var pod *corev1.Pod
	for pod == nil {
		select {
		case err := <-done:
			return fmt.Errorf("helm test ended before its pod ran: %w", err), ""
		case <-ctx.Done():
			return ctx.Err(), ""
		case <-time.After(200 * time.Millisecond):
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=test,app.kubernetes.io/instance=" + release})
		require.NoError(t, err)
		if len(pods.Items) == 1 {
			pod = &pods.Items[0]
		}
	}
	out, runErr := runPodScript(ctx, t, srv, pod)
	phase := corev1.PodSucceeded
	if runErr != nil {
		phase = corev1.PodFailed
	}
	pod.Status.Phase = phase
	pod.Status.Conditions = nil
	_, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err, "the test pod's phase, as kubelet reports it")
	select {
	case err := <-done:
		return err, out
	case <-ctx.Done():
		return ctx.Err(), out
	}
}

// runPodScript runs the pod's one container's command (bash -c SCRIPT)
// here, with its environment and its ServiceAccount's kubeconfig, and
// kubectl on the PATH.
func runPodScript(ctx context.Context, t *testing.T, srv *kubetest.Server, pod *corev1.Pod) (string, error) {
	t.Helper()
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	require.Equal(t, []string{"bash", "-c"}, c.Command)
	require.Len(t, c.Args, 1)
	bin := filepath.Dir(kubectl(t))
	token := srv.ServiceAccountToken(t, pod.Namespace, pod.Spec.ServiceAccountName, time.Hour)
	env := append(podEnv(t, c, pod.Namespace, pod.Name, string(pod.UID)), "KUBECONFIG="+srv.KubeconfigFor(t, pod.Spec.ServiceAccountName, token),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	home := t.TempDir()
	for i, e := range env {
		if strings.HasPrefix(e, "HOME=") || strings.HasPrefix(e, "TMPDIR=") {
			env[i] = strings.SplitN(e, "=", 2)[0] + "=" + home // the pod's emptyDir
		}
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", c.Args[0])
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
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
