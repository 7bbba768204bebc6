package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

const (
	policyName       = "otel-k8sevents-own-events"
	tier2Controller  = "k8sevents.io/otlp-ingestion"
	policyNamespace  = "app"
	kubeletComponent = "kubelet"
)

// TestDeployAdmissionPolicyVAP applies deploy/admission-policy.yaml to a real
// API server with the collectors' ServiceAccounts and their RBAC from
// deploy/, and writes Events as those ServiceAccounts (TokenRequest tokens)
// through both Event APIs: each may create and patch only Events whose
// reporting controller is its own (not kubelet's, not the other
// collector's, and not change another's Event into its own), with no other
// source component than its own (an older Event keeps the one it has),
// while another ServiceAccount with the same RBAC is unaffected. Before the
// policy, the same refused write goes through: RBAC alone cannot tell.
func TestDeployAdmissionPolicyVAP(t *testing.T) {
	parallel(t)
	srv := kubetest.Start(t, kubetest.OwnServer()) // it installs an admission policy
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := srv.Clientset()
	apply(ctx, t, srv.RESTConfig(), manifests(t, "collector.yaml", "rbac-exporter.yaml", "otlp-tier2.yaml"))
	require.NoError(t, stormsend.CreateNamespaces(ctx, cs, policyNamespace))
	_, err := cs.CoreV1().ServiceAccounts(policyNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(policyNamespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "other-writes-events"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "otel-k8sevents-exporter"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "other", Namespace: policyNamespace}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	mirror := saClient(t, srv, deployNamespace, "otel-k8sevents")
	tier2 := saClient(t, srv, deployNamespace, "otelcol-tier2")
	other := saClient(t, srv, policyNamespace, "other")

	n := 0
	write := func(c kubernetes.Interface, api, controller string) error {
		n++
		if api == "core" {
			_, err := c.CoreV1().Events(policyNamespace).Create(ctx, coreEvent(policyNamespace, fmt.Sprint("e", n), controller), metav1.CreateOptions{})
			return err
		}
		_, err := c.EventsV1().Events(policyNamespace).Create(ctx, eventsEvent(fmt.Sprint("e", n), controller), metav1.CreateOptions{})
		return err
	}
	require.NoError(t, write(mirror, "core", kubeletComponent), "without the policy, RBAC lets the collector write as kubelet")

	apply(ctx, t, srv.RESTConfig(), manifests(t, "admission-policy.yaml"))
	awaitPolicy(ctx, t, mirror)

	t.Run("create", func(t *testing.T) {
		for _, c := range []struct {
			who        string
			client     kubernetes.Interface
			api        string
			controller string
			allowed    bool
		}{
			{"mirror", mirror, "core", deployController, true},
			{"mirror", mirror, "events", deployController, true},
			{"mirror", mirror, "core", kubeletComponent, false},
			{"mirror", mirror, "events", kubeletComponent, false},
			{"mirror", mirror, "core", "", false},
			{"mirror", mirror, "events", tier2Controller, false},
			{"tier2", tier2, "events", tier2Controller, true},
			{"tier2", tier2, "core", tier2Controller, true},
			{"tier2", tier2, "core", deployController, false},
			{"tier2", tier2, "events", kubeletComponent, false},
			{"other", other, "core", kubeletComponent, true},
			{"other", other, "events", deployController, true},
		} {
			err := write(c.client, c.api, c.controller)
			if c.allowed {
				assert.NoError(t, err, "%s writes a %s Event of %q", c.who, c.api, c.controller)
			} else {
				assert.True(t, byPolicy(err), "%s writes a %s Event of %q: want refused by the policy, got %v", c.who, c.api, c.controller, err)
			}
		}
		// Its own controller, but from kubelet's source ("From kubelet" in kubectl describe).
		ev := coreEvent(policyNamespace, "own-as-kubelet", deployController)
		ev.Source.Component = kubeletComponent
		_, err := mirror.CoreV1().Events(policyNamespace).Create(ctx, ev, metav1.CreateOptions{})
		assert.True(t, byPolicy(err), "the mirror's Event from kubelet's source: %v", err)
		ev = coreEvent(policyNamespace, "tier2-as-kubelet", tier2Controller)
		ev.Source = corev1.EventSource{Component: kubeletComponent, Host: "node-1"}
		_, err = tier2.CoreV1().Events(policyNamespace).Create(ctx, ev, metav1.CreateOptions{})
		assert.True(t, byPolicy(err), "tier 2's Event from kubelet's source: %v", err)
		// (events.k8s.io/v1 refuses a source on create and keeps it on update by itself.)
	})

	t.Run("patch", func(t *testing.T) {
		own, err := mirror.CoreV1().Events(policyNamespace).Create(ctx, coreEvent(policyNamespace, "own", deployController), metav1.CreateOptions{})
		require.NoError(t, err)
		theirs, err := cs.CoreV1().Events(policyNamespace).Create(ctx, coreEvent(policyNamespace, "theirs", kubeletComponent), metav1.CreateOptions{})
		require.NoError(t, err)
		theirsV1, err := cs.EventsV1().Events(policyNamespace).Create(ctx, eventsEvent("theirs-v1", kubeletComponent), metav1.CreateOptions{})
		require.NoError(t, err)
		patch := func(c kubernetes.Interface, name, body string) error {
			_, err := c.CoreV1().Events(policyNamespace).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
			return err
		}
		assert.NoError(t, patch(mirror, own.Name, `{"count":2}`), "the mirror counts its own Event")
		assert.True(t, byPolicy(patch(mirror, own.Name, `{"reportingComponent":"kubelet"}`)), "its own Event made kubelet's")
		assert.True(t, byPolicy(patch(mirror, own.Name, `{"source":{"component":"kubelet"}}`)), "its own Event made from kubelet")
		// An Event of its own written before its source was forced (a
		// mirrored kubelet Event) can still be counted.
		older := coreEvent(policyNamespace, "older", deployController)
		older.Source.Component = kubeletComponent
		_, err = cs.CoreV1().Events(policyNamespace).Create(ctx, older, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.NoError(t, patch(mirror, older.Name, `{"count":2}`), "an older Event of its own, from kubelet's source")
		assert.True(t, byPolicy(patch(mirror, theirs.Name, `{"count":7}`)), "kubelet's Event counted by the mirror")
		assert.True(t, byPolicy(patch(mirror, theirs.Name, `{"reportingComponent":"`+deployController+`"}`)), "kubelet's Event taken over")
		_, err = tier2.EventsV1().Events(policyNamespace).Patch(ctx, theirsV1.Name, types.MergePatchType,
			[]byte(`{"series":{"count":9,"lastObservedTime":"2026-01-01T00:00:00.000000Z"}}`), metav1.PatchOptions{})
		assert.True(t, byPolicy(err), "kubelet's events.k8s.io Event patched by tier 2: %v", err)
		assert.NoError(t, patch(other, theirs.Name, `{"count":3}`), "another ServiceAccount is unaffected")

		got, err := cs.CoreV1().Events(policyNamespace).Get(ctx, theirs.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, kubeletComponent, got.ReportingController)
		assert.EqualValues(t, 3, got.Count)
	})
}

// awaitPolicy waits until the API server applies the admission policy to
// c (the mirror's ServiceAccount): it compiles a new policy and starts
// using it a moment after it is created.
func awaitPolicy(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	n := 0
	eventually(t, time.Minute, func() (bool, string) {
		n++
		_, err := c.CoreV1().Events(deployNamespace).Create(ctx, coreEvent(deployNamespace, fmt.Sprint("policy-probe-", n), kubeletComponent), metav1.CreateOptions{})
		return byPolicy(err), fmt.Sprintf("not refused by the policy yet: %v", err)
	})
}

// byPolicy: err is the admission policy's refusal (not RBAC's, not validation's).
func byPolicy(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policyName+"'")
}

// saClient is a clientset authenticated as the ServiceAccount with a
// TokenRequest token.
func saClient(t *testing.T, srv *kubetest.Server, ns, name string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(srv.RESTConfigFor(srv.ServiceAccountToken(t, ns, name, time.Hour)))
	require.NoError(t, err)
	return c
}

// coreEvent is a core/v1 Event about a pod of ns reported by controller.
func coreEvent(ns, name, controller string) *corev1.Event {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-0", APIVersion: "v1"},
		Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: controller}, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		ReportingController: controller, ReportingInstance: "i-0",
	}
}

// eventsEvent is the same as an events.k8s.io/v1 Event.
func eventsEvent(name, controller string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: policyNamespace},
		Regarding:  corev1.ObjectReference{Kind: "Pod", Namespace: policyNamespace, Name: "web-0", APIVersion: "v1"},
		Reason:     "BackOff", Note: "Back-off restarting failed container", Type: corev1.EventTypeWarning, Action: "Restart",
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: controller, ReportingInstance: "i-0",
	}
}
