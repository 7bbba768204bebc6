package k8seventsreceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadatatest"
)

const (
	gapEvents   = 20 // e-00..e-19: four pages of gapPageSize
	gapPageSize = 5
	// sentinel sorts after every other name, so it is on a relist's last
	// page: once it is emitted, the relist is complete.
	sentinel = "z-sentinel"
)

// gap is one namespace of Events that a receiver with a checkpoint has
// emitted, then stopped: what happens next happens during the gap.
type gap struct {
	r    *rig
	ns   string
	dir  string    // the checkpoint's storage
	base time.Time // e-i occurred at base + i s
}

// newGap writes gapEvents core/v1 Events with whole-second times, one
// second apart, has a receiver emit them and stops it.
func newGap(t *testing.T, r *rig, ns string) *gap {
	t.Helper()
	r.namespace(t, ns)
	g := &gap{r: r, ns: ns, dir: t.TempDir(), base: time.Now().Add(-time.Hour).Truncate(time.Second)}
	first, sink := r.start(t, fileStorage(t, g.dir), withStorage(ns))
	watching(t, first)
	for i := range gapEvents {
		g.create(t, fmt.Sprintf("e-%02d", i), g.base.Add(time.Duration(i)*time.Second))
	}
	waitReceived(t, sink, gapEvents)
	require.NoError(t, first.Shutdown(context.Background()))
	return g
}

