package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
)

// Config of the eventseries processor. README.md lists every key.
type Config struct {
	// Mode: "series" (events.k8s.io/v1 series) or "legacy" (core/v1 counts).
	Mode string `mapstructure:"mode"`
	// TimeSource: "processing" (wall clock) or "event" (record timestamps as a watermark).
	TimeSource string `mapstructure:"time_source"`
	// EventTimeMaxLead bounds, in event time, how far past the processing
	// clock one record may move the watermark.
	EventTimeMaxLead time.Duration `mapstructure:"event_time_max_lead"`
	// MaxKeys bounds each cache.
	MaxKeys int `mapstructure:"max_keys"`
	// NonEventRecords: "pass" or "drop" records that carry no Event (an Event
	// record that cannot be made valid is always dropped).
	NonEventRecords string `mapstructure:"non_event_records"`
	// InputCounts: "cumulative" reads a record's k8s.event.count or
	// k8s.event.series.count as the cumulative count of its Event, counted
	// as its growth (watched Events); "ignore" makes every record one
	// occurrence, whatever count it claims (sources not trusted to state
	// counts).
	InputCounts string `mapstructure:"input_counts"`
	// Storage is a storage extension that keeps the state across restarts; nil: none.
	Storage *component.ID `mapstructure:"storage"`
	// WriteAheadLog, with storage, writes each batch to it before counting
	// it, so a crash loses nothing counted since the last save.
	WriteAheadLog WriteAheadLogConfig `mapstructure:"write_ahead_log"`

	Series      SeriesConfig      `mapstructure:"series"`
	Aggregation AggregationConfig `mapstructure:"aggregation"`
	SpamFilter  SpamFilterConfig  `mapstructure:"spam_filter"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// WriteAheadLogConfig sets the write-ahead log (used only with storage).
type WriteAheadLogConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// MaxBytes bounds the log between two saves: a batch that would take it
	// past the bound saves the state first, which empties it.
	MaxBytes int64 `mapstructure:"max_bytes"`
}

// SeriesConfig sets the series timers and key.
type SeriesConfig struct {
	FinishAfter               time.Duration `mapstructure:"finish_after"`
	HeartbeatInterval         time.Duration `mapstructure:"heartbeat_interval"`
	KeyIgnoresResourceVersion bool          `mapstructure:"key_ignores_resource_version"`
	// FinishMarker: emit `finished` at the end of every series, also when it
	// repeats the count already shown (an explicit end for non-API
	// backends); off, a series ends with a record only when its count grew.
	FinishMarker bool `mapstructure:"finish_marker"`
}

// AggregationConfig sets legacy-mode aggregation of similar events.
type AggregationConfig struct {
	Enabled     bool          `mapstructure:"enabled"`
	MaxEvents   int           `mapstructure:"max_events"`
	MaxInterval time.Duration `mapstructure:"max_interval"`
}

// SpamFilterConfig sets the per-key token bucket.
type SpamFilterConfig struct {
	Enabled bool     `mapstructure:"enabled"`
	QPS     float64  `mapstructure:"qps"`
	Burst   int      `mapstructure:"burst"`
	Key     []string `mapstructure:"key"`
}

const (
	modeSeries = "series"
	modeLegacy = "legacy"

	timeProcessing = "processing"
	timeEvent      = "event"

	recordsPass = "pass"
	recordsDrop = "drop"

	countsCumulative = "cumulative"
	countsIgnore     = "ignore"
)

var spamKeyParts = []string{"source", "object", "type", "reason"}

func createDefaultConfig() *Config {
	return &Config{
		Mode:             modeSeries,
		TimeSource:       timeProcessing,
		EventTimeMaxLead: time.Minute,
		MaxKeys:          4096,
		NonEventRecords:  recordsPass,
		InputCounts:      countsCumulative,
		WriteAheadLog:    WriteAheadLogConfig{Enabled: true, MaxBytes: 64 << 20},
		Series: SeriesConfig{
			FinishAfter:               6 * time.Minute,
			HeartbeatInterval:         30 * time.Minute,
			KeyIgnoresResourceVersion: true,
		},
		Aggregation: AggregationConfig{Enabled: true, MaxEvents: 10, MaxInterval: 10 * time.Minute},
		SpamFilter: SpamFilterConfig{
			Enabled: true,
			QPS:     1.0 / 300,
			Burst:   25,
			Key:     []string{"source", "object", "type"},
		},
	}
}

// Bounds Validate puts on keys whose value sizes work or memory.
const (
	// maxBeatsPerFinish: a series beats up to finish_after /
	// heartbeat_interval times after its last occurrence.
	maxBeatsPerFinish = 100
	// maxMaxKeys bounds what a configuration can make the caches hold:
	// the totals alone remember up to 8 × max_keys Event objects.
	maxMaxKeys = 1 << 24
	// maxAggregateEvents: each aggregation group is made with room for
	// max_events notes and looks a note up among them.
	maxAggregateEvents = 100
)

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(cfg.Mode == modeSeries || cfg.Mode == modeLegacy, "mode: %q is not series or legacy", cfg.Mode)
	check(cfg.TimeSource == timeProcessing || cfg.TimeSource == timeEvent, "time_source: %q is not processing or event", cfg.TimeSource)
	check(cfg.EventTimeMaxLead >= 0, "event_time_max_lead: must not be negative, have %s", cfg.EventTimeMaxLead)
	check(cfg.MaxKeys > 0 && cfg.MaxKeys <= maxMaxKeys, "max_keys: must be between 1 and %d, have %d", maxMaxKeys, cfg.MaxKeys)
	check(cfg.NonEventRecords == recordsPass || cfg.NonEventRecords == recordsDrop, "non_event_records: %q is not pass or drop", cfg.NonEventRecords)
	check(cfg.InputCounts == countsCumulative || cfg.InputCounts == countsIgnore, "input_counts: %q is not cumulative or ignore", cfg.InputCounts)
	check(!cfg.WriteAheadLog.Enabled || cfg.WriteAheadLog.MaxBytes > 0, "write_ahead_log.max_bytes: must be positive, have %d", cfg.WriteAheadLog.MaxBytes)
	check(cfg.Series.FinishAfter > 0, "series.finish_after: must be positive, have %s", cfg.Series.FinishAfter)
	check(cfg.Series.HeartbeatInterval > 0, "series.heartbeat_interval: must be positive, have %s", cfg.Series.HeartbeatInterval)
	// A series beats up to finish_after / heartbeat_interval times after
	// its last occurrence, all at once when the clock jumps (event time, a
	// stalled pipeline): a beat per nanosecond hung the pipeline.
	check(cfg.Series.HeartbeatInterval >= cfg.Series.FinishAfter/maxBeatsPerFinish,
		"series.heartbeat_interval: must be at least series.finish_after / %d (%s), have %s",
		maxBeatsPerFinish, cfg.Series.FinishAfter/maxBeatsPerFinish, cfg.Series.HeartbeatInterval)
	if cfg.Aggregation.Enabled {
		check(cfg.Aggregation.MaxEvents >= 2 && cfg.Aggregation.MaxEvents <= maxAggregateEvents,
			"aggregation.max_events: must be between 2 and %d, have %d", maxAggregateEvents, cfg.Aggregation.MaxEvents)
		check(cfg.Aggregation.MaxInterval > 0, "aggregation.max_interval: must be positive, have %s", cfg.Aggregation.MaxInterval)
	}
	if cfg.SpamFilter.Enabled {
		check(cfg.SpamFilter.QPS > 0, "spam_filter.qps: must be positive, have %g", cfg.SpamFilter.QPS)
		check(cfg.SpamFilter.Burst >= 1, "spam_filter.burst: must be at least 1, have %d", cfg.SpamFilter.Burst)
		check(len(cfg.SpamFilter.Key) > 0, "spam_filter.key: must name at least one of %v", spamKeyParts)
		seen := map[string]bool{}
		for _, part := range cfg.SpamFilter.Key {
			check(slices.Contains(spamKeyParts, part), "spam_filter.key: %q is not one of %v", part, spamKeyParts)
			check(!seen[part], "spam_filter.key: %q twice", part)
			seen[part] = true
		}
	}
	return errors.Join(errs...)
}

func (cfg *Config) engineConfig() engine.Config {
	return engine.Config{
		Legacy:                     cfg.Mode == modeLegacy,
		MaxKeys:                    cfg.MaxKeys,
		FinishAfter:                cfg.Series.FinishAfter,
		HeartbeatInterval:          cfg.Series.HeartbeatInterval,
		KeyIncludesResourceVersion: !cfg.Series.KeyIgnoresResourceVersion,
		FinishMarker:               cfg.Series.FinishMarker,
		Aggregation:                cfg.Aggregation.Enabled,
		AggregateMaxEvents:         cfg.Aggregation.MaxEvents,
		AggregateMaxInterval:       cfg.Aggregation.MaxInterval,
		SpamFilter:                 cfg.SpamFilter.Enabled,
		SpamQPS:                    cfg.SpamFilter.QPS,
		SpamBurst:                  cfg.SpamFilter.Burst,
		SpamKey:                    cfg.SpamFilter.Key,
	}
}
