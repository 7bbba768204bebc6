package k8seventexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/k8sevents/otel-k8sevents/internal/harness/configtest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

func loadConfig(t *testing.T, id string) *Config {
	return configtest.Load(t, NewFactory().CreateDefaultConfig().(*Config), id)
}

func TestLoadConfig(t *testing.T) {
	def := createDefaultConfig()
	assert.Equal(t, def, loadConfig(t, "k8sevents"))
	require.NoError(t, def.Validate())
	assert.Equal(t, lookahead, def.Queue.Get().NumConsumers, "the lanes choose among this many dispatched requests")
	assert.True(t, def.Queue.Get().BlockOnOverflow, "a refused batch would be retried upstream and counted twice by the processor")
	require.True(t, def.Queue.Get().Batch.HasValue(), "single-record requests are merged for the lookahead")
	assert.Zero(t, def.Queue.Get().Batch.Get().MaxSize, "a request is never split: its stamp keeps it whole")

	got := loadConfig(t, "k8sevents/all")
	require.NoError(t, got.Validate())
	assert.Equal(t, k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: "/etc/kube/config", Context: "prod"}, got.Config)
	assert.Equal(t, k8sevent.APICoreV1, got.API)
	assert.Equal(t, float32(5), got.QPS)
	assert.Equal(t, 10, got.Burst)
	assert.Equal(t, []string{"shop"}, got.Namespaces)
	assert.Equal(t, "example.com/events-mirror", got.ReportingController)
	assert.Equal(t, "mirror-0", got.ReportingInstance)
	assert.False(t, got.OverrideReporting)
	assert.Equal(t, 512, got.MaxNoteBytes)
	assert.True(t, got.AdoptOpenSeries)
	assert.Equal(t, 5*time.Minute, got.AdoptWindow)
	assert.Equal(t, 20, got.AdoptMaxSeries)
	assert.Equal(t, 100, def.AdoptMaxSeries, "about 6.6 KB of annotations at most on an object")
	assert.False(t, def.AdoptOpenSeries, "off by default: writes and their cost stay as they were")
	assert.Equal(t, 6*time.Minute, def.AdoptWindow, "the processor's default series.finish_after")
	assert.Equal(t, 3*time.Second, got.TimeoutConfig.Timeout)
	assert.Equal(t, time.Second, got.BackOff.InitialInterval)
	storage := component.MustNewIDWithName("file_storage", "queue")
	assert.Equal(t, &storage, got.Queue.Get().StorageID)
	assert.Equal(t, int64(5000), got.Queue.Get().QueueSize)
	assert.False(t, got.Queue.Get().Batch.HasValue(), "batch: {enabled: false} turns merging off")
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	err := loadConfig(t, "k8sevents/invalid").Validate()
	require.Error(t, err)
	for _, key := range []string{`auth_type: "token"`, `api: "events.k8s.io/v2"`, "qps and burst", "max_note_bytes",
		`reporting_controller: "Not A/Qualified/Name"`, "adopt_window: must be positive", "adopt_max_series: must be 1..1000", "sending_queue::block_on_overflow", "sending_queue::queue_size: counted in bytes"} {
		assert.ErrorContains(t, err, key)
	}
}

// TestValidateKeepsTheQueueOff: without a queue every write is synchronous
// with its caller, which keeps each object's order.
func TestValidateKeepsTheQueueOff(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Queue = configoptional.None[exporterhelper.QueueBatchConfig]()
	require.NoError(t, cfg.Validate())
	cfg.ReportingController = "example.com/mirror"
	require.NoError(t, cfg.Validate())
}

// TestValidateAdoptNeedsAController: the objects a series may adopt are
// those of one reporting controller.
func TestValidateAdoptNeedsAController(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.AdoptOpenSeries = true
	require.ErrorContains(t, cfg.Validate(), "adopt_open_series: needs reporting_controller")
	cfg.ReportingController = "k8sevents.io/otlp-ingestion"
	require.NoError(t, cfg.Validate())
}
