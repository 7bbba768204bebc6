package k8seventsreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Config of the k8sevents receiver. README.md lists every key. The keys it
// shares with the contrib k8s_events receiver mean the same.
type Config struct {
	k8sclient.Config `mapstructure:",squash"`

	// API: events.k8s.io/v1 or v1.
	API string `mapstructure:"api"`
	// Namespaces to watch; empty: all.
	Namespaces []string `mapstructure:"namespaces"`
	// ExcludeNamespaces are left out (server side, by field selector).
	ExcludeNamespaces []string `mapstructure:"exclude_namespaces"`
	// FieldSelector is passed to the API server, e.g. type=Warning.
	FieldSelector string `mapstructure:"field_selector"`
	// Initial: none (only what happens after start) or all (existing events too).
	Initial string `mapstructure:"initial"`
	// Storage is a storage extension: the receiver resumes where it stopped.
	Storage *component.ID `mapstructure:"storage"`
	// K8sLeaderElector is a k8s_leader_elector extension: only the leader watches.
	K8sLeaderElector *component.ID `mapstructure:"k8s_leader_elector"`
	// WatchIdleTimeout restarts a watch that sent nothing, not even a
	// bookmark (the API server sends one about every minute), for this long;
	// at least 1s (an idle watch is started again at once).
	WatchIdleTimeout time.Duration `mapstructure:"watch_idle_timeout"`
	// ListPageSize is the page size of lists.
	ListPageSize int64 `mapstructure:"list_page_size"`
	// ClusterName is written as k8s.cluster.name on every record's
	// resource; "": none (k8s.cluster.uid is written either way).
	ClusterName string `mapstructure:"cluster_name"`

	// prevent unkeyed literal initialization
	_ struct{}
}

const (
	initialNone = "none"
	initialAll  = "all"
)

func createDefaultConfig() *Config {
	return &Config{
		Config:           k8sclient.Config{AuthType: k8sclient.AuthServiceAccount},
		API:              k8sevent.APIEventsV1,
		Initial:          initialNone,
		WatchIdleTimeout: 5 * time.Minute,
		ListPageSize:     500,
	}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	errs := []error{cfg.Config.Validate()}
	if cfg.API != k8sevent.APIEventsV1 && cfg.API != k8sevent.APICoreV1 {
		errs = append(errs, fmt.Errorf("api: %q is not %s or %s", cfg.API, k8sevent.APIEventsV1, k8sevent.APICoreV1))
	}
	if cfg.Initial != initialNone && cfg.Initial != initialAll {
		errs = append(errs, fmt.Errorf("initial: %q is not none or all", cfg.Initial))
	}
	for _, ns := range cfg.ExcludeNamespaces {
		if slices.Contains(cfg.Namespaces, ns) {
			errs = append(errs, fmt.Errorf("exclude_namespaces: %q is also in namespaces", ns))
		}
	}
	if cfg.WatchIdleTimeout < time.Second {
		// A watch restarted for idleness starts again at once: shorter, a
		// quiet namespace's watch was asked for again and again.
		errs = append(errs, fmt.Errorf("watch_idle_timeout: must be at least 1s, have %s", cfg.WatchIdleTimeout))
	}
	if len(cfg.ClusterName) > k8sevent.MaxNameBytes {
		errs = append(errs, fmt.Errorf("cluster_name: longer than %d bytes", k8sevent.MaxNameBytes))
	}
	if cfg.ListPageSize <= 0 {
		errs = append(errs, fmt.Errorf("list_page_size: must be positive, have %d", cfg.ListPageSize))
	}
	return errors.Join(errs...)
}
