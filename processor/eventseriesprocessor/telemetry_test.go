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
	configtest.RequireDeclared(t, declared, "processor_eventseries_invalid_records", "problem", problems...)
	configtest.RequireDeclared(t, declared, "processor_eventseries_invalid_records", "outcome", "repaired", "dropped")
	configtest.RequireDeclared(t, declared, "processor_eventseries_non_event_records", "outcome", "passed", "dropped")
	configtest.RequireDeclared(t, declared, "processor_eventseries_refused_records", "outcome", "retried", "dropped")
	configtest.RequireDeclared(t, declared, "processor_eventseries_state_errors", "operation", "restore", "save", "log")
	var states []string
	for _, name := range engine.KindNames {
		if name == "" {
			name = "legacy"
		}
		states = append(states, name)
	}
	configtest.RequireDeclared(t, declared, "processor_eventseries_records_out", "state", states...)
}
