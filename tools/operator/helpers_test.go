package operator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/open-telemetry/opentelemetry-operator/apis/v1beta1"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// discard is the logger the Operator's helpers get here.
var discard = logr.Discard()

// distribution is bin/otelcol-k8sevents (make otelcol); missing, the test
// skips, or fails under CI=true.
func distribution(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(root, "bin", "otelcol-k8sevents"))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (make otelcol builds it)", err)
		}
		t.Skipf("%v (make otelcol builds it)", err)
	}
	return bin
}

// configMap is spec.config as the Operator writes it out (Config.Yaml),
// read back as a map.
func configMap(t *testing.T, col *v1beta1.OpenTelemetryCollector) map[string]any {
	t.Helper()
	text, err := col.Spec.Config.Yaml()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(text), &m))
	return m
}

// metricsHosts are the hosts of the Prometheus readers of the collector's
// own metrics, in spec.config.
func metricsHosts(t *testing.T, col *v1beta1.OpenTelemetryCollector) []string {
	t.Helper()
	var cfg struct {
		Service struct {
			Telemetry struct {
				Metrics struct {
					Readers []struct {
						Pull struct {
							Exporter struct {
								Prometheus struct {
									Host string `json:"host"`
								} `json:"prometheus"`
							} `json:"exporter"`
						} `json:"pull"`
					} `json:"readers"`
				} `json:"metrics"`
			} `json:"telemetry"`
		} `json:"service"`
	}
	text, err := col.Spec.Config.Yaml()
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal([]byte(text), &cfg))
	var hosts []string
	for _, r := range cfg.Service.Telemetry.Metrics.Readers {
		hosts = append(hosts, r.Pull.Exporter.Prometheus.Host)
	}
	return hosts
}
