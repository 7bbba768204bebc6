package k8seventsotlpreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// TestConfigKeysAndDefaults: every key of the README is read from YAML
// under its name; the defaults of a named protocol are the README's.
func TestConfigKeysAndDefaults(t *testing.T) {
	cfg := createDefaultConfig()
	auth := map[string]any{"authenticator": "k8stokenauth"}
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"protocols": map[string]any{"grpc": map[string]any{"auth": auth}, "http": map[string]any{"auth": auth}},
		"auth_type": "kubeConfig", "kubeconfig": "/k", "context": "c", "timeout": "1s", "qps": 7, "burst": 9,
		"max_connections": 3, "max_concurrent_decodes": 2, "max_namespaces_per_request": 4,
		"cache":        map[string]any{"max_entries": 5, "allow_ttl": "1m", "deny_ttl": "10s"},
		"per_client":   map[string]any{"records_per_second": 2.5, "burst": 30, "max_clients": 4, "review_cost": 6},
		"cluster_name": "east", "cluster_uid": "u",
	}).Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	grpc, http := cfg.Protocols.GRPC.Get(), cfg.Protocols.HTTP.Get()
	require.NotNil(t, grpc)
	require.NotNil(t, http)
	assert.Equal(t, "localhost:4317", grpc.NetAddr.Endpoint)
	assert.Equal(t, 1, grpc.MaxRecvMsgSizeMiB)
	assert.Equal(t, uint32(8), grpc.MaxConcurrentStreams)
	assert.Equal(t, "localhost:4318", http.NetAddr.Endpoint)
	assert.Equal(t, int64(1<<20), http.MaxRequestBodySize)
	assert.Equal(t, "/k", cfg.KubeConfig)
	assert.Equal(t, time.Second, cfg.Timeout)
	assert.Equal(t, 5, cfg.Cache.MaxEntries)
	assert.Equal(t, time.Minute, cfg.Cache.AllowTTL)
	assert.Equal(t, PerClientConfig{RecordsPerSecond: 2.5, Burst: 30, MaxClients: 4, ReviewCost: 6}, cfg.PerClient)
	assert.Equal(t, 3, cfg.MaxConnections)
	assert.Equal(t, 2, cfg.MaxConcurrentDecodes)
	assert.Equal(t, 4, cfg.MaxNamespacesPerRequest)
	assert.Equal(t, "east", cfg.ClusterName)
	assert.Equal(t, "u", cfg.ClusterUID)

	def := createDefaultConfig()
	assert.Equal(t, 5*time.Minute, def.Cache.AllowTTL)
	assert.Equal(t, 30*time.Second, def.Cache.DenyTTL)
	assert.Equal(t, PerClientConfig{RecordsPerSecond: 20, Burst: 200, MaxClients: 10000, ReviewCost: 10}, def.PerClient)
	assert.Equal(t, 1024, def.MaxConnections)
	assert.Equal(t, 8, def.MaxConcurrentDecodes)
	assert.Equal(t, 20, def.MaxNamespacesPerRequest)
	assert.ErrorContains(t, def.Validate(), "protocols: at least one", "no listener unless one is named")
}

func TestValidateNamesTheKey(t *testing.T) {
	valid := func(t *testing.T, grpcAuth bool) *Config {
		cfg := createDefaultConfig()
		grpc := map[string]any{}
		if grpcAuth {
			grpc["auth"] = map[string]any{"authenticator": "k8stokenauth"}
		}
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"protocols": map[string]any{"grpc": grpc}}).Unmarshal(cfg))
		return cfg
	}
	require.NoError(t, valid(t, true).Validate())
	assert.ErrorContains(t, valid(t, false).Validate(), "protocols::grpc::auth")
	for key, mutate := range map[string]func(*Config){
		"timeout":                        func(c *Config) { c.Timeout = 0 },
		"qps, burst":                     func(c *Config) { c.QPS = 0 },
		"cache::allow_ttl":               func(c *Config) { c.Cache.AllowTTL = time.Hour },
		"per_client::records_per_second": func(c *Config) { c.PerClient.RecordsPerSecond = 0 },
		"per_client::burst":              func(c *Config) { c.PerClient.Burst = 0 },
		"per_client::max_clients":        func(c *Config) { c.PerClient.MaxClients = 0 },
		"per_client::review_cost":        func(c *Config) { c.PerClient.ReviewCost = -1 },
		"max_namespaces_per_request":     func(c *Config) { c.MaxNamespacesPerRequest = 0 },
		"cluster_name":                   func(c *Config) { c.ClusterName = string(make([]byte, 300)) },
		"cluster_uid":                    func(c *Config) { c.ClusterUID = string(make([]byte, 300)) },
		"auth_type":                      func(c *Config) { c.AuthType = "token" },
	} {
		cfg := valid(t, true)
		mutate(cfg)
		assert.ErrorContains(t, cfg.Validate(), key)
	}
}
