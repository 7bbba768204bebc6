package apimodel

// The model inside a testing/synctest bubble, as the simulator runs it:
// client-go's watch and writes on virtual time, bookmarks and the Event TTL
// on its clock, and nothing left running when the bubble ends.

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// newClient is a clientset of a new user of s allowed everything on Events.
func newClient(t *testing.T, s *Server) *kubernetes.Clientset {
	t.Helper()
	s.AddUser("writer-token", "writer")
	s.Allow("writer", []string{"*"}, "", "events", "")
	s.Allow("writer", []string{"*"}, "events.k8s.io", "events", "")
	cs, err := kubernetes.NewForConfig(s.RESTConfig("writer-token"))
	require.NoError(t, err)
	return cs
}

func bubbleEvent(name string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"},
		Reason:         "Started", Message: "started", Type: corev1.EventTypeNormal, Count: 1,
	}
}

// TestWatchInBubble watches and writes inside a bubble: the watch sees the
// writes in order, a bookmark (with an Events watch cache) comes after a
// minute of virtual time with nothing else to do, and stopping the watch
// ends every goroutine.
func TestWatchInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{EventsWatchCache: true})
		cs := newClient(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		first, err := cs.CoreV1().Events("default").Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
		require.NoError(t, err)
		w, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, AllowWatchBookmarks: true})
		require.NoError(t, err)

		start := time.Now()
		_, err = cs.CoreV1().Events("default").Patch(ctx, "a", types.MergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{})
		require.NoError(t, err)
		require.NoError(t, cs.CoreV1().Events("default").Delete(ctx, "a", metav1.DeleteOptions{}))
		var types []watch.EventType
		for range 3 {
			e := <-w.ResultChan()
			types = append(types, e.Type)
		}
		assert.Equal(t, []watch.EventType{watch.Modified, watch.Deleted, watch.Bookmark}, types)
		assert.Equal(t, BookmarkInterval, time.Since(start), "the bookmark comes after a minute of virtual time")

		w.Stop()
		for range w.ResultChan() {
		}
	})
}

// TestWatchTimeoutInBubble: a watch ends at its timeoutSeconds; with an
// Events watch cache a bookmark comes 2 s before, at the last write, when
// that is newer than the watch's start; without one, none comes.
func TestWatchTimeoutInBubble(t *testing.T) {
	for _, cached := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			s := New(Options{EventsWatchCache: cached})
			cs := newClient(t, s)
			ctx := context.Background()
			timeout := int64(30)
			start := time.Now()
			w, err := cs.CoreV1().Events("").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
			require.NoError(t, err)
			quiet, err := cs.CoreV1().Events("").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout, AllowWatchBookmarks: true,
				FieldSelector: "metadata.name=other"})
			require.NoError(t, err)
			created, err := cs.CoreV1().Events("default").Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
			require.NoError(t, err)
			assert.Equal(t, watch.Added, (<-w.ResultChan()).Type)
			if cached {
				e := <-quiet.ResultChan()
				require.Equal(t, watch.Bookmark, e.Type, "what it did not select moved it on")
				assert.Equal(t, created.ResourceVersion, e.Object.(*corev1.Event).ResourceVersion)
				assert.Equal(t, 28*time.Second, time.Since(start))
				assert.Equal(t, watch.Bookmark, (<-w.ResultChan()).Type)
			}
			for range w.ResultChan() {
				t.Error("nothing after the bookmark")
			}
			for range quiet.ResultChan() {
				t.Error("nothing after the bookmark")
			}
			assert.Equal(t, 30*time.Second, time.Since(start))
		})
	}
}

// TestEventTTLInBubble: an Event not written for EventTTL is gone, a watch
// sees it go at that moment, and a write refreshes the TTL but an
// unchanged one does not.
func TestEventTTLInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{EventTTL: time.Hour})
		cs := newClient(t, s)
		ctx := context.Background()
		ev, err := cs.CoreV1().Events("default").Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
		require.NoError(t, err)
		timeout := int64(3 * 3600) // beyond the default 30 minutes
		w, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: ev.ResourceVersion, TimeoutSeconds: &timeout})
		require.NoError(t, err)
		defer w.Stop()

		time.Sleep(40 * time.Minute)
		_, err = cs.CoreV1().Events("default").Patch(ctx, "a", types.MergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{})
		require.NoError(t, err)
		assert.Equal(t, watch.Modified, (<-w.ResultChan()).Type)
		time.Sleep(30 * time.Minute)
		_, err = cs.CoreV1().Events("default").Patch(ctx, "a", types.MergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{})
		require.NoError(t, err, "an unchanged patch: no write, no new TTL")

		start := time.Now()
		e := <-w.ResultChan()
		assert.Equal(t, watch.Deleted, e.Type)
		assert.Equal(t, 30*time.Minute, time.Since(start), "gone an hour after its last write")
		_, err = cs.CoreV1().Events("default").Get(ctx, "a", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
		_, err = cs.CoreV1().Events("default").Patch(ctx, "a", types.MergePatchType, []byte(`{"count":3}`), metav1.PatchOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
		assert.Empty(t, s.Events())
		writes := s.Writes()
		require.Len(t, writes, 3)
		assert.Equal(t, []string{"create", "patch", "expire"}, []string{writes[0].Verb, writes[1].Verb, writes[2].Verb})
		assert.Nil(t, writes[2].After)
		assert.Equal(t, int32(2), writes[2].Before.Count)
	})
}

