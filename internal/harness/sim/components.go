package sim

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"
	"github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"
)

// A process's components, each incarnation's built anew from the ready
// configuration as the collector builds them (process.go starts, crashes
// and stops them).

// build makes the incarnation's components from the configuration.
func (p *process) build(ctx context.Context, inc *incarnation) error {
	pl, err := pipelineOf(p.conf)
	if err != nil {
		return err
	}
	inc.host = &host{extensions: map[component.ID]component.Component{}}
	var exts []component.Component
	for _, id := range pl.extensions {
		ext, err := p.extension(ctx, inc, id)
		if err != nil {
			return err
		}
		if ext != nil {
			inc.host.extensions[id] = ext
			exts = append(exts, ext)
		}
	}
	if p.sink && !slices.Contains(pl.exporters, debugID) {
		pl.exporters = append(pl.exporters, debugID)
	}
	var exps []component.Component
	nexts := map[pipeline.ID]consumer.Logs{}
	for i, id := range pl.exporters {
		exp, err := p.exporter(ctx, inc, id)
		if err != nil {
			return err
		}
		exps = append(exps, exp)
		nexts[pipeline.NewIDWithName(pipeline.SignalLogs, fmt.Sprint(i))] = exp.(consumer.Logs)
	}
	var next consumer.Logs = exps[0].(consumer.Logs)
	if len(exps) > 1 {
		next = connector.NewLogsRouter(nexts) // the collector's fanout
	}
	var procs []component.Component
	for _, id := range slices.Backward(pl.processors) {
		proc, input, err := p.processor(ctx, id, next, inc.life)
		if err != nil {
			return err
		}
		if proc != nil {
			procs, next = append(procs, proc), input
		}
	}
	slices.Reverse(procs)
	var recvs []component.Component
	for _, id := range pl.receivers {
		recv, err := p.receiver(ctx, inc, id, next)
		if err != nil {
			return err
		}
		if recv != nil {
			recvs = append(recvs, recv)
		}
	}
	inc.components = slices.Concat(exts, exps, procs, recvs)
	return nil
}

// debugID is the debug exporter: the simulator's log sink (sink.go).
var debugID = component.MustNewID("debug")

// inProcess points a component's API client at the simulated API server.
func (p *process) inProcess(inc *incarnation) func() *rest.Config {
	return func() *rest.Config { return p.restConfig(inc.life) }
}

func (p *process) extension(ctx context.Context, inc *incarnation, id component.ID) (component.Component, error) {
	switch id.Type().String() {
	case "file_storage":
		return &storageExtension{disk: p.disk, alive: inc.life}, nil
	case "k8s_leader_elector":
		cs, err := p.clientset(inc.life)
		if err != nil {
			return nil, err
		}
		return &electorExtension{client: cs, identity: fmt.Sprintf("%s-%d", p.name, p.incarnations)}, nil
	case "k8stokenauth":
		f := k8stokenauthextension.NewFactory()
		cfg := f.CreateDefaultConfig()
		if err := section(p.conf, "extensions", id, cfg); err != nil {
			return nil, err
		}
		setInProcess(cfg, p.inProcess(inc))
		set := extensiontest.NewNopSettings(f.Type())
		set.ID, set.Logger = id, p.logger(id)
		return f.Create(ctx, set, cfg)
	case "health_check", "bearertokenauth":
		return nil, nil // nothing to simulate: the transport's (end-to-end tests)
	}
	return nil, fmt.Errorf("extension %s: not simulated", id)
}

func (p *process) exporter(ctx context.Context, inc *incarnation, id component.ID) (component.Component, error) {
	switch id.Type().String() {
	case "k8sevents":
		f := k8seventexporter.NewFactory()
		cfg := f.CreateDefaultConfig()
		if err := section(p.conf, "exporters", id, cfg); err != nil {
			return nil, err
		}
		setInProcess(cfg, p.inProcess(inc))
		set := exportertest.NewNopSettings(f.Type())
		set.ID, set.Logger = id, p.logger(id)
		return f.CreateLogs(ctx, set, cfg)
	case "debug":
		p.w.mu.Lock()
		p.w.hasSink = true
		p.w.mu.Unlock()
		return sinkExporter{log: p.w.sink, life: inc.life}, nil
	case "load_balancing":
		return newLoadBalancer(p, inc, id)
	}
	return nil, fmt.Errorf("exporter %s: not simulated", id)
}

