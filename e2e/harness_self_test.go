package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHarnessConfigLayout(t *testing.T) {
	dir := t.TempDir()
	c := startCollector(t, dir, `
receivers:
  otlp: {protocols: {grpc: {endpoint: "127.0.0.1:0"}}}
exporters:
  debug:
extensions:
  file_storage: {directory: `+dir+`}
service:
  extensions: [health_check, file_storage]
  pipelines:
    logs: {receivers: [otlp], exporters: [debug]}
`)
	m := c.scrape(t)
	require.NotEmpty(t, m)
	assert.Positive(t, m.Sum("otelcol_process_uptime"))
}
