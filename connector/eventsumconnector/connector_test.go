package eventsumconnector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// refusingSink is a metrics consumer that refuses the calls plan names
// (numbered from 1), as an exporter's full queue does.
type refusingSink struct {
	consumertest.MetricsSink
	mu      sync.Mutex
	calls   int
	refused int
	plan    func(call int) bool
}

func (s *refusingSink) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	s.mu.Lock()
	s.calls++
	refuse := s.plan != nil && s.plan(s.calls)
	if refuse {
		s.refused++
	}
	s.mu.Unlock()
	if refuse {
		return errors.New("sending queue is full")
	}
	return s.MetricsSink.ConsumeMetrics(ctx, md)
}

// rig is a connector whose retries run when the test says.
type rig struct {
	t       *testing.T
	c       *eventSum
	sink    *refusingSink
	tel     *componenttest.Telemetry
	pending []func()
	waits   []time.Duration // of the retries scheduled, in order
}

func newRig(t *testing.T, cfg *Config) *rig {
	r := &rig{t: t, sink: &refusingSink{}, tel: componenttest.NewTelemetry()}
	set := r.tel.NewTelemetrySettings()
	c, err := newEventSum(set, cfg, r.sink, func() time.Time { return t0 })
	require.NoError(t, err)
	c.after = func(d time.Duration, f func()) func() bool {
		r.pending, r.waits = append(r.pending, f), append(r.waits, d)
		return func() bool { return false }
	}
	r.c = c
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = r.tel.Shutdown(context.Background()) })
	return r
}

// runRetries runs the retries scheduled so far, as their timers would.
func (r *rig) runRetries() {
	p := r.pending
	r.pending = nil
	for _, f := range p {
		f()
	}
}

func (r *rig) consume(ld plog.Logs) {
	r.t.Helper()
	require.NoError(r.t, r.c.ConsumeLogs(context.Background(), ld), "a refused send never makes the logs pipeline retry (it would count twice)")
}

// latest reads every data point the sink took, in order, and returns the
// last value of each series (metric name and attributes), checking that no
// series goes down and that every point is a cumulative monotonic sum.
func latest(t *testing.T, sink *refusingSink) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, md := range sink.AllMetrics() {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := 0; j < sms.Len(); j++ {
				ms := sms.At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					m := ms.At(k)
					require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
					require.True(t, m.Sum().IsMonotonic())
					dps := m.Sum().DataPoints()
					for l := 0; l < dps.Len(); l++ {
						dp := dps.At(l)
						key := m.Name() + seriesName(dp.Attributes())
						prev, seen := out[key]
						require.True(t, !seen || dp.IntValue() >= prev, "%s goes down: %d then %d", key, prev, dp.IntValue())
						require.Equal(t, pcommon.NewTimestampFromTime(t0), dp.StartTimestamp(), "one start for every point")
						out[key] = dp.IntValue()
					}
				}
			}
		}
	}
	return out
}

