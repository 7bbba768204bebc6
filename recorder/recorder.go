// Package recorder is a drop-in Kubernetes event recorder for apps and
// controllers: it implements client-go's tools/record.EventRecorder and
// tools/events.EventRecorder (and controller-runtime's recorder.Provider)
// and turns each call into one OpenTelemetry log record per the
// otel-k8sevents log-record contract, sent over OTLP to a collector that
// folds them into Events (the k8seventsotlp receiver, the eventseries
// processor, the k8sevents exporter).
//
// A call never blocks and never starts a goroutine: it formats the note,
// resolves the object reference (as client-go does) and puts a small entry
// on a bounded queue, or drops it and counts the drop when the queue is
// full. One goroutine per Recorder batches the queue and exports it in
// order, retrying while the collector is unreachable.
package recorder

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Defaults of Options.
const (
	DefaultQueueSize     = 10000
	DefaultMaxBatch      = 512
	DefaultBatchDelay    = 100 * time.Millisecond
	DefaultExportTimeout = 10 * time.Second
	DefaultMaxBackoff    = 5 * time.Second
	DefaultFallbackAfter = 30 * time.Second
)

// Options configure a Recorder. Only ReportingController is required; the
// exporter is configured by the OTEL_EXPORTER_OTLP_* environment variables
// unless Exporter, Protocol or Endpoint say otherwise.
type Options struct {
	// ReportingController names the controller (events.k8s.io
	// reportingController, core/v1 source.component), e.g. "example.com/my-operator".
	ReportingController string
	// ReportingInstance names this replica; default: the host name.
	ReportingInstance string
	// SourceHost is the core/v1 source.host (k8s.event.source.host) of
	// tools/record events, and their reporting instance; default none, as
	// client-go leaves it for controllers. Kubelet-like agents set the node.
	SourceHost string

	// Exporter replaces the OTLP exporter built from Protocol and Endpoint.
	Exporter sdklog.Exporter
	// Protocol is "grpc" or "http/protobuf"; default:
	// OTEL_EXPORTER_OTLP_LOGS_PROTOCOL, then OTEL_EXPORTER_OTLP_PROTOCOL,
	// then "http/protobuf" (the specification's default).
	Protocol string
	// Endpoint (host:port) overrides OTEL_EXPORTER_OTLP_*ENDPOINT; with
	// Insecure the connection is plain text (a collector on loopback or a
	// node-local agent).
	Endpoint string
	Insecure bool
	// TokenFile is the pod's projected ServiceAccount token for the
	// collector's audience, sent as `authorization: Bearer <token>` with
	// every OTLP request and read again before each one (kubelet rotates
	// it). Default DefaultTokenFile; NoToken sends none. While the file is
	// absent or empty, requests go without a token (reported once to the
	// OpenTelemetry error handler). Not used with Exporter.
	TokenFile string
	// Resource describes the app; default: resource.Default() (service.name
	// and OTEL_RESOURCE_ATTRIBUTES).
	Resource *resource.Resource

	// QueueSize bounds the entries waiting to be exported (each about 300
	// bytes plus its note); a call finding it full is dropped and counted.
	QueueSize int
	// MaxBatch bounds the records of one export request.
	MaxBatch int
	// BatchDelay is how long a batch waits to fill before it is sent.
	BatchDelay time.Duration
	// ExportTimeout bounds one export request.
	ExportTimeout time.Duration
	// MaxBackoff caps the wait between retries of a failed export.
	MaxBackoff time.Duration

	// Fallback, when set, receives what the collector could not take once
	// it has been unreachable for FallbackAfter: typically a client-go
	// tools/record recorder writing straight to the API server, so that no
	// Event is lost while the collector is down. It is called from the
	// Recorder's own goroutine, never from the caller's. Related object and
	// action are not carried (core/v1 has no place for them).
	Fallback      record.EventRecorder
	FallbackAfter time.Duration

	// ErrorHandler is told about every failed export request (each is
	// retried); default: none.
	ErrorHandler func(error)
}

// Stats are a Recorder's counters. Calls = Accepted + Dropped + Invalid;
// Accepted = Sent + FellBack + Lost + Pending.
type Stats struct {
	Calls    int64 // recorder calls
	Accepted int64 // put on the queue
	Dropped  int64 // refused: queue full, or the Recorder shut down
	Invalid  int64 // refused as client-go refuses them: no object reference, or a type other than Normal/Warning
	Sent     int64 // exported to the collector
	FellBack int64 // handed to Options.Fallback
	Lost     int64 // accepted but neither sent nor handed over by the end of Shutdown
	Pending  int64 // accepted, not yet sent
	Failures int64 // failed export requests (each retried)
	MaxQueue int64 // the most entries ever waiting
}

// Recorder turns Kubernetes events into OTLP log records. Its methods are
// safe for concurrent use. Recorders for client-go's interfaces come from
// EventRecorder, EventsRecorder and the controller-runtime Provider methods.
type Recorder struct {
	opts     Options
	now      func() time.Time // the clock calls are stamped with; a test's fixed one for golden output
	stampMu  sync.Mutex
	stamped  int64 // the last call's time, unix ns (see stamp); guarded by stampMu
	queue    chan entry
	exporter sdklog.Exporter
	enc      *encoder

	closeMu sync.RWMutex // held for reading while a call enqueues, for writing to close
	closed  bool
	// stopping is closed by Shutdown: the worker drains the queue without
	// waiting for batches to fill. cancel ends its exports and retries when
	// Shutdown's context ends. done is closed when the worker has returned.
	stopping chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}

	calls, accepted, dropped, invalid atomic.Int64
	sent, fellBack, lost, failures    atomic.Int64
	maxQueue                          atomic.Int64
	shutdownOnce                      sync.Once
	shutdownErr                       error
}

