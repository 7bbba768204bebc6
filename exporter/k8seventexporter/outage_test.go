package k8seventexporter

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// outageHost hands extensions (the file_storage of a persistent queue) to an exporter.
type outageHost map[component.ID]component.Component

func (h outageHost) GetExtensions() map[component.ID]component.Component { return h }

var outageStorageID = component.MustNewID("file_storage")

// outageFileStorage starts a file_storage extension on dir, as a collector
// does at each start; the caller shuts it down.
func outageFileStorage(t testing.TB, dir string) extension.Extension {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory, cfg.Compaction.Directory = dir, dir
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	return ext
}

// persistentQueue gives an exporter a persistent sending_queue, this
// exporter's defaults for it on the file_storage of outageHost.
func persistentQueue(c *Config) {
	q := defaultQueue()
	id := outageStorageID
	q.StorageID = &id
	c.Queue = configoptional.Some(q)
}

// startQueued is start with a persistent sending_queue (this exporter's
// defaults for it, on a file_storage of the test's).
func (r *rig) startQueued(t *testing.T, mutate func(*Config)) (exporter.Logs, *componenttest.Telemetry) {
	t.Helper()
	return r.startOn(t, storageHost(t), zap.NewNop(), func(c *Config) {
		persistentQueue(c)
		if mutate != nil {
			mutate(c)
		}
	})
}

// storageHost is a host with a file_storage for a persistent queue,
// stopped once the test's exporter is (cleanups run last first).
func storageHost(t *testing.T) outageHost {
	ext := outageFileStorage(t, t.TempDir())
	t.Cleanup(func() { _ = ext.Shutdown(context.Background()) })
	return outageHost{outageStorageID: ext}
}

// outageExporter builds an exporter as r.start does (same stable ID), but
// with the given host and without shutting it down at the end of the test:
// the caller does.
func (r *rig) outageExporter(t *testing.T, h component.Host, mutate func(*Config)) (exporter.Logs, *componenttest.Telemetry) {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: r.kubeconfig}
	cfg.ReportingController = "k8sevents.io/exporter"
	cfg.API = k8sevent.APIEventsV1 // no discovery: the exporter starts while the API server is down
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.BackOff.InitialInterval, cfg.BackOff.MaxInterval, cfg.BackOff.MaxElapsedTime = 100*time.Millisecond, time.Second, 5*time.Minute
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.ID = component.NewID(metadata.Type)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), h))
	return exp, tel
}

// eventCounts lists the Events of namespace shop: name -> series count.
func (r *rig) eventCounts(t *testing.T) (map[string]int32, int, error) {
	t.Helper()
	l, err := r.srv.Clientset().EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	out := map[string]int32{}
	for _, ev := range l.Items {
		out[ev.Name] = int32(k8sevent.EventsV1Occurrences(&ev))
	}
	return out, len(l.Items), nil
}

