package eventseriesprocessor

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8sevents/otel-k8sevents/internal/harness/memstorage"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

var storageID = component.MustNewID("file_storage")

type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// fileStorage starts the contrib file_storage extension on dir, as a
// collector does at each start, its settings changed by mutate; stop shuts
// it down.
func fileStorage(t testing.TB, dir string, mutate ...func(*filestorage.Config)) (h host, stop func()) {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory, cfg.Compaction.Directory = dir, dir
	for _, m := range mutate {
		m(cfg)
	}
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	return host{storageID: ext}, func() { require.NoError(t, ext.Shutdown(context.Background())) }
}

// run is one collector run: a processor with storage on h.
type run struct {
	p    *eventSeriesProcessor
	sink *faultSink
	tel  *componenttest.Telemetry
}

func startRun(t *testing.T, h host, mutate func(*Config)) *run {
	t.Helper()
	r := newRun(t, mutate)
	require.NoError(t, r.p.Start(context.Background(), h))
	return r
}

func newRun(t *testing.T, mutate func(*Config)) *run {
	t.Helper()
	return newRunAt(t, mutate, time.Now)
}

// startRunAt starts a run whose processing clock is clock.
func startRunAt(t *testing.T, h host, mutate func(*Config), clock func() time.Time) *run {
	t.Helper()
	r := newRunAt(t, mutate, clock)
	require.NoError(t, r.p.Start(context.Background(), h))
	return r
}

func newRunAt(t *testing.T, mutate func(*Config), clock func() time.Time) *run {
	t.Helper()
	cfg := createDefaultConfig()
	id := storageID
	cfg.Storage = &id
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	r := &run{sink: &faultSink{}, tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { _ = r.tel.Shutdown(context.Background()) })
	p, err := newProcessor(metadatatest.NewSettings(r.tel), cfg, r.sink, clock)
	require.NoError(t, err)
	r.p = p
	return r
}

// feed sends the watched Event ev with each count, one record each, a
// second apart from at.
func (r *run) feed(t *testing.T, ev k8sevent.Event, at time.Time, counts ...int64) {
	for i, c := range counts {
		ev.Count, ev.Time = c, at.Add(time.Duration(i)*time.Second)
		require.NoError(t, r.p.ConsumeLogs(context.Background(), contribRecord(ev)))
		settle(t, r.p)
	}
}

// seriesWritten returns the last count written for each Event object.
func seriesWritten(t *testing.T, sinks ...interface{ AllLogs() []plog.Logs }) map[string]int64 {
	last := map[string]int64{}
	for _, sink := range sinks {
		for _, ld := range sink.AllLogs() {
			for _, r := range flatten(ld) {
				ev := r.event(t)
				last[ev.Name] = max(ev.SeriesCount, 1)
			}
		}
	}
	return last
}

func sum(counts map[string]int64) (n int64) {
	for _, c := range counts {
		n += c
	}
	return n
}

func watched() k8sevent.Event {
	ev := podEvent("web-1", "BackOff", "Back-off restarting failed container")
	ev.Name, ev.UID, ev.FirstTimestamp = "web-1.abc", "event-uid", t0
	return ev
}

// TestStateSurvivesRestart: a watched Event seen with counts 1..3, a
// shutdown, then 4..5 on a new processor with the same storage and ID: 5
// occurrences in one series, not 3 + 5 in two.
func TestStateSurvivesRestart(t *testing.T) {
	for _, timeSource := range []string{timeProcessing, timeEvent} {
		t.Run(timeSource, func(t *testing.T) {
			dir := t.TempDir()
			at := t0
			if timeSource == timeProcessing {
				at = time.Now()
			}
			setTime := func(cfg *Config) { cfg.TimeSource = timeSource }

			h, stop := fileStorage(t, dir)
			first := startRun(t, h, setTime)
			first.feed(t, watched(), at, 1, 2, 3)
			require.NoError(t, first.p.Shutdown(context.Background()))
			stop()

			h, stop = fileStorage(t, dir)
			defer stop()
			second := startRun(t, h, setTime)
			second.feed(t, watched(), at.Add(10*time.Second), 4, 5)
			require.NoError(t, second.p.Shutdown(context.Background()))

			objects := seriesWritten(t, first.sink, second.sink)
			assert.Len(t, objects, 1, "one series, one object: %v", objects)
			assert.Equal(t, int64(5), sum(objects), "the Event's 5 occurrences, once: %v", objects)
			metadatatest.AssertEqualProcessorEventseriesOccurrences(t, second.tel,
				[]metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
		})
	}
}

// TestStateIsSavedWhileRunning: a crash (no shutdown: no flush, no final
// save) loses only what changed since the last periodic save.
func TestStateIsSavedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	h, stop := fileStorage(t, dir)
	first := newRun(t, nil)
	first.p.saveEvery = 20 * time.Millisecond
	require.NoError(t, first.p.Start(context.Background(), h))
	first.feed(t, watched(), time.Now(), 1, 2, 3)
	// A save is counted once storage has it (state, save ok): the wait ends
	// on what an operator reads, not on the processor's internals.
	require.Eventually(t, func() bool {
		return counterSum(first.tel, "otelcol_processor_eventseries_state", "operation=save", "outcome=ok") > 0
	}, 10*time.Second, 10*time.Millisecond, "saved within a few intervals")
	crash(t, first.p)
	stop()

	h, stop = fileStorage(t, dir)
	defer stop()
	second := startRun(t, h, nil)
	second.feed(t, watched(), time.Now(), 4, 5)
	require.NoError(t, second.p.Shutdown(context.Background()))
	objects := seriesWritten(t, first.sink, second.sink)
	assert.Len(t, objects, 1, "one series, one object: %v", objects)
	assert.Equal(t, int64(5), sum(objects), "the Event's 5 occurrences, once: %v", objects)
}

