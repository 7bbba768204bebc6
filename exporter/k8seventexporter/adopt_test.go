package k8seventexporter

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Two exporters of one reporting controller (tier-2 pods 0 and 3 of a
// ring that changed) write one series of one pod: pod 0's processor
// opened it, pod 3's processor starts its own for the same key 30 s later
// (the ring moved the pod to it) under another record name.

// adopter configures an exporter as a tier-2 pod: adopt_open_series, its
// own reporting instance, no queue (the default: a push returns once its records
// are written, so the test orders the two writers' writes).
func adopter(api, instance string) func(*Config) {
	return func(c *Config) {
		c.API, c.ReportingInstance, c.AdoptOpenSeries = api, instance, true
	}
}

// seriesOf is one writer's records of the pod's series: its name, first
// occurrence, and a record per count (a singleton first, the last one
// finished).
func seriesOf(pod, name string, first time.Time, counts ...int64) []k8sevent.Event {
	var out []k8sevent.Event
	for i, c := range counts {
		state := k8sevent.StateOngoing
		switch {
		case i == 0:
			state = k8sevent.StateSingleton
		case i == 1:
			state = k8sevent.StateStarted
		case i == len(counts)-1:
			state = k8sevent.StateFinished
		}
		ev := record(name, state, c, first.Add(time.Duration(c)*time.Second))
		ev.Regarding.Name, ev.Regarding.UID, ev.EventTime = pod, "uid-"+pod, first
		out = append(out, ev)
	}
	return out
}

// countWatch records every count the pod's Events reach, as a watch sees them.
type countWatch struct {
	mu   sync.Mutex
	seen map[string][]int64 // object name -> counts in order
	done chan struct{}
}

func watchCounts(t *testing.T, r *rig, pod string) *countWatch {
	t.Helper()
	w, err := r.srv.WatchClientset(t).CoreV1().Events("shop").Watch(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	require.NoError(t, err)
	cw := &countWatch{seen: map[string][]int64{}, done: make(chan struct{})}
	go func() {
		defer close(cw.done)
		for e := range w.ResultChan() {
			if ev, ok := e.Object.(*corev1.Event); ok && e.Type != watch.Deleted {
				got := k8sevent.FromCoreV1(ev)
				cw.mu.Lock()
				cw.seen[ev.Name] = append(cw.seen[ev.Name], got.Occurrences())
				cw.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-cw.done })
	return cw
}

// awaitLast waits until the watch has seen the object reach count.
func (cw *countWatch) awaitLast(t *testing.T, name string, count int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		cw.mu.Lock()
		defer cw.mu.Unlock()
		s := cw.seen[name]
		return len(s) > 0 && s[len(s)-1] == count
	}, 30*time.Second, 10*time.Millisecond, "the watch sees %s reach %d", name, count)
}

// twoAdopters starts tier-2 pods 0 and 3's exporters through the proxy.
func (fr *faultRig) twoAdopters(t *testing.T, api string) [2]exporter.Logs {
	t.Helper()
	var exps [2]exporter.Logs
	for i, instance := range []string{"tier2-0", "tier2-3"} {
		exp, _ := fr.faultExporter(t, api, componenttest.NewNopHost(), adopter(api, instance))
		exps[i] = exp
		t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	}
	return exps
}

// assertNeverDown checks that no object's count went down.
func (cw *countWatch) assertNeverDown(t *testing.T) {
	t.Helper()
	cw.mu.Lock()
	defer cw.mu.Unlock()
	require.NotEmpty(t, cw.seen, "the watch saw the writes")
	for name, seen := range cw.seen {
		for i := 1; i < len(seen); i++ {
			require.GreaterOrEqual(t, seen[i], seen[i-1], "%s: the count went down: %v", name, seen)
		}
	}
}

// aboutPod lists the pod's Events.
func (r *rig) aboutPod(t *testing.T, pod string) []corev1.Event {
	t.Helper()
	l, err := r.srv.Clientset().CoreV1().Events("shop").List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	require.NoError(t, err)
	return l.Items
}

// slots are an object's slot annotations.
func slots(ev *corev1.Event) map[string]string {
	out := map[string]string{}
	for k, v := range ev.Annotations {
		if strings.HasPrefix(k, slotPrefix) {
			out[k] = v
		}
	}
	return out
}

// TestAdoptInterleavedWritersSumExactly: pod 0 writes its series, pod 3
// starts its own for the same key while pod 0's is open, and the two go
// on interleaved. One object, whose count is the sum of both series
// (through both APIs), one slot per series, never going down; pod 3
// counts one adoption. Without adopt_open_series pod 3 creates a second
// object and the test fails on the object count.
func TestAdoptInterleavedWritersSumExactly(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		t.Run(api, func(t *testing.T) {
			pod := "adopt-" + strings.NewReplacer(".", "-", "/", "-").Replace(api)
			cw := watchCounts(t, r, pod)
			a, _ := r.start(t, adopter(api, "tier2-0"))
			d, dtel := r.start(t, adopter(api, "tier2-3"))
			before, err := kubetest.EventRequests(context.Background(), r.srv.Clientset())
			require.NoError(t, err)
			as := seriesOf(pod, pod+".a", t0, 1, 2, 3, 6)
			ds := seriesOf(pod, pod+".d", t0.Add(30*time.Second), 1, 2, 4, 5)
			for _, step := range []struct {
				exp exporter.Logs
				ev  k8sevent.Event
			}{{a, as[0]}, {a, as[1]}, {d, ds[0]}, {a, as[2]}, {d, ds[1]}, {d, ds[2]}, {a, as[3]}, {d, ds[3]}} {
				send(t, step.exp, step.ev)
			}
			const want = 6 + 5
			after, err := kubetest.EventRequests(context.Background(), r.srv.Clientset())
			require.NoError(t, err)
			cost := after.Minus(before)
			t.Logf("8 records of 2 series: %v", cost)
			assert.Positive(t, cost["PATCH 409"], "a writer met the other's write (its resourceVersion moved): read and written again")
			objs := r.aboutPod(t, pod)
			require.Len(t, objs, 1, "one object for the series")
			assert.Equal(t, pod+".a", objs[0].Name, "the series' first object")
			assert.Len(t, slots(&objs[0]), 2, "a slot per series: %v", objs[0].Annotations)
			core, events, err := r.occurrences(t, objs[0].Name)
			require.NoError(t, err)
			assert.Equal(t, []int64{want, want}, []int64{core, events}, "count = the sum of both series (core/v1, events.k8s.io/v1)")
			assert.EqualValues(t, 1, counter(t, dtel, "otelcol_exporter_k8sevents_writes", "outcome", "adopted_series"))
			cw.awaitLast(t, objs[0].Name, want)
			cw.assertNeverDown(t)
		})
	}
}

