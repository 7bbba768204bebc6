package eventseriesprocessor

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/harness/configtest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
)

// The attribute values the processor's metrics carry are declared in
// metadata.yaml (documentation.md lists them for operators): every
// problem a record can have, every state a record is emitted in.
func TestMetricAttributesAreDeclared(t *testing.T) {
	declared := configtest.MetricAttributes(t)
	var problems []string
	k8sevent.Problem(math.MaxUint32).Each(func(name string) { problems = append(problems, name) })
	problems = append(problems, "not_event", "clamped", "unchanged", "unproven")
	configtest.RequireDeclared(t, declared, "processor_eventseries_input_problems", "problem", problems...)
	configtest.RequireDeclared(t, declared, "processor_eventseries_input_problems", "outcome", "repaired", "dropped", "passed", "counted", "ignored")
	configtest.RequireDeclared(t, declared, "processor_eventseries_refused_records", "outcome", "retried", "dropped")
	configtest.RequireDeclared(t, declared, "processor_eventseries_state", "operation", "restore", "save", "log")
	configtest.RequireDeclared(t, declared, "processor_eventseries_state", "outcome", "ok", "error", "version_refused", "entries_dropped")
	configtest.RequireDeclared(t, declared, "processor_eventseries_merged_occurrences", "into", "series", "summary")
	configtest.RequireDeclared(t, declared, "processor_eventseries_series", "event", "started", "finished", "evicted")
	var states []string
	for _, name := range engine.KindNames {
		if name == "" {
			name = "legacy"
		}
		states = append(states, name)
	}
	configtest.RequireDeclared(t, declared, "processor_eventseries_records", "state", states...)
	configtest.RequireDeclared(t, declared, "processor_eventseries_records", "filter", "passed", "exempt", "held")
}

// TestRecordsByFilter: the records metric splits the records written by
// the spam filter's decision, as the engine counts them by kind; the split
// matches the records the processor wrote, in series mode (heartbeats,
// evictions and a shutdown flush included) and in legacy mode, and held
// records are the spam filter's.
func TestRecordsByFilter(t *testing.T) {
	// 5 pods, 3 reasons each (a key every 5 minutes), one record a 20
	// seconds: more reasons per pod than the filter's burst, series longer
	// than heartbeat_interval; then more keys than max_keys.
	var batches []plog.Logs
	for i := range 600 {
		ev := podEvent(fmt.Sprintf("web-%d", i%5), fmt.Sprintf("Reason%d", i%3), "x")
		ev.Time = t0.Add(time.Duration(i) * 20 * time.Second)
		if i > 300 {
			// New keys, each seen once: the old ones go idle or are
			// evicted, and the filter holds most new ones back.
			ev.Regarding.Name += "-b"
			ev.Reason = fmt.Sprintf("Once%d", i)
		}
		batches = append(batches, logsOf(ev))
	}
	for name, mutate := range map[string]func(*Config){
		"series": func(cfg *Config) {
			eventTime(cfg)
			cfg.MaxKeys = 20
			cfg.Series.HeartbeatInterval = 2 * time.Minute
			cfg.Series.FinishAfter = 10 * time.Minute
			cfg.SpamFilter.Burst = 2
		},
		"legacy": func(cfg *Config) { eventTime(cfg); cfg.Mode = modeLegacy; cfg.MaxKeys = 20; cfg.SpamFilter.Burst = 2 },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, mutate)
			for _, ld := range batches {
				h.consume(ld)
			}
			h.shutdown()
			const metric = "otelcol_processor_eventseries_records"
			s := h.p.engine.Stats
			t.Logf("engine counts: %+v", s)
			written := map[string]int64{}
			var timerSingletons int64
			for _, r := range h.records() {
				state := r.event(t).SeriesState
				if state == "" {
					state = "legacy"
				}
				written[state]++
				if state == k8sevent.StateSingleton && r.fromTimer() {
					timerSingletons++
				}
			}
			for state, n := range written {
				assert.Equal(t, n, counterSum(h.tel, metric, "state="+state, "filter=passed")+
					counterSum(h.tel, metric, "state="+state, "filter=exempt"), "%s records written", state)
			}
			assert.Equal(t, s.Unfiltered, counterSum(h.tel, metric, "filter=exempt"), "exempt: unfiltered")
			assert.Equal(t, s.SpamDropped, counterSum(h.tel, metric, "filter=held"), "held: spam dropped")
			assert.Positive(t, s.SpamDropped, "the filter held records back")
			assert.Positive(t, s.Evictions, "entries were evicted")
			assert.Equal(t, s.Heartbeats, counterSum(h.tel, metric, "state=ongoing", "filter=passed"), "heartbeats")
			assert.Zero(t, counterSum(h.tel, metric, "state=started", "filter=exempt"), "a started record takes a token")
			assert.Zero(t, counterSum(h.tel, metric, "state=finished", "filter=passed"), "a finished record takes none")
			if name == "series" {
				assert.Positive(t, s.Heartbeats)
				assert.Positive(t, timerSingletons)
				assert.Equal(t, timerSingletons, counterSum(h.tel, metric, "state=singleton", "filter=exempt"),
					"exempt singletons: those no input carries (summaries of one occurrence, evicted, flushed)")
			} else {
				assert.Positive(t, s.Unfiltered)
				assert.Equal(t, s.Unfiltered, counterSum(h.tel, metric, "state=legacy", "filter=exempt"))
			}
		})
	}
}
