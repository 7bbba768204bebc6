package eventseriesprocessor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

var errDiskFull = errors.New("no space left on device")

// faultStorage is a real storage extension whose writes fail on demand, as
// a full or failing volume answers: a failed write writes nothing.
type faultStorage struct {
	storage.Extension
	mu          sync.Mutex
	failSets    int    // fail the next Set calls: this many, or every one while negative
	failBatches int    // the same for Batch calls that write
	afterSet    func() // when set, called after each Set that wrote
}

func (f *faultStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	c, err := f.Extension.GetClient(ctx, kind, id, name)
	if err != nil {
		return nil, err
	}
	return &faultClient{Client: c, f: f}, nil
}

// fail sets what fails next.
func (f *faultStorage) fail(sets, batches int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSets, f.failBatches = sets, batches
}

func (f *faultStorage) take(n *int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *n == 0 {
		return false
	}
	if *n > 0 {
		*n--
	}
	return true
}

type faultClient struct {
	storage.Client
	f *faultStorage
}

func (c *faultClient) Set(ctx context.Context, key string, value []byte) error {
	if c.f.take(&c.f.failSets) {
		return errDiskFull
	}
	if err := c.Client.Set(ctx, key, value); err != nil {
		return err
	}
	c.f.mu.Lock()
	after := c.f.afterSet
	c.f.mu.Unlock()
	if after != nil {
		after()
	}
	return nil
}

func (c *faultClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		if op.Type != storage.Get && c.f.take(&c.f.failBatches) {
			return errDiskFull
		}
	}
	return c.Client.Batch(ctx, ops...)
}

// TestLogWriteFailureRefusesTheBatch: the log write of the last record of
// a series fails, once and then for a while (three tries); with a full log
// whose save fails, the same. Each time ConsumeLogs answers an error,
// nothing of the refused batch is counted (not in the output, not in the
// occurrences metric), the failure is counted in state{outcome=error}, and the
// sender's retry counts it once. After a crash and a replay, every series
// ends with exactly its occurrences, in one object.
func TestLogWriteFailureRefusesTheBatch(t *testing.T) {
	dir := t.TempDir()
	real, stop := fileStorage(t, dir)
	fs := &faultStorage{Extension: real[storageID].(storage.Extension)}
	r := newRun(t, nil)
	r.p.saveEvery = time.Hour // the test saves
	require.NoError(t, r.p.Start(context.Background(), host{storageID: fs}))

	occurrences := int64(0)
	series := func(pod string, failures int, failSave bool) {
		ev := podEvent(pod, "BackOff", "Back-off restarting failed container")
		for i := range 5 {
			ev.Time = time.Now()
			if i == 4 { // the last record of the series
				r.p.mu.Lock()
				if failSave {
					r.p.wal.maxBytes = 1 // the log is full: the batch saves first
					fs.fail(0, failures)
				} else {
					fs.fail(failures, 0)
				}
				r.p.mu.Unlock()
				for try := range failures {
					err := r.p.ConsumeLogs(context.Background(), logsOf(ev))
					require.ErrorIs(t, err, errDiskFull, "try %d", try)
					assert.ErrorContains(t, err, "batch not counted")
					r.p.mu.Lock()
					counted := r.p.engine.Stats.Occurrences
					r.p.mu.Unlock()
					assert.Equal(t, occurrences, counted, "try %d: the refused record is not counted", try)
				}
			}
			require.NoError(t, r.p.ConsumeLogs(context.Background(), logsOf(ev)))
			occurrences++
		}
	}
	series("once", 1, false)
	series("while", 3, false)
	series("save", 2, true)
	metadatatest.AssertEqualProcessorEventseriesOccurrences(t, r.tel,
		[]metricdata.DataPoint[int64]{{Value: occurrences}}, metricdatatest.IgnoreTimestamp())
	assert.Equal(t, map[string]int64{"operation=log,outcome=error": 4, "operation=save,outcome=error": 2},
		counterPoints(r.tel, "otelcol_processor_eventseries_state", "outcome=error"))

	crash(t, r.p)
	stop()
	h, stop := fileStorage(t, dir)
	defer stop()
	second := startRun(t, h, nil)
	require.NoError(t, second.p.Shutdown(context.Background()))
	got := collect(t, r.sink, second.sink)
	assert.Equal(t, map[string]int64{r.sink.nameOf(t, "once"): 5, r.sink.nameOf(t, "while"): 5, r.sink.nameOf(t, "save"): 5},
		finalCounts(got), "each series: its 5 occurrences, once")
	for key, names := range got.names {
		assert.Len(t, names, 1, "series %s is one object", key)
	}
}

// nameOf is the Event object the sink got for the series of pod.
func (s *faultSink) nameOf(t testing.TB, pod string) string {
	for name, key := range collect(t, s).series {
		if key == "Pod/"+pod+"/BackOff" {
			return name
		}
	}
	t.Fatalf("no object for pod %s", pod)
	return ""
}

// TestUnreadableLogEntryIsSkipped: an entry the processor cannot read (a
// torn or foreign value) is logged, counted in state{restore,error} and
// skipped; the entries after it are replayed, and the start does not fail.
func TestUnreadableLogEntryIsSkipped(t *testing.T) {
	dir := t.TempDir()
	h, stop := fileStorage(t, dir)
	first := newRun(t, nil)
	first.p.saveEvery = time.Hour
	require.NoError(t, first.p.Start(context.Background(), h))
	ev := podEvent("web-1", "BackOff", "Back-off restarting failed container")
	for range 3 {
		ev.Time = time.Now()
		require.NoError(t, first.p.ConsumeLogs(context.Background(), logsOf(ev)))
	}
	require.NoError(t, first.p.store.Set(context.Background(), walKey(1), []byte("torn")))
	crash(t, first.p)
	stop()

	h, stop = fileStorage(t, dir)
	defer stop()
	second := startRun(t, h, nil)
	require.NoError(t, second.p.Shutdown(context.Background()))
	assert.Equal(t, int64(2), sum(finalCounts(collect(t, second.sink))), "entries 0 and 2 replayed, entry 1 skipped")
	assert.Equal(t, map[string]int64{"operation=restore,outcome=error": 1},
		counterPoints(second.tel, "otelcol_processor_eventseries_state", "outcome=error"))
}
