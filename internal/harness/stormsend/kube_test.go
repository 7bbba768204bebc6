package stormsend

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

func TestIsEventWrite(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/api/v1/namespaces/shop/events", true},
		{"PATCH", "/api/v1/namespaces/shop/events/web.1", true},
		{"PUT", "/apis/events.k8s.io/v1/namespaces/shop/events/web.1", true},
		{"POST", "/apis/events.k8s.io/v1/namespaces/shop/events", true},
		{"GET", "/api/v1/namespaces/shop/events", false},
		{"DELETE", "/api/v1/namespaces/shop/events/web.1", false},
		{"POST", "/api/v1/namespaces", false},
		{"PUT", "/api/v1/namespaces/events/finalize", false},
		{"PATCH", "/api/v1/namespaces/events", false},
		{"POST", "/api/v1/namespaces/events/pods", false},
	} {
		req := &http.Request{Method: c.method, URL: &url.URL{Path: c.path}}
		assert.Equal(t, c.want, isEventWrite(req), "%s %s", c.method, c.path)
	}
}

// TestAgainstAPIServer replays small streams into one real kube-apiserver,
// each case in a namespace of its own.
func TestAgainstAPIServer(t *testing.T) {
	srv := kubetest.Start(t)
	cfg, cs := srv.RESTConfig(), srv.Clientset()
	ctx := context.Background()
	prepare := func(t *testing.T, occs []storm.Occurrence) {
		require.NoError(t, EnsureNamespaces(ctx, cs, occs))
		require.NoError(t, EnsureNamespaces(ctx, cs, occs), "existing namespaces are fine")
	}

	t.Run("raw", func(t *testing.T) {
		occs := stream("raw", 60, time.Second)
		prepare(t, occs)
		st, err := Raw(ctx, cfg, occs, Options{})
		require.NoError(t, err)
		assert.Equal(t, 60, st.Occurrences)
		assert.Equal(t, int64(60), st.Writes, "one write per occurrence")
		assert.Zero(t, st.Failures)
		list, err := cs.CoreV1().Events("raw").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 6, "one Event per distinct occurrence")
		var sum int32
		for _, ev := range list.Items {
			sum += ev.Count
			assert.Equal(t, "kubelet", ev.Source.Component)
			assert.True(t, ev.LastTimestamp.After(ev.FirstTimestamp.Time), ev.Name)
		}
		assert.Equal(t, int32(60), sum)
	})

	t.Run("raw into a missing namespace", func(t *testing.T) {
		st, err := Raw(ctx, cfg, stream("nowhere", 30, time.Second), Options{})
		require.ErrorContains(t, err, "in a row")
		assert.Equal(t, maxConsecutiveFailures, st.Occurrences)
		assert.Equal(t, int64(maxConsecutiveFailures), st.Failures)
	})

	t.Run("raw bounds", func(t *testing.T) {
		occs := stream("bounds", 40, time.Second)
		prepare(t, occs)
		st, err := Raw(ctx, cfg, occs, Options{MaxEvents: 5})
		require.NoError(t, err)
		assert.Equal(t, 5, st.Occurrences)
		assert.Equal(t, int64(5), st.Writes)
		// 40 s of stream in real time, bounded to 1 s; restamped.
		before := time.Now()
		st, err = Raw(ctx, cfg, occs, Options{Speed: 1, MaxDuration: time.Second, Restamp: true})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, st.Elapsed, time.Second)
		assert.Less(t, st.Occurrences, 40)
		assert.Equal(t, int64(st.Occurrences), st.Writes)
		list, err := cs.CoreV1().Events("bounds").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		restamped := 0
		for _, ev := range list.Items {
			if !ev.FirstTimestamp.Before(&metav1.Time{Time: before.Truncate(time.Second)}) {
				restamped++
			}
		}
		assert.Positive(t, restamped)
	})

	t.Run("record", func(t *testing.T) {
		// 30 occurrences of 6 Events: below the spam filter's burst and the
		// aggregator's threshold, so the legacy recorder creates each Event
		// once and patches its count at every repeat.
		occs := stream("legacy", 30, time.Second)
		prepare(t, occs)
		st, err := Record(ctx, cfg, occs, Options{}, RecorderLegacy)
		require.NoError(t, err)
		assert.Equal(t, 30, st.Occurrences)
		assert.Equal(t, int64(30), st.Writes)
		list, err := cs.CoreV1().Events("legacy").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 6)
		var sum int32
		for _, ev := range list.Items {
			sum += ev.Count
			assert.Equal(t, "node-1", ev.Source.Host)
		}
		assert.Equal(t, int32(30), sum)
	})

	t.Run("events", func(t *testing.T) {
		occs := stream("series", 30, time.Second)
		prepare(t, occs)
		// At speed 10 (100 ms apart) a repeat usually comes after its
		// create has been written; the race of the two is slower, not wrong.
		st, err := Record(ctx, cfg, occs, Options{Speed: 10}, RecorderEvents)
		t.Logf("%+v", st)
		require.NoError(t, err)
		assert.Equal(t, 30, st.Occurrences)
		// A create and a first series patch per Event; later counts wait
		// for client-go's 6-minute finish, which a short replay never sees.
		assert.GreaterOrEqual(t, st.Writes, int64(6))
		assert.Less(t, st.Writes, int64(30))
		list, err := cs.EventsV1().Events("series").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 6)
		for _, ev := range list.Items {
			assert.Equal(t, "kubelet", ev.ReportingController)
			assert.Equal(t, ev.Reason, ev.Action)
		}
	})

	t.Run("bad recorder", func(t *testing.T) {
		_, err := Record(ctx, cfg, nil, Options{}, "nope")
		require.ErrorContains(t, err, `recorder "nope"`)
	})

	t.Run("record canceled", func(t *testing.T) {
		occs := stream("canceled", 3600, time.Second)
		prepare(t, occs)
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(500*time.Millisecond, cancel)
		st, err := Record(cctx, cfg, occs, Options{Speed: 1}, RecorderLegacy)
		require.ErrorIs(t, err, context.Canceled)
		assert.Less(t, st.Occurrences, 3600)
	})
}
