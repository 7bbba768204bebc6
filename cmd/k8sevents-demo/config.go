package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
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

// yamlString quotes s for YAML: a JSON string is a valid YAML
// double-quoted scalar.
func yamlString(s string) string { return strconv.Quote(s) }

// render writes the collector's YAML: k8sevents → eventseries → k8sevent +
// debug, health_check for start-up, and the collector's own metrics on a
// Prometheus endpoint for the live view.
func (c collectorConfig) render() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("extensions:")
	p("  health_check:")
	p("    endpoint: %s", yamlString(fmt.Sprintf("127.0.0.1:%d", c.HealthPort)))
	p("receivers:")
	p("  k8sevents:")
	p("    auth_type: kubeConfig")
	if c.SourceKubeconfig != "" {
		p("    kubeconfig: %s", yamlString(c.SourceKubeconfig))
	}
	if c.SourceContext != "" {
		p("    context: %s", yamlString(c.SourceContext))
	}
	// core/v1: the raw storm writes core/v1 Events, and core/v1 spells the
	// field reportingComponent (events.k8s.io/v1: reportingController).
	p("    api: v1")
	p("    field_selector: %s", yamlString("reportingComponent!="+controller))
	if c.InitialAll {
		p("    initial: all")
	} else {
		p("    initial: none")
	}
	if len(c.Namespaces) > 0 {
		p("    namespaces:")
		for _, ns := range c.Namespaces {
			p("      - %s", yamlString(ns))
		}
	}
	p("processors:")
	p("  eventseries:")
	p("    mode: series")
	p("    time_source: processing")
	p("    series:")
	p("      finish_after: %s", c.Tuning.FinishAfter)
	p("      heartbeat_interval: %s", c.Tuning.Heartbeat)
	p("    spam_filter:")
	p("      qps: %s", strconv.FormatFloat(c.Tuning.SpamQPS, 'g', 6, 64))
	p("      burst: 25")
	p("exporters:")
	p("  k8sevent:")
	p("    auth_type: kubeConfig")
	p("    kubeconfig: %s", yamlString(c.OutputKubeconfig))
	p("    reporting_controller: %s", yamlString(controller))
	p("    reporting_instance: %s", yamlString(c.ReportingInstance))
	p("    qps: %d", c.ExporterQPS)
	p("    burst: %d", c.ExporterBurst)
	p("  debug:")
	p("    verbosity: basic")
	p("service:")
	p("  extensions: [health_check]")
	p("  telemetry:")
	p("    metrics:")
	p("      readers:")
	p("        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}", c.MetricsPort)
	p("  pipelines:")
	p("    logs:")
	p("      receivers: [k8sevents]")
	p("      processors: [eventseries]")
	p("      exporters: [k8sevent, debug]")
	return b.String()
}