// TestCompactionIntervalInBubble: every interval the history is compacted
// at the revision current an interval before, as kube-apiserver's
// compactor does, so an old resourceVersion is 410 after 1 to 2 intervals.
func TestCompactionIntervalInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{CompactionInterval: 5 * time.Minute})
		cs := newClient(t, s)
		ctx := context.Background()
		events := cs.CoreV1().Events("default")
		a, err := events.Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
		require.NoError(t, err)
		time.Sleep(time.Minute)
		_, err = events.Create(ctx, bubbleEvent("b"), metav1.CreateOptions{})
		require.NoError(t, err)
		time.Sleep(5 * time.Minute)
		_, err = events.Create(ctx, bubbleEvent("c"), metav1.CreateOptions{})
		require.NoError(t, err)
		listAtA := func() error {
			_, err := events.List(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			return err
		}
		watchFromA := func() watch.Event {
			timeout := int64(1)
			w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion, TimeoutSeconds: &timeout})
			require.NoError(t, err)
			defer w.Stop()
			return <-w.ResultChan()
		}

		time.Sleep(3*time.Minute + 59*time.Second) // 9m59s: nothing compacted yet
		require.NoError(t, listAtA())
		time.Sleep(time.Second) // 10m: compacted at b, the revision at 5m
		assert.True(t, apierrors.IsResourceExpired(listAtA()), "a list at a is too old")
		assert.Equal(t, watch.Added, watchFromA().Type, "a watch from a starts at b (its create), still there")

		time.Sleep(5 * time.Minute) // 15m: compacted at c, the revision at 10m
		e := watchFromA()
		require.Equal(t, watch.Error, e.Type)
		assert.EqualValues(t, 410, e.Object.(*metav1.Status).Code)
	})
}

// TestLeaderElectionInBubble runs client-go's leader election (what the
// k8s_leader_elector extension runs) on the model's Leases: one candidate
// leads, and when it releases, the other takes over.
func TestLeaderElectionInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{})
		s.AddUser("admin-token", "admin", "system:masters")
		cs := kubernetes.NewForConfigOrDie(s.RESTConfig("admin-token"))
		leading := make(chan string, 2)
		run := func(ctx context.Context, id string) {
			le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: &resourcelock.LeaseLock{
					LeaseMeta:  metav1.ObjectMeta{Namespace: "default", Name: "collector"},
					Client:     cs.CoordinationV1(),
					LockConfig: resourcelock.ResourceLockConfig{Identity: id},
				},
				LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
				ReleaseOnCancel: true,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(context.Context) { leading <- id },
					OnStoppedLeading: func() {},
				},
			})
			require.NoError(t, err)
			le.Run(ctx)
		}
		ctxA, stopA := context.WithCancel(context.Background())
		ctxB, stopB := context.WithCancel(context.Background())
		doneA := make(chan struct{})
		go func() { defer close(doneA); run(ctxA, "a") }()
		assert.Equal(t, "a", <-leading)
		go run(ctxB, "b")
		time.Sleep(time.Minute) // a renews, b waits
		stopA()
		<-doneA
		start := time.Now()
		assert.Equal(t, "b", <-leading, "b takes over once a released the lease")
		assert.LessOrEqual(t, time.Since(start), 2*time.Second*22/10, "within a retry period (jittered by up to 1.2)")
		lease, err := cs.CoordinationV1().Leases("default").Get(context.Background(), "collector", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "b", *lease.Spec.HolderIdentity)
		assert.EqualValues(t, 1, *lease.Spec.LeaseTransitions)
		stopB()
		synctest.Wait()
	})
}

// TestWatchFromFutureInBubble: a watch of Events from a resourceVersion
// not reached yet waits for it, as etcd's watch does: writes before it are
// not sent, the first one after it is.
func TestWatchFromFutureInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{})
		cs := newClient(t, s)
		ctx := context.Background()
		first, err := cs.CoreV1().Events("default").Create(ctx, bubbleEvent("a"), metav1.CreateOptions{})
		require.NoError(t, err)
		rv, err := strconv.ParseInt(first.ResourceVersion, 10, 64)
		require.NoError(t, err)
		w, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(rv+2, 10)})
		require.NoError(t, err)
		defer w.Stop()
		synctest.Wait() // the watch reads, and waits
		for _, name := range []string{"b", "c", "d"} {
			_, err := cs.CoreV1().Events("default").Create(ctx, bubbleEvent(name), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		e := <-w.ResultChan()
		require.Equal(t, watch.Added, e.Type)
		assert.Equal(t, "d", e.Object.(*corev1.Event).Name, "b and c are not after the revision asked for")
	})
}
