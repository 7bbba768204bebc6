package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

// controller is the reporting controller of everything the pipeline writes.
// Events must live in their regarding object's namespace, so the output
// shares the storm's namespaces and is told apart by this field alone.
const controller = "k8sevents.io/demo"

// tuning is the processor's timing for one demo run. The pipeline uses
// processing time, so a storm replayed N times faster than it happened
// would look N times denser to every timer: the defaults (series end after
// 6 min idle, heartbeat every 30 min, spam filter 1 per 5 min) are divided
// by the speed so that the accelerated storm is judged as the real one
// would be.
type tuning struct {
	FinishAfter time.Duration
	Heartbeat   time.Duration
	SpamQPS     float64
}

// Floors keep the timers above the jitter of a loaded 2-core machine: a
// series must not finish because the writer was late for a second.
const (
	minFinishAfter = 5 * time.Second
	minHeartbeat   = 30 * time.Second
)

func tuningFor(speed float64) tuning {
	if speed < 1 {
		speed = 1
	}
	scale := func(d, floor time.Duration) time.Duration {
		return max(floor, time.Duration(float64(d)/speed).Round(100*time.Millisecond))
	}
	return tuning{
		FinishAfter: scale(6*time.Minute, minFinishAfter),
		Heartbeat:   scale(30*time.Minute, minHeartbeat),
		SpamQPS:     speed / 300,
	}
}

// baseConfig is the ready configuration the demo starts from: the
// in-cluster mirror (k8sevents -> memory_limiter -> eventseries -> k8sevent
// + debug). The overlay takes out what a demo on a laptop has no use for
// (leader election, the storage extension, the memory limiter) and sets
// what varies.
const baseConfig = "testdata/config/mirror.yaml"

// collectorConfig holds what varies in the collector's configuration.
type collectorConfig struct {
	SourceKubeconfig  string // receiver; "" means $KUBECONFIG, then ~/.kube/config
	SourceContext     string
	Namespaces        []string // watched; empty: all
	InitialAll        bool     // also the Events stored before the collector started
	OutputKubeconfig  string   // exporter
	HealthPort        int
	MetricsPort       int
	Tuning            tuning
	ExporterQPS       int
	ExporterBurst     int
	ReportingInstance string
}

// overlay is what the collector merges over baseConfig (maps merge, a
// null removes a key, lists are replaced): the receiver and the exporter
// on kubeconfigs, the processor's timers scaled to the storm's speed,
// health_check for start-up, and the collector's own metrics on a
// Prometheus endpoint for the live view.
func (c collectorConfig) overlay() map[string]any {
	recv := map[string]any{
		"auth_type":          "kubeConfig",
		"storage":            nil,
		"k8s_leader_elector": nil,
		// core/v1: the raw storm writes core/v1 Events, and core/v1 spells
		// the field reportingComponent (events.k8s.io/v1: reportingController).
		"api":            "v1",
		"field_selector": "reportingComponent!=" + controller,
		"initial":        "none",
	}
	if c.InitialAll {
		recv["initial"] = "all"
	}
	if c.SourceKubeconfig != "" {
		recv["kubeconfig"] = c.SourceKubeconfig
	}
	if c.SourceContext != "" {
		recv["context"] = c.SourceContext
	}
	if len(c.Namespaces) > 0 {
		recv["namespaces"] = c.Namespaces
	}
	return map[string]any{
		"extensions": map[string]any{
			"health_check": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", c.HealthPort)},
		},
		"receivers": map[string]any{"k8sevents": recv},
		"processors": map[string]any{"eventseries": map[string]any{
			"storage":     nil,
			"mode":        "series",
			"time_source": "processing",
			"series": map[string]any{
				"finish_after":       c.Tuning.FinishAfter.String(),
				"heartbeat_interval": c.Tuning.Heartbeat.String(),
			},
			"spam_filter": map[string]any{"qps": c.Tuning.SpamQPS, "burst": 25},
		}},
		"exporters": map[string]any{"k8sevents": map[string]any{
			"auth_type":            "kubeConfig",
			"kubeconfig":           c.OutputKubeconfig,
			"reporting_controller": controller,
			"reporting_instance":   c.ReportingInstance,
			"qps":                  c.ExporterQPS,
			"burst":                c.ExporterBurst,
			"sending_queue":        map[string]any{"storage": nil},
		}},
		"service": map[string]any{
			"extensions": []string{"health_check"},
			"telemetry": map[string]any{"metrics": map[string]any{"readers": []any{
				map[string]any{"pull": map[string]any{"exporter": map[string]any{
					"prometheus": map[string]any{"host": "127.0.0.1", "port": c.MetricsPort},
				}}},
			}}},
			"pipelines": map[string]any{"logs": map[string]any{
				"receivers":  []string{"k8sevents"},
				"processors": []string{"eventseries"},
				"exporters":  []string{"k8sevents", "debug"},
			}},
		},
	}
}

// files are the base configuration and the overlay, as the collector's
// --config files.
func (c collectorConfig) files(repoRoot string) (base, overlay string, err error) {
	b, err := os.ReadFile(filepath.Join(repoRoot, baseConfig))
	if err != nil {
		return "", "", fmt.Errorf("collector configuration: %w", err)
	}
	o, err := yaml.Marshal(c.overlay())
	if err != nil {
		return "", "", fmt.Errorf("collector configuration overlay: %w", err)
	}
	return string(b), string(o), nil
}
