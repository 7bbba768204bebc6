package reviewcache

import (
	"errors"
	"fmt"
	"time"
)

// Config is a component's cache key: how many answers of the API server
// it remembers, and for how long.
type Config struct {
	// MaxEntries: answers remembered; the least recently used goes first.
	MaxEntries int `mapstructure:"max_entries"`
	// AllowTTL: how long an answer that allows is believed without asking
	// again: a revocation takes effect within it.
	AllowTTL time.Duration `mapstructure:"allow_ttl"`
	// DenyTTL: how long an answer that refuses is believed: a grant takes
	// effect within it.
	DenyTTL time.Duration `mapstructure:"deny_ttl"`
}

// The longest TTLs Validate takes: a revocation must not live on in a
// cache much longer than the defaults say.
const (
	MaxAllowTTL = 10 * time.Minute
	MaxDenyTTL  = 5 * time.Minute
)

// Validate checks c, naming its keys as they sit under cache.
func (c Config) Validate() error {
	var errs []error
	if c.MaxEntries < 1 {
		errs = append(errs, fmt.Errorf("cache::max_entries: must be positive, have %d", c.MaxEntries))
	}
	if c.AllowTTL < 0 || c.AllowTTL > MaxAllowTTL {
		errs = append(errs, fmt.Errorf("cache::allow_ttl: must be between 0 and %s, have %s", MaxAllowTTL, c.AllowTTL))
	}
	if c.DenyTTL < 0 || c.DenyTTL > MaxDenyTTL {
		errs = append(errs, fmt.Errorf("cache::deny_ttl: must be between 0 and %s, have %s", MaxDenyTTL, c.DenyTTL))
	}
	return errors.Join(errs...)
}
