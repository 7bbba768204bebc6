package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/internal/ratelog"
)

type k8seventExporter struct {
	cfg       *Config
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	client    kubernetes.Interface // set by tests; else built at start
	instance  string
	w         *writer
	logRate   *ratelog.Limiter[string]
}

func newExporter(set exporter.Settings, cfg *Config) (*k8seventExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("k8sevent telemetry: %w", err)
	}
	instance := cfg.ReportingInstance
	if instance == "" {
		instance, _ = os.Hostname()
	}
	return &k8seventExporter{cfg: cfg, logger: set.Logger, telemetry: tb, instance: k8sevent.Truncate(instance, k8sevent.MaxFieldBytes),
		logRate: ratelog.New[string](time.Minute)}, nil
}

func (e *k8seventExporter) start(ctx context.Context, _ component.Host) error {
	if e.client == nil {
		cs, err := e.cfg.Clientset(e.cfg.QPS, e.cfg.Burst)
		if err != nil {
			return fmt.Errorf("k8sevent: %w", err)
		}
		e.client = cs
	}
	api := e.cfg.API
	if api == apiAuto {
		api = k8sevent.APICoreV1
		if _, err := e.client.Discovery().ServerResourcesForGroupVersion(k8sevent.APIEventsV1); err == nil {
			api = k8sevent.APIEventsV1
		}
	}
	e.w = newWriter(e.client, api, e.cfg)
	e.logger.Info("Writing events", zap.String("api", api))
	if e.cfg.ReportingController != "" {
		n, err := e.w.learn(ctx, e.cfg.ReportingController, 500)
		if err != nil {
			// Not fatal: an unknown object's create answers AlreadyExists and is patched.
			e.logger.Warn("Cannot list the events written before", zap.Error(err))
		}
		e.logger.Info("Events written before", zap.Int("count", n))
	}
	return nil
}

func (e *k8seventExporter) shutdown(context.Context) error {
	e.telemetry.Shutdown()
	return nil
}

// pushLogs writes every record; permanent failures are counted and
// dropped, the first retryable one returns it and the records after it for
// exporterhelper to retry (writes are idempotent: nothing is written twice).
func (e *k8seventExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				if err := e.pushOne(ctx, rl, lrs.At(k)); err != nil {
					return consumererror.NewLogs(err, remaining(ld, i, j, k))
				}
			}
		}
	}
	return nil
}

func (e *k8seventExporter) pushOne(ctx context.Context, rl plog.ResourceLogs, lr plog.LogRecord) error {
	ev, _, found := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})
	if !found {
		e.permanent(ctx, "invalid", errors.New("record carries no Event"))
		return nil
	}
	if err := e.w.prepare(&ev, e.instance); err != nil {
		reason := "invalid"
		if errors.Is(err, errNamespace) {
			reason = "namespace"
		}
		e.permanent(ctx, reason, err)
		return nil
	}
	start, name := time.Now(), ev.Name
	out, err := e.w.write(ctx, &ev)
	e.telemetry.ExporterK8seventWriteLatency.Record(ctx, time.Since(start).Seconds())
	if ev.Name != name && e.logRate.Allow("renamed", start) {
		e.logger.Info("An event record named an object that is not its own: written under another name (logged once a minute)",
			zap.String("namespace", ev.ObjectNamespace()), zap.String("name", name), zap.String("written_as", ev.Name))
	}
	switch {
	case err == nil:
		e.telemetry.ExporterK8seventWrites.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcomeNames[out])))
		return nil
	case errors.Is(err, errNameTaken):
		e.permanent(ctx, "conflict", err)
		return nil
	case consumererror.IsPermanent(err):
		e.permanent(ctx, "rejected", err)
		return nil
	default:
		reason := "error"
		if apierrors.IsTooManyRequests(err) {
			reason = "throttled"
		}
		e.telemetry.ExporterK8seventRetryableFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
		return err
	}
}

var outcomeNames = map[outcome]string{created: "created", patched: "patched",
	createdAfter404: "created_after_404", patchedAfter409: "patched_after_409", adopted: "adopted", stale: "stale", unchanged: "unchanged"}

// permanent counts a dropped record and logs it once a minute per reason.
func (e *k8seventExporter) permanent(ctx context.Context, reason string, err error) {
	e.telemetry.ExporterK8seventPermanentFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
	if e.logRate.Allow(reason, time.Now()) {
		e.logger.Warn("Dropped an event record (logged once a minute per reason)", zap.String("reason", reason), zap.Error(err))
	}
}

// remaining copies record k of scope j of resource i and everything after it.
func remaining(ld plog.Logs, i, j, k int) plog.Logs {
	out := plog.NewLogs()
	rls := ld.ResourceLogs()
	for ri := i; ri < rls.Len(); ri++ {
		rl := rls.At(ri)
		outRL := out.ResourceLogs().AppendEmpty()
		rl.Resource().CopyTo(outRL.Resource())
		for si := 0; si < rl.ScopeLogs().Len(); si++ {
			if ri == i && si < j {
				continue
			}
			sl := rl.ScopeLogs().At(si)
			outSL := outRL.ScopeLogs().AppendEmpty()
			sl.Scope().CopyTo(outSL.Scope())
			for li := 0; li < sl.LogRecords().Len(); li++ {
				if ri == i && si == j && li < k {
					continue
				}
				sl.LogRecords().At(li).CopyTo(outSL.LogRecords().AppendEmpty())
			}
		}
	}
	return out
}
