package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
)

// NewFactory returns the factory of the eventseries processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createLogs(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	return newProcessor(set, cfg.(*Config), next, time.Now)
}
