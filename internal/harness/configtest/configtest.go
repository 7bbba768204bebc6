// Package configtest loads a component's configuration from its
// testdata/config.yaml the way a collector does: the factory's default
// config, then the named section over it.
package configtest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// Load unmarshals section id of testdata/config.yaml over cfg, the
// factory's default configuration, and returns it.
func Load[T component.Config](t *testing.T, cfg T, id string) T {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(id)
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}