// TestAdoptLeavesAFinishedSeriesAlone: a series whose object was last
// observed longer than adopt_window before the new series' first
// occurrence has ended; the new one gets its own object.
func TestAdoptLeavesAFinishedSeriesAlone(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	a, _ := r.start(t, adopter(k8sevent.APIEventsV1, "tier2-0"))
	d, dtel := r.start(t, adopter(k8sevent.APIEventsV1, "tier2-3"))
	send(t, a, seriesOf("ended", "ended.a", t0, 1, 2, 3)...)
	send(t, d, seriesOf("ended", "ended.d", t0.Add(3*time.Second+6*time.Minute+time.Second), 1, 2)...)
	objs := r.aboutPod(t, "ended")
	require.Len(t, objs, 2, "a new series after the window: its own object")
	for _, o := range objs {
		assert.Len(t, slots(&o), 1, "%s: its own slot only", o.Name)
	}
	assert.Zero(t, counter(t, dtel, "otelcol_exporter_k8sevents_writes", "outcome", "adopted_series"))
}

// TestAdoptLeavesLegacyRecordsAlone: records that are not a series (the
// processor's legacy mode, keyed with their note) adopt nothing, and a
// restarted exporter's record of its own object (AlreadyExists) is still
// written to its slot: exact counts, one object per record name.
func TestAdoptLeavesLegacyRecordsAlone(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rec := func(name string, count int64) k8sevent.Event {
		ev := legacyRecord(name, count, t0.Add(time.Duration(count)*time.Second))
		ev.Regarding.Name, ev.Regarding.UID = "legacy", "uid-legacy"
		return ev
	}
	a, _ := r.start(t, adopter(k8sevent.APICoreV1, "tier2-0"))
	send(t, a, rec("legacy.a", 1), rec("legacy.a", 3))
	again, _ := r.start(t, adopter(k8sevent.APICoreV1, "tier2-0")) // a restart: nothing remembered
	d, _ := r.start(t, adopter(k8sevent.APICoreV1, "tier2-3"))
	send(t, d, rec("legacy.d", 2))
	send(t, again, rec("legacy.a", 5))
	objs := r.aboutPod(t, "legacy")
	require.Len(t, objs, 2, "one object per legacy record name")
	for _, o := range objs {
		want := map[string]int32{"legacy.a": 5, "legacy.d": 2}[o.Name]
		assert.Equal(t, want, o.Count, o.Name)
		assert.Len(t, slots(&o), 1, "%s: one slot", o.Name)
	}
}

