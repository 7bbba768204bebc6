package k8seventsreceiver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/events"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// pipelineFault is what the pipeline does with the record a relist must
// emit, the last of its Event's series: the worst moment to lose it.
type pipelineFault string

const (
	takesIt             pipelineFault = "takes it"
	refusesOnce         pipelineFault = "refuses it once"
	refusesUntilStopped pipelineFault = "refuses it until the receiver stops"
)

var pipelineFaults = []pipelineFault{takesIt, refusesOnce, refusesUntilStopped}

// restartAfterGone starts the receiver again on g's checkpoint, whose
// resourceVersion the test compacted away, into a pipeline that treats the
// records of Event name per fault. With refusesUntilStopped, the receiver
// is stopped while it retries, and started again with the pipeline
// healthy. Then it writes the sentinel and returns what was emitted once
// the sentinel has come.
func restartAfterGone(t *testing.T, g *gap, mutate func(*Config), fault pipelineFault, name string) []k8sevent.Event {
	t.Helper()
	sink := new(consumertest.LogsSink)
	pipeline := &refusing{sink: sink, name: name}
	pipeline.on.Store(fault != takesIt)
	if fault == refusesOnce {
		pipeline.limit = 1
	}
	rcv := g.r.startInto(t, fileStorage(t, g.dir), g.r.kubeconfig, pipeline, mutate)
	if fault == refusesUntilStopped {
		require.Eventually(t, func() bool { return pipeline.refused.Load() >= 3 }, 60*time.Second, 10*time.Millisecond,
			"the pipeline refused %s's record, and the receiver retried", name)
		require.NoError(t, rcv.Shutdown(context.Background()))
		pipeline.on.Store(false)
		g.r.startInto(t, fileStorage(t, g.dir), g.r.kubeconfig, pipeline, mutate)
	}
	g.create(t, sentinel, time.Now().Truncate(time.Second))
	got := waitFor(t, sink, sentinel)
	if fault != takesIt {
		assert.Positive(t, pipeline.refused.Load(), "the fault happened")
	}
	assertOneRelist(t, g.r.tel)
	return got
}

// assertExact checks every record emitted in ns, over all runs, against the
// Events the API server holds: for each Event the counts its records carry
// rise strictly (no occurrence emitted twice) and the last is its count (no
// occurrence lost), so the occurrences they add sum to its count; and no
// record is of another Event.
func assertExact(t *testing.T, r *rig, ns string, records []k8sevent.Event) {
	t.Helper()
	counts := map[string][]int64{}
	for _, ev := range records {
		counts[ev.Name] = append(counts[ev.Name], ev.Occurrences())
	}
	stored, err := r.cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for i := range stored.Items {
		want := k8sevent.FromEventsV1(&stored.Items[i])
		got := counts[want.Name]
		var sum, prev int64
		for _, c := range got {
			assert.Greater(t, c, prev, "%s: an occurrence emitted twice: counts %v", want.Name, got)
			sum, prev = sum+c-prev, c
		}
		assert.Equal(t, want.Occurrences(), sum, "%s: occurrences emitted (counts %v)", want.Name, got)
		delete(counts, want.Name)
	}
	assert.Empty(t, counts, "records of Events the server does not hold")
}

// finishSeries writes what client-go's tools/events broadcaster writes when
// it finishes a series (finishSeries, 6 minutes after its last
// occurrence) or refreshes it (every 30 minutes): the strategic merge patch
// from the Event without series to the Event with it, made as its
// createPatchBytesForSeries makes it, sent through its own EventSinkImpl.
// A test cannot wait those minutes, so it writes the patch itself.
func finishSeries(t *testing.T, r *rig, ns, name string, count int32, lastObserved time.Time) *eventsv1.Event {
	t.Helper()
	ev, err := r.cs.EventsV1().Events(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	ev.Series = &eventsv1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(lastObserved)}
	without := ev.DeepCopy()
	without.Series = nil
	before, err := json.Marshal(without)
	require.NoError(t, err)
	after, err := json.Marshal(ev)
	require.NoError(t, err)
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, eventsv1.Event{})
	require.NoError(t, err)
	out, err := (&events.EventSinkImpl{Interface: r.cs.EventsV1()}).Patch(context.Background(), ev, patch)
	require.NoError(t, err)
	return out
}

