package apimodel

// What the differential test cannot compare with a real server: faults,
// a starting server, namespace deletion, the write journal. Each runs in a
// synctest bubble, so Retry-After waits take no real time.

import (
	"context"
	"errors"
	authzv1 "k8s.io/api/authorization/v1"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// faultyClient is a clientset of user writer whose requests pass decide.
func faultyClient(t *testing.T, s *Server, decide func(Request) *Fault) *kubernetes.Clientset {
	t.Helper()
	newClient(t, s)
	cfg := s.RESTConfig("writer-token")
	cfg.Transport = NewFaultTransport(cfg.Transport, decide)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// once is a decide that faults the first request matching verb, then none.
func once(verb string, f *Fault, seen *[]Request) func(Request) *Fault {
	done := false
	return func(r Request) *Fault {
		*seen = append(*seen, r)
		if r.Verb != verb || done {
			return nil
		}
		done = true
		return f
	}
}

func TestFaultRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{})
		var seen []Request
		cs := faultyClient(t, s, once("create", &Fault{Status: 429, Reason: metav1.StatusReasonTooManyRequests, RetryAfter: 1500 * time.Millisecond}, &seen))
		start := time.Now()
		_, err := cs.CoreV1().Events("default").Create(context.Background(), bubbleEvent("a"), metav1.CreateOptions{})
		require.NoError(t, err, "client-go retries a 429 after its Retry-After")
		assert.Equal(t, 2*time.Second, time.Since(start), "Retry-After in whole seconds, rounded up")
		assert.Len(t, s.Writes(), 1)
		require.Len(t, seen, 2)
		assert.Equal(t, Request{Verb: "create", Version: "v1", Resource: "events", Namespace: "default", User: "writer",
			Path: "/api/v1/namespaces/default/events"}, seen[0])
	})
}

func TestFaultTimeoutAfterApplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{})
		var seen []Request
		cs := faultyClient(t, s, once("create", &Fault{TimeoutAfter: true}, &seen))
		ctx := context.Background()
		_, err := cs.CoreV1().Events("default").Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
		var netErr interface{ Timeout() bool }
		require.ErrorAs(t, err, &netErr)
		assert.True(t, netErr.Timeout())
		assert.Len(t, s.Events(), 1, "applied although the answer was lost")
		_, err = cs.CoreV1().Events("default").Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
		assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	})
}

func TestFaultTimeoutBeforeAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{})
		var seen []Request
		cs := faultyClient(t, s, once("create", &Fault{TimeoutBefore: true}, &seen))
		_, err := cs.CoreV1().Events("default").Create(context.Background(), bubbleEvent("a"), metav1.CreateOptions{})
		require.Error(t, err)
		assert.Empty(t, s.Events(), "nothing applied")

		cs = faultyClient(t, s, once("create", &Fault{Reset: true}, &seen))
		_, err = cs.CoreV1().Events("default").Create(context.Background(), bubbleEvent("a"), metav1.CreateOptions{})
		var uerr *url.Error
		require.ErrorAs(t, err, &uerr)
		assert.True(t, utilnet.IsConnectionReset(err), "%v", err)
		assert.Empty(t, s.Events())

		// client-go tries a GET again after a reset.
		seen = nil
		cs = faultyClient(t, s, once("list", &Fault{Reset: true}, &seen))
		_, err = cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, seen, 2)
	})
}

// TestFaultLostWatch: a watch whose answer is lost leaves nothing open
// (the bubble would not end otherwise); client-go opens another.
func TestFaultLostWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{})
		var seen []Request
		cs := faultyClient(t, s, once("watch", &Fault{TimeoutAfter: true}, &seen))
		w, err := cs.CoreV1().Events("").Watch(context.Background(), metav1.ListOptions{})
		require.NoError(t, err, "client-go retries a watch that timed out")
		assert.Len(t, seen, 2)
		w.Stop()
	})
}

// TestStartingServer: while not ready, an allowed write is 403 and so is
// /readyz for its user; /readyz fails for an admin; ready, both succeed.
func TestStartingServer(t *testing.T) {
	s := New(Options{})
	cs := newClient(t, s)
	s.AddUser("admin-token", "admin", "system:masters")
	admin := kubernetes.NewForConfigOrDie(s.RESTConfig("admin-token"))
	ctx := context.Background()
	readyz := func(cs *kubernetes.Clientset) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}

	s.SetReady(false)
	_, err := cs.CoreV1().Events("default").Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.True(t, apierrors.IsForbidden(readyz(cs)))
	err = readyz(admin)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status), "%v", err)
	assert.EqualValues(t, 500, status.Status().Code)

	s.SetReady(true)
	require.NoError(t, readyz(cs))
	_, err = cs.CoreV1().Events("default").Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
	require.NoError(t, err)
}