// TestTimersDueWhileDownFireAtStart: a series whose finish_after passed
// while the collector was down has ended when it starts again: the next
// occurrence of the Event object starts a new series (a new object), and
// what the old object gets after the restart, if anything, is its end with
// the count it had. The processing clock is the test's: the first run
// cannot reach the deadline however slow the machine, the second starts
// past it.
func TestTimersDueWhileDownFireAtStart(t *testing.T) {
	dir := t.TempDir()
	clock := clocktesting.NewFakeClock(t0)
	h, stop := fileStorage(t, dir)
	first := startRunAt(t, h, nil, clock.Now)
	first.feed(t, watched(), clock.Now(), 1, 2, 3)
	require.NoError(t, first.p.Shutdown(context.Background()))
	stop()
	old := first.sink.name(t)
	require.Equal(t, []string{"singleton", "started", "ongoing"}, collect(t, first.sink).states[old],
		"nothing finished before the stop")

	clock.Step(createDefaultConfig().Series.FinishAfter + time.Minute) // down for longer than finish_after
	h, stop = fileStorage(t, dir)
	defer stop()
	second := startRunAt(t, h, nil, clock.Now)
	second.feed(t, watched(), clock.Now(), 4)
	require.NoError(t, second.p.Shutdown(context.Background()))
	for _, ld := range second.sink.AllLogs() {
		for _, r := range flatten(ld) {
			ev := r.event(t)
			if ev.Name == old {
				assert.Equal(t, k8sevent.StateFinished, ev.SeriesState, "the old series only ends")
				assert.Equal(t, int64(3), ev.SeriesCount)
				continue
			}
			assert.Equal(t, k8sevent.StateSingleton, ev.SeriesState, "a new series, not count 4 of the old one")
		}
	}
	objects := seriesWritten(t, first.sink, second.sink)
	assert.Len(t, objects, 2, "the old object and the new one: %v", objects)
	assert.Equal(t, int64(4), sum(objects), "4 occurrences: %v", objects)
}

// crash stops p as a killed collector would leave it: no flush, no save.
func crash(t *testing.T, p *eventSeriesProcessor) {
	close(p.done)
	p.cancelRun()
	p.wg.Wait()
	require.NoError(t, p.store.Close(context.Background()))
	p.telemetry.Shutdown()
}

// TestCorruptStateStartsEmpty: a saved state that cannot be decoded, or
// whose snapshot the engine refuses, is logged and counted, and the
// processor starts empty instead of failing the pipeline.
func TestCorruptStateStartsEmpty(t *testing.T) {
	refused, err := (&saved{Engine: []byte("not a snapshot")}).encode()
	require.NoError(t, err)
	for name, value := range map[string][]byte{"undecodable": []byte("not a saved state"), "snapshot refused": refused} {
		t.Run(name, func(t *testing.T) {
			h, stop := fileStorage(t, t.TempDir())
			defer stop()
			client, err := h[storageID].(storage.Extension).GetClient(context.Background(), component.KindProcessor,
				component.NewID(metadata.Type), "")
			require.NoError(t, err)
			require.NoError(t, client.Set(context.Background(), savedKey, value))
			require.NoError(t, client.Close(context.Background()))

			r := startRun(t, h, nil)
			r.feed(t, watched(), time.Now(), 3)
			require.NoError(t, r.p.Shutdown(context.Background()))
			assert.Equal(t, int64(3), sum(seriesWritten(t, r.sink)), "a fresh start counts the Event's whole count")
			assert.Equal(t, map[string]int64{"operation=restore,outcome=error": 1},
				counterPoints(r.tel, "otelcol_processor_eventseries_state", "outcome=error"))
		})
	}
}

func TestStorageMustBeAStorageExtension(t *testing.T) {
	f := extensiontest.NewNopFactory()
	nop, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), f.CreateDefaultConfig())
	require.NoError(t, err)
	r := newRun(t, nil)
	err = r.p.Start(context.Background(), host{storageID: nop})
	require.ErrorContains(t, err, `storage "file_storage" is not a storage extension`)
	require.NoError(t, r.p.Shutdown(context.Background()))
}

// TestFailedSavesAreLoggedOnceAMinute: on a volume that refuses writes the
// state is tried again at every save interval and each failure is
// counted, but logged at most once a minute.
func TestFailedSavesAreLoggedOnceAMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := createDefaultConfig()
		id := storageID
		cfg.Storage = &id
		tel := componenttest.NewTelemetry()
		defer func() { _ = tel.Shutdown(context.Background()) }()
		core, logs := observer.New(zapcore.WarnLevel)
		set := metadatatest.NewSettings(tel)
		set.Logger = zap.New(core)
		sink := &faultSink{}
		p, err := newProcessor(set, cfg, sink, time.Now)
		require.NoError(t, err)
		store := memstorage.New()
		require.NoError(t, p.Start(context.Background(), host{storageID: store}))
		r := &run{p: p, sink: sink, tel: tel}
		r.feed(t, watched(), time.Now(), 1) // a change to save
		store.SetFailing(true)

		time.Sleep(10 * time.Minute)
		synctest.Wait()
		failed := counterSum(tel, "otelcol_processor_eventseries_state", "operation=save", "outcome=error")
		logged := logs.FilterMessageSnippet("State not saved").Len()
		require.GreaterOrEqual(t, failed, int64(10*time.Minute/saveInterval)-1, "a save tried at every interval")
		require.Equal(t, 10, logged, "one line a minute over 10 minutes, the first at once")
		store.SetFailing(false)
		require.NoError(t, p.Shutdown(context.Background()))
	})
}
