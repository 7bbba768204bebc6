package eventsumconnector

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/configtest"
)

func loadConfig(t *testing.T, id string) *Config {
	return configtest.Load(t, NewFactory().CreateDefaultConfig().(*Config), id)
}

func TestLoadConfig(t *testing.T) {
	got := loadConfig(t, "eventsum")
	require.NoError(t, got.Validate())
	want := createDefaultConfig()
	want.Logs = map[string]MetricInfo{"k8s.event.occurrences": {
		Description:     "Occurrences of Kubernetes Events.",
		SourceAttribute: "k8s.event.occurrences.new",
		Attributes:      []AttributeConfig{{Key: "k8s.namespace.name"}, {Key: "k8s.event.reason", DefaultValue: "unknown"}},
	}}
	assert.Equal(t, want, got)

	got = loadConfig(t, "eventsum/limited")
	require.NoError(t, got.Validate())
	assert.Equal(t, 50, got.MaxSeries)
	assert.Len(t, got.Logs, 2)
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	assert.ErrorContains(t, loadConfig(t, "eventsum/empty").Validate(), "logs: at least one metric is required")
	err := loadConfig(t, "eventsum/invalid").Validate()
	require.Error(t, err)
	for _, key := range []string{
		"max_series: must be positive", "logs::m1::source_attribute: missing", "logs::m1::conditions: not supported",
		"logs::m1::attributes[0]::key: missing", "logs::m1::attributes[1]::default_value", `logs::m1::attributes[3]::key: "b" twice`,
	} {
		assert.ErrorContains(t, err, key)
	}
}