func queueSize(tel *componenttest.Telemetry) int64 {
	m, err := tel.GetMetric("otelcol_exporter_queue_size")
	if err != nil {
		return -1
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	if !ok || len(g.DataPoints) == 0 {
		return -1
	}
	return g.DataPoints[0].Value
}

const outageObjects, outageSteps = 100, 20

func outageName(i int) string { return fmt.Sprintf("web-1.outage-%03d", i) }

// outageRecord is object i's record at step: a singleton, started at 2,
// then ongoing growing by 1+i%3.
func outageRecord(i, step int) (k8sevent.Event, int64) {
	at := t0.Add(time.Duration(step) * time.Second)
	switch step {
	case 0:
		return record(outageName(i), k8sevent.StateSingleton, 1, at), 1
	case 1:
		return record(outageName(i), k8sevent.StateStarted, 2, at), 2
	}
	c := int64(2 + (step-1)*(1+i%3))
	return record(outageName(i), k8sevent.StateOngoing, c, at), c
}

// outageCounts is every object's count once step is written.
func outageCounts(step int) map[string]int32 {
	out := map[string]int32{}
	for i := range outageObjects {
		_, c := outageRecord(i, step)
		out[outageName(i)] = int32(c)
	}
	return out
}

// waitForCounts waits until namespace shop holds exactly the Events of
// want, with their counts, and says how long that took. Its bound is for
// liveness, not speed: it fails only once the counts have not grown for a
// minute (a loaded machine writes slowly, but it writes).
func (r *rig) waitForCounts(t *testing.T, want map[string]int32) time.Duration {
	t.Helper()
	const stalled = time.Minute
	start, grew := time.Now(), time.Now()
	var got map[string]int32
	var n int
	var total int64
	for {
		var err error
		got, n, err = r.eventCounts(t)
		if err == nil && n == len(want) && maps.Equal(got, want) {
			return time.Since(start)
		}
		var sum int64
		for _, c := range got {
			sum += int64(c)
		}
		if sum > total {
			total, grew = sum, time.Now()
		}
		if time.Since(grew) > stalled {
			t.Fatalf("after %v, no count grew for %v: %d objects, counts %v, want %v", time.Since(start), stalled, n, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOutageLosesNothing streams 2,000 records over 100 objects and stops
// kube-apiserver for 30 s in the middle, then again while the last record
// of every object waits to be written (the worst moment: no later record
// repairs a lost count). Every object ends up written once, with its final
// series count, and no record was skipped as already written.
func TestOutageLosesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, kubetest.OwnServer()) // it stops the API server
	// A persistent queue with this exporter's defaults for it: 32 MiB hold
	// the 900 records sent during the outage, and each push is answered
	// once it is in storage.
	ext := outageFileStorage(t, t.TempDir())
	exp, tel := r.outageExporter(t, outageHost{outageStorageID: ext}, persistentQueue)
	t.Cleanup(func() {
		require.NoError(t, exp.Shutdown(context.Background()))
		require.NoError(t, ext.Shutdown(context.Background()))
	})

	const objects, steps = outageObjects, outageSteps
	sendSteps := func(from, to int, pause time.Duration) {
		for s := from; s < to; s++ {
			for i := range objects {
				ev, _ := outageRecord(i, s)
				send(t, exp, ev)
				time.Sleep(pause)
			}
		}
	}

	begin := time.Now()
	sendSteps(0, steps/2, 0) // 1,000 records
	firstHalf := time.Since(begin)
	// Stop while the queue drains: every object exists, most updates are pending.
	require.Eventually(t, func() bool {
		return createdOrAdopted(t, tel) == objects
	}, 30*time.Second, 10*time.Millisecond)
	writtenBefore := counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "created") +
		counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched")

	require.NoError(t, r.srv.StopAPIServer())
	down := time.Now()
	sendSteps(steps/2, steps-1, 25*time.Millisecond) // 900 more, spread over the outage
	sentAll := time.Since(down)
	time.Sleep(30*time.Second - time.Since(down))
	queued := queueSize(tel)
	require.NoError(t, r.srv.StartAPIServer())
	outage := time.Since(down)
	drained := r.waitForCounts(t, outageCounts(steps-2))

	// The second outage meets the last record of every object: the first
	// one's write fails and is retried until the server is back, the others
	// wait behind it.
	failures := func() int64 {
		return counter(t, tel, "otelcol_exporter_k8sevents_retryable_failures", "reason", "error")
	}
	require.NoError(t, r.srv.StopAPIServer())
	before := failures()
	sendSteps(steps-1, steps, 0)
	require.Eventually(t, func() bool { return failures() >= before+3 }, 30*time.Second, 10*time.Millisecond,
		"the last records were tried against the stopped server")
	require.NoError(t, r.srv.StartAPIServer())
	r.waitForCounts(t, outageCounts(steps-1))

	_, n, err := r.eventCounts(t)
	require.NoError(t, err)
	assert.Equal(t, objects, n, "exactly one Event object per name")
	assert.Positive(t, failures(), "the outage was seen")
	// Requests the queue hands to the lanes at once may enter them in
	// either order (a record after a later one of its object is stale),
	// but no record carries a count already written.
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "unchanged"),
		"every record carries a new count: none may be skipped as already written")
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "invalid"))
	assert.Zero(t, counter(t, tel, "otelcol_exporter_k8sevents_permanent_failures", "reason", "rejected"))
	t.Logf("first 1,000 records sent in %v, %d written before the stop; apiserver down %v (900 more sent in %v, %d requests queued); "+
		"all objects current %v after restart; after the second outage (the last records) exact (created %d, patched %d, patched_after_409 %d, adopted %d, created_after_404 %d)",
		firstHalf.Round(time.Millisecond), writtenBefore, outage.Round(time.Millisecond), sentAll.Round(time.Millisecond), queued,
		drained.Round(time.Millisecond),
		counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "created"),
		counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched"),
		counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "patched_after_409"),
		counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "adopted"),
		counter(t, tel, "otelcol_exporter_k8sevents_writes", "outcome", "created_after_404"))
}

