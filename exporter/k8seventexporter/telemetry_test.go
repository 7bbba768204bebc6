package k8seventexporter

import (
	"slices"
	"testing"

	"github.com/k8sevents/otel-k8sevents/internal/harness/configtest"
)

// The attribute values the exporter's metrics carry are declared in
// metadata.yaml (documentation.md lists them for operators).
func TestMetricAttributesAreDeclared(t *testing.T) {
	declared := configtest.MetricAttributes(t)
	outcomes := make([]string, 0, len(outcomeNames))
	for _, name := range outcomeNames {
		outcomes = append(outcomes, name)
	}
	configtest.RequireDeclared(t, declared, "exporter_k8sevents_writes", "outcome", outcomes...)
	configtest.RequireDeclared(t, declared, "exporter_k8sevents_permanent_failures", "reason",
		"invalid", "namespace", "rejected", "conflict", "forbidden")
	configtest.RequireDeclared(t, declared, "exporter_k8sevents_retryable_failures", "reason", "throttled", "forbidden", "error")
	if !slices.Equal(slices.Sorted(slices.Values(outcomes)), slices.Sorted(slices.Values(declared["exporter_k8sevents_writes"]["outcome"]))) {
		t.Errorf("metadata.yaml declares write outcomes %v, the exporter has %v", declared["exporter_k8sevents_writes"]["outcome"], outcomes)
	}
}
