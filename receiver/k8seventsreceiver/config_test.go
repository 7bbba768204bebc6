package k8seventsreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"

	"github.com/k8sevents/otel-k8sevents/internal/harness/configtest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

func loadConfig(t *testing.T, id string) *Config {
	return configtest.Load(t, NewFactory().CreateDefaultConfig().(*Config), id)
}

func TestLoadConfig(t *testing.T) {
	assert.Equal(t, createDefaultConfig(), loadConfig(t, "k8sevents"))
	require.NoError(t, createDefaultConfig().Validate())

	got := loadConfig(t, "k8sevents/all")
	require.NoError(t, got.Validate())
	storage, elector := component.MustNewIDWithName("file_storage", "events"), component.MustNewID("k8s_leader_elector")
	want := createDefaultConfig()
	want.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: "/etc/kube/config", Context: "prod"}
	want.API, want.Initial, want.FieldSelector = k8sevent.APICoreV1, initialAll, "type=Warning"
	want.Namespaces, want.ExcludeNamespaces = []string{"shop", "payments"}, []string{"kube-system"}
	want.Storage, want.K8sLeaderElector = &storage, &elector
	want.WatchIdleTimeout, want.ListPageSize = 2*time.Minute, 100
	assert.Equal(t, want, got)
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	err := loadConfig(t, "k8sevents/invalid").Validate()
	require.Error(t, err)
	for _, key := range []string{`auth_type: "token"`, `api: "events.k8s.io/v2"`, `exclude_namespaces: "shop"`,
		`initial: "some"`, "watch_idle_timeout", "list_page_size", "cluster_name: longer than 253 bytes"} {
		assert.ErrorContains(t, err, key)
	}
}

// TestWatchIdleTimeoutIsAtLeastASecond: an idle watch is started again at
// once, so a tiny timeout asked for a quiet namespace's watch in a loop.
func TestWatchIdleTimeoutIsAtLeastASecond(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.WatchIdleTimeout = time.Second
	require.NoError(t, cfg.Validate())
	cfg.WatchIdleTimeout = time.Millisecond
	assert.ErrorContains(t, cfg.Validate(), "watch_idle_timeout: must be at least 1s, have 1ms")
}
