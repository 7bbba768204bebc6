package k8seventexporter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// written is one write as a watch of every namespace saw it, in the API
// server's order.
type written struct {
	ns, name string
	count    int32
}

// writeLog watches every Event write from now on.
type writeLog struct {
	mu    sync.Mutex
	all   []written
	ended bool // the watch closed: writes after that are missing
}

// watchWrites watches with kubetest's WatchClientset: the harness clients'
// 30 s request timeout would end the watch silently (BenchmarkFreshness once
// waited 5 minutes for a write its watch had stopped seeing).
func (r *rig) watchWrites(t *testing.T) *writeLog {
	t.Helper()
	w, err := r.srv.WatchClientset(t).EventsV1().Events(metav1.NamespaceAll).Watch(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	log := &writeLog{}
	go func() {
		for ev := range w.ResultChan() {
			if e, ok := ev.Object.(*eventsv1.Event); ok && ev.Type != watch.Deleted {
				log.mu.Lock()
				log.all = append(log.all, written{ns: e.Namespace, name: e.Name, count: int32(k8sevent.EventsV1Occurrences(e))})
				log.mu.Unlock()
			}
		}
		log.mu.Lock()
		log.ended = true
		log.mu.Unlock()
	}()
	return log
}

func (l *writeLog) snapshot() []written {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]written(nil), l.all...)
}

// neverDown fails when an object's count went down between two writes, or
// when the watch ended early (it would have missed writes).
func (l *writeLog) neverDown(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	ended := l.ended
	l.mu.Unlock()
	require.False(t, ended, "the watch ended before the test did")
	last := map[string]int32{}
	for _, w := range l.snapshot() {
		key := w.ns + "/" + w.name
		assert.GreaterOrEqual(t, w.count, last[key], "%s: the count went down", key)
		last[key] = w.count
	}
}

// TestHostileFloodDoesNotDelayOtherNamespaces: the factory's exporter
// with a persistent sending_queue (its defaults for it: QPS 20, burst 50,
// a lookahead of 256 requests, batch) is flooded with distinct records in
// namespace shop; one record for namespace other, sent while the flood is
// being written, is written after at most a handful of flood writes, not
// after the flood. Every flood object ends with its exact count and no
// count ever goes down. The flood comes in requests of 100 records (a
// processor's batch) and of one (a sender that sends each record alone:
// 600 requests, more than the lookahead; the queue's batch merges them).
func TestHostileFloodDoesNotDelayOtherNamespaces(t *testing.T) {
	t.Parallel()
	for _, batchSize := range []int{100, 1} {
		t.Run(fmt.Sprintf("requests-of-%d", batchSize), func(t *testing.T) { testFloodDelay(t, batchSize) })
	}
}

func testFloodDelay(t *testing.T, batchSize int) {
	r := newRig(t)
	log := r.watchWrites(t)
	exp, tel := r.startQueued(t, nil)
	const objects = 300
	flood := func(i int) string { return fmt.Sprintf("web-1.flood-%03d", i) }
	// Each object's singleton, then its series at 2: two writes each.
	for _, state := range []string{k8sevent.StateSingleton, k8sevent.StateStarted} {
		for start := 0; start < objects; start += batchSize {
			var evs []k8sevent.Event
			for i := start; i < start+batchSize; i++ {
				count := map[string]int64{k8sevent.StateSingleton: 1, k8sevent.StateStarted: 2}[state]
				evs = append(evs, record(flood(i), state, count, t0.Add(time.Duration(count)*time.Second)))
			}
			send(t, exp, evs...)
		}
	}
	floodWrites := func() int64 {
		return counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "created") +
			counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched")
	}
	// Past the burst the flood is written at 20/s: the other namespace's
	// record meets it in full flow.
	const burst = 50
	require.Eventually(t, func() bool { return floodWrites() > burst+10 }, 60*time.Second, 10*time.Millisecond)

	quiet := record("api-1.quiet", k8sevent.StateSingleton, 1, t0)
	quiet.Regarding.Namespace, quiet.Regarding.Name = "other", "api-1"
	before := floodWrites() // flood writes done before it was sent
	send(t, exp, quiet)
	require.Eventually(t, func() bool {
		for _, w := range log.snapshot() {
			if w.ns == "other" {
				return true
			}
		}
		return false
	}, 60*time.Second, 10*time.Millisecond, "the other namespace's Event is written")

	var ahead int64 // flood writes the API server applied before it
	for _, w := range log.snapshot() {
		if w.ns == "other" {
			break
		}
		ahead++
	}
	// Once its push put it in its lane, at most the write in flight and one
	// turn of the flood's lane come first (2). Between ConsumeLogs and that,
	// the batcher holds it for up to batchFlush (200 ms), then a worker
	// prepares it: allowed one second of writes at the QPS cap (20), five
	// times the flush. First in first out, about 550 came first.
	const bound = 2 + 20
	assert.LessOrEqual(t, ahead-before, int64(bound), "flood writes after the other namespace's record was sent")
	assert.Less(t, ahead, int64(2*objects), "written before the flood is done")
	t.Logf("flood writes before the other namespace's Event: %d (%d of them after it was sent), of %d", ahead, ahead-before, 2*objects)

	// Nothing lost to fairness: every flood object at its exact count.
	want := map[string]int32{}
	for i := range objects {
		want[flood(i)] = 2
	}
	r.waitForCounts(t, want)
	// Requests the queue hands to the lanes at once may enter them in
	// either order: an object's singleton that comes after its series at
	// 2 is skipped (stale), never written over it.
	log.neverDown(t)
}

