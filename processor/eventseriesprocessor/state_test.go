package eventseriesprocessor

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

// TestStateFarFutureTimeDoesNotMoveEventTime: in event
// time, a record stamped a century ahead moves the watermark at most
// event_time_max_lead past the processing clock: the open series does not
// finish at once, its next occurrences stay in it, and the record is
// counted as clamped.
func TestStateFarFutureTimeDoesNotMoveEventTime(t *testing.T) {
	clock := t0.Add(2 * time.Second) // live: the records are about as old as the clock
	sink := &faultSink{}
	h := newHarnessWith(t, eventTime, func() time.Time { return clock }, sink)
	a := podEvent("a", "BackOff", "x")
	for i := range 2 {
		a.Time = t0.Add(time.Duration(i) * time.Second)
		h.consume(logsOf(a))
	}
	future := podEvent("b", "BackOff", "x")
	future.Time = t0.AddDate(100, 0, 0)
	h.consume(logsOf(future))
	for i := 2; i < 4; i++ {
		a.Time = t0.Add(time.Duration(i) * time.Second)
		h.consume(logsOf(a))
	}
	h.shutdown()

	d := collect(t, sink)
	d.requireExact(t, 5)
	assert.Len(t, d.names["Pod/a/BackOff"], 1, "a's series goes on: %v", d.names)
	assert.Equal(t, []string{"singleton", "started", "ongoing"}, d.states[d.names["Pod/a/BackOff"][0]],
		"a does not finish when the far-future record arrives")
	assert.Equal(t, map[string]int64{"outcome=counted,problem=clamped": 1},
		counterPoints(h.tel, "otelcol_processor_eventseries_input_problems", "problem=clamped"))
	assert.Equal(t, clock.Add(createDefaultConfig().EventTimeMaxLead).UnixNano(), h.p.watermark,
		"the watermark stops at the processing clock plus event_time_max_lead")
}

// TestStateUnrepairableEventRecordIsDropped: with
// non_event_records: pass (the default), an Event record that cannot be
// made valid is dropped, counted and logged, not passed on for the exporter
// to drop; a record that is no Event still passes.
func TestStateUnrepairableEventRecordIsDropped(t *testing.T) {
	h := newHarness(t, nil)
	noReason := podEvent("web-1", "", "x")
	noReason.Time = time.Now()
	ld := logsOf(noReason)
	plain := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	plain.Body().SetStr("GET /healthz 200")
	h.consume(ld)

	recs := h.records()
	require.Len(t, recs, 1, "only the record without Event passes")
	assert.Equal(t, "GET /healthz 200", recs[0].lr.Body().Str())
	assert.Equal(t, map[[2]string]int64{{"missing_reason", "dropped"}: 1}, invalidPoints(h.tel))
}

// TestHostileCountersSaturate: counts near
// MaxInt64 on several Event uids of one series: every counter stays within
// 0..2^53 (saturates; it never wraps negative: the metrics SDK sums through
// float64, and a wrapped counter would read -2^63).
func TestHostileCountersSaturate(t *testing.T) {
	h := newHarness(t, eventTime)
	ev := podEvent("web-1", "BackOff", "x")
	ev.Time = t0
	var batch []plog.Logs
	for i, count := range []int64{1, math.MaxInt64, math.MaxInt64, math.MaxInt64, 5} {
		ev.UID, ev.Count = "uid-"+string(rune('a'+i)), count
		batch = append(batch, contribRecord(ev))
	}
	for _, ld := range batch {
		h.consume(ld)
	}
	h.shutdown()
	for _, name := range []string{"occurrences", "merged_occurrences", "records", "series"} {
		m, err := h.tel.GetMetric("otelcol_processor_eventseries_" + name)
		require.NoError(t, err)
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			assert.GreaterOrEqual(t, dp.Value, int64(0), "%s never wraps negative", name)
		}
	}
	metadatatest.AssertEqualProcessorEventseriesOccurrences(t, h.tel, []metricdata.DataPoint[int64]{{Value: maxMetric}},
		metricdatatest.IgnoreTimestamp())
	assert.Equal(t, map[string]int64{"into=series": maxMetric},
		counterPoints(h.tel, "otelcol_processor_eventseries_merged_occurrences", "into=series"), "compressed")
	for _, r := range h.records() {
		ev := r.event(t)
		assert.Positive(t, countOf(&ev), "written counts saturate too")
	}
}
