package eventseriesprocessor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

// writable fills what a writer (the exporter) adds before an events.k8s.io
// create, then the Event must pass the API server's validation.
func writable(ev k8sevent.Event) k8sevent.Event {
	ev.EventTime = ev.FirstTime()
	ev.Type = k8sevent.APIType(ev.Type) // records keep Error and Critical; a writer sends Warning
	if ev.ReportingController == "" {
		ev.ReportingController = "k8sevents.io/exporter"
	}
	if ev.ReportingInstance == "" {
		ev.ReportingInstance = "test"
	}
	if ev.Action == "" {
		ev.Action = ev.Reason
	}
	return ev
}

func TestContribRecordsBecomeASeries(t *testing.T) {
	h := newHarness(t, eventTime)
	ev := podEvent("web-1", "BackOff", "Back-off restarting failed container")
	ev.Name, ev.UID, ev.FirstTimestamp = "web-1.abc", "event-uid", t0
	for i, count := range []int64{1, 2, 3, 4} {
		ev.Count, ev.Time = count, t0.Add(time.Duration(i)*10*time.Second)
		h.consume(contribRecord(ev))
	}
	h.shutdown()

	recs := h.records()
	require.Len(t, recs, 3)
	assert.Equal(t, []string{"singleton", "started", "ongoing"},
		[]string{recs[0].str(k8sevent.AttrSeriesState), recs[1].str(k8sevent.AttrSeriesState), recs[2].str(k8sevent.AttrSeriesState)})
	name := recs[0].str(k8sevent.AttrEventName)
	assert.True(t, strings.HasPrefix(name, "web-1."))
	for i, r := range recs {
		assert.Equal(t, name, r.str(k8sevent.AttrEventName), "record %d writes the same object", i)
		assert.Empty(t, r.str(k8sevent.AttrEventUID), "the source object's uid is not the written object's")
		assert.Empty(t, r.str(k8sevent.AttrCount), "series mode writes no legacy count")
		got := r.event(t)
		assert.Equal(t, "BackOff", got.Reason)
		assert.Equal(t, "web-1", got.Regarding.Name, "regarding object read from the resource")
		assert.Equal(t, t0, got.EventTime, "event time is the series start")
		w := writable(got)
		require.NoError(t, k8sevent.Validate(&w, k8sevent.APICoreV1))
		require.NoError(t, k8sevent.Validate(&w, k8sevent.APIEventsV1))
	}
	assert.Equal(t, "web-1", recs[1].res.Attributes().AsRaw()["k8s.pod.name"], "the resource names the regarding Pod")
	assert.Equal(t, "node-1", recs[1].event(t).SourceHost, "contrib's source host (resource k8s.node.name) is kept, on the record")
	assert.Empty(t, recs[0].str(k8sevent.AttrSeriesCount))
	assert.Equal(t, "2", recs[1].str(k8sevent.AttrSeriesCount))
	assert.Equal(t, "4", recs[2].str(k8sevent.AttrSeriesCount), "shutdown emits the open series' count")
	assert.True(t, recs[2].fromTimer())

	metadatatest.AssertEqualProcessorEventseriesOccurrences(t, h.tel, []metricdata.DataPoint[int64]{{Value: 4}},
		metricdatatest.IgnoreTimestamp())
	assert.Equal(t, map[string]int64{"into=series": 2},
		counterPoints(h.tel, "otelcol_processor_eventseries_merged_occurrences", "into=series"), "compressed")
}

func TestLegacyRecordsCarryCounts(t *testing.T) {
	h := newHarness(t, func(cfg *Config) { eventTime(cfg); cfg.Mode = modeLegacy })
	ev := podEvent("web-1", "BackOff", "Back-off")
	for i := range 3 {
		ev.Time = t0.Add(time.Duration(i) * time.Minute)
		h.consume(logsOf(ev))
	}
	recs := h.records()
	require.Len(t, recs, 3)
	for i, r := range recs {
		got := r.event(t)
		assert.Equal(t, int64(i+1), got.Count)
		assert.Equal(t, t0, got.FirstTimestamp)
		assert.Equal(t, t0.Add(time.Duration(i)*time.Minute), got.LastTimestamp)
		assert.Equal(t, recs[0].str(k8sevent.AttrEventName), got.Name)
		assert.Empty(t, r.str(k8sevent.AttrSeriesState))
	}
}

