package k8stokenauthextension // import "github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// Issuers: when set, a token whose iss claim is none of them is
	// refused without a TokenReview (the API server's
	// --service-account-issuer values).
	Issuers []string `mapstructure:"issuers"`
	// Users: when set, only tokens of these usernames are accepted; any
	// other identity, however valid its token, is refused as not a token
	// of this collector. An audience is no secret (any pod may have a
	// token issued for it): a tier that only its tier before it may reach
	// names that tier's ServiceAccount here.
	Users []string `mapstructure:"users"`
	// Cache keeps the API server's answers: a token's identity, or that it
	// is not valid. An accepted token is believed for allow_ttl and never
	// past its own exp.
	Cache reviewcache.Config `mapstructure:"cache"`
	// Renew is the TokenReviews of tokens accepted before: a budget of
	// their own, so that a flood of unknown tokens holding qps does not
	// hold them, and renewed before their cached answer runs out.
	Renew RenewConfig `mapstructure:"renew"`
	// PerSource limits failed authentications per client address.
	PerSource PerSourceConfig `mapstructure:"per_source"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RenewConfig is the budget of re-reviewing tokens accepted before.
type RenewConfig struct {
	// QPS and Burst cap these TokenReviews (a client-side token bucket of
	// their own, beside qps and burst).
	QPS   float32 `mapstructure:"qps"`
	Burst int     `mapstructure:"burst"`
	// Before: a token in use is reviewed again in the background this
	// long before its cached answer runs out, so that its requests never
	// wait for the review.
	Before time.Duration `mapstructure:"before"`
}

// PerSourceConfig is a budget of failed authentications per client
// address.
type PerSourceConfig struct {
	// FailuresPerSecond and Burst: refused tokens a source may send; past
	// them its tokens not accepted before are refused without a review.
	FailuresPerSecond float64 `mapstructure:"failures_per_second"`
	Burst             int     `mapstructure:"burst"`
	// MaxSources: sources whose budgets are kept, the least recently
	// failing one forgotten first.
	MaxSources int `mapstructure:"max_sources"`
}

// apiServerAudiences are audiences the API server issues its own tokens
// for (a pod's default token, kubectl's): a collector accepting one would
// take every pod's default token.
var apiServerAudiences = []string{"api", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
	"https://kubernetes.default.svc", "https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc.cluster.local."}

func createDefaultConfig() *Config {
	return &Config{
		Config:    k8sclient.Config{AuthType: k8sclient.AuthServiceAccount},
		Audiences: []string{"otel-k8sevents"},
		Timeout:   5 * time.Second,
		QPS:       50,
		Burst:     100,
		Cache:     reviewcache.Config{MaxEntries: 10000, AllowTTL: 2 * time.Minute, DenyTTL: 30 * time.Second},
		Renew:     RenewConfig{QPS: 20, Burst: 40, Before: 30 * time.Second},
		PerSource: PerSourceConfig{FailuresPerSecond: 1, Burst: 20, MaxSources: 10000},
	}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	errs := []error{cfg.Config.Validate()}
	if len(cfg.Audiences) == 0 {
		errs = append(errs, errors.New("audiences: at least one is needed (the audience apps request their tokens for)"))
	}
	if slices.Contains(cfg.Users, "") {
		errs = append(errs, errors.New("users: an empty username"))
	}
	for _, a := range cfg.Audiences {
		switch {
		case a == "":
			errs = append(errs, errors.New("audiences: an empty audience"))
		case slices.Contains(apiServerAudiences, strings.ToLower(a)) || strings.HasPrefix(strings.ToLower(a), "https://kubernetes.default.svc."):
			errs = append(errs, fmt.Errorf("audiences: %q is the API server's own audience: every pod's default token would be accepted", a))
		}
	}
	if cfg.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be positive, have %s", cfg.Timeout))
	}
	if cfg.QPS <= 0 || cfg.Burst < 1 {
		errs = append(errs, fmt.Errorf("qps, burst: must be positive, have %v and %d", cfg.QPS, cfg.Burst))
	}
	errs = append(errs, cfg.Cache.Validate())
	if cfg.Renew.QPS <= 0 || cfg.Renew.Burst < 1 {
		errs = append(errs, fmt.Errorf("renew::qps, renew::burst: must be positive, have %v and %d", cfg.Renew.QPS, cfg.Renew.Burst))
	}
	if cfg.Renew.Before < 0 || cfg.Renew.Before >= cfg.Cache.AllowTTL && cfg.Cache.AllowTTL > 0 {
		errs = append(errs, fmt.Errorf("renew::before: must be at least 0 and below cache::allow_ttl, have %s", cfg.Renew.Before))
	}
	if cfg.PerSource.FailuresPerSecond <= 0 || cfg.PerSource.Burst < 1 || cfg.PerSource.MaxSources < 1 {
		errs = append(errs, fmt.Errorf("per_source: failures_per_second, burst and max_sources must be positive, have %v, %d and %d",
			cfg.PerSource.FailuresPerSecond, cfg.PerSource.Burst, cfg.PerSource.MaxSources))
	}
	return errors.Join(errs...)
}
