package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

const (
	deployNamespace  = "otel-k8sevents"
	deployController = "k8sevents.io/mirror"
)

// TestDeployManifests applies deploy/ to a real API server, checks that its
// ConfigMap is testdata/config/mirror.yaml, and runs that configuration as
// the manifests' ServiceAccount (a TokenRequest token): the RBAC is enough
// for leader election, the receiver and the exporter, the mirror's writes
// pass the admission policy, and the mirror does not read its own output
// back.
func TestDeployManifests(t *testing.T) {
	parallel(t)
	binary(t) // skips before starting an API server when the collector is not built
	// Its own server: it installs an admission policy.
	srv := kubetest.Start(t, kubetest.OwnServer())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := srv.Clientset()

	objs := manifests(t, "collector.yaml", "rbac-receiver.yaml", "rbac-exporter.yaml", "admission-policy.yaml")
	apply(ctx, t, srv.RESTConfig(), objs)

	cm, err := cs.CoreV1().ConfigMaps(deployNamespace).Get(ctx, "otel-k8sevents", metav1.GetOptions{})
	require.NoError(t, err)
	mirror, err := os.ReadFile("../testdata/config/mirror.yaml")
	require.NoError(t, err)
	require.Equal(t, string(mirror), cm.Data["config.yaml"], "deploy/collector.yaml's ConfigMap must embed testdata/config/mirror.yaml")

	tok, err := cs.CoreV1().ServiceAccounts(deployNamespace).CreateToken(ctx, "otel-k8sevents",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	kubeconfig := srv.KubeconfigFor(t, "otel-k8sevents", tok.Status.Token)
	awaitPolicy(ctx, t, saClient(t, srv, deployNamespace, "otel-k8sevents"))
	require.NoError(t, stormsend.CreateNamespaces(ctx, cs, "app"))
	dir := t.TempDir()
	env := []string{
		"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + deployNamespace,
		"POD_NAME=otel-k8sevents-0", "STORAGE_DIR=" + filepath.Join(dir, "storage"),
	}
	c := startCollectorEnv(t, dir, cm.Data["config.yaml"], env)
	c.awaitWatchOpen(t) // initial: none; the first occurrence must come after the list

	// One pod's BackOff Event, written as a recorder without compression
	// does: created, then its count patched, 5 occurrences in all.
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-0.backoff", Namespace: "app"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "app", Name: "web-0", UID: "uid-web-0", APIVersion: "v1"},
		Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}, Count: 1, FirstTimestamp: now, LastTimestamp: now,
	}
	ev, err = cs.CoreV1().Events("app").Create(ctx, ev, metav1.CreateOptions{})
	require.NoError(t, err)
	// The first occurrence must be mirrored before the others, so the
	// receiver sees each count (it emits every version it is shown).
	mirrored := func() []corev1.Event {
		l, err := cs.CoreV1().Events("app").List(ctx, metav1.ListOptions{FieldSelector: "reportingComponent=" + deployController})
		require.NoError(t, err)
		return l.Items
	}
	eventually(t, time.Minute, func() (bool, string) { return len(mirrored()) == 1, "the first occurrence is not mirrored" })
	for n := int32(2); n <= 5; n++ {
		ev.Count, ev.LastTimestamp = n, metav1.NewTime(now.Add(time.Duration(n)*time.Second))
		ev, err = cs.CoreV1().Events("app").Update(ctx, ev, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	eventually(t, time.Minute, func() (bool, string) {
		m := c.scrape(t)
		got := m.Pipeline().Occurrences
		return got >= 5, fmt.Sprintf("occurrences seen by the processor: %v", got)
	})
	// Shutdown flushes the open series (exact count) into the persistent
	// queue, which keeps what it has not written for the next start rather
	// than draining: a restarted mirror (the StatefulSet's normal case)
	// writes it.
	require.NoError(t, c.Stop(time.Minute))
	c = startCollectorEnv(t, dir, cm.Data["config.yaml"], env)
	eventually(t, time.Minute, func() (bool, string) {
		out := mirrored()
		return len(out) == 1 && k8sevent.CoreV1Occurrences(&out[0]) == 5, fmt.Sprintf("mirrored: %d objects, %s", len(out), countsOf(out))
	})
	require.NoError(t, c.Stop(time.Minute))

	out := mirrored()
	require.Len(t, out, 1, "one series, one Event: the mirror must not read its own output back")
	assert.EqualValues(t, 5, k8sevent.CoreV1Occurrences(&out[0]), "exact count of the mirrored series")
	assert.Equal(t, "otel-k8sevents-0", out[0].ReportingInstance)
	lease, err := cs.CoordinationV1().Leases(deployNamespace).Get(ctx, "otel-k8sevents", metav1.GetOptions{})
	require.NoError(t, err, "the leader elector holds its Lease as the ServiceAccount")
	assert.NotEmpty(t, ptr.Deref(lease.Spec.HolderIdentity, ""))
}

func countsOf(evs []corev1.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s=%d ", ev.Name, k8sevent.CoreV1Occurrences(&ev))
	}
	return b.String()
}

// manifests reads every object of the named files under deploy/, in order.
func manifests(t *testing.T, files ...string) []*unstructured.Unstructured {
	t.Helper()
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join("../deploy", f)
	}
	return readManifests(t, paths...)
}

// readManifests reads every object of the files, in order.
func readManifests(t *testing.T, paths ...string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, f := range paths {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			obj := &unstructured.Unstructured{}
			err := dec.Decode(&obj.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			if len(obj.Object) > 0 {
				objs = append(objs, obj)
			}
		}
	}
	return objs
}

// apply creates the objects with strict server-side field validation (an
// unknown or misspelt field fails the test); workloads go through a dry run
// first. A Namespace that exists already (both shapes declare theirs) is
// fine; anything else that exists is not.
func apply(ctx context.Context, t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, gvk.String())
		ri := dc.Resource(m.Resource).Namespace(obj.GetNamespace())
		if gvk.Group == "apps" {
			_, err = ri.Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict", DryRun: []string{metav1.DryRunAll}})
			require.NoError(t, err, "dry run: %s %s", gvk.Kind, obj.GetName())
		}
		_, err = ri.Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
		if gvk.Kind == "Namespace" && apierrors.IsAlreadyExists(err) {
			continue
		}
		require.NoError(t, err, "%s %s", gvk.Kind, obj.GetName())
	}
}
