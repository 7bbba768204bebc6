package eventseriesprocessor

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestHostileDuplicateKeys: a record whose attribute maps hold a contract
// key twice (allowed by OTLP) cannot make the processor's output say
// another count or another Event name than the processor decided: every
// record it emits carries each contract key once, on the record and on the
// resource, and the duplicate is counted as bad input.
func TestHostileDuplicateKeys(t *testing.T) {
	raw, err := os.ReadFile("../../internal/k8sevent/testdata/duplicated-keys.json")
	require.NoError(t, err)
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(raw)
	require.NoError(t, err)

	h := newHarness(t, eventTime)
	h.consume(ld)
	h.shutdown()

	out := h.records()
	require.NotEmpty(t, out)
	for _, r := range out {
		requireEachContractKeyOnce(t, r.lr.Attributes())
		requireEachContractKeyOnce(t, r.res.Attributes())
		ev := r.event(t)
		require.NotEqual(t, "other-object.event", ev.Name, "the name the processor gave")
		require.LessOrEqual(t, max(ev.Count, ev.SeriesCount), int64(1), "one occurrence was sent")
	}
	requireProblemCounted(t, h, "duplicate_key")
}

func requireEachContractKeyOnce(t *testing.T, attrs pcommon.Map) {
	t.Helper()
	seen := map[string]bool{}
	for k := range attrs.All() {
		for _, c := range k8sevent.ContractKeys {
			if k == c {
				require.False(t, seen[k], "key %s twice", k)
				seen[k] = true
			}
		}
	}
}

// requireProblemCounted: the input_problems metric has a point for problem.
func requireProblemCounted(t *testing.T, h *harness, problem string) {
	t.Helper()
	m, err := h.tel.GetMetric("otelcol_processor_eventseries_input_problems")
	require.NoError(t, err)
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if p, _ := dp.Attributes.Value("problem"); p.AsString() == problem && dp.Value > 0 {
			return
		}
	}
	t.Fatalf("no input_problems point for problem %q", problem)
}

// TestHostileOversizedFieldsNotCached: records whose name-like fields are
// 100 KB (each a distinct object) are refused before the engine keeps
// anything of them, and counted; a good record beside them is processed.
func TestHostileOversizedFieldsNotCached(t *testing.T) {
	h := newHarness(t, func(cfg *Config) { eventTime(cfg); cfg.NonEventRecords = recordsDrop })
	huge := strings.Repeat("k", 100<<10)
	for i := range 50 {
		ev := podEvent(fmt.Sprintf("pod-%d", i), "BackOff", "x")
		ev.Time = t0.Add(time.Duration(i) * time.Second)
		switch i % 3 {
		case 0:
			ev.Regarding.Kind = huge + strconv.Itoa(i)
		case 1:
			ev.Regarding.Name = huge + strconv.Itoa(i)
		default:
			ev.UID = huge + strconv.Itoa(i)
		}
		h.consume(logsOf(ev))
	}
	require.Zero(t, h.p.engine.Len(), "nothing of an oversized record is kept")
	require.Empty(t, h.records())
	requireProblemCounted(t, h, "oversized_field")

	good := podEvent("web-0", "BackOff", "x")
	good.Time = t0
	h.consume(logsOf(good))
	require.Len(t, h.records(), 1)
}

// TestHostileClaimedCountsWithInputCountsIgnore: with input_counts: ignore,
// a record claiming 2,147,483,647 occurrences is one occurrence, a second
// record of the same Event uid claiming more adds nothing, and no emitted
// record carries the claimed count. With the default (cumulative) the claim
// is honoured: only sources trusted to state counts may feed such a pipeline.
func TestHostileClaimedCountsWithInputCountsIgnore(t *testing.T) {
	claim := func(count int64, t0off time.Duration) k8sevent.Event {
		ev := podEvent("web-0", "BackOff", "x")
		ev.UID, ev.Count, ev.Time = "event-uid-1", count, t0.Add(t0off)
		return ev
	}
	for _, tc := range []struct {
		counts string
		want   int64
	}{{countsIgnore, 1}, {countsCumulative, 2147483647 + 5}} {
		t.Run(tc.counts, func(t *testing.T) {
			h := newHarness(t, func(cfg *Config) { eventTime(cfg); cfg.InputCounts = tc.counts })
			h.consume(logsOf(claim(2147483647, 0)))
			h.consume(logsOf(claim(2147483647+5, time.Second)))
			h.shutdown()
			require.Equal(t, tc.want, h.p.engine.Stats.Occurrences)
			var shown int64
			for _, r := range h.records() {
				ev := r.event(t)
				shown = max(shown, ev.Occurrences())
			}
			require.Equal(t, tc.want, shown, "the most any emitted record shows")
		})
	}
}

// TestEmittedRecordsCarryTheEventName: every record the processor emits,
// made of an input record (which had no EventName) or of a timer, carries
// the one EventName of a Kubernetes Event.
func TestEmittedRecordsCarryTheEventName(t *testing.T) {
	h := newHarness(t, eventTime)
	for i := range 3 {
		ev := podEvent("web-0", "BackOff", "x")
		ev.Time = t0.Add(time.Duration(i) * time.Minute)
		ld := logsOf(ev)
		ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).SetEventName("")
		h.consume(ld)
	}
	h.shutdown()
	recs := h.records()
	require.GreaterOrEqual(t, len(recs), 2, "a singleton, a started record and the shutdown's")
	for _, r := range recs {
		require.Equal(t, k8sevent.EventName, r.lr.EventName())
	}
}
