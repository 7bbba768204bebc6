package k8stokenauthextension

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// TestConfigKeysAndDefaults: every key of the README is read from YAML
// under its name; the defaults are the README's.
func TestConfigKeysAndDefaults(t *testing.T) {
	def := createDefaultConfig()
	require.NoError(t, def.Validate())
	assert.Equal(t, []string{"otel-k8sevents"}, def.Audiences)
	assert.Equal(t, 2*time.Minute, def.Cache.AllowTTL)
	assert.Equal(t, 30*time.Second, def.Cache.DenyTTL)

	cfg := createDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"auth_type": "kubeConfig", "kubeconfig": "/k", "context": "c", "audiences": []any{"x", "y"},
		"timeout": "1s", "qps": 7, "burst": 9,
		"cache":   map[string]any{"max_entries": 5, "allow_ttl": "1m", "deny_ttl": "10s"},
		"issuers": []any{"https://issuer"}, "users": []any{"system:serviceaccount:x:tier1"}, "renew": map[string]any{"qps": 3, "burst": 4, "before": "20s"},
		"per_source": map[string]any{"failures_per_second": 0.5, "burst": 6, "max_sources": 7},
	}).Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	assert.Equal(t, []string{"x", "y"}, cfg.Audiences)
	assert.Equal(t, "/k", cfg.KubeConfig)
	assert.Equal(t, time.Second, cfg.Timeout)
	assert.Equal(t, float32(7), cfg.QPS)
	assert.Equal(t, 9, cfg.Burst)
	assert.Equal(t, 5, cfg.Cache.MaxEntries)
	assert.Equal(t, time.Minute, cfg.Cache.AllowTTL)
	assert.Equal(t, 10*time.Second, cfg.Cache.DenyTTL)
	assert.Equal(t, []string{"https://issuer"}, cfg.Issuers)
	assert.Equal(t, []string{"system:serviceaccount:x:tier1"}, cfg.Users)
	assert.Equal(t, RenewConfig{QPS: 3, Burst: 4, Before: 20 * time.Second}, cfg.Renew)
	assert.Equal(t, PerSourceConfig{FailuresPerSecond: 0.5, Burst: 6, MaxSources: 7}, cfg.PerSource)
}

func TestValidateNamesTheKey(t *testing.T) {
	for key, mutate := range map[string]func(*Config){
		"audiences":           func(c *Config) { c.Audiences = nil },
		"audiences: an empty": func(c *Config) { c.Audiences = []string{""} },
		"timeout":             func(c *Config) { c.Timeout = 0 },
		"qps, burst":          func(c *Config) { c.Burst = 0 },
		"cache::max_entries":  func(c *Config) { c.Cache.MaxEntries = 0 },
		"cache::allow_ttl":    func(c *Config) { c.Cache.AllowTTL = time.Hour },
		"cache::deny_ttl":     func(c *Config) { c.Cache.DenyTTL = -time.Second },
		"auth_type":           func(c *Config) { c.AuthType = "token" },
		"audiences: \"https://kubernetes.default.svc.cluster.local\" is the API server's own": func(c *Config) {
			c.Audiences = []string{"otel-k8sevents", "https://kubernetes.default.svc.cluster.local"}
		},
		"audiences: \"https://kubernetes.default.svc.example.org\" is the API server's own": func(c *Config) {
			c.Audiences = []string{"https://kubernetes.default.svc.example.org"}
		},
		"renew::qps":    func(c *Config) { c.Renew.QPS = 0 },
		"renew::before": func(c *Config) { c.Renew.Before = 5 * time.Minute },
		"per_source":    func(c *Config) { c.PerSource.MaxSources = 0 },
		"users":         func(c *Config) { c.Users = []string{""} },
	} {
		cfg := createDefaultConfig()
		mutate(cfg)
		err := cfg.Validate()
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), key)
	}
}
