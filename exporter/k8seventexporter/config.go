package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Config of the k8sevents exporter. README.md lists every key.
type Config struct {
	k8sclient.Config `mapstructure:",squash"`

	// API: auto (events.k8s.io/v1 when served), events.k8s.io/v1 or v1.
	API string `mapstructure:"api"`
	// QPS and Burst cap the exporter's API writes (client-side token bucket).
	QPS   float32 `mapstructure:"qps"`
	Burst int     `mapstructure:"burst"`
	// Namespaces allowed; empty: all. A record for another is dropped.
	Namespaces []string `mapstructure:"namespaces"`
	// ReportingController, when set, is written on every Event.
	ReportingController string `mapstructure:"reporting_controller"`
	// ReportingInstance; default: the collector's hostname.
	ReportingInstance string `mapstructure:"reporting_instance"`
	// OverrideReporting: false keeps a record's own controller/instance.
	OverrideReporting bool `mapstructure:"override_reporting"`
	// KeepRecordInstance writes a record's own reporting instance even
	// with override_reporting: behind k8seventsotlp it names the sending
	// app (its ServiceAccount and namespace), not this collector. The
	// instance is then part of what makes an object a record's own and
	// one series', and the writing collector is named in an annotation.
	KeepRecordInstance bool `mapstructure:"keep_record_instance"`
	// MaxNoteBytes truncates longer notes.
	MaxNoteBytes int `mapstructure:"max_note_bytes"`
	// AdoptOpenSeries: a series whose object is new first looks for an
	// open object of its series another exporter of this
	// reporting_controller wrote (a ring change behind a load balancer)
	// and writes into it, each series keeping its own count in an
	// annotation. Needs reporting_controller and a reporting_instance
	// unique and stable per exporter.
	AdoptOpenSeries bool `mapstructure:"adopt_open_series"`
	// AdoptWindow: an object is open when its latest occurrence is at
	// most this long before the series' first (the processor's
	// series.finish_after).
	AdoptWindow time.Duration `mapstructure:"adopt_window"`
	// AdoptMaxSeries caps the series (slot annotations) one object
	// counts: a series that would add one more to a full object writes
	// an object of its own instead of adopting it, so an object never
	// reaches the API server's 256 KiB annotation limit.
	AdoptMaxSeries int `mapstructure:"adopt_max_series"`

	// TimeoutConfig bounds one API write, not a push.
	TimeoutConfig exporterhelper.TimeoutConfig `mapstructure:",squash"`
	// BackOff paces the retries of a failed write, in place in its lane.
	BackOff configretry.BackOffConfig `mapstructure:"retry_on_failure"`
	// Queue is off unless the section is written. Without it a push is
	// answered once its records are written, so its caller (the
	// processor's saved outbox) keeps what is not. With it a push is
	// answered once queued (in storage with storage: survives a crash;
	// in memory: does not), and up to num_consumers queued requests are
	// written at once, their records taking turns by namespace.
	Queue configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`

	// prevent unkeyed literal initialization
	_ struct{}
}

const apiAuto = "auto"

func createDefaultConfig() *Config {
	return &Config{
		Config:            k8sclient.Config{AuthType: k8sclient.AuthServiceAccount},
		API:               apiAuto,
		QPS:               20,
		Burst:             50,
		OverrideReporting: true,
		MaxNoteBytes:      k8sevent.MaxNoteBytes,
		AdoptWindow:       6 * time.Minute,
		AdoptMaxSeries:    defaultAdoptMaxSeries,
		TimeoutConfig:     exporterhelper.TimeoutConfig{Timeout: 10 * time.Second},
		BackOff:           configretry.NewDefaultBackOffConfig(),
		Queue:             configoptional.Default(defaultQueue()),
	}
}

// defaultQueue is the sending_queue a configuration that writes the
// section gets (sending_queue: {storage: file_storage}). lookahead
// consumers each push one queued request at once: their records wait in
// per-namespace lanes that take turns (fairness), one write at a time
// under the QPS cap. A pushed request still counts toward the queue's size
// until its records are written. A full queue blocks instead of refusing:
// a refused batch goes back upstream, and a sender that retries it has
// the processor count its occurrences twice. It is sized in bytes, not
// requests: a request may hold a few records or thousands, and hostile
// ones megabytes (1,000 requests held 9 GB).
func defaultQueue() exporterhelper.QueueBatchConfig {
	q := exporterhelper.NewDefaultQueueConfig()
	q.NumConsumers = lookahead
	q.BlockOnOverflow = true
	q.Sizer = exporterhelper.RequestSizerTypeBytes
	q.QueueSize = defaultQueueBytes
	// Merging what arrives within batchFlush (up to batchRecords) lets the
	// lookahead see a flood sent one record per request as a few requests,
	// so another namespace's record reaches its lane within batchFlush
	// instead of behind every request queued before it.
	q.Batch = configoptional.Some(exporterhelper.BatchConfig{
		FlushTimeout: batchFlush,
		Sizer:        exporterhelper.RequestSizerTypeItems,
		MinSize:      batchRecords,
	})
	return q
}

// batchFlush and batchRecords shape the default sending_queue::batch.
const (
	batchFlush   = 200 * time.Millisecond
	batchRecords = 1000
)

// lookahead is how many queued requests, merged by the batcher, the lanes
// choose from; without batch, a flood in more requests than that still
// delays the others.
const lookahead = 256

// persistentQueue says whether a request handed back at shutdown is kept
// for the next start: the queue has storage, and retries are on (the
// retry sender turns the error into the shutdown error the persistent
// queue keeps a request for; without it the request is dropped).
func (cfg *Config) persistentQueue() bool {
	return cfg.Queue.HasValue() && cfg.Queue.Get().StorageID != nil && cfg.BackOff.Enabled
}

// defaultQueueBytes holds about 20,000 ordinary Event records (about 1.5 KB
// each as protobuf).
const defaultQueueBytes = 32 << 20

// minQueueBytes is the smallest byte-sized queue Validate accepts: room for
// the largest request the ready configs' OTLP receivers take.
const minQueueBytes = 1 << 20

// defaultAdoptMaxSeries and maxAdoptMaxSeries bound adopt_max_series. A
// slot annotation is at most 66 bytes (a 47-byte key, a 19-digit count), so
// 1,000 slots take at most 66,000 of the 262,144 bytes the API server
// allows an object's annotations.
const (
	defaultAdoptMaxSeries = 100
	maxAdoptMaxSeries     = 1000
)

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	errs := []error{cfg.Config.Validate()}
	switch cfg.API {
	case apiAuto, k8sevent.APIEventsV1, k8sevent.APICoreV1:
	default:
		errs = append(errs, fmt.Errorf("api: %q is not auto, %s or %s", cfg.API, k8sevent.APIEventsV1, k8sevent.APICoreV1))
	}
	if cfg.QPS <= 0 || cfg.Burst < 1 {
		errs = append(errs, fmt.Errorf("qps and burst: must be positive, have %g and %d", cfg.QPS, cfg.Burst))
	}
	if cfg.MaxNoteBytes < 1 || cfg.MaxNoteBytes > k8sevent.MaxNoteBytes {
		errs = append(errs, fmt.Errorf("max_note_bytes: must be 1..%d (the API server's limit), have %d", k8sevent.MaxNoteBytes, cfg.MaxNoteBytes))
	}
	if len(cfg.ReportingInstance) > k8sevent.MaxFieldBytes {
		errs = append(errs, fmt.Errorf("reporting_instance: longer than %d bytes", k8sevent.MaxFieldBytes))
	}
	if rc := cfg.ReportingController; rc != "" {
		// As the API server validates an Event's reportingController.
		if msgs := validation.IsQualifiedName(rc); len(msgs) > 0 || len(rc) > k8sevent.MaxFieldBytes {
			errs = append(errs, fmt.Errorf("reporting_controller: %q is not a qualified name of at most %d bytes (%s)",
				rc, k8sevent.MaxFieldBytes, strings.Join(msgs, "; ")))
		}
	}
	if cfg.AdoptOpenSeries && cfg.ReportingController == "" {
		errs = append(errs, errors.New("adopt_open_series: needs reporting_controller (the objects it may adopt are that controller's)"))
	}
	if cfg.AdoptWindow <= 0 {
		errs = append(errs, fmt.Errorf("adopt_window: must be positive, have %v", cfg.AdoptWindow))
	}
	if cfg.AdoptMaxSeries < 1 || cfg.AdoptMaxSeries > maxAdoptMaxSeries {
		errs = append(errs, fmt.Errorf("adopt_max_series: must be 1..%d (each series' annotation takes up to 66 bytes of the API server's 256 KiB), have %d",
			maxAdoptMaxSeries, cfg.AdoptMaxSeries))
	}
	if cfg.Queue.HasValue() {
		q := cfg.Queue.Get()
		if !q.BlockOnOverflow {
			errs = append(errs, errors.New("sending_queue::block_on_overflow: must be true (a refused batch retried upstream is counted twice)"))
		}
		// The default sizer counts bytes: a queue_size written for requests
		// (1000, 5000) would hold a record or two and stall the pipeline.
		if q.Sizer == exporterhelper.RequestSizerTypeBytes && q.QueueSize < minQueueBytes {
			errs = append(errs, fmt.Errorf("sending_queue::queue_size: counted in bytes (sizer: bytes, this exporter's default), must be at least %d, have %d (set sizer: requests to count requests)",
				minQueueBytes, q.QueueSize))
		}
	}
	return errors.Join(errs...)
}

// handedBackRetry is exporterhelper's retry of a push the exporter handed
// back at shutdown: never given up for time (max_elapsed_time 0), as the
// lanes never give up a record for time. Past its max_elapsed_time it
// would answer "no more retries left" and a persistent queue would delete
// records that had only waited through an outage; with no limit, the
// shutdown interrupts it and the queue keeps them for the next start.
func handedBackRetry(cfg configretry.BackOffConfig) configretry.BackOffConfig {
	cfg.MaxElapsedTime = 0
	return cfg
}
