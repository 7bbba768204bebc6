package eventseriesprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestSeverityIsKept: Events of type Error and Critical,
// which the API server does not accept but emitters use, keep their type
// and contrib's k8s_events severity (ERROR, FATAL) on every record the
// processor emits, in both modes: the records made of an input, the series
// end and the shutdown flush (timer records, rebuilt from the state). A
// type given in another case is spelled as the contract spells it. The old
// code wrote them all as Normal (INFO).
func TestSeverityIsKept(t *testing.T) {
	for _, mode := range []string{modeSeries, modeLegacy} {
		h := newHarness(t, func(cfg *Config) {
			eventTime(cfg)
			cfg.Mode = mode
			cfg.Aggregation.Enabled = false
		})
		var in []k8sevent.Event
		for i, typ := range []string{"Error", "CRITICAL", "Error", "CRITICAL", "Error", "CRITICAL"} {
			ev := podEvent("db-0", "Failed"+typ[:1], "x")
			ev.Type, ev.Time = typ, t0.Add(time.Duration(i)*time.Second)
			in = append(in, ev)
		}
		h.consume(logsOf(in...))
		late := podEvent("other", "Pulled", "x") // moves event time past every series' end
		late.Time = t0.Add(time.Hour)
		h.consume(logsOf(late))
		h.shutdown()

		want := map[string][2]any{
			"FailedE": {k8sevent.TypeError, plog.SeverityNumberError},
			"FailedC": {k8sevent.TypeCritical, plog.SeverityNumberFatal},
		}
		seen := map[string]int{}
		timers := 0
		for _, r := range h.records() {
			ev := r.event(t)
			w, ok := want[ev.Reason]
			if !ok {
				continue
			}
			seen[ev.Reason]++
			if r.fromTimer() {
				timers++
			}
			assert.Equal(t, w[0], r.lr.SeverityText(), "%s %s", mode, ev.Reason)
			assert.Equal(t, w[1], r.lr.SeverityNumber(), "%s %s", mode, ev.Reason)
		}
		require.Len(t, seen, 2, mode)
		if mode == modeSeries {
			assert.Positive(t, timers, "the series ends are timer records")
		}
	}
}
