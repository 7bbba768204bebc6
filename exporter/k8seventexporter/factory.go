package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
)

// NewFactory returns the factory of the k8sevents exporter. Its type is
// the receiver's, as otlp's is.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	e, err := newExporter(set, c)
	if err != nil {
		return nil, err
	}
	// The timeout bounds each API write (the dispatcher applies it), not a
	// push, which waits until its records are written; the dispatcher
	// retries a failed write in place, exporterhelper's retry only sees
	// what is handed back at shutdown.
	logs, err := exporterhelper.NewLogs(ctx, set, cfg, e.pushLogs,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{}),
		exporterhelper.WithRetry(handedBackRetry(c.BackOff)),
		exporterhelper.WithQueue(c.Queue),
	)
	if err != nil {
		return nil, err
	}
	return stoppingFirst{Logs: logs, e: e}, nil
}
