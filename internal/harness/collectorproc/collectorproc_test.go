package collectorproc

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
)

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(`# HELP x y
# TYPE otelcol_writes_total counter
otelcol_writes_total{outcome="created",otel_scope_name="a,b"} 3
otelcol_writes_total{otel_scope_name="a,b",outcome="patched"} 4 1700000000
up 1
`))
	require.NoError(t, err)
	assert.Equal(t, 3.0, m[`otelcol_writes_total{otel_scope_name="a,b",outcome="created"}`])
	assert.Equal(t, 7.0, m.Sum("otelcol_writes_total"))
	assert.Equal(t, 4.0, m.Sum("otelcol_writes_total", "outcome=patched"))
	assert.Equal(t, 0.0, m.Sum("otelcol_writes_total", "outcome=stale"))
	assert.Equal(t, 1.0, m.Sum("up"))
	name, labels := Series(`otelcol_writes_total{otel_scope_name="a,b",outcome="patched"}`)
	assert.Equal(t, "otelcol_writes_total", name)
	assert.Equal(t, map[string]string{"otel_scope_name": "a,b", "outcome": "patched"}, labels)
	name, labels = Series("up")
	assert.Equal(t, "up", name)
	assert.Empty(t, labels)

	_, err = ParseMetrics(strings.NewReader("broken{a=\"b\"} x\n"))
	assert.Error(t, err)
}

// TestCollectorStartsAndStops runs the built distribution with a small
// pipeline, reads its health and telemetry, and stops it with SIGTERM.
func TestCollectorStartsAndStops(t *testing.T) {
	bin, err := FindBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ports := make([]int, 3)
	for i := range ports {
		ports[i], err = childproc.FreePort()
		require.NoError(t, err)
	}
	cfg := fmt.Sprintf(`
extensions:
  health_check: {endpoint: "127.0.0.1:%d"}
receivers:
  otlp: {protocols: {grpc: {endpoint: "127.0.0.1:%d"}}}
processors:
  eventseries:
exporters:
  debug:
service:
  extensions: [health_check]
  telemetry:
    metrics:
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}
  pipelines:
    logs: {receivers: [otlp], processors: [eventseries], exporters: [debug]}
`, ports[0], ports[1], ports[2])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Binary: bin, Config: cfg, Dir: t.TempDir(), HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", ports[0])})
	require.NoError(t, err)
	m, err := c.Metrics(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2]))
	require.NoError(t, err, c.LogTail(2048))
	// Counters are spelled without a _total suffix (Pipeline reads them so).
	assert.Positive(t, m.Sum("otelcol_process_uptime"), "no process metric in %d samples", len(m))
	for name := range m {
		base, _, _ := strings.Cut(name, "{")
		assert.False(t, strings.HasPrefix(base, "otelcol_") && strings.HasSuffix(base, "_total"), "a counter named with _total: %s", name)
	}
	require.NoError(t, c.Stop(30*time.Second))
	exited, _ := c.Exited()
	assert.True(t, exited)
	assert.Contains(t, c.LogTail(8192), "Shutdown complete")

	_, err = Start(ctx, Options{Binary: bin, Config: "receivers: {nope: {}}", Dir: t.TempDir(), HealthURL: fmt.Sprintf("http://127.0.0.1:%d/", ports[0]), StartTimeout: 30 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope")
}