// New builds a Recorder and starts its one goroutine.
func New(ctx context.Context, opts Options) (*Recorder, error) {
	if opts.ReportingController == "" {
		return nil, errors.New("recorder: ReportingController is required")
	}
	opts = withDefaults(opts)
	exp := opts.Exporter
	if exp == nil {
		var err error
		if exp, err = newOTLPExporter(ctx, opts); err != nil {
			return nil, fmt.Errorf("recorder: %w", err)
		}
	}
	r := &Recorder{
		opts: opts, now: time.Now, queue: make(chan entry, opts.QueueSize), exporter: exp,
		enc:      newEncoder(opts.Resource, opts.SourceHost),
		stopping: make(chan struct{}), done: make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.run()
	return r, nil
}

func withDefaults(o Options) Options {
	if o.ReportingInstance == "" {
		o.ReportingInstance, _ = os.Hostname()
	}
	if o.TokenFile == "" {
		o.TokenFile = DefaultTokenFile
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.BatchDelay <= 0 {
		o.BatchDelay = DefaultBatchDelay
	}
	if o.ExportTimeout <= 0 {
		o.ExportTimeout = DefaultExportTimeout
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.FallbackAfter <= 0 {
		o.FallbackAfter = DefaultFallbackAfter
	}
	if o.Resource == nil {
		o.Resource = resource.Default()
	}
	return o
}

// Stats reads the counters.
func (r *Recorder) Stats() Stats {
	s := Stats{
		Calls: r.calls.Load(), Accepted: r.accepted.Load(), Dropped: r.dropped.Load(), Invalid: r.invalid.Load(),
		Sent: r.sent.Load(), FellBack: r.fellBack.Load(), Lost: r.lost.Load(), Failures: r.failures.Load(),
		MaxQueue: r.maxQueue.Load(),
	}
	s.Pending = s.Accepted - s.Sent - s.FellBack - s.Lost
	return s
}

// Dropped is how many calls were refused because the queue was full or the
// Recorder shut down: the number an app alerts on.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// enqueue puts e on the queue without waiting; a full queue drops it.
func (r *Recorder) enqueue(e *entry) {
	r.closeMu.RLock()
	ok := false
	if !r.closed {
		select {
		case r.queue <- *e:
			ok = true
		default:
		}
	}
	r.closeMu.RUnlock()
	if !ok {
		r.dropped.Add(1)
		return
	}
	r.accepted.Add(1)
	if n := int64(len(r.queue)); n > r.maxQueue.Load() {
		r.maxQueue.Store(n) // a racy maximum: a statistic, not an invariant
	}
}

// Flush waits until every entry accepted so far has been sent, handed to
// the fallback or lost, or ctx ends.
func (r *Recorder) Flush(ctx context.Context) error {
	target := r.accepted.Load()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for r.sent.Load()+r.fellBack.Load()+r.lost.Load() < target {
		select {
		case <-ctx.Done():
			return fmt.Errorf("recorder flush: %d entries pending: %w", r.Stats().Pending, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// Shutdown refuses further calls, exports what is queued (retrying while
// ctx lasts), stops the goroutine and shuts the exporter down. Entries not
// exported when ctx ends are counted as Lost and reported in the error.
func (r *Recorder) Shutdown(ctx context.Context) error {
	r.shutdownOnce.Do(func() {
		r.closeMu.Lock()
		r.closed = true
		r.closeMu.Unlock()
		close(r.stopping)
		select {
		case <-r.done:
		case <-ctx.Done():
			r.cancel() // the worker counts what is left as lost and returns
			<-r.done
		}
		r.cancel()
		err := r.exporter.Shutdown(ctx)
		if lost := r.lost.Load(); lost > 0 {
			err = errors.Join(fmt.Errorf("recorder shutdown: %d events not exported", lost), err)
		}
		if err != nil {
			r.shutdownErr = fmt.Errorf("recorder shutdown: %w", err)
		}
	})
	return r.shutdownErr
}

// entry is one call, as small as the record it becomes needs.
type entry struct {
	at                   time.Time
	regarding, related   *corev1.ObjectReference
	eventType, reason    string
	action, note         string
	annotations          map[string]string
	controller, instance string
	legacy               bool // from a tools/record recorder: carries the core/v1 source
}

// cloneAnnotations copies the caller's map: the caller may change it after
// the call returns, while the entry waits on the queue.
func cloneAnnotations(a map[string]string) map[string]string {
	if len(a) == 0 {
		return nil
	}
	return maps.Clone(a)
}

// stamp is the time of a call: the clock's, or one nanosecond after the
// previous call's when the clock has not moved past it (a coarse clock,
// two calls in one tick). The collector takes a request identical to one
// it counted within the hour for that request sent again, so two
// occurrences must never share a time.
func (r *Recorder) stamp() time.Time {
	t := r.now().UnixNano()
	r.stampMu.Lock()
	defer r.stampMu.Unlock()
	r.stamped = max(t, r.stamped+1)
	return time.Unix(0, r.stamped).UTC()
}