func seriesName(attrs pcommon.Map) string {
	var parts []string
	for k, v := range attrs.All() {
		parts = append(parts, k+"="+v.AsString())
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func occurrencesConfig() *Config {
	cfg := createDefaultConfig()
	cfg.Logs = map[string]MetricInfo{"k8s.event.occurrences": {
		SourceAttribute: k8sevent.AttrNewOccurrences,
		Attributes:      []AttributeConfig{{Key: k8sevent.AttrNamespace}, {Key: k8sevent.AttrReason, DefaultValue: "unknown"}},
	}}
	return cfg
}

// record appends a record stating n new occurrences of (ns, reason); the
// namespace on the resource when onResource, as contrib's k8s_events puts it.
func record(ld plog.Logs, ns, reason string, n int64, onResource bool) {
	rl := ld.ResourceLogs().AppendEmpty()
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	if onResource {
		rl.Resource().Attributes().PutStr(k8sevent.AttrNamespace, ns)
	} else {
		lr.Attributes().PutStr(k8sevent.AttrNamespace, ns)
	}
	if reason != "" {
		lr.Attributes().PutStr(k8sevent.AttrReason, reason)
	}
	lr.Attributes().PutInt(k8sevent.AttrNewOccurrences, n)
}

func key(ns, reason string) string {
	return fmt.Sprintf("k8s.event.occurrences{%s=%s,%s=%s}", k8sevent.AttrReason, reason, k8sevent.AttrNamespace, ns)
}

// TestSumsAreCumulativePerAttributeSet: each series is the running sum of
// its records' values, sent after each batch that grew it; attributes are
// read from the record, then the resource; a missing reason takes its
// default; records without the source attribute are not summed.
func TestSumsAreCumulativePerAttributeSet(t *testing.T) {
	r := newRig(t, occurrencesConfig())
	ld := plog.NewLogs()
	record(ld, "a", "BackOff", 3, false)
	record(ld, "a", "BackOff", 0, true) // a record that repeats a count
	record(ld, "b", "", 2, false)
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("not an Event")
	r.consume(ld)
	assert.Equal(t, map[string]int64{key("a", "BackOff"): 3, key("b", "unknown"): 2}, latest(t, r.sink))

	ld = plog.NewLogs()
	record(ld, "a", "BackOff", 4, true)
	r.consume(ld)
	assert.Equal(t, map[string]int64{key("a", "BackOff"): 7, key("b", "unknown"): 2}, latest(t, r.sink))
	assert.Equal(t, 2, r.sink.DataPointCount()-1, "the second send has only the series that grew")
}

// TestHostileValuesAddNothing: values that are not whole numbers of zero
// or more, and records missing an attribute with no default, add nothing
// and are counted; a huge value saturates at 2^53 instead of wrapping.
func TestHostileValuesAddNothing(t *testing.T) {
	r := newRig(t, occurrencesConfig())
	ld := plog.NewLogs()
	record(ld, "a", "R", 5, false)
	for _, set := range []func(pcommon.Value){
		func(v pcommon.Value) { v.SetInt(-3) },
		func(v pcommon.Value) { v.SetDouble(1.5) },
		func(v pcommon.Value) { v.SetStr("seven") },
		func(v pcommon.Value) { v.SetBool(true) },
		func(v pcommon.Value) { v.SetEmptyMap() },
	} {
		record(ld, "a", "R", 0, false)
		attrs := ld.ResourceLogs().At(ld.ResourceLogs().Len() - 1).ScopeLogs().At(0).LogRecords().At(0).Attributes()
		v, _ := attrs.Get(k8sevent.AttrNewOccurrences)
		set(v)
	}
	noNamespace := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	noNamespace.Attributes().PutInt(k8sevent.AttrNewOccurrences, 9)
	record(ld, "a", "R", 2, false)
	ld.ResourceLogs().At(ld.ResourceLogs().Len()-1).ScopeLogs().At(0).LogRecords().At(0).Attributes().PutStr(k8sevent.AttrNewOccurrences, " 4 ")
	r.consume(ld)
	assert.Equal(t, map[string]int64{key("a", "R"): 9}, latest(t, r.sink), "5 + \" 4 \"")
	assert.Equal(t, int64(6), counterValue(t, r.tel, "otelcol_connector_eventsum_skipped_records"))

	ld = plog.NewLogs()
	record(ld, "a", "R", 1<<62, false)
	record(ld, "a", "R", 1<<62, false)
	r.consume(ld)
	assert.Equal(t, maxSum, latest(t, r.sink)[key("a", "R")])
}

func counterValue(t *testing.T, tel *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err)
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
	}
	return n
}

// batch is records of (namespace, reason, value, on the resource).
type rec struct {
	ns, reason string
	n          int64
	onResource bool
}

func logsOf(recs []rec) plog.Logs {
	ld := plog.NewLogs()
	for _, r := range recs {
		record(ld, r.ns, r.reason, r.n, r.onResource)
	}
	return ld
}

// truthOf is what the series must end at: the first maxSeries distinct
// (namespace, reason) get a series each, the rest go to the overflow one.
func truthOf(batches [][]rec, maxSeries int) map[string]int64 {
	out := map[string]int64{}
	own := map[string]bool{}
	for _, b := range batches {
		for _, r := range b {
			k := key(r.ns, r.reason)
			if !own[k] && len(own) < maxSeries {
				own[k] = true
			}
			if !own[k] {
				k = "k8s.event.occurrences{" + OverflowKey + "=true}"
			}
			out[k] += r.n
		}
	}
	return out
}

