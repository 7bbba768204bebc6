package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

// helmTest is helm test RELEASE, with the test playing kubelet: Helm
// creates the hooks' ServiceAccount, Role and RoleBinding, then each test
// pod (admitted by the namespace's Pod Security) and waits for it; each
// pod's script runs here with bash and kubectl, as the pod's
// ServiceAccount with the pod's environment and its projected token, and
// its exit status becomes the pod's phase. addresses are the loopback
// addresses of the Services the pods dial (what DNS and the Service would
// resolve). It returns Helm's error and each pod's output, by pod name.
func helmTest(ctx context.Context, t *testing.T, cfg *action.Configuration, srv *kubetest.Server, ns, release string,
	addresses map[string]string) (error, map[string]string) {
	t.Helper()
	cs := srv.Clientset()
	rt := action.NewReleaseTesting(cfg)
	rt.Namespace, rt.Timeout = ns, 3*time.Minute
	done := make(chan error, 1)
	go func() {
		_, _, err := rt.Run(release)
		done <- err
	}()
	outputs := map[string]string{}
	for {
		select {
		case err := <-done:
			return err, outputs
		case <-ctx.Done():
			return ctx.Err(), outputs
		case <-time.After(200 * time.Millisecond):
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=test,app.kubernetes.io/instance=" + release})
		require.NoError(t, err)
		for i := range pods.Items {
			pod := &pods.Items[i]
			if _, ran := outputs[pod.Name]; ran || pod.Status.Phase != corev1.PodPending {
				continue
			}
			out, runErr := runPodScript(ctx, t, srv, pod, addresses)
			outputs[pod.Name] = out
			pod.Status.Phase = corev1.PodSucceeded
			if runErr != nil {
				pod.Status.Phase = corev1.PodFailed
			}
			_, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			require.NoError(t, err, "the test pod's phase, as kubelet reports it")
		}
	}
}

// runPodScript runs the pod's one container's command (bash -c SCRIPT)
// here, with its environment (a value naming a Service address, or a file
// of a projected ServiceAccount token, is the loopback address or a file
// here), its ServiceAccount's kubeconfig, and kubectl on the PATH.
func runPodScript(ctx context.Context, t *testing.T, srv *kubetest.Server, pod *corev1.Pod, addresses map[string]string) (string, error) {
	t.Helper()
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	require.Equal(t, []string{"bash", "-c"}, c.Command)
	require.Len(t, c.Args, 1)
	home := t.TempDir()
	files := map[string]string{} // path in the pod -> here
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name != v.Name {
				continue
			}
			for _, src := range v.Projected.Sources {
				if tok := src.ServiceAccountToken; tok != nil {
					token := srv.ServiceAccountToken(t, pod.Namespace, pod.Spec.ServiceAccountName, time.Hour, tok.Audience)
					here := filepath.Join(home, "token-"+v.Name)
					require.NoError(t, os.WriteFile(here, []byte(token), 0o600))
					files[filepath.Join(m.MountPath, tok.Path)] = here
				}
			}
		}
	}
	env := podEnv(t, c, pod.Namespace, pod.Name, string(pod.UID))
	for i, e := range env {
		k, v, _ := strings.Cut(e, "=")
		switch {
		case k == "HOME" || k == "TMPDIR":
			v = home // the pod's emptyDir
		case addresses[v] != "":
			v = addresses[v]
		case files[v] != "":
			v = files[v]
		}
		env[i] = k + "=" + v
	}
	token := srv.ServiceAccountToken(t, pod.Namespace, pod.Spec.ServiceAccountName, time.Hour)
	env = append(env, "KUBECONFIG="+srv.KubeconfigFor(t, pod.Spec.ServiceAccountName, token),
		"PATH="+filepath.Dir(kubectl(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd := exec.CommandContext(ctx, "bash", "-c", c.Args[0])
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s(%v)", out, err), err
	}
	return string(out), nil
}
