package k8seventexporter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// recordsWritten sums the exporter's finished writes, whatever their
// outcome (created, patched, adopted, stale, unchanged, ...).
func recordsWritten(t *testing.T, tel *componenttest.Telemetry) int64 {
	t.Helper()
	m, err := tel.GetMetric("otelcol_exporter_k8sevents_writes")
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
	}
	return n
}

// eventWrites sums the API server's creates and patches of Events so far.
func (r *rig) eventWrites(t *testing.T) int64 {
	t.Helper()
	q, err := kubetest.EventRequests(context.Background(), r.srv.Clientset())
	require.NoError(t, err)
	var n int64
	for k, v := range q {
		if strings.HasPrefix(k, "POST ") || strings.HasPrefix(k, "PATCH ") {
			n += v
		}
	}
	return n
}

// TestShutdownLeavesTheBacklogToThePersistentQueue: an exporter with a
// persistent queue holds a backlog (40 series of 4 records each, written
// at 5 writes/s) when the collector stops. It hands the records it has not
// written back to the queue instead of writing them all before it stops
// (TestScaleOut's collector once took over a minute to stop after SIGTERM,
// writing its backlog): once it stops, at most the record in flight is
// written. The next start writes the rest: every series ends
// with its final count, in one object, never going down. The code before
// failed the first assertion (it wrote the whole backlog while stopping).
func TestShutdownLeavesTheBacklogToThePersistentQueue(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	dir := t.TempDir()
	persistent := func(qps float32) func(*Config) {
		return func(c *Config) {
			persistentQueue(c)
			c.QPS, c.Burst = qps, 1
		}
	}
	wl := r.watchWrites(t)
	const series, steps = 40, 4
	name := func(i int) string { return fmt.Sprintf("web-1.shutdown-%02d", i) }
	want := map[string]int32{}
	extA := outageFileStorage(t, dir)
	expA, telA := r.outageExporter(t, outageHost{outageStorageID: extA}, persistent(5))
	for step := range steps {
		state := []string{k8sevent.StateSingleton, k8sevent.StateStarted, k8sevent.StateOngoing, k8sevent.StateFinished}[step]
		var evs []k8sevent.Event
		for i := range series {
			evs = append(evs, record(name(i), state, int64(step+1), t0.Add(time.Duration(step)*time.Second)))
			want[name(i)] = steps
		}
		send(t, expA, evs...)
	}
	require.Eventually(t, func() bool { return createdOrAdopted(t, telA) >= 3 }, 30*time.Second, 10*time.Millisecond,
		"the exporter is writing its backlog")

	// Shutdown's first step, taken here so that what follows is counted
	// from the moment it took effect: from now on only the record in flight
	// may still be written (one writer, one record at a time).
	expA.(stoppingFirst).e.stopping()
	atStop, requestsAtStop := recordsWritten(t, telA), r.eventWrites(t)
	require.NoError(t, expA.Shutdown(context.Background()))
	require.NoError(t, extA.Shutdown(context.Background()))
	during := recordsWritten(t, telA) - atStop
	t.Logf("exporter A: %d records written before its shutdown, %d during it, of %d; API writes during it %d",
		atStop, during, series*steps, r.eventWrites(t)-requestsAtStop)
	assert.LessOrEqual(t, during, int64(1), "records written during the shutdown: the one in flight at most")

	extB := outageFileStorage(t, dir)
	expB, _ := r.outageExporter(t, outageHost{outageStorageID: extB}, persistent(500))
	t.Cleanup(func() {
		require.NoError(t, expB.Shutdown(context.Background()))
		require.NoError(t, extB.Shutdown(context.Background()))
	})
	r.waitForCounts(t, want) // every series once, with its final count
	wl.neverDown(t)
}
