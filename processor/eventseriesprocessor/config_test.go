package eventseriesprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"

	"github.com/k8sevents/otel-k8sevents/internal/harness/configtest"
)

func loadConfig(t *testing.T, id string) *Config {
	return configtest.Load(t, NewFactory().CreateDefaultConfig().(*Config), id)
}

func TestLoadConfig(t *testing.T) {
	assert.Equal(t, createDefaultConfig(), loadConfig(t, "eventseries"), "an empty section is the defaults")
	require.NoError(t, createDefaultConfig().Validate())

	got := loadConfig(t, "eventseries/legacy")
	require.NoError(t, got.Validate())
	want := createDefaultConfig()
	want.Mode, want.TimeSource, want.MaxKeys, want.NonEventRecords = modeLegacy, timeEvent, 1000, recordsDrop
	want.EventTimeMaxLead, want.InputCounts = 10*time.Second, countsIgnore
	want.Series = SeriesConfig{FinishAfter: 2 * time.Minute, HeartbeatInterval: 10 * time.Minute, FinishMarker: true}
	want.Aggregation = AggregationConfig{Enabled: true, MaxEvents: 5, MaxInterval: time.Minute}
	want.SpamFilter = SpamFilterConfig{Enabled: true, QPS: 0.1, Burst: 10, Key: []string{"source", "object", "type", "reason"}}
	assert.Equal(t, want, got)
}

func TestLoadConfigStorage(t *testing.T) {
	got := loadConfig(t, "eventseries/storage")
	require.NoError(t, got.Validate())
	want := createDefaultConfig()
	id := component.MustNewIDWithName("file_storage", "state")
	want.Storage = &id
	want.WriteAheadLog.MaxBytes = 1 << 20
	assert.Equal(t, want, got)
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	err := loadConfig(t, "eventseries/invalid").Validate()
	require.Error(t, err)
	for _, key := range []string{
		`mode: "compressed"`, `time_source: "wall"`, "event_time_max_lead", "max_keys", `non_event_records: "keep"`, `input_counts: "trusted"`,
		"write_ahead_log.max_bytes",
		"series.finish_after", "series.heartbeat_interval", "aggregation.max_events", "aggregation.max_interval",
		"spam_filter.qps", "spam_filter.burst", `spam_filter.key: "node"`, `spam_filter.key: "source" twice`,
	} {
		assert.ErrorContains(t, err, key)
	}
}

// TestHeartbeatsPerFinishAreBounded: heartbeat_interval may be as short
// as finish_after / 100, no shorter (1 ns with the default finish_after
// made one jump of the clock emit 3.6e11 beats per open series).
func TestHeartbeatsPerFinishAreBounded(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Series.HeartbeatInterval = cfg.Series.FinishAfter / 100
	require.NoError(t, cfg.Validate())
	cfg.Series.HeartbeatInterval--
	assert.ErrorContains(t, cfg.Validate(), "series.heartbeat_interval: must be at least series.finish_after / 100 (3.6s)")
}

func TestMaxKeysIsBounded(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxKeys = 1 << 24
	require.NoError(t, cfg.Validate())
	cfg.MaxKeys++
	assert.ErrorContains(t, cfg.Validate(), "max_keys: must be between 1 and 16777216, have 16777217")
}

// TestAggregateMaxEventsIsBounded: a group is made with room for
// max_events notes, so an unbounded value (2^30 was accepted) took
// gigabytes per group.
func TestAggregateMaxEventsIsBounded(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Aggregation.MaxEvents = 100
	require.NoError(t, cfg.Validate())
	cfg.Aggregation.MaxEvents = 1 << 30
	assert.ErrorContains(t, cfg.Validate(), "aggregation.max_events: must be between 2 and 100, have 1073741824")
}

func TestDisabledPartsNeedNoSettings(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Aggregation = AggregationConfig{}
	cfg.SpamFilter = SpamFilterConfig{}
	assert.NoError(t, cfg.Validate())
}
