package k8seventexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/k8sevents/otel-k8sevents/internal/harness/configtest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

func loadConfig(t *testing.T, id string) *Config {
	return configtest.Load(t, NewFactory().CreateDefaultConfig().(*Config), id)
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	def := createDefaultConfig()
	assert.Equal(t, def, loadConfig(t, "k8sevents"))
	require.NoError(t, def.Validate())
	assert.False(t, def.Queue.HasValue(), "no queue unless configured: a push is answered once written")

	// Writing the section turns the queue on with this exporter's defaults.
	queued := loadConfig(t, "k8sevents/queued")
	require.NoError(t, queued.Validate())
	require.True(t, queued.Queue.HasValue())
	q := queued.Queue.Get()
	storage := component.MustNewID("file_storage")
	assert.Equal(t, &storage, q.StorageID)
	assert.True(t, queued.persistentQueue())
	assert.Equal(t, lookahead, q.NumConsumers, "the lanes choose among this many queued requests")
	assert.True(t, q.BlockOnOverflow, "a refused batch would be retried upstream and counted twice by the processor")
	assert.Equal(t, exporterhelper.RequestSizerTypeBytes, q.Sizer)
	assert.Equal(t, int64(defaultQueueBytes), q.QueueSize)
	require.True(t, q.Batch.HasValue(), "single-record requests are merged for the lookahead")
	assert.Equal(t, batchFlush, q.Batch.Get().FlushTimeout)
	inMemory := loadConfig(t, "k8sevents/in-memory")
	require.True(t, inMemory.Queue.HasValue(), "sending_queue: {} turns it on")
	assert.Equal(t, lookahead, inMemory.Queue.Get().NumConsumers)
	assert.False(t, inMemory.persistentQueue())

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
	storage = component.MustNewIDWithName("file_storage", "queue")
	assert.Equal(t, &storage, got.Queue.Get().StorageID)
	assert.Equal(t, int64(5000), got.Queue.Get().QueueSize)
	assert.False(t, got.Queue.Get().Batch.HasValue(), "batch: {enabled: false} turns merging off")
}

func TestValidateNamesEveryBadKey(t *testing.T) {
	t.Parallel()
	err := loadConfig(t, "k8sevents/invalid").Validate()
	require.Error(t, err)
	for _, key := range []string{`auth_type: "token"`, `api: "events.k8s.io/v2"`, "qps and burst", "max_note_bytes",
		`reporting_controller: "Not A/Qualified/Name"`, "adopt_window: must be positive", "adopt_max_series: must be 1..1000", "sending_queue::block_on_overflow", "sending_queue::queue_size: counted in bytes"} {
		assert.ErrorContains(t, err, key)
	}
}

// TestValidateAdoptNeedsAController: the objects a series may adopt are
// those of one reporting controller.
func TestValidateAdoptNeedsAController(t *testing.T) {
	t.Parallel()
	cfg := createDefaultConfig()
	cfg.AdoptOpenSeries = true
	require.ErrorContains(t, cfg.Validate(), "adopt_open_series: needs reporting_controller")
	cfg.ReportingController = "k8sevents.io/otlp-ingestion"
	require.NoError(t, cfg.Validate())
}