func TestNonEventRecords(t *testing.T) {
	for _, mode := range []string{recordsPass, recordsDrop} {
		t.Run(mode, func(t *testing.T) {
			plain := plog.NewLogs() // each its own: the processor moves its input
			rl := plain.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr(k8sevent.AttrNamespace, "ns") // a pod's log, not an Event
			rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("GET /healthz 200")
			h := newHarness(t, func(cfg *Config) { cfg.NonEventRecords = mode })
			h.consume(plain)
			outcome := "passed"
			if mode == recordsPass {
				require.Len(t, h.records(), 1)
				assert.Equal(t, "GET /healthz 200", h.records()[0].lr.Body().Str())
			} else {
				outcome = "dropped"
				assert.Empty(t, h.records())
			}
			assert.Equal(t, map[string]int64{"outcome=" + outcome + ",problem=not_event": 1},
				counterPoints(h.tel, "otelcol_processor_eventseries_input_problems", "problem=not_event"))
		})
	}
}

func TestBadInput(t *testing.T) {
	noReason := podEvent("web-1", "", "x")
	noReason.Time = t0
	long := podEvent("web-2", "BackOff", strings.Repeat("é", 600_000))
	long.Time = t0
	untimed := podEvent("web-3", "BackOff", "x")
	badType := podEvent("web-4", "BackOff", "x")
	badType.Type, badType.Time = "Info", t0 // not a type an Event has

	h := newHarness(t, func(cfg *Config) { cfg.NonEventRecords = recordsDrop })
	h.consume(logsOf(noReason, long, untimed, badType))
	recs := h.records()
	require.Len(t, recs, 3, "the record without reason is dropped, the others repaired")
	for _, r := range recs {
		ev := r.event(t)
		assert.LessOrEqual(t, len(ev.Note), k8sevent.MaxNoteBytes)
		assert.False(t, ev.Time.IsZero())
		assert.Contains(t, []string{k8sevent.TypeNormal, k8sevent.TypeWarning}, ev.Type)
		w := writable(ev)
		require.NoError(t, k8sevent.Validate(&w, k8sevent.APIEventsV1))
	}
	assert.Equal(t, k8sevent.TypeNormal, recs[2].event(t).Type)

	assert.Equal(t, map[[2]string]int64{
		{"missing_reason", "dropped"}: 1,
		{"long_note", "repaired"}:     1,
		{"zero_time", "repaired"}:     1,
		{"bad_type", "repaired"}:      1,
	}, invalidPoints(h.tel))
}

func TestEventTimeReplayIsDeterministic(t *testing.T) {
	run := func() []string {
		h := newHarness(t, func(cfg *Config) { eventTime(cfg); cfg.SpamFilter.Burst = 3 })
		for i := range 200 {
			ev := podEvent([]string{"a", "b", "c"}[i%3], []string{"BackOff", "Unhealthy"}[i%2], "x")
			ev.Time = t0.Add(time.Duration(i*i) * time.Second)
			h.consume(logsOf(ev))
		}
		h.shutdown()
		var out []string
		for _, r := range h.records() {
			ev := r.event(t)
			out = append(out, ev.Name+" "+ev.SeriesState+" "+ev.SeriesLastObservedTime.String())
		}
		return out
	}
	first := run()
	assert.NotEmpty(t, first)
	assert.Equal(t, first, run())
}

func TestProcessingTimeTimersFinishSeries(t *testing.T) {
	h := newHarness(t, func(cfg *Config) { cfg.Series.FinishAfter = 50 * time.Millisecond })
	ev := podEvent("web-1", "BackOff", "x")
	ev.Time = time.Now()
	h.consume(logsOf(ev, ev, ev))
	require.Eventually(t, func() bool { return len(h.records()) == 3 }, 10*time.Second, 10*time.Millisecond,
		"the timer goroutine finishes the idle series")
	fin := h.records()[2]
	assert.Equal(t, k8sevent.StateFinished, fin.str(k8sevent.AttrSeriesState))
	assert.Equal(t, "3", fin.str(k8sevent.AttrSeriesCount))
}

func TestOutputKeepsEachObjectsRecordsInOrder(t *testing.T) {
	// Legacy, burst 1: the 2nd occurrence is held back and flushed once idle
	// (a timer record) in the same batch as a later count update of the same
	// object; the flush must come first.
	h := newHarness(t, func(cfg *Config) {
		eventTime(cfg)
		cfg.Mode, cfg.SpamFilter.Burst, cfg.SpamFilter.QPS = modeLegacy, 1, 1.0/600
	})
	ev := podEvent("web-1", "BackOff", "x")
	var evs []k8sevent.Event
	for _, at := range []time.Duration{0, time.Second, 20 * time.Minute} {
		ev.Time = t0.Add(at)
		evs = append(evs, ev)
	}
	h.consume(logsOf(evs...))
	var counts []string
	for _, r := range h.records() {
		counts = append(counts, r.str(k8sevent.AttrCount))
	}
	assert.Equal(t, []string{"1", "2", "3"}, counts)
	assert.True(t, h.records()[1].fromTimer())
}