// TestAdoptFaultOnTheLastRecords: both series' last records (finished)
// are written at once while every write of the shared object fails: 503
// once, 503 for a while, the answer lost after the server applied it
// (once, for a while). The object ends with the exact sum through both
// APIs, a watch never sees its count go down, and it stays the only one.
func TestAdoptFaultOnTheLastRecords(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	eachAdoptFault(t, func(t *testing.T, api string, f fault, id string) {
		runAdoptFault(t, r, api, f, "last-"+id)
	})
}

// eachAdoptFault runs a subtest per API and per fault of the adoption
// tests (503 for a while, an answer lost once and for a while, 503 once);
// id names both.
func eachAdoptFault(t *testing.T, run func(t *testing.T, api string, f fault, id string)) {
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		short := map[string]string{k8sevent.APIEventsV1: "new", k8sevent.APICoreV1: "old"}[api]
		for _, f := range []fault{faults[1], faults[6], faults[7],
			{name: "503-once", rule: faultproxy.Rule{Action: faultproxy.Fail, Code: 503, Times: 1}}} {
			t.Run(short+"/"+f.name, func(t *testing.T) { run(t, api, f, short+"-"+f.name) })
		}
	}
}

func runAdoptFault(t *testing.T, r *rig, api string, f fault, pod string) {
	fr := r.withProxy(t)
	cw := watchCounts(t, r, pod)
	exps := fr.twoAdopters(t, api)
	as := seriesOf(pod, pod+".a", t0, 1, 2, 3, 7)
	ds := seriesOf(pod, pod+".d", t0.Add(30*time.Second), 1, 2, 4)
	send(t, exps[0], as[:3]...)
	send(t, exps[1], ds[:2]...)

	rule := f.rule
	rule.Verb, rule.Path = "PATCH", apiPath(api)+"/namespaces/shop/events/"+pod+".a"
	h := fr.proxy.Add(rule)
	var wg sync.WaitGroup
	for i, last := range []k8sevent.Event{as[3], ds[2]} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(t, exps[i], last)
		}()
	}
	hits := 1
	if f.forAWhile {
		hits = 3
	}
	require.Eventually(t, func() bool { return h.Acted() >= hits }, 30*time.Second, 10*time.Millisecond, "the fault was injected")
	h.Remove()
	wg.Wait()

	const want = 7 + 4
	core, events, err := r.occurrences(t, pod+".a")
	require.NoError(t, err)
	assert.Equal(t, []int64{want, want}, []int64{core, events}, "exact: the sum of both series; fault acted %d times", h.Acted())
	assert.Len(t, r.aboutPod(t, pod), 1, "one object for the series")
	cw.awaitLast(t, pod+".a", want)
	cw.assertNeverDown(t)
	t.Logf("%s: counts seen %v", pod, fmt.Sprint(cw.seen))
}

// TestAdoptFaultOnTheAdoptingWrite: the new owner's series is one
// occurrence (a singleton: its first record is its last), so its adopting
// write is the worst moment. Its listing fails for a while (503), then its
// patch is applied and the answer lost. The object counts both series
// exactly, once, and stays the only one.
func TestAdoptFaultOnTheAdoptingWrite(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, api := range []string{k8sevent.APIEventsV1, k8sevent.APICoreV1} {
		short := map[string]string{k8sevent.APIEventsV1: "new", k8sevent.APICoreV1: "old"}[api]
		t.Run(short, func(t *testing.T) {
			pod := "first-" + short
			fr := r.withProxy(t)
			cw := watchCounts(t, r, pod)
			exps := fr.twoAdopters(t, api)
			send(t, exps[0], seriesOf(pod, pod+".a", t0, 1, 2, 3)...)
			list := fr.proxy.Add(faultproxy.Rule{Verb: "GET", Path: "/api/v1/namespaces/shop/events", Query: "fieldSelector",
				Action: faultproxy.Fail, Code: 503, Times: 3})
			lost := fr.proxy.Add(faultproxy.Rule{Verb: "PATCH", Path: apiPath(api) + "/namespaces/shop/events/" + pod + ".a",
				Action: faultproxy.ApplyDropAnswer, Times: 1})
			send(t, exps[1], seriesOf(pod, pod+".d", t0.Add(30*time.Second), 1)...)
			assert.Equal(t, 3, list.Acted(), "the listing failed three times")
			assert.Equal(t, 1, lost.Acted(), "the adopting write's answer was lost")

			core, events, err := r.occurrences(t, pod+".a")
			require.NoError(t, err)
			assert.Equal(t, []int64{4, 4}, []int64{core, events}, "exact: 3 + 1, the lost answer's write counted once")
			objs := r.aboutPod(t, pod)
			require.Len(t, objs, 1, "one object for the series")
			assert.Len(t, slots(&objs[0]), 2, "a slot per series")
			cw.awaitLast(t, pod+".a", 4)
			cw.assertNeverDown(t)
		})
	}
}
