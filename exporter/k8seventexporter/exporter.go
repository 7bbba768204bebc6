package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/internal/ratelog"
)

type k8seventsExporter struct {
	cfg          *Config
	logger       *zap.Logger
	telemetry    *metadata.TelemetryBuilder
	instance     string
	w            *writer
	logRate      *ratelog.Limiter[string]
	forbiddenLog *ratelog.Limiter[string] // when each namespace's RBAC gap was last logged
	disp         *dispatcher              // the lanes and their writer; set at start
	stop         chan struct{}            // closed when the exporter starts to stop
	stopOnce     sync.Once
	id           component.ID
	probe        storage.Client // a persistent queue's storage, written to see it works again (queue.go)
}

func newExporter(set exporter.Settings, cfg *Config) (*k8seventsExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("k8sevents exporter telemetry: %w", err)
	}
	instance := cfg.ReportingInstance
	if instance == "" {
		instance, _ = os.Hostname()
	}
	return &k8seventsExporter{cfg: cfg, logger: set.Logger, telemetry: tb, instance: k8sevent.Truncate(instance, k8sevent.MaxFieldBytes),
		logRate: ratelog.New[string](time.Minute), forbiddenLog: ratelog.New[string](time.Minute),
		stop: make(chan struct{}), id: set.ID}, nil
}

func (e *k8seventsExporter) start(ctx context.Context, host component.Host) error {
	if err := e.openProbe(ctx, host); err != nil {
		return fmt.Errorf("k8sevents exporter: %w", err)
	}
	cs, err := e.cfg.Clientset(e.cfg.QPS, e.cfg.Burst)
	if err != nil {
		return fmt.Errorf("k8sevents exporter: %w", err)
	}
	api := e.cfg.API
	if api == apiAuto {
		// core/v1 only where the server says it has no events.k8s.io/v1
		// (before Kubernetes 1.19): a server that cannot answer now (down,
		// starting) must not make this collector write the other API than
		// its peers and its previous runs, whose objects hold their counts in
		// series.count, not in the core/v1 count.
		api = k8sevent.APIEventsV1
		if _, err := cs.Discovery().ServerResourcesForGroupVersion(k8sevent.APIEventsV1); apierrors.IsNotFound(err) {
			api = k8sevent.APICoreV1
		}
	}
	e.w = newWriter(cs, api, e.cfg, e.instance)
	e.logger.Info("Writing events", zap.String("api", api), zap.Bool("sending_queue", e.cfg.Queue.HasValue()),
		zap.Bool("persistent", e.cfg.persistentQueue()), zap.Bool("adopt_open_series", e.cfg.AdoptOpenSeries))
	if e.cfg.AdoptOpenSeries {
		// Each series finds its object when it first writes (writeShared):
		// the listing at start would only fill the cache that path skips.
		e.w.shared = newAdoption(e.instance, e.cfg.AdoptWindow, e.cfg.AdoptMaxSeries)
	} else if e.cfg.ReportingController != "" {
		n, err := e.w.learn(ctx, e.cfg.ReportingController, 500)
		if err != nil {
			// Not fatal: an unknown object's create answers AlreadyExists and is patched.
			e.logger.Warn("Cannot list the events written before", zap.Error(err))
		}
		e.logger.Info("Events written before", zap.Int("count", n))
	}
	e.disp = newDispatcher(e.writeOne, e.cfg.BackOff, e.cfg.TimeoutConfig.Timeout)
	e.disp.handBack = e.cfg.persistentQueue()
	go e.disp.loop()
	return nil
}

// stopping runs before exporterhelper drains its queue: failing writes
// stop waiting for their retries (and, with a persistent queue, every
// record not in flight is handed back to it).
func (e *k8seventsExporter) stopping() {
	e.stopOnce.Do(func() { close(e.stop) })
	if e.disp != nil {
		e.disp.stop()
	}
}

func (e *k8seventsExporter) shutdown(ctx context.Context) error {
	if e.disp != nil {
		e.disp.close()
	}
	e.telemetry.Shutdown()
	if e.probe != nil {
		return e.probe.Close(ctx)
	}
	return nil
}

// stoppingFirst is the exporter exporterhelper built, told to stop before
// exporterhelper's own Shutdown drains its queue: that drain waits for
// pushes, and a push waits for its records.
type stoppingFirst struct {
	exporter.Logs
	e *k8seventsExporter
}

func (s stoppingFirst) Shutdown(ctx context.Context) error {
	s.e.stopping()
	return s.Logs.Shutdown(ctx)
}

// pushLogs prepares every record (what cannot be written is counted and
// dropped), hands them to the lanes and waits until each is written or
// dropped: only then is the push answered, so its caller (the processor's
// outbox, a persistent queue) keeps what is not written. Records that were
// not written (the exporter stops while their write fails, retries ran
// out, ctx ended) are returned to the caller.
func (e *k8seventsExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	var ps []*pending
	var at [][3]int // where each pending record is in ld
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				if p := e.prepareOne(ctx, rl, lrs.At(k)); p != nil {
					ps, at = append(ps, p), append(at, [3]int{i, j, k})
				}
			}
		}
	}
	errs := e.disp.run(ctx, ps)
	failed := map[[3]int]bool{}
	for n, err := range errs {
		if err != nil {
			failed[at[n]] = true
		}
	}
	err := pushAnswer(errs)
	if err == nil || consumererror.IsPermanent(err) {
		return err
	}
	return consumererror.NewLogs(err, subset(ld, func(pos [3]int) bool { return failed[pos] }))
}

