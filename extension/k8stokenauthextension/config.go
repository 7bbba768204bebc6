package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"

import (
	"errors"
	"fmt"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/reviewcache"
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
	// Cache keeps the API server's answers: a token's identity, or that it
	// is not valid. An accepted token is believed for allow_ttl and never
	// past its own exp.
	Cache reviewcache.Config `mapstructure:"cache"`

	// prevent unkeyed literal initialization
	_ struct{}
}

func createDefaultConfig() *Config {
	return &Config{
		Config:    k8sclient.Config{AuthType: k8sclient.AuthServiceAccount},
		Audiences: []string{"otel-k8sevents"},
		Timeout:   5 * time.Second,
		QPS:       50,
		Burst:     100,
		Cache:     reviewcache.Config{MaxEntries: 10000, AllowTTL: 2 * time.Minute, DenyTTL: 30 * time.Second},
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
	errs = append(errs, cfg.Cache.Validate())
	return errors.Join(errs...)
}