// TestPersistentQueueSurvivesRestart queues 50 records while kube-apiserver
// is down, restarts the collector (exporter and file_storage), and the new
// exporter writes all 50 from the persistent queue.
func TestPersistentQueueSurvivesRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, kubetest.OwnServer()) // it stops the API server
	dir := t.TempDir()
	persistent := persistentQueue

	require.NoError(t, r.srv.StopAPIServer())
	extA := outageFileStorage(t, dir)
	expA, telA := r.outageExporter(t, outageHost{outageStorageID: extA}, persistent)
	const n = 50
	for i := range n {
		send(t, expA, record(fmt.Sprintf("web-1.persisted-%02d", i), k8sevent.StateSingleton, 1, t0))
	}
	// Offer writes to the storage before ConsumeLogs returns; the gauge
	// counts what is queued (the one being retried included).
	require.Eventually(t, func() bool { return queueSize(telA) >= n-1 }, 10*time.Second, 20*time.Millisecond,
		"queue size %d", queueSize(telA))
	require.Eventually(t, func() bool {
		return counter(t, telA, "otelcol_exporter_k8sevents_retryable_failures", "reason", "error") > 0
	}, 10*time.Second, 20*time.Millisecond, "the consumer is retrying against the stopped API server")
	t.Logf("exporter A: queue size %d", queueSize(telA))

	// A collector restart: the exporter, then its storage.
	stop := time.Now()
	require.NoError(t, expA.Shutdown(context.Background()))
	require.NoError(t, extA.Shutdown(context.Background()))
	t.Logf("exporter A and its storage shut down in %v", time.Since(stop).Round(time.Millisecond))

	require.NoError(t, r.srv.StartAPIServer())
	extB := outageFileStorage(t, dir)
	expB, telB := r.outageExporter(t, outageHost{outageStorageID: extB}, persistent)
	t.Cleanup(func() {
		require.NoError(t, expB.Shutdown(context.Background()))
		require.NoError(t, extB.Shutdown(context.Background()))
	})
	up := time.Now()

	var have int
	if !assert.Eventually(t, func() bool {
		_, cnt, err := r.eventCounts(t)
		have = cnt
		return err == nil && cnt == n
	}, 30*time.Second, 100*time.Millisecond) {
		t.Fatalf("exporter B wrote %d of %d Events", have, n)
	}
	t.Logf("exporter B wrote all %d in %v", n, time.Since(up).Round(time.Millisecond))
	got, cnt, err := r.eventCounts(t)
	require.NoError(t, err)
	assert.Equal(t, n, cnt)
	for i := range n {
		assert.Contains(t, got, fmt.Sprintf("web-1.persisted-%02d", i))
	}
	assert.Equal(t, int64(n), createdOrAdopted(t, telB))
}
