package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// restartDowntime is how long the collector stays down at least while the
// storm goes on (and until the storm has sent more): long enough for a few
// dozen occurrences to land in A unseen.
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
// a third run writes them; then A and B are compared. It returns B's count
// of each object just before the stop too.
func runRestart(t *testing.T, srvA, srvB *kubetest.Server, run restartRun) (mirrorResult, map[string]int64) {
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

	// The storm's last third waits until the collector is down, so that
	// part of it lands in A unseen however long the stop takes.
	var sent atomic.Int64
	type result struct {
		st  stormsend.Stats
		err error
	}
	done, hold := make(chan result, 1), make(chan struct{})
	go func() {
		st, err := stormsend.Record(ctx, srvA.RESTConfig(), run.occs, stormsend.Options{
			Speed: 12, MaxDuration: 2 * time.Minute, Hold: hold, HoldAt: len(run.occs) * 2 / 3,
			Progress: func(s stormsend.Stats) { sent.Store(int64(s.Occurrences)) },
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
	atStop, err := objectCounts(ctx, b, ourEventsIn(run.controller, nss))
	require.NoError(t, err)
	if run.crash {
		first.Kill()
	} else {
		require.NoError(t, first.Stop(time.Minute), "SIGTERM")
	}
	close(hold)
	time.Sleep(restartDowntime)
	eventually(t, time.Minute, func() (bool, string) {
		return sent.Load() > sentAtStop, fmt.Sprintf("storm sent %d, as many as at the stop", sent.Load())
	})
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
	return compareMirror(ctx, t, a, b, nss, run.controller, before), atStop
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
	parallel(t)
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

	// Kill: a crash. The persistent queue keeps what was queued; the
	// processor restores the state it saved last and replays its
	// write-ahead log, which holds every batch it accepted since; the
	// receiver resumes from a checkpoint that covers only what the
	// processor accepted. A crash promises what a SIGTERM does: exact
	// totals, no duplicate objects, and no object's count in B ending below
	// what it was just before the kill, however late the kill or a save
	// comes.
	t.Run("kill", func(t *testing.T) {
		occs := stormWindow(t, "imagepull", 6*time.Minute)
		for i := range occs { // its own namespace: shop is the sigterm storm's
			occs[i].Regarding.Namespace = "imagepull"
		}
		r, before := runRestart(t, srvA, srvB, restartRun{name: "kill", occs: occs,
			recorder: stormsend.RecorderLegacy, controller: "k8sevents.io/e2e-restart-kill", crash: true})
		assertExact(t, r)
		assert.Empty(t, belowSnapshot(r, before), "counts in B below what they were just before the kill")
		if len(r.lines) > 0 {
			t.Logf("per pair:\n%s", strings.Join(r.lines, "\n"))
		}
	})
	t.Logf("took %v", time.Since(start).Round(time.Second))
}