// TestExactRelistEmitsASeriesWrittenWithAnOlderTime: client-go's
// tools/events recorder writes series E (counts 1 and 2) and the receiver
// emits it; E occurs three times more, which the recorder only counts; a
// second later it writes Event F, whose time becomes the receiver's
// watermark. The receiver stops; the recorder finishes E (count 5, its
// lastObservedTime before F's); etcd is compacted past the checkpoint. The
// receiver starts again: 410, relist. E changed after the checkpoint, by
// the server's order, although its time is before the watermark: its
// count 5 is emitted, once, whether the pipeline takes it, refuses it once,
// or refuses it until the receiver stops (and the next start goes on).
func TestExactRelistEmitsASeriesWrittenWithAnOlderTime(t *testing.T) {
	r := newRig(t, kubetest.WithAPIServerFlags("--watch-cache=false"))
	for i, fault := range pipelineFaults {
		t.Run(string(fault), func(t *testing.T) {
			ns := "older-series-" + string(rune('a'+i))
			r.namespace(t, ns)
			g := &gap{r: r, ns: ns, dir: t.TempDir()}
			eventsAPI := func(c *Config) {
				c.Namespaces = []string{ns}
				c.Storage = &storageID
			}
			first, sink := r.start(t, fileStorage(t, g.dir), eventsAPI)
			watching(t, first)
			rec := r.eventsRecorder(t, "default-scheduler")
			occur := func() {
				rec.Eventf(pod(ns, "web-0"), nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/3 nodes are available")
			}
			occur()
			e := waitRecord(t, sink, "web-0", 1)
			occur() // the recorder patches the series at once: count 2
			waitRecord(t, sink, "web-0", 2)
			occur()
			occur()
			occur()
			last := time.Now() // the recorder keeps occurrences 3..5 in its cache
			require.Eventually(t, func() bool { return time.Now().Truncate(time.Second).After(last) },
				2*time.Second, 10*time.Millisecond, "the clock is in the second after the last occurrence")
			rec.Eventf(pod(ns, "web-1"), nil, corev1.EventTypeNormal, "Scheduled", "Binding", "assigned web-1")
			f := waitRecord(t, sink, "web-1", 1)
			require.NoError(t, first.Shutdown(context.Background()))

			finished := finishSeries(t, r, ns, e.Name, 5, last)
			require.True(t, finished.Series.LastObservedTime.Time.Before(f.Time.Truncate(time.Second)),
				"E's last occurrence %s is before the watermark's second (F at %s)", finished.Series.LastObservedTime, f.Time)
			r.compact(t)

			again := restartAfterGone(t, g, eventsAPI, fault, e.Name)
			assertExact(t, r, ns, append(received(t, sink), again...))
		})
	}
}

// waitRecord waits (bounded) for a record of the Event about object
// regarding with count occurrences, and returns it.
func waitRecord(t *testing.T, sink *consumertest.LogsSink, regarding string, count int64) k8sevent.Event {
	t.Helper()
	var found k8sevent.Event
	require.Eventually(t, func() bool {
		for _, ev := range received(t, sink) {
			if ev.Regarding.Name == regarding && ev.Occurrences() == count {
				found = ev
				return true
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "waiting for %s's record with count %d", regarding, count)
	return found
}

// TestExactRelistAfterAFirstStartWithInitialNoneSkipsWhatWasThere: five
// Events are stored; a receiver (initial: none) starts for the first time,
// emits nothing and stops. During the gap one of the five occurs again and
// a new Event is written; etcd is compacted past the checkpoint. Started
// again (410, relist), the receiver emits those two, once, and none of the
// four that were there before its first start, whatever the pipeline does
// with the record of the one that occurred again.
func TestExactRelistAfterAFirstStartWithInitialNoneSkipsWhatWasThere(t *testing.T) {
	r := newRig(t, kubetest.WithAPIServerFlags("--watch-cache=false"))
	for i, fault := range pipelineFaults {
		t.Run(string(fault), func(t *testing.T) {
			ns := "initial-none-" + string(rune('a'+i))
			r.namespace(t, ns)
			g := &gap{r: r, ns: ns, dir: t.TempDir(), base: time.Now().Add(-time.Hour).Truncate(time.Second)}
			for _, name := range []string{"old-0", "old-1", "old-2", "old-3", "old-4"} {
				g.create(t, name, g.base)
			}
			first, sink := r.start(t, fileStorage(t, g.dir), withStorage(ns))
			watching(t, first)
			require.NoError(t, first.Shutdown(context.Background()))
			require.Zero(t, sink.LogRecordCount(), "initial: none emits nothing of what was there")

			g.occur(t, "old-3", time.Now().Truncate(time.Second))
			g.create(t, "new", time.Now().Truncate(time.Second))
			r.compact(t)

			got := restartAfterGone(t, g, withStorage(ns), fault, "old-3")
			assert.Equal(t, map[string][]int64{"old-3": {2}, "new": {1}, sentinel: {1}}, occurrences(got),
				"what changed after the first start, once; nothing that was there before it")
		})
	}
}
