package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"

import (
	"errors"
	"fmt"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
)

// Config of the k8stokenauth extension. README.md lists every key.
type Config struct {
	// How the extension reaches the API server for its TokenReviews
	// (auth_type, kubeconfig, context): its own identity needs create on
	// tokenreviews.authentication.k8s.io.
	k8sclient.Config `mapstructure:",squash"`

	// Audiences: a token is accepted only if it was issued for one of them
	// (a projected ServiceAccount token's audience). Never empty: a token
	// meant for the API server itself, which every pod holds, must not be
	// taken here.
	Audiences []string `mapstructure:"audiences"`
	// Timeout bounds one TokenReview, its wait for the client's rate limit
	// included; past it the request is refused as retryable (Unavailable).
	Timeout time.Duration `mapstructure:"timeout"`
	// QPS and Burst cap the TokenReviews sent (client-side token bucket):
	// a flood of distinct tokens costs the API server at most this.
	QPS   float32 `mapstructure:"qps"`
	Burst int     `mapstructure:"burst"`
	// Cache keeps the API server's answers.
	Cache CacheConfig `mapstructure:"cache"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// CacheConfig bounds what is remembered of TokenReviews, and for how long.
type CacheConfig struct {
	// MaxEntries: tokens remembered; the least recently used goes first.
	MaxEntries int `mapstructure:"max_entries"`
	// AllowTTL: how long an accepted token is believed without asking
	// again, and never past its own expiry: a deleted ServiceAccount or pod
	// is noticed within this.
	AllowTTL time.Duration `mapstructure:"allow_ttl"`
	// DenyTTL: how long a refused token stays refused without asking again.
	DenyTTL time.Duration `mapstructure:"deny_ttl"`
}

// The longest TTLs Validate takes: a revoked token must not live on here
// much longer than the defaults say.
const (
	maxAllowTTL = 10 * time.Minute
	maxDenyTTL  = 5 * time.Minute
)

func createDefaultConfig() *Config {
	return &Config{
		Config:    k8sclient.Config{AuthType: k8sclient.AuthServiceAccount},
		Audiences: []string{"otel-k8sevents"},
		Timeout:   5 * time.Second,
		QPS:       50,
		Burst:     100,
		Cache:     CacheConfig{MaxEntries: 10000, AllowTTL: 2 * time.Minute, DenyTTL: 30 * time.Second},
	}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	errs := []error{cfg.Config.Validate()}
	if len(cfg.Audiences) == 0 {
		errs = append(errs, errors.New("audiences: at least one is needed (the audience apps request their tokens for)"))
	}
	for _, a := range cfg.Audiences {
		if a == "" {
			errs = append(errs, errors.New("audiences: an empty audience"))
		}
	}
	if cfg.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be positive, have %s", cfg.Timeout))
	}
	if cfg.QPS <= 0 || cfg.Burst < 1 {
		errs = append(errs, fmt.Errorf("qps, burst: must be positive, have %v and %d", cfg.QPS, cfg.Burst))
	}
	if cfg.Cache.MaxEntries < 1 {
		errs = append(errs, fmt.Errorf("cache::max_entries: must be positive, have %d", cfg.Cache.MaxEntries))
	}
	if cfg.Cache.AllowTTL < 0 || cfg.Cache.AllowTTL > maxAllowTTL {
		errs = append(errs, fmt.Errorf("cache::allow_ttl: must be between 0 and %s, have %s", maxAllowTTL, cfg.Cache.AllowTTL))
	}
	if cfg.Cache.DenyTTL < 0 || cfg.Cache.DenyTTL > maxDenyTTL {
		errs = append(errs, fmt.Errorf("cache::deny_ttl: must be between 0 and %s, have %s", maxDenyTTL, cfg.Cache.DenyTTL))
	}
	return errors.Join(errs...)
}
