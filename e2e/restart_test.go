package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// restartDowntime is how long the collector stays down while the storm goes
// on: long enough for a few dozen occurrences to land in A unseen.
const restartDowntime = 3 * time.Second

// restartRun is one storm through a mirror that is stopped midway.
type restartRun struct {
	name       string
	occs       []storm.Occurrence
	recorder   string
	controller string
	crash      bool // Kill instead of SIGTERM
}

// runRestart mirrors a storm from A into B with file_storage (receiver
// checkpoint, persistent exporter queue) in a directory kept across the
// restart; the collector is stopped once part of the storm is mirrored,
// stays down for restartDowntime while the storm goes on, and starts again
// with the same directory and configuration. After the storm and the
// markers, a SIGTERM flushes the open series into the persistent queue and
// a third run writes them; then A and B are compared.
func runRestart(t *testing.T, srvA, srvB *kubetest.Server, run restartRun) (mirrorResult, restartTrace) {
	a, b := srvA.Clientset(), srvB.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nss := storm.Namespaces(run.occs)
	for _, cs := range []kubernetes.Interface{a, b} {
		require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, run.occs))
	}
	before := eventWritesOf(ctx, t, a, b) // A and B are shared with other subtests
	dir := t.TempDir()
	spec := mirrorSpec{kubeA: srvA.Kubeconfig(t), kubeB: srvB.Kubeconfig(t), controller: run.controller,
		namespaces: nss, storage: filepath.Join(dir, "storage")}
	first := startCollector(t, dir, spec.config())

	var sent atomic.Int64
	trace := restartTrace{sent: &sendLog{}}
	type result struct {
		st  stormsend.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := stormsend.Record(ctx, srvA.RESTConfig(), run.occs, stormsend.Options{
			Speed: 12, MaxDuration: 2 * time.Minute,
			Progress: func(s stormsend.Stats) { sent.Store(int64(s.Occurrences)); trace.sent.record(s) },
		}, run.recorder)
		done <- result{st, err}
	}()

	// Stop once a third of the storm was sent and the exporter has written
	// some of it: "after some but not all were mirrored".
	eventually(t, time.Minute, func() (bool, string) {
		m := first.scrape(t)
		writes := m.Sum("otelcol_exporter_k8sevents_writes")
		return sent.Load() >= int64(len(run.occs)/3) && writes > 0,
			fmt.Sprintf("storm sent %d of %d, exporter writes %v", sent.Load(), len(run.occs), writes)
	})
	logPipeline(t, "first collector, before the stop", first)
	sentAtStop := sent.Load()
	var err error
	trace.before, err = objectCounts(ctx, b, ourEventsIn(run.controller, nss))
	require.NoError(t, err)
	if run.crash {
		first.Kill()
		trace.stopped = time.Now()
	} else {
		require.NoError(t, first.Stop(time.Minute), "SIGTERM")
	}
	select {
	case r := <-done:
		t.Fatalf("the storm ended (%d occurrences) before the collector was down: lengthen it", r.st.Occurrences)
	case <-time.After(restartDowntime):
	}
	sentAtRestart := sent.Load()
	second := startCollector(t, dir, spec.config())

	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("storm did not end")
	}
	require.NoError(t, r.err)
	t.Logf("storm (%s): %d occurrences, %d writes, %d failures in %v; stopped after %d sent, restarted after %d",
		run.recorder, r.st.Occurrences, r.st.Writes, r.st.Failures, r.st.Elapsed.Round(time.Millisecond), sentAtStop, sentAtRestart)
	require.Less(t, sentAtStop, int64(r.st.Occurrences), "the collector must go down mid-storm")
	require.Greater(t, sentAtRestart, sentAtStop, "the storm must go on while the collector is down")

	awaitMirrored(ctx, t, a, b, nss, run.name, 2*time.Minute)
	logPipeline(t, "second collector, before SIGTERM", second)
	require.NoError(t, second.Stop(time.Minute), "SIGTERM: flush the open series")
	// With a persistent queue the flush waits in storage until the
	// collector runs again. A third run drains it: the queue is FIFO, so
	// once new markers are in B, so is the flush.
	third := startCollector(t, dir, spec.config())
	awaitMirrored(ctx, t, a, b, nss, run.name+"-drained", 2*time.Minute)
	logPipeline(t, "third collector (drains the flush)", third)
	require.NoError(t, third.Stop(time.Minute))
	return compareMirror(ctx, t, a, b, nss, run.controller, before), trace
}

// restartTrace is what runRestart saw around the stop.
type restartTrace struct {
	sent    *sendLog         // the storm's progress over time
	before  map[string]int64 // B's count of each object just before the stop
	stopped time.Time        // when the collector was killed (crash only)
}

// TestRestart is end-to-end test 4: the mirror of test 2 with file_storage
// (receiver checkpoint, persistent exporter queue), stopped mid-storm and
// started again while the storm goes on. A and B are shared by the
// subtests: each mirrors a storm in namespaces of its own, as a reporting
// controller of its own.
//
// What counts as a duplicate: the exporter writes one object per processor
// series, named after the series' first occurrence and key; two objects of
// one series key (regarding object, reason, type, action, note) are
// duplicates when their occurrence intervals [eventTime, lastObservedTime]
// overlap, i.e. both claim the same occurrences. A second object that
// starts after the first ended is a continuation (a processor that starts
// empty after a restart cannot know the series was open); an occurrence it
// counts again shows in the exact totals.
func TestRestart(t *testing.T) {
	binary(t)
	start := time.Now()
	srvA, srvB := kubetest.Start(t), kubetest.Start(t)

	// SIGTERM: the receiver saves its checkpoint, the processor flushes its
	// open series into the persistent queue, which the second collector
	// drains. The design promises nothing lost and nothing twice: exact
	// totals per (object, reason) and no duplicate objects.
	t.Run("sigterm", func(t *testing.T) {
		r, _ := runRestart(t, srvA, srvB, restartRun{name: "sigterm", occs: stormWindow(t, "crashloop", 6*time.Minute),
			recorder: stormsend.RecorderLegacy, controller: "k8sevents.io/e2e-restart-term"})
		assertExact(t, r)
	})

	// Kill: a crash. The receiver may emit again up to a second of records
	// (its checkpoint lags), the persistent queue keeps what was queued,
	// and the processor restores the state it saved last (every 5 s): what
	// it counted since, it may count again when the records come again. What
	// a crash promises: every (object, reason) of A reaches B with at least
	// A's total (nothing lost: what was queued is kept, what was not is
	// emitted again); what is counted twice, and the objects of one series
	// that claim the same occurrences, are each at most the occurrences
	// sent within crashWindow (8 s: the 5 s save interval, the receiver's
	// second, 2 s of slack) before the kill; no object's count in B ends
	// below what it was just before the kill, or is seen going down.
	t.Run("kill", func(t *testing.T) {
		occs := stormWindow(t, "imagepull", 6*time.Minute)
		for i := range occs { // its own namespace: shop is the sigterm storm's
			occs[i].Regarding.Namespace = "imagepull"
		}
		r, trace := runRestart(t, srvA, srvB, restartRun{name: "kill", occs: occs,
			recorder: stormsend.RecorderLegacy, controller: "k8sevents.io/e2e-restart-kill", crash: true})
		bound := trace.sent.within(trace.stopped.Add(-crashWindow), trace.stopped)
		assertCrashPromise(t, r, bound, belowSnapshot(r, trace.before))
		if len(r.lines) > 0 {
			t.Logf("per pair:\n%s", strings.Join(r.lines, "\n"))
		}
	})
	t.Logf("took %v", time.Since(start).Round(time.Second))
}