// TestFaultRefusedSendsAreMadeGood: the next consumer refuses once, for a
// while, starting at each of its calls in turn, the last batch's send (the
// worst moment: no later batch carries the sums) included. ConsumeLogs
// never fails (a logs retry would count twice), and once the refusals end
// the retries deliver every series' exact total; no series goes down.
func TestFaultRefusedSendsAreMadeGood(t *testing.T) {
	batches := [][]rec{
		{{"a", "BackOff", 1, false}, {"b", "Pulled", 1, true}},
		{{"a", "BackOff", 4, true}},
		{{"a", "BackOff", 0, false}, {"b", "Failed", 2, false}},
		{{"b", "Pulled", 3, false}}, // the last record of a series
	}
	for _, refuseFor := range []int{1, 3} {
		for from := 1; from <= len(batches); from++ {
			t.Run(fmt.Sprintf("from call %d for %d", from, refuseFor), func(t *testing.T) {
				r := newRig(t, occurrencesConfig())
				r.sink.plan = func(call int) bool { return call >= from && call < from+refuseFor }
				for _, b := range batches {
					r.consume(logsOf(b))
				}
				for range 10 { // each retry is scheduled by the refusal before it
					r.runRetries()
				}
				require.Positive(t, r.sink.refused, "the fault happened")
				assert.Equal(t, truthOf(batches, 100), latest(t, r.sink))
				assert.Equal(t, int64(r.sink.refused), counterValue(t, r.tel, "otelcol_connector_eventsum_refused_sends"))
			})
		}
	}
	t.Run("refused until shutdown", func(t *testing.T) {
		r := newRig(t, occurrencesConfig())
		r.sink.plan = func(call int) bool { return call >= 4 && call < 6 } // the last batch and its first retry
		for _, b := range batches {
			r.consume(logsOf(b))
		}
		r.runRetries()
		require.NoError(t, r.c.Shutdown(context.Background()))
		assert.Equal(t, truthOf(batches, 100), latest(t, r.sink), "shutdown sends what is still refused")
	})
}

// TestRefusedSendsBackOff: while the next consumer refuses, each retry
// waits twice the one before; once a send goes through, the next refusal
// waits the first wait again.
func TestRefusedSendsBackOff(t *testing.T) {
	batches := [][]rec{{{"a", "BackOff", 1, false}}, {{"a", "BackOff", 2, false}}}
	r := newRig(t, occurrencesConfig())
	r.sink.plan = func(call int) bool { return call <= 3 || call == 5 }
	r.consume(logsOf(batches[0]))
	for range 3 {
		r.runRetries() // calls 2 and 3 refused, 4 goes through
	}
	r.consume(logsOf(batches[1])) // call 5 refused
	r.runRetries()
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second}, r.waits)
	assert.Equal(t, truthOf(batches, 100), latest(t, r.sink))
}

// TestRandomBatchesAreExact: over random batches (attributes on the record
// or the resource, values of 0 and more, random refusals of the next
// consumer, few series allowed so that some records overflow), the last
// value of every series is its exact sum, the overflow series holds the
// rest, and nothing goes down.
func TestRandomBatchesAreExact(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 5))
		cfg := occurrencesConfig()
		cfg.MaxSeries = 2 + rng.IntN(12)
		r := newRig(t, cfg)
		r.sink.plan = func(int) bool { return rng.IntN(3) == 0 }
		var batches [][]rec
		for range 1 + rng.IntN(20) {
			var b []rec
			for range rng.IntN(30) {
				b = append(b, rec{fmt.Sprint("ns-", rng.IntN(4)), []string{"BackOff", "Pulled", "Failed", "Killing"}[rng.IntN(4)],
					int64(rng.IntN(6)), rng.IntN(2) == 0})
			}
			batches = append(batches, b)
			r.consume(logsOf(b))
		}
		r.sink.plan = nil
		r.runRetries()
		r.consume(plog.NewLogs())
		want := truthOf(batches, cfg.MaxSeries)
		if len(want) == 0 {
			continue
		}
		require.Equal(t, want, latest(t, r.sink), "seed %d max_series %d", seed, cfg.MaxSeries)
	}
}
