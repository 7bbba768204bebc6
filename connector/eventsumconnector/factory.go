package eventsumconnector // import "github.com/k8sevents/otel-k8sevents/connector/eventsumconnector"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/k8sevents/otel-k8sevents/connector/eventsumconnector/internal/metadata"
)

// NewFactory returns the factory of the eventsum connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		connector.WithLogsToMetrics(createLogsToMetrics, metadata.LogsToMetricsStability),
	)
}

func createLogsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Logs, error) {
	return newEventSum(set.TelemetrySettings, cfg.(*Config), next, time.Now)
}
