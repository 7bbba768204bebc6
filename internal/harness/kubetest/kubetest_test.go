package kubetest_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
}

func coreEvent(ns, name string) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: "demo",
		},
		Reason:         "Testing",
		Message:        "core/v1 event " + name,
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "kubetest"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
}

func TestEventsRoundTrip(t *testing.T) {
	s := kubetest.Start(t)
	cs := s.Clientset()
	const ns = "kubetest-events"
	createNamespace(t, cs, ns)

	if _, err := cs.CoreV1().Events(ns).Create(ctx(t), coreEvent(ns, "core-1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create core/v1 event: %v", err)
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "events-1", Namespace: ns},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "example.com/kubetest",
		ReportingInstance:   "kubetest-1",
		Action:              "Test",
		Reason:              "Testing",
		Note:                "events.k8s.io/v1 event",
		Type:                corev1.EventTypeWarning,
		Regarding:           corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: "demo"},
	}
	if _, err := cs.EventsV1().Events(ns).Create(ctx(t), ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create events.k8s.io/v1 event: %v", err)
	}

	got, err := cs.CoreV1().Events(ns).Get(ctx(t), "core-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get core/v1 event: %v", err)
	}
	if got.Message != "core/v1 event core-1" || got.InvolvedObject.Name != "demo" {
		t.Errorf("core/v1 event read back as %+v", got)
	}
	got2, err := cs.EventsV1().Events(ns).Get(ctx(t), "events-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get events.k8s.io/v1 event: %v", err)
	}
	if got2.Note != "events.k8s.io/v1 event" || got2.ReportingController != "example.com/kubetest" || got2.Type != corev1.EventTypeWarning {
		t.Errorf("events.k8s.io/v1 event read back as %+v", got2)
	}

	// Both APIs serve the same objects.
	list, err := cs.EventsV1().Events(ns).List(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events.k8s.io/v1 events: %v", err)
	}
	if len(list.Items) != 2 {
		t.Errorf("events.k8s.io/v1 list has %d items, want 2", len(list.Items))
	}

	// The kubeconfig works too, with TLS verification on.
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig(t))
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	if cfg.Insecure || len(cfg.CAData) == 0 {
		t.Errorf("kubeconfig does not verify the server certificate")
	}
	kcs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kcs.CoreV1().Events(ns).Get(ctx(t), "core-1", metav1.GetOptions{}); err != nil {
		t.Fatalf("get via kubeconfig: %v", err)
	}
	u, err := url.Parse(s.EtcdEndpoint())
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Errorf("EtcdEndpoint() = %q, want a 127.0.0.1 URL", s.EtcdEndpoint())
	}
}

func TestRBACForbidsUserWithoutRole(t *testing.T) {
	s := kubetest.Start(t)
	nobody, token := s.NewUser(t, "nobody")

	cs, err := kubernetes.NewForConfig(s.RESTConfigFor(token))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Events("default").List(ctx(t), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("list events as nobody: got %v, want 403 Forbidden", err)
	}
	if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != 403 {
		t.Fatalf("status code: got %v, want 403", err)
	}

	// A bad token is not authenticated at all.
	bad, err := kubernetes.NewForConfig(s.RESTConfigFor("not-a-token"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.CoreV1().Events("default").List(ctx(t), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("list events with a bad token: got %v, want 401", err)
	}

	// The admin token is allowed.
	if _, err := s.Clientset().CoreV1().Events("default").List(ctx(t), metav1.ListOptions{}); err != nil {
		t.Fatalf("list events as admin: %v", err)
	}

	// GrantRole gives the receiver's deploy/ role to nobody in one
	// namespace only.
	createNamespace(t, s.Clientset(), "granted")
	role := s.GrantRole(t, "../../../deploy/rbac-receiver.yaml", nobody, "granted")
	if len(role.Rules) == 0 {
		t.Fatal("GrantRole read no rules")
	}
	if _, err := cs.CoreV1().Events("granted").List(ctx(t), metav1.ListOptions{}); err != nil {
		t.Fatalf("list events in the granted namespace: %v", err)
	}
	if _, err := cs.CoreV1().Events("default").List(ctx(t), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list events elsewhere after a namespaced grant: got %v, want 403", err)
	}
	// And cluster-wide.
	s.GrantRole(t, "../../../deploy/rbac-receiver.yaml", nobody, "")
	if _, err := cs.CoreV1().Events("").List(ctx(t), metav1.ListOptions{}); err != nil {
		t.Fatalf("list events cluster-wide after a cluster grant: %v", err)
	}
}

func TestStopStartAPIServerKeepsDataAndURL(t *testing.T) {
	s := kubetest.Start(t, kubetest.OwnServer())
	cs := s.Clientset()
	const ns = "kubetest-restart"
	createNamespace(t, cs, ns)
	if _, err := cs.CoreV1().Events(ns).Create(ctx(t), coreEvent(ns, "before"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create event: %v", err)
	}
	urlBefore := s.RESTConfig().Host

	if err := s.StopAPIServer(); err != nil {
		t.Fatalf("StopAPIServer: %v", err)
	}
	short, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := cs.CoreV1().Events(ns).Get(short, "before", metav1.GetOptions{})
	cancel()
	if err == nil {
		t.Fatal("API server still answers after StopAPIServer")
	}
	if err := s.StopAPIServer(); err != nil {
		t.Fatalf("second StopAPIServer: %v", err)
	}

	if err := s.StartAPIServer(); err != nil {
		t.Fatalf("StartAPIServer: %v", err)
	}
	if got := s.RESTConfig().Host; got != urlBefore {
		t.Errorf("URL changed from %s to %s", urlBefore, got)
	}
	if err := s.StartAPIServer(); err == nil {
		t.Error("StartAPIServer on a running server: want an error")
	}
	// The clientset made before the restart keeps working.
	got, err := cs.CoreV1().Events(ns).Get(ctx(t), "before", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get event after restart: %v", err)
	}
	if got.Message != "core/v1 event before" {
		t.Errorf("event after restart: %+v", got)
	}
	if _, err := cs.CoreV1().Events(ns).Create(ctx(t), coreEvent(ns, "after"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create event after restart: %v", err)
	}
}

func TestEventRateLimitAnswers429(t *testing.T) {
	s := kubetest.Start(t, kubetest.WithEventRateLimit(1, 2))
	cs := s.Clientset()

	deadline := time.Now().Add(30 * time.Second)
	created, limited := 0, 0
	for i := 0; i < 20 && limited == 0 && time.Now().Before(deadline); i++ {
		_, err := cs.CoreV1().Events("default").Create(ctx(t), coreEvent("default", fmt.Sprintf("burst-%d", i)), metav1.CreateOptions{})
		switch {
		case err == nil:
			created++
		case apierrors.IsTooManyRequests(err):
			limited++
		default:
			t.Fatalf("create event %d: %v", i, err)
		}
	}
	t.Logf("created %d events before the first 429", created)
	if limited == 0 {
		t.Fatalf("no 429 after %d event creates with qps 1 burst 2", created)
	}
	if created < 1 {
		t.Errorf("created %d events, want at least 1 before the limit", created)
	}
}