// pushAnswer is a push's answer from what became of each record: nil when
// each was written or dropped for good; a permanent error only when every
// record not written failed for good (there is nothing to keep); else an
// error that wraps a retryable one and never a permanent one, whatever
// order the records failed in: a persistent queue deletes a request whose
// push answers an error with a permanent one anywhere in its chain.
func pushAnswer(errs []error) error {
	var firstRetryable, firstPermanent error
	failed := 0
	for _, err := range errs {
		switch {
		case err == nil:
		case consumererror.IsPermanent(err):
			failed++
			firstPermanent = cmp.Or(firstPermanent, err)
		default:
			failed++
			firstRetryable = cmp.Or(firstRetryable, err)
		}
	}
	switch {
	case failed == 0:
		return nil
	case firstRetryable == nil:
		return fmt.Errorf("%d of %d event records not written: %w", failed, len(errs), firstPermanent)
	}
	return fmt.Errorf("%d of %d event records not written: %w", failed, len(errs), firstRetryable)
}

// prepareOne decodes and repairs a record for the API, or counts why it
// cannot be written (nil).
func (e *k8seventsExporter) prepareOne(ctx context.Context, rl plog.ResourceLogs, lr plog.LogRecord) *pending {
	ev, _, found := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})
	if !found {
		e.permanent(ctx, "invalid", errors.New("record carries no Event"))
		return nil
	}
	if err := e.w.prepare(&ev); err != nil {
		reason := "invalid"
		if errors.Is(err, errNamespace) {
			reason = "namespace"
		}
		e.permanent(ctx, reason, err)
		return nil
	}
	return &pending{ev: ev, name: ev.Name}
}

// writeOne writes a prepared record: nil once written or dropped for good
// (counted), else the retryable error.
func (e *k8seventsExporter) writeOne(ctx context.Context, p *pending) error {
	ev := p.ev // a failed attempt starts again from the prepared record
	start := time.Now()
	out, err := e.w.writeTrusting403(ctx, &ev)
	e.telemetry.ExporterK8seventsWriteLatency.Record(ctx, time.Since(start).Seconds())
	if ev.Name != p.name && e.logRate.Allow("renamed", start) {
		e.logger.Info("An event record named an object that is not its own: written under another name (logged once a minute)",
			zap.String("namespace", ev.ObjectNamespace()), zap.String("name", p.name), zap.String("written_as", ev.Name))
	}
	switch {
	case err == nil:
		e.telemetry.ExporterK8seventsWrites.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcomeNames[out])))
		return nil
	case errors.Is(err, errNameTaken):
		e.permanent(ctx, "conflict", err)
		return nil
	case errors.Is(err, errForbidden):
		e.forbidden(ctx, ev.ObjectNamespace(), err)
		return nil
	case consumererror.IsPermanent(err):
		e.permanent(ctx, "rejected", err)
		return nil
	default:
		reason := "error"
		switch {
		case apierrors.IsTooManyRequests(err):
			reason = "throttled"
		case apierrors.IsForbidden(err):
			reason = "forbidden" // from an API server that is not ready: retried
		}
		e.telemetry.ExporterK8seventsRetryableFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
		return err
	}
}

var outcomeNames = map[outcome]string{created: "created", patched: "patched",
	createdAfter404: "created_after_404", patchedAfter409: "patched_after_409", adopted: "adopted", stale: "stale", unchanged: "unchanged",
	adoptedSeries: "adopted_series"}

// permanent counts a dropped record and logs it once a minute per reason.
func (e *k8seventsExporter) permanent(ctx context.Context, reason string, err error) {
	e.telemetry.ExporterK8seventsPermanentFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
	if e.logRate.Allow(reason, time.Now()) {
		e.logger.Warn("Dropped an event record (logged once a minute per reason)", zap.String("reason", reason), zap.Error(err))
	}
}

// forbidden counts a record dropped for an RBAC gap and logs it once a
// minute per namespace: a gap in one namespace never silences another's.
func (e *k8seventsExporter) forbidden(ctx context.Context, ns string, err error) {
	e.telemetry.ExporterK8seventsPermanentFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", "forbidden")))
	if e.forbiddenLog.Allow(ns, time.Now()) {
		e.logger.Error("Dropped an event record: the exporter may not write Events in this namespace (grant its role there; logged once a minute per namespace)",
			zap.String("namespace", ns), zap.Error(err))
	}
}

// subset copies the records of ld whose position (resource, scope,
// record) keep selects.
func subset(ld plog.Logs, keep func(pos [3]int) bool) plog.Logs {
	out := plog.NewLogs()
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		var outRL plog.ResourceLogs
		hasRL := false
		for j := range rl.ScopeLogs().Len() {
			sl := rl.ScopeLogs().At(j)
			var outSL plog.ScopeLogs
			hasSL := false
			for k := range sl.LogRecords().Len() {
				if !keep([3]int{i, j, k}) {
					continue
				}
				if !hasRL {
					outRL, hasRL = out.ResourceLogs().AppendEmpty(), true
					rl.Resource().CopyTo(outRL.Resource())
				}
				if !hasSL {
					outSL, hasSL = outRL.ScopeLogs().AppendEmpty(), true
					sl.Scope().CopyTo(outSL.Scope())
				}
				sl.LogRecords().At(k).CopyTo(outSL.LogRecords().AppendEmpty())
			}
		}
	}
	return out
}
