package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// faultOutage is how long the fault tests keep the destination down:
// as long as the outage first reported, long enough for exporterhelper to retry several
// times and for series to finish while it lasts.
const faultOutage = 30 * time.Second

// crashWindow bounds the records a SIGKILL makes a sink get again (it
// counts nothing twice): after a restart the processor replays the batches
// it accepted after its last save, emitting again what it decided from
// them. It saves every 5 s (its README), the receiver's checkpoint lags by
// up to a second, and 2 s are left for a save that runs late on a loaded
// machine: only occurrences that reached the source within crashWindow
// before the kill can be in such a record. The tests with this bound stay
// serial (package doc).
const crashWindow = 8 * time.Second

// faultRig is the mirror of the fault tests: a source API server A into
// which a storm is replayed, a destination B, and a collector mirroring A
// into B (k8sevents → eventseries → k8sevents) with a configuration of the
// test's.
type faultRig struct {
	srcSrv, dstSrv *kubetest.Server
	src, dst       kubernetes.Interface
	spec           mirrorSpec
	dir            string
	occs           []storm.Occurrence
	nss            []string
	before         [2]int64
	dstWritesLost  int64 // B's accepted Event writes before its last restart (its counters start at 0 again)
	counts         *countMonitor
	start          time.Time
}

// newFaultRig starts A and B (dstOpts configure B), creates the storm's
// namespaces in both and starts reading B's counts. spec gives the
// processor and exporter settings; the kubeconfigs, the reporting
// controller and the namespaces are filled in here.
func newFaultRig(ctx context.Context, t *testing.T, name string, occs []storm.Occurrence, spec mirrorSpec, dstOpts ...kubetest.Option) *faultRig {
	t.Helper()
	binary(t) // skips before starting API servers when the collector is not built
	rig := &faultRig{start: time.Now(), occs: occs, nss: storm.Namespaces(occs), dir: t.TempDir()}
	rig.srcSrv, rig.dstSrv = kubetest.Start(t), kubetest.Start(t, dstOpts...)
	rig.src, rig.dst = rig.srcSrv.Clientset(), rig.dstSrv.Clientset()
	for _, cs := range []kubernetes.Interface{rig.src, rig.dst} {
		require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, occs))
	}
	spec.kubeA, spec.kubeB = rig.srcSrv.Kubeconfig(t), rig.dstSrv.Kubeconfig(t)
	spec.controller, spec.namespaces = "k8sevents.io/e2e-fault-"+name, rig.nss
	if spec.storage != "" {
		spec.storage = filepath.Join(rig.dir, "storage")
	}
	rig.spec = spec
	rig.before = eventWritesOf(ctx, t, rig.src, rig.dst)
	rig.counts = watchCounts(rig.dstSrv.WatchClientset(t), ourEventsIn(spec.controller, rig.nss))
	t.Cleanup(func() {
		select {
		case <-rig.counts.done:
		default:
			rig.counts.finish()
		}
	})
	return rig
}

// collector starts a collector with the rig's configuration and directory
// (a restarted one finds the storage of the one before).
func (rig *faultRig) collector(t *testing.T) *collector {
	t.Helper()
	return startCollector(t, rig.dir, rig.spec.config())
}

// storm starts the Raw replay of the rig's storm into A.
func (rig *faultRig) storm(ctx context.Context, speed float64) *stormRun {
	return startRawStorm(ctx, rig.srcSrv.RESTConfig(), rig.occs, speed, 0)
}

// heldStorm starts the replay with occurrence holdAt and the rest held until
// run.release: however long a fault takes to set up on a loaded machine,
// that part of the storm comes after it.
func (rig *faultRig) heldStorm(ctx context.Context, speed float64, holdAt int) *stormRun {
	return startRawStorm(ctx, rig.srcSrv.RESTConfig(), rig.occs, speed, holdAt)
}

