package recorder

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// Protocols of Options.Protocol, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// protocol is the OTLP protocol to use: the option, then the environment
// (logs-specific first), then the specification's default.
func protocol(o Options) string {
	for _, p := range []string{o.Protocol, os.Getenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")} {
		if p = strings.TrimSpace(p); p != "" {
			return p
		}
	}
	return ProtocolHTTP
}

// newOTLPExporter builds the SDK's OTLP log exporter, which reads the rest
// of its configuration (endpoint, headers, TLS, compression, timeout) from
// the OTEL_EXPORTER_OTLP_* variables, wrapped to send the pod's
// ServiceAccount token unless TokenFile is NoToken. Its own retry is off:
// the Recorder retries, so that it knows at every moment what has been sent.
func newOTLPExporter(ctx context.Context, o Options) (sdklog.Exporter, error) {
	p := protocol(o)
	build := func(headers map[string]string) (sdklog.Exporter, error) { return buildOTLPExporter(ctx, o, p, headers) }
	if o.TokenFile == NoToken {
		return build(nil)
	}
	return newTokenExporter(o.TokenFile, build)
}

// buildOTLPExporter builds the exporter for protocol p; headers, when not
// nil, replace those of the environment.
func buildOTLPExporter(ctx context.Context, o Options, p string, headers map[string]string) (sdklog.Exporter, error) {
	switch p {
	case ProtocolGRPC:
		opts := []otlploggrpc.Option{otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false})}
		if o.Endpoint != "" {
			opts = append(opts, otlploggrpc.WithEndpoint(o.Endpoint))
		}
		if o.Insecure {
			opts = append(opts, otlploggrpc.WithInsecure())
		}
		if headers != nil {
			opts = append(opts, otlploggrpc.WithHeaders(headers))
		}
		exp, err := otlploggrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("otlp grpc log exporter: %w", err)
		}
		return exp, nil
	case ProtocolHTTP, "http/json", "http":
		opts := []otlploghttp.Option{otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false})}
		if o.Endpoint != "" {
			opts = append(opts, otlploghttp.WithEndpoint(o.Endpoint))
		}
		if o.Insecure {
			opts = append(opts, otlploghttp.WithInsecure())
		}
		if headers != nil {
			opts = append(opts, otlploghttp.WithHeaders(headers))
		}
		exp, err := otlploghttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("otlp http log exporter: %w", err)
		}
		return exp, nil
	default:
		return nil, fmt.Errorf("otlp protocol %q: want %q or %q", p, ProtocolGRPC, ProtocolHTTP)
	}
}
