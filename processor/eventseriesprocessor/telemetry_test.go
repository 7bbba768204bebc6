package eventseriesprocessor

import (
	"math"
	"testing"

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