// stopDestination stops B's API server (etcd keeps running) and returns when.
// B's write count is read first: a restarted API server counts from 0. A
// write answered between that read and the stop is missed by the count.
func (rig *faultRig) stopDestination(ctx context.Context, t *testing.T) time.Time {
	t.Helper()
	n, err := eventWrites(ctx, rig.dst, "200", "201")
	require.NoError(t, err)
	rig.dstWritesLost += n
	require.NoError(t, rig.dstSrv.StopAPIServer(), "stop the destination")
	return time.Now()
}

// awaitOutageEnd returns once B has been down for faultOutage since down.
// The wait is the fault itself (how long the destination is away), not a
// guess at how long something else takes.
func awaitOutageEnd(ctx context.Context, t *testing.T, down time.Time) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatalf("during the outage: %v", ctx.Err())
	case <-time.After(time.Until(down.Add(faultOutage))):
	}
}

// restartDestination starts B's API server again, on the same port and
// etcd, and returns how long it was down.
func (rig *faultRig) restartDestination(t *testing.T, down time.Time) time.Duration {
	t.Helper()
	require.NoError(t, rig.dstSrv.StartAPIServer(), "restart the destination")
	return time.Since(down).Round(time.Millisecond)
}

// awaitMirrored waits until markers written into A now are in B: everything
// the receiver saw before them has been through the exporter.
func (rig *faultRig) awaitMirrored(ctx context.Context, t *testing.T, id string) {
	t.Helper()
	awaitMirrored(ctx, t, rig.src, rig.dst, rig.nss, id, 2*time.Minute)
}

// compare stops reading B's counts and compares A with B; drops are the
// counts seen going down, including any between the last read and the end.
func (rig *faultRig) compare(ctx context.Context, t *testing.T) (r mirrorResult, drops []string) {
	t.Helper()
	drops, reads := rig.counts.finish()
	last := rig.counts.snapshot()
	before := rig.before
	if rig.dstWritesLost > 0 { // B was restarted: its count started again from 0
		before[1] -= rig.dstWritesLost
	}
	r = compareMirror(ctx, t, rig.src, rig.dst, rig.nss, rig.spec.controller, before)
	drops = append(drops, belowSnapshot(r, last)...)
	t.Logf("destination counts read %d times while the test ran", reads)
	assert.Positive(t, reads, "the destination's counts were read during the test")
	return r, drops
}

// awaitIdle waits until the processor holds no entry any more (every series
// finished, every singleton forgotten: with a short finish_after, all
// records have been emitted) and the exporter has finished with every
// record emitted (written, or dropped for good).
func awaitIdle(t *testing.T, c *collector, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		p := c.scrape(t).Pipeline()
		open, out, done := p.Open, p.RecordsOut, p.Done
		return open == 0 && done == out, fmt.Sprintf("open entries %v, records out %v, exporter done %v", open, out, done)
	})
}

// retryable is how many writes the exporter has seen fail and retried.
func retryable(m collectorproc.Metrics, reason ...string) float64 {
	var labels []string
	for _, r := range reason {
		labels = append(labels, "reason="+r)
	}
	return m.Sum("otelcol_exporter_k8sevents_retryable_failures", labels...)
}

// awaitRetries waits until the collector's exporter has more failed writes
// than after: writes met the fault and are being retried.
func awaitRetries(t *testing.T, c *collector, after float64, timeout time.Duration) collectorproc.Metrics {
	t.Helper()
	var m collectorproc.Metrics
	eventually(t, timeout, func() (bool, string) {
		m = c.scrape(t)
		return retryable(m) > after, fmt.Sprintf("retryable failures %v, want more than %v", retryable(m), after)
	})
	return m
}

// finishFault compares A and B and reports the row; the caller asserts.
func (rig *faultRig) finishFault(ctx context.Context, t *testing.T, name string, sent int64) (mirrorResult, []string) {
	t.Helper()
	r, drops := rig.compare(ctx, t)
	newFaultReport(name, sent, r, rig.start).log(t)
	return r, drops
}

// finishedRecords is how many finished records the processor has emitted.
func finishedRecords(m collectorproc.Metrics) float64 {
	return m.Sum("otelcol_processor_eventseries_records", "state=finished")
}