// processor builds a processor; input is where the component before it
// hands it records (a tap in front of eventseries).
func (p *process) processor(ctx context.Context, id component.ID, next consumer.Logs, life *lifeline) (proc processor.Logs, input consumer.Logs, err error) {
	switch id.Type().String() {
	case "eventseries":
		f := eventseriesprocessor.NewFactory()
		cfg := f.CreateDefaultConfig().(*eventseriesprocessor.Config)
		if err := section(p.conf, "processors", id, cfg); err != nil {
			return nil, nil, err
		}
		p.w.configure(p.name, cfg)
		if cfg.Series.FinishAfter >= finalQuiet {
			return nil, nil, fmt.Errorf("processor %s: series.finish_after %s is not shorter than the end of a run's quiet (%s)",
				id, cfg.Series.FinishAfter, finalQuiet)
		}
		set := processortest.NewNopSettings(f.Type())
		set.ID, set.Logger = id, p.logger(id)
		proc, err := f.CreateLogs(ctx, set, cfg, next)
		if err != nil {
			return nil, nil, err
		}
		return proc, tap{next: proc, w: p.w, life: life, finishAfter: cfg.Series.FinishAfter}, nil
	case "memory_limiter":
		return nil, nil, nil // memory is not simulated: it passes everything
	}
	return nil, nil, fmt.Errorf("processor %s: not simulated", id)
}

func (p *process) receiver(ctx context.Context, inc *incarnation, id component.ID, next consumer.Logs) (component.Component, error) {
	switch id.Type().String() {
	case "k8sevents":
		f := k8seventsreceiver.NewFactory()
		cfg := f.CreateDefaultConfig()
		if err := section(p.conf, "receivers", id, cfg); err != nil {
			return nil, err
		}
		setInProcess(cfg, p.inProcess(inc))
		set := receivertest.NewNopSettings(f.Type())
		set.ID, set.Logger = id, p.logger(id)
		return f.CreateLogs(ctx, set, cfg, next)
	case "k8seventsotlp":
		return p.otlpReceiver(ctx, inc, id, next)
	case "otlp":
		// Tier 2's plain OTLP receiver: a request is its records, handed
		// to the pipeline; the answer is the pipeline's.
		inc.entry = func(ctx context.Context, _ map[string][]string, ld plog.Logs) (plogotlp.ExportResponse, error) {
			return plogotlp.NewExportResponse(), asStatus(next.ConsumeLogs(ctx, ld))
		}
		return nil, nil
	}
	return nil, fmt.Errorf("receiver %s: not simulated", id)
}

// otlpReceiver is the k8seventsotlp receiver entered where its gRPC service
// is, after its authenticator: the sockets and decoding are the
// transport's, which the end-to-end tests run.
func (p *process) otlpReceiver(ctx context.Context, inc *incarnation, id component.ID, next consumer.Logs) (component.Component, error) {
	f := k8seventsotlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*k8seventsotlpreceiver.Config)
	if err := section(p.conf, "receivers", id, cfg); err != nil {
		return nil, err
	}
	auth := cfg.Protocols.GRPC.Get().Auth.Get().AuthenticatorID
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	cfg.Protocols.HTTP = configoptional.None[confighttp.ServerConfig]()
	cfg.InProcess = p.inProcess(inc)
	set := receivertest.NewNopSettings(f.Type())
	set.ID, set.Logger = id, p.logger(id)
	recv, err := f.CreateLogs(ctx, set, cfg, next)
	if err != nil {
		return nil, err
	}
	exporting, ok := recv.(interface {
		Export(context.Context, plogotlp.ExportRequest) (plogotlp.ExportResponse, error)
	})
	if !ok {
		return nil, fmt.Errorf("receiver %s: has no in-process Export", id)
	}
	inc.entry = func(ctx context.Context, headers map[string][]string, ld plog.Logs) (plogotlp.ExportResponse, error) {
		authenticator, ok := inc.host.extensions[auth].(extensionauth.Server)
		if !ok {
			return plogotlp.NewExportResponse(), fmt.Errorf("sim: %s is not an authenticator", auth)
		}
		ctx, err := authenticator.Authenticate(ctx, headers)
		if err != nil {
			return plogotlp.NewExportResponse(), err
		}
		return exporting.Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
	}
	return recv, nil
}

// setInProcess points the API client settings embedded in a component's
// configuration at the simulated API server.
func setInProcess(cfg component.Config, f func() *rest.Config) {
	switch c := cfg.(type) {
	case *k8seventexporter.Config:
		c.InProcess = f
	case *k8seventsreceiver.Config:
		c.InProcess = f
	case *k8stokenauthextension.Config:
		c.InProcess = f
	}
}

// logger is a component's logger: the world's log when the simulator
// runs with SIM_LOG set, else none.
func (p *process) logger(id component.ID) *zap.Logger {
	if !logComponents {
		return zap.NewNop()
	}
	prefix := fmt.Sprintf("%s/%d %s", p.name, p.incarnations, id)
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level",
		EncodeLevel: zapcore.LowercaseLevelEncoder}), zapcore.AddSync(logWriter{p.w, prefix}), zapcore.DebugLevel))
}

// logComponents: SIM_LOG=1 puts every component's log into a run's story.
var logComponents = os.Getenv("SIM_LOG") != ""

type logWriter struct {
	w      *World
	prefix string
}

func (l logWriter) Write(b []byte) (int, error) {
	l.w.logf("  %s: %s", l.prefix, strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