// TestRoleBindingsNotSynced: while RoleBindings have not synced, a rule for
// one namespace allows nothing (its SubjectAccessReview says denied), a
// cluster-wide one still does, and /readyz fails; synced, both allow.
func TestRoleBindingsNotSynced(t *testing.T) {
	s := New(Options{})
	s.AddUser("reviewer-token", "reviewer")
	s.Allow("reviewer", []string{"create"}, "authorization.k8s.io", "subjectaccessreviews", "")
	s.Allow("app", []string{"create"}, "", "events", "default")
	reviewer := kubernetes.NewForConfigOrDie(s.RESTConfig("reviewer-token"))
	ctx := context.Background()
	mayCreate := func() bool {
		sar, err := reviewer.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: "app", ResourceAttributes: &authzv1.ResourceAttributes{Namespace: "default", Verb: "create", Resource: "events"}}}, metav1.CreateOptions{})
		require.NoError(t, err, "the reviewer's cluster-wide rule allows the review")
		return sar.Status.Allowed
	}
	readyz := func() error {
		_, err := reviewer.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}

	require.True(t, mayCreate())
	s.SetRoleBindingsSynced(false)
	assert.False(t, mayCreate(), "the app's rule is for one namespace")
	assert.Error(t, readyz())
	s.SetRoleBindingsSynced(true)
	assert.True(t, mayCreate())
	assert.NoError(t, readyz())
}

// TestDeleteNamespace: every Event in it goes (a watch sees each go), and
// a write there is 404 as for any missing namespace.
func TestDeleteNamespace(t *testing.T) {
	s := New(Options{})
	cs := newClient(t, s)
	ctx := context.Background()
	s.CreateNamespace("team")
	ev := bubbleEvent("a")
	ev.InvolvedObject.Namespace = "team"
	created, err := cs.CoreV1().Events("team").Create(ctx, ev, metav1.CreateOptions{})
	require.NoError(t, err)
	w, err := cs.CoreV1().Events("").Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()

	s.DeleteNamespace("team")
	e := <-w.ResultChan()
	assert.Equal(t, watch.Deleted, e.Type)
	assert.Empty(t, s.Events())
	_, err = cs.CoreV1().Events("team").Create(ctx, ev, metav1.CreateOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Contains(t, err.Error(), `namespaces "team" not found`)
	writes := s.Writes()
	require.Len(t, writes, 2)
	assert.Equal(t, "deletenamespace", writes[1].Verb)
}

// TestWritesAcrossAPIs: one Event written through both APIs is one
// object; the journal holds each accepted write with its group, and no
// refused or unchanged one.
func TestWritesAcrossAPIs(t *testing.T) {
	s := New(Options{})
	cs := newClient(t, s)
	ctx := context.Background()
	_, err := cs.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "a"}, EventTime: metav1.NewMicroTime(time.Now()),
		ReportingController: "apimodel.test/c", ReportingInstance: "i", Action: "Act", Reason: "Why", Note: "note",
		Type: corev1.EventTypeNormal, Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	series := []byte(`{"series":{"count":2,"lastObservedTime":"2026-01-02T03:04:05.000000Z"}}`)
	_, err = cs.EventsV1().Events("default").Patch(ctx, "a", types.StrategicMergePatchType, series, metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = cs.EventsV1().Events("default").Patch(ctx, "a", types.StrategicMergePatchType, series, metav1.PatchOptions{})
	require.NoError(t, err) // unchanged: not a write
	_, err = cs.EventsV1().Events("default").Patch(ctx, "a", types.MergePatchType, []byte(`{"note":"other"}`), metav1.PatchOptions{})
	require.True(t, apierrors.IsInvalid(err), "events.k8s.io/v1 keeps the note immutable: %v", err)
	core, err := cs.CoreV1().Events("default").Patch(ctx, "a", types.MergePatchType, []byte(`{"message":"other"}`), metav1.PatchOptions{})
	require.NoError(t, err, "core/v1 does not")
	assert.Equal(t, int32(2), core.Series.Count)

	writes := s.Writes()
	require.Len(t, writes, 3)
	assert.Equal(t, []string{"events.k8s.io", "events.k8s.io", ""}, []string{writes[0].Group, writes[1].Group, writes[2].Group})
	assert.Nil(t, writes[0].Before)
	assert.Equal(t, "note", writes[2].Before.Message)
	assert.Equal(t, "other", writes[2].After.Message)
	assert.Equal(t, core.ResourceVersion, writes[2].ResourceVersion)
}
