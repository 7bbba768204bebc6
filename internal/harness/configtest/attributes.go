package configtest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// MetricAttributes reads the attributes metadata.yaml declares for the
// component's own telemetry: per metric (its name in metadata.yaml), per
// attribute key (name_override, else the attribute's id), the values its
// enum allows.
func MetricAttributes(t *testing.T) map[string]map[string][]string {
	t.Helper()
	cm, err := confmaptest.LoadConf("metadata.yaml")
	require.NoError(t, err)
	var md struct {
		Attributes map[string]struct {
			NameOverride string   `mapstructure:"name_override"`
			Enum         []string `mapstructure:"enum"`
		} `mapstructure:"attributes"`
		Telemetry struct {
			Metrics map[string]struct {
				Attributes []string `mapstructure:"attributes"`
			} `mapstructure:"metrics"`
		} `mapstructure:"telemetry"`
	}
	require.NoError(t, cm.Unmarshal(&md, confmap.WithIgnoreUnused()))
	out := map[string]map[string][]string{}
	for name, m := range md.Telemetry.Metrics {
		out[name] = map[string][]string{}
		for _, id := range m.Attributes {
			a, ok := md.Attributes[id]
			require.True(t, ok, "metric %s names undeclared attribute %s", name, id)
			key := a.NameOverride
			if key == "" {
				key = id
			}
			out[name][key] = a.Enum
		}
	}
	return out
}

// RequireDeclared fails unless metadata.yaml declares, for metric, the
// attribute key with every one of values in its enum.
func RequireDeclared(t *testing.T, declared map[string]map[string][]string, metric, key string, values ...string) {
	t.Helper()
	enum, ok := declared[metric][key]
	require.True(t, ok, "metadata.yaml declares no attribute %s on %s", key, metric)
	for _, v := range values {
		require.Contains(t, enum, v, "metadata.yaml: %s's attribute %s", metric, key)
	}
}
