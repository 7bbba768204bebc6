package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadyConfigsValidate runs `otelcol-k8sevents validate` on every ready
// configuration: each must name only compiled-in components with settings
// their Validate accepts, with the ${env:...} defaults as written.
func TestReadyConfigsValidate(t *testing.T) {
	parallel(t)
	bin := binary(t)
	files, err := filepath.Glob("../testdata/config/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 3)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := exec.Command(bin, "validate", "--config", f).CombinedOutput()
			assert.NoError(t, err, "%s", out)
		})
	}

	// The check itself can fail: a bad processor setting merged over a ready
	// configuration is refused with the processor's own message.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("processors: {eventseries: {mode: nonsense}}\n"), 0o600))
	out, err := exec.Command(bin, "validate", "--config", "../testdata/config/mirror.yaml", "--config", bad).CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "nonsense")
}

// TestClickHouseConfigSettings: clickhouse.yaml's environment settings reach
// the clickhouse exporter's own validation (no ClickHouse server here, so
// validation is what is checked; docs/configurations.md "ClickHouse"): the documented
// alternatives validate, and a bad endpoint or TTL is refused naming it.
func TestClickHouseConfigSettings(t *testing.T) {
	bin := binary(t)
	validate := func(env ...string) (string, error) {
		cmd := exec.Command(bin, "validate", "--config", "../testdata/config/clickhouse.yaml")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, env := range [][]string{
		{"CLICKHOUSE_CREATE_SCHEMA=false", "CLICKHOUSE_TTL=0s"},
		{"CLICKHOUSE_ENDPOINT=https://ch.example.test:8443", "CLICKHOUSE_TTL=48h",
			"CLICKHOUSE_USERNAME=events", "CLICKHOUSE_PASSWORD=not-a-secret", "CLUSTER_NAME=prod-eu"},
	} {
		out, err := validate(env...)
		assert.NoError(t, err, "%v: %s", env, out)
	}

	out, err := validate("CLICKHOUSE_ENDPOINT=tcp://[::1")
	require.Error(t, err, "a malformed endpoint is refused")
	assert.Contains(t, out, "endpoint")

	out, err = validate("CLICKHOUSE_TTL=a-month")
	require.Error(t, err, "a TTL that is not a duration is refused")
	assert.Contains(t, out, "ttl")

	out, err = validate("CLICKHOUSE_CREATE_SCHEMA=sometimes")
	require.Error(t, err, "create_schema is a boolean")
	assert.Contains(t, out, "create_schema")
}