// TestFaultOneNamespaceFailingDoesNotBlockOthers: the write of the last
// record of a series in namespace shop fails (503 for a while). Without a
// queue its push is not answered meanwhile, while the pushes of other
// callers for namespace other are written and answered; once the fault
// clears the shop object ends with its exact count, its push is answered,
// and no count ever went down.
func TestFaultOneNamespaceFailingDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fr := r.withProxy(t)
	log := r.watchWrites(t)
	exp, tel := fr.faultExporter(t, k8sevent.APIEventsV1, componenttest.NewNopHost())
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })

	const name = "web-1.last-fails"
	send(t, exp, record(name, k8sevent.StateSingleton, 1, t0), record(name, k8sevent.StateStarted, 2, t0.Add(time.Second)),
		record(name, k8sevent.StateOngoing, 5, t0.Add(time.Minute)))
	c, e, err := r.occurrences(t, name)
	require.NoError(t, err)
	require.Equal(t, []int64{5, 5}, []int64{c, e}, "a push is answered once its records are written")

	h := fr.proxy.Add(faultproxy.Rule{Verb: "PATCH", Path: "/apis/events.k8s.io/v1/namespaces/shop/events/" + name,
		Action: faultproxy.Fail, Code: 503})
	pushed := make(chan error, 1)
	go func() {
		pushed <- exp.ConsumeLogs(context.Background(), encodeLogs(record(name, k8sevent.StateFinished, 7, t0.Add(2*time.Minute))))
	}()
	require.Eventually(t, func() bool { return h.Acted() >= 1 }, 30*time.Second, 10*time.Millisecond, "the last record's write fails")

	elsewhere := func(name, state string, count int64) k8sevent.Event {
		ev := record(name, state, count, t0.Add(time.Duration(count)*time.Second))
		ev.Regarding.Namespace, ev.Regarding.Name, ev.Regarding.UID = "other", "api-1", "uid-api-1"
		return ev
	}
	send(t, exp, elsewhere("api-1.a", k8sevent.StateSingleton, 1))
	send(t, exp, elsewhere("api-1.a", k8sevent.StateStarted, 2))
	send(t, exp, elsewhere("api-1.a", k8sevent.StateOngoing, 4), elsewhere("api-1.b", k8sevent.StateSingleton, 1))
	a, errA := r.srv.Clientset().EventsV1().Events("other").Get(context.Background(), "api-1.a", metav1.GetOptions{})
	_, errB := r.srv.Clientset().EventsV1().Events("other").Get(context.Background(), "api-1.b", metav1.GetOptions{})
	require.NoError(t, errA)
	require.NoError(t, errB)
	assert.Equal(t, int64(4), k8sevent.EventsV1Occurrences(a), "namespace other is written while shop's write fails")
	require.Eventually(t, func() bool { return h.Acted() >= 3 }, 30*time.Second, 10*time.Millisecond, "retried in place")
	c, e, err = r.occurrences(t, name)
	require.NoError(t, err)
	assert.Equal(t, []int64{5, 5}, []int64{c, e}, "the failing write did not pass the fault")
	select {
	case err := <-pushed:
		t.Fatalf("the push was answered (%v) while its record's write fails", err)
	default:
	}

	h.Remove()
	require.NoError(t, <-pushed, "answered once written")
	c, e, err = r.occurrences(t, name)
	require.NoError(t, err)
	assert.Equal(t, []int64{7, 7}, []int64{c, e}, "exact once the fault clears")
	log.neverDown(t)
	assert.Equal(t, 1, r.objectsAbout(t, "web-1"), "one object per series")
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "stale"))
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "rejected"))
}
