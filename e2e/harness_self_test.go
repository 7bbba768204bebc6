package e2e

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHarnessConfigLayout(t *testing.T) {
	parallel(t)
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

// TestPortTakenReadsTheBindError: a start is retried only when the
// collector's log names one of the test's own ports as taken.
func TestPortTakenReadsTheBindError(t *testing.T) {
	err := errors.New("collector exited before it was healthy: exit status 1\nError: failed to start extensions: " +
		"failed to bind to address 127.0.0.1:20363: listen tcp 127.0.0.1:20363: bind: address already in use")
	assert.True(t, portTaken(err, 31000, 20363))
	assert.False(t, portTaken(err, 2036, 31000), "a port whose digits begin another's")
	assert.False(t, portTaken(errors.New("collector exited before it was healthy: exit status 1"), 20363))
}
