package k8seventexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestDeployRBACIsEnoughAndNoMore binds deploy/rbac-exporter.yaml's
// ClusterRole to a user, runs the exporter as that user on both APIs
// (including its listing at start, and the read of a create answered
// AlreadyExists), and checks the user can do nothing else.
func TestDeployRBACIsEnoughAndNoMore(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	user, token := r.srv.NewUser(t, "exporter")
	ctx := context.Background()
	r.srv.GrantRole(t, "../../deploy/rbac-exporter.yaml", user, "")
	r.kubeconfig = r.srv.KubeconfigFor(t, user, token)

	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		exp, tel := r.start(t, func(c *Config) { c.API = api })
		// The same controller, started before the object exists: its
		// listing misses it (only the same controller may take an object
		// over: TestHostileNamingAnotherEvent).
		exp2, tel2 := r.start(t, func(c *Config) { c.API = api })
		name := "web-1.rbac-" + map[string]string{k8sevent.APIEventsV1: "new", k8sevent.APICoreV1: "old"}[api]
		send(t, exp, record(name, k8sevent.StateSingleton, 1, t0), record(name, k8sevent.StateStarted, 2, t0.Add(time.Second)))
		require.Eventually(t, func() bool { return counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched") == 1 },
			30*time.Second, 20*time.Millisecond, "create and patch as the user (%s)", api)
		// Its create is answered AlreadyExists; it reads the object, finds
		// it its own, and patches.
		send(t, exp2, record(name, k8sevent.StateOngoing, 3, t0.Add(time.Minute)))
		require.Eventually(t, func() bool {
			return counter(t, tel2, "otelcol_exporter_k8sevents_writes", "outcome", "patched_after_409") == 1
		}, 30*time.Second, 20*time.Millisecond, "get and patch after AlreadyExists as the user (%s)", api)
	}

	as, err := kubernetes.NewForConfig(r.srv.RESTConfigFor(token))
	require.NoError(t, err)
	_, err = as.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list pods: %v", err)
	_, err = as.CoreV1().Secrets("shop").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list secrets: %v", err)
	err = as.CoreV1().Events("shop").Delete(ctx, "web-1.rbac-old", metav1.DeleteOptions{})
	assert.True(t, apierrors.IsForbidden(err), "delete events: %v", err)
	_, err = as.CoreV1().Events("shop").Update(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web-1.rbac-old", Namespace: "shop"}}, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "update events (never used): %v", err)
}

// TestDeployRBACPerNamespace: with the exporter's namespaces set, a Role
// per namespace with deploy/rbac-exporter.yaml's rules is enough, the
// listing at start included (a restarted exporter patches what it wrote
// before, no create attempt), and nothing outside those namespaces is
// reachable.
func TestDeployRBACPerNamespace(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	user, token := r.srv.NewUser(t, "exporter")
	ctx := context.Background()
	r.srv.GrantRole(t, "../../deploy/rbac-exporter.yaml", user, "shop")
	r.kubeconfig = r.srv.KubeconfigFor(t, user, token)

	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		inShop := func(c *Config) { c.API, c.Namespaces = api, []string{"shop"} }
		name := "web-1.ns-rbac-" + map[string]string{k8sevent.APIEventsV1: "new", k8sevent.APICoreV1: "old"}[api]
		exp, tel := r.start(t, inShop)
		send(t, exp, record(name, k8sevent.StateSingleton, 1, t0))
		require.Eventually(t, func() bool { return createdOrAdopted(t, tel) == 1 }, 30*time.Second, 20*time.Millisecond)

		exp2, tel2 := r.start(t, inShop)
		send(t, exp2, record(name, k8sevent.StateStarted, 2, t0.Add(time.Second)))
		require.Eventually(t, func() bool { return counter(t, tel2, "otelcol_exporter_k8sevents_writes", "outcome", "patched") == 1 },
			30*time.Second, 20*time.Millisecond, "the restarted exporter listed shop and patches (%s)", api)
		assert.Zero(t, counter(t, tel2, "otelcol_exporter_k8sevents_writes", "outcome", "patched_after_409"), "no create attempt")
	}
	as, err := kubernetes.NewForConfig(r.srv.RESTConfigFor(token))
	require.NoError(t, err)
	_, err = as.CoreV1().Events("other").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list events elsewhere: %v", err)
	_, err = as.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list events cluster-wide: %v", err)
}
