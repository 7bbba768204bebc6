package k8seventsreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	corev1 "k8s.io/api/core/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestOnAPIServer runs the receiver against one real kube-apiserver; each
// subtest works in namespaces of its own.
func TestOnAPIServer(t *testing.T) {
	r := newRig(t)

	t.Run("core/v1 event patched 5 times gives counts 1..6", func(t *testing.T) {
		r.namespace(t, "patched")
		rcv, sink := r.start(t, host{}, func(c *Config) { c.API = k8sevent.APICoreV1; c.Namespaces = []string{"patched"} })
		watching(t, rcv)
		rec := r.coreRecorder(t, "kubelet")
		p := pod("patched", "web-1")
		for range 6 {
			rec.Event(p, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		}
		waitReceived(t, sink, 6)
		got := settle(t, sink)
		require.Len(t, got, 6)
		for i, ev := range got {
			assert.Equal(t, int64(i+1), ev.Count, "record %d", i)
			assert.Equal(t, got[0].UID, ev.UID, "one Event object, patched")
			assert.Equal(t, "BackOff", ev.Reason)
			assert.Equal(t, "web-1", ev.Regarding.Name)
			assert.Equal(t, "kubelet", ev.SourceComponent)
			assert.Equal(t, "node-1", ev.SourceHost)
			assert.Equal(t, k8sevent.TypeWarning, ev.Type)
			assert.False(t, ev.Time.IsZero())
		}
	})

	t.Run("both APIs see a tools/events recorder's event", func(t *testing.T) {
		r.namespace(t, "both")
		// One receiver per API, then one event: each sees the same object.
		rcvNew, sinkNew := r.start(t, host{}, func(c *Config) { c.API = k8sevent.APIEventsV1; c.Namespaces = []string{"both"} })
		rcvOld, sinkOld := r.start(t, host{}, func(c *Config) { c.API = k8sevent.APICoreV1; c.Namespaces = []string{"both"} })
		watching(t, rcvNew)
		watching(t, rcvOld)
		rec := r.eventsRecorder(t, "example.com/controller")
		rec.Eventf(pod("both", "web-2"), pod("both", "web-3"), corev1.EventTypeNormal, "Scaled", "Scale", "scaled %d", 3)
		a, b := waitReceived(t, sinkNew, 1)[0], waitReceived(t, sinkOld, 1)[0]
		for _, ev := range []k8sevent.Event{a, b} {
			assert.Equal(t, "Scaled", ev.Reason)
			assert.Equal(t, "Scale", ev.Action)
			assert.Equal(t, "scaled 3", ev.Note)
			assert.Equal(t, "web-2", ev.Regarding.Name)
			assert.Equal(t, "web-3", ev.Related.Name)
			assert.Equal(t, "example.com/controller", ev.ReportingController)
			assert.False(t, ev.EventTime.IsZero())
		}
		assert.Equal(t, a.UID, b.UID, "the same object through either API")
		assert.Equal(t, a.Name, b.Name)
	})

	t.Run("namespaces, exclusions and field selector", func(t *testing.T) {
		for _, ns := range []string{"ns-a", "ns-b", "ns-c"} {
			r.namespace(t, ns)
		}
		rcvIn, sinkIn := r.start(t, host{}, func(c *Config) { c.API = k8sevent.APICoreV1; c.Namespaces = []string{"ns-a", "ns-b"} })
		rcvEx, sinkEx := r.start(t, host{}, func(c *Config) {
			c.API = k8sevent.APICoreV1
			c.ExcludeNamespaces = []string{"ns-b", "ns-c", "patched", "both", "default", "kube-system"}
		})
		rcvWarn, sinkWarn := r.start(t, host{}, func(c *Config) {
			c.Namespaces, c.FieldSelector = []string{"ns-a", "ns-b", "ns-c"}, "type=Warning"
		})
		for _, rcv := range []*k8seventsReceiver{rcvIn, rcvEx, rcvWarn} {
			watching(t, rcv)
		}
		rec := r.coreRecorder(t, "kubelet")
		for _, ns := range []string{"ns-a", "ns-b", "ns-c"} {
			rec.Event(pod(ns, "p"), corev1.EventTypeNormal, "Pulled", "pulled")
			rec.Event(pod(ns, "p"), corev1.EventTypeWarning, "Failed", "failed")
		}
		waitReceived(t, sinkIn, 4)
		waitReceived(t, sinkEx, 2)
		waitReceived(t, sinkWarn, 3)
		nsOf := func(evs []k8sevent.Event) map[string]int {
			out := map[string]int{}
			for _, ev := range evs {
				out[ev.Regarding.Namespace+"/"+ev.Type]++
			}
			return out
		}
		assert.Equal(t, map[string]int{"ns-a/Normal": 1, "ns-a/Warning": 1, "ns-b/Normal": 1, "ns-b/Warning": 1}, nsOf(settle(t, sinkIn)))
		assert.Equal(t, map[string]int{"ns-a/Normal": 1, "ns-a/Warning": 1}, nsOf(settle(t, sinkEx)))
		assert.Equal(t, map[string]int{"ns-a/Warning": 1, "ns-b/Warning": 1, "ns-c/Warning": 1}, nsOf(settle(t, sinkWarn)))
	})

	t.Run("initial all and none", func(t *testing.T) {
		r.namespace(t, "initial")
		r.createEvents(t, "initial", "before", 5)
		rcvAll, sinkAll := r.start(t, host{}, func(c *Config) { c.Namespaces, c.Initial = []string{"initial"}, initialAll })
		rcvNone, sinkNone := r.start(t, host{}, func(c *Config) { c.Namespaces = []string{"initial"} })
		watching(t, rcvAll)
		watching(t, rcvNone)
		r.createEvents(t, "initial", "after", 3)
		assert.Len(t, waitReceived(t, sinkAll, 8), 8)
		assert.Len(t, waitReceived(t, sinkNone, 3), 3)
		assert.Len(t, settle(t, sinkAll), 8, "existing events once, then the new ones")
		none := settle(t, sinkNone)
		require.Len(t, none, 3)
		assert.Equal(t, []string{"after-0", "after-1", "after-2"}, names(none))
	})

	t.Run("an idle watch is restarted and misses nothing", func(t *testing.T) {
		// The proxy keeps the watch open and silent, as a connection that
		// died without a FIN does; the Event is created then, in the gap.
		r.namespace(t, "idle")
		proxy := newProxy(t, r)
		stall := proxy.Add(faultproxy.Rule{Query: "watch=true", Action: faultproxy.Stall})
		rcv, sink := r.startWith(t, proxyKubeconfig(t, proxy), func(c *Config) { c.Namespaces, c.WatchIdleTimeout = []string{"idle"}, time.Second })
		tel := r.tel
		watching(t, rcv)
		require.GreaterOrEqual(t, stall.Acted(), 1, "the watch is silent")
		r.createEvents(t, "idle", "in-gap", 1)
		stall.Remove()
		waitReceived(t, sink, 1)
		assert.Equal(t, []string{"in-gap-0"}, names(settle(t, sink)))
		m, err := tel.GetMetric("otelcol_receiver_k8sevents_watch_restarts")
		require.NoError(t, err)
		assert.GreaterOrEqual(t, m.Data.(metricdata.Sum[int64]).DataPoints[0].Value, int64(1), "found by restarting the silent watch")
	})

	t.Run("watches_open shows the open watches, 0 while none can be opened", func(t *testing.T) {
		r.namespace(t, "open-a")
		r.namespace(t, "open-b")
		proxy := newProxy(t, r)
		r.startWith(t, proxyKubeconfig(t, proxy), func(c *Config) {
			c.Namespaces, c.WatchIdleTimeout = []string{"open-a", "open-b"}, time.Second
		})
		tel := r.tel
		open := func() int64 {
			m, err := tel.GetMetric("otelcol_receiver_k8sevents_watches_open")
			require.NoError(t, err)
			return m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value
		}
		// Each watch ends at its one-second idle timeout and is opened again,
		// so the gauge is read until it shows both, not once.
		require.Eventually(t, func() bool { return open() == 2 }, 30*time.Second, 10*time.Millisecond, "one watch per namespace")
		// New watches fail; the idle timeout ends the open ones.
		refused := proxy.Add(faultproxy.Rule{Query: "watch=true", Action: faultproxy.Fail, Code: 503})
		// Between a watch ending at its idle timeout and the next one being
		// asked for, the gauge is 0 too: wait for a refused watch as well.
		require.Eventually(t, func() bool { return refused.Acted() >= 1 && open() == 0 }, 30*time.Second, 10*time.Millisecond, "no watch open while every watch is refused")
		refused.Remove()
		require.Eventually(t, func() bool { return open() == 2 }, 30*time.Second, 10*time.Millisecond, "both watches open again")
	})
}