// create writes a core/v1 Event that occurred once, at (whole seconds).
func (g *gap) create(t *testing.T, name string, at time.Time) {
	t.Helper()
	_, err := g.r.cs.CoreV1().Events(g.ns).Create(context.Background(), &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: g.ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: g.ns, Name: name, APIVersion: "v1"},
		Reason:         "BackOff", Message: "back-off", Type: corev1.EventTypeWarning, Count: 1,
		Source:         corev1.EventSource{Component: "kubelet"},
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// occur patches Event name as client-go's recorder does on a repeat: one
// more occurrence, at (whole seconds).
func (g *gap) occur(t *testing.T, name string, at time.Time) {
	t.Helper()
	ev, err := g.r.cs.CoreV1().Events(g.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	ev.Count++
	ev.LastTimestamp = metav1.NewTime(at)
	_, err = g.r.cs.CoreV1().Events(g.ns).Update(context.Background(), ev, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// occurrences maps name -> the counts emitted for it, in order.
func occurrences(evs []k8sevent.Event) map[string][]int64 {
	out := map[string][]int64{}
	for _, ev := range evs {
		out[ev.Name] = append(out[ev.Name], ev.Count)
	}
	return out
}

// TestStateRelistAfterGoneEmitsChangesOnLaterPages: during the gap, e-17
// (page 4) occurs again, then e-02 (page 1), later. After the 410 the
// relist must emit both: page 1's newer time must not hide page 4's change.
func TestStateRelistAfterGoneEmitsChangesOnLaterPages(t *testing.T) {
	r := newRig(t, kubetest.WithAPIServerFlags("--watch-cache=false"))
	g := newGap(t, r, "pages")
	g.occur(t, "e-17", g.base.Add(100*time.Second))
	g.occur(t, "e-02", g.base.Add(200*time.Second))
	r.compact(t)

	sink := new(consumertest.LogsSink)
	r.startInto(t, fileStorage(t, g.dir), r.kubeconfig, sink, pagedWithStorage(g.ns))
	tel := r.tel
	g.create(t, sentinel, time.Now().Truncate(time.Second))
	got := waitFor(t, sink, sentinel)

	assert.Equal(t, map[string][]int64{"e-02": {2}, "e-17": {2}, sentinel: {1}}, occurrences(got),
		"the two changed in the gap and the sentinel, once each")
	assertOneRelist(t, tel)
}

// assertOneRelist checks that the receiver did relist: the gap ended in 410.
func assertOneRelist(t *testing.T, tel *componenttest.Telemetry) {
	t.Helper()
	metadatatest.AssertEqualReceiverK8seventsRelists(t, tel, []metricdata.DataPoint[int64]{{Value: 1}},
		metricdatatest.IgnoreTimestamp())
}

func pagedWithStorage(ns string) func(*Config) {
	return func(c *Config) {
		withStorage(ns)(c)
		c.ListPageSize = gapPageSize
	}
}

// waitFor waits (bounded) until Event name was emitted, then a little for
// records that should not come, and returns all.
func waitFor(t *testing.T, sink *consumertest.LogsSink, name string) []k8sevent.Event {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, ev := range received(t, sink) {
			if ev.Name == name {
				return true
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "waiting for %s", name)
	return settle(t, sink)
}

// TestStateRelistFailingHalfWayGoesOnAfterRestart: the relist after the 410
// fails after its first page (the API server refuses the next page, or the
// pipeline refuses page 4's record) and the receiver stops. Started again,
// it emits what the failed relist had not, and nothing it had.
func TestStateRelistFailingHalfWayGoesOnAfterRestart(t *testing.T) {
	r := newRig(t, kubetest.WithAPIServerFlags("--watch-cache=false"))
	proxy := newProxy(t, r)
	for _, fault := range []string{"list", "pipeline"} {
		t.Run(fault+" fails", func(t *testing.T) {
			g := newGap(t, r, "half-"+fault)
			g.occur(t, "e-17", g.base.Add(100*time.Second))
			g.occur(t, "e-02", g.base.Add(200*time.Second))
			r.compact(t)

			sink := new(consumertest.LogsSink)
			pipeline := &refusing{sink: sink, name: "e-17"}
			pipeline.on.Store(fault == "pipeline")
			var pages *faultproxy.Handle // the API server refuses the pages after the first
			if fault == "list" {
				pages = proxy.Add(faultproxy.Rule{Query: "continue", Action: faultproxy.Fail, Code: 500})
			}
			second := r.startInto(t, fileStorage(t, g.dir), proxyKubeconfig(t, proxy), pipeline, pagedWithStorage(g.ns))
			require.Eventually(t, func() bool {
				return sink.LogRecordCount() >= 1 && (pipeline.refused.Load() > 0 || pages != nil && pages.Acted() > 0)
			}, 60*time.Second, 20*time.Millisecond, "page 1 emitted, then the fault")
			require.NoError(t, second.Shutdown(context.Background()))
			first := received(t, sink)
			assert.Equal(t, map[string][]int64{"e-02": {2}}, occurrences(first), "page 1 only")
			if pages != nil {
				pages.Remove()
			}

			third := new(consumertest.LogsSink)
			r.startInto(t, fileStorage(t, g.dir), proxyKubeconfig(t, proxy), third, pagedWithStorage(g.ns))
			tel := r.tel
			g.create(t, sentinel, time.Now().Truncate(time.Second))
			assert.Equal(t, map[string][]int64{"e-17": {2}, sentinel: {1}}, occurrences(waitFor(t, third, sentinel)),
				"what the failed relist had not emitted, and not e-02 again")
			assertOneRelist(t, tel)
		})
	}
}

// TestStateRelistKeepsASecondPrecisionEventAtAMicrosecondWatermark: the
// receiver (api v1) last emitted an events.k8s.io Event whose eventTime is
// base+0.5 s; during the gap a core/v1 Event occurs after it in the same
// second, its lastTimestamp cut to base. After the 410 it is emitted.
func TestStateRelistKeepsASecondPrecisionEventAtAMicrosecondWatermark(t *testing.T) {
	const ns = "precision"
	r := newRig(t, kubetest.WithAPIServerFlags("--watch-cache=false"))
	r.namespace(t, ns)
	g := &gap{r: r, ns: ns, dir: t.TempDir(), base: time.Now().Add(-time.Hour).Truncate(time.Second)}
	first, sink := r.start(t, fileStorage(t, g.dir), withStorage(ns))
	watching(t, first)
	_, err := r.cs.EventsV1().Events(ns).Create(context.Background(), &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "a-micro", Namespace: ns},
		EventTime:  metav1.NewMicroTime(g.base.Add(500 * time.Millisecond)),
		Regarding:  corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-0", APIVersion: "v1"},
		Reason:     "Scaled", Action: "Scale", Note: "scaled", Type: corev1.EventTypeNormal,
		ReportingController: "example.com/controller", ReportingInstance: "controller-0",
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	got := waitReceived(t, sink, 1)
	require.True(t, got[0].Time.Equal(g.base.Add(500*time.Millisecond)), "the watermark has microseconds: %s", got[0].Time)
	require.NoError(t, first.Shutdown(context.Background()))

	g.create(t, "b-legacy", g.base) // occurred at base+0.7 s, stored as base
	r.compact(t)

	again := new(consumertest.LogsSink)
	r.startInto(t, fileStorage(t, g.dir), r.kubeconfig, again, withStorage(ns))
	tel := r.tel
	g.create(t, sentinel, time.Now().Truncate(time.Second))
	assert.Equal(t, map[string][]int64{"b-legacy": {1}, sentinel: {1}}, occurrences(waitFor(t, again, sentinel)),
		"the core/v1 Event of the watermark's second, and not the one emitted before")
	assertOneRelist(t, tel)
}
