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
