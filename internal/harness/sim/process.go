package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"
	"github.com/k8sevents/otel-k8sevents/extension/k8stokenauthextension"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"
)

// process is one collector: a ready configuration, an environment, a disk
// that outlives its incarnations, and the incarnation running now (nil
// while it is down).
type process struct {
	w    *World
	name string
	file string            // the ready configuration, in testdata/config
	env  map[string]string // its environment
	disk *disk

	conf         *confmap.Conf
	inc          *incarnation
	starting     *incarnation // started, its components' Start still waiting (nil when none)
	incarnations int
	crashAt      *crashPoint // placed on the next incarnation
}

// incarnation is one run of a process, from start to crash or stop.
type incarnation struct {
	life       *lifeline
	host       *host
	components []component.Component // in start order
	entry      func(ctx context.Context, headers map[string][]string, ld plog.Logs) (plogotlp.ExportResponse, error)
	reaped     chan struct{} // closed once every component was shut down
	started    chan struct{} // closed once every component's Start returned
	startErr   error         // the first Start that failed, once started is closed
	startedN   int           // how many components started, once started is closed
}

// errDown answers a request to a process that is not running.
var errDown = errors.New("sim: connection refused (the process is down)")

// start builds and starts a new incarnation from the configuration. Its
// components start in order, as the collector starts them; one may wait
// (the sending queue's storage refuses the writes of its recovery), and
// then the process stays down, not ready, until it finishes starting at a
// later settle (starting), as a pod stays unready while its collector
// starts. Its start's context ends when the incarnation dies.
func (p *process) start(ctx context.Context) error {
	if p.died() {
		p.crash() // reaped: it died at a crash point since the last step
	}
	if p.starting != nil {
		return nil // still starting: a second incarnation would share its disk
	}
	if p.inc != nil {
		return fmt.Errorf("sim: %s is running", p.name)
	}
	if p.conf == nil {
		conf, err := loadConfig(ctx, p.file, p.env)
		if err != nil {
			return err
		}
		p.conf = conf
	}
	p.incarnations++
	startCtx, cancel := context.WithCancel(context.Background())
	inc := &incarnation{life: newLifeline(p.crashAt, cancel), reaped: make(chan struct{}), started: make(chan struct{})}
	p.crashAt = nil
	if err := p.build(ctx, inc); err != nil {
		cancel()
		return fmt.Errorf("sim: build %s: %w", p.name, err)
	}
	go func() {
		defer close(inc.started)
		for _, c := range inc.components {
			if inc.startErr = c.Start(startCtx, inc.host); inc.startErr != nil {
				return
			}
			inc.startedN++
		}
	}()
	synctest.Wait()
	p.starting = inc
	if err := p.started(); err != nil {
		return err
	}
	if p.starting != nil {
		p.w.logf("%s is still starting (incarnation %d)", p.name, p.incarnations)
	}
	return nil
}

// started ends a start whose components' Start calls all returned: the
// incarnation runs, or, when a Start failed, it is reaped (a start that
// failed because the incarnation died there is a crash, not an error).
// Still starting, nothing changes.
func (p *process) started() error {
	inc := p.starting
	if inc == nil {
		return nil
	}
	select {
	case <-inc.started:
	default:
		return nil
	}
	p.starting = nil
	if inc.startErr == nil {
		p.inc = inc
		return nil
	}
	inc.components = inc.components[:inc.startedN]
	crashed := !inc.life.ok()
	inc.life.kill()
	p.reap(inc)
	if crashed {
		p.w.logf("%s crashed while starting (incarnation %d): %v", p.name, p.incarnations, inc.startErr)
		return nil
	}
	return fmt.Errorf("sim: start %s: %w", p.name, inc.startErr)
}

// abortStart kills an incarnation still starting, as a SIGTERM or a crash
// ends a process that has not finished starting.
func (p *process) abortStart() {
	if inc := p.starting; inc != nil {
		inc.life.kill()
		<-inc.started
		_ = p.started()
	}
}

// gracePeriod is the pods' terminationGracePeriodSeconds in deploy/: how
// long the kubelet waits after a SIGTERM before its SIGKILL.
const gracePeriod = 60 * time.Second

// stop shuts the incarnation down gracefully, as a SIGTERM does: the
// collector's order, receivers first. A shutdown still running after the
// grace period is killed there: its context ends, and nothing it does
// afterwards reaches the world.
func (p *process) stop(ctx context.Context) error {
	p.abortStart()
	inc := p.inc
	if inc == nil {
		return nil
	}
	p.inc = nil
	ctx, cancel := context.WithTimeout(ctx, gracePeriod)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var errs []error
		for _, c := range slices.Backward(inc.components) {
			errs = append(errs, c.Shutdown(ctx))
		}
		done <- errors.Join(errs...)
	}()
	select {
	case err := <-done:
		inc.life.kill()
		close(inc.reaped)
		return err
	case <-ctx.Done():
		p.w.logf("%s killed: still stopping after the %s grace period", p.name, gracePeriod)
		inc.life.kill()
		go func() {
			<-done
			close(inc.reaped)
		}()
		return nil
	}
}

// crash kills the incarnation at once: nothing it does from now on reaches
// the world (storage, API servers, other processes), and its goroutines are
// shut down in the background, harmlessly.
func (p *process) crash() {
	p.abortStart()
	inc := p.inc
	if inc == nil {
		return
	}
	p.inc = nil
	inc.life.kill()
	go p.reap(inc)
}

// reap shuts down a dead incarnation's components so that their
// goroutines end; their effects are all refused.
func (p *process) reap(inc *incarnation) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no waiting: a crash does not drain anything
	for _, c := range slices.Backward(inc.components) {
		_ = c.Shutdown(ctx)
	}
	close(inc.reaped)
}

// died reports whether the running incarnation crashed by itself (a crash
// point was reached); the world then reaps it.
func (p *process) died() bool {
	return p.inc != nil && !p.inc.life.ok()
}

// restConfig is how the incarnation's components reach the API server: as
// the process's ServiceAccount, through the world's faults, fenced by the
// incarnation's life.
func (p *process) restConfig(life *lifeline) *rest.Config {
	cfg := p.w.api.RESTConfig(p.w.serviceAccountToken(p.name))
	cfg.Wrap(p.w.faultTransport(p.name))
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return &fencedTransport{next: next, life: life} })
	return cfg
}

func (p *process) clientset(life *lifeline) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(p.restConfig(life))
}

// export is a request arriving at the process from an app or another
// process: refused when the process is down; the answer is an effect of
// the incarnation, lost when it crashes before it is sent.
func (p *process) export(ctx context.Context, headers map[string][]string, ld plog.Logs) (plogotlp.ExportResponse, error) {
	inc := p.inc
	if inc == nil || inc.entry == nil {
		return plogotlp.NewExportResponse(), errDown
	}
	n, alive := inc.life.before(effectAnswer)
	if !alive {
		return plogotlp.NewExportResponse(), errDown
	}
	resp, err := inc.entry(ctx, headers, ld)
	if !inc.life.after(effectAnswer, n) {
		return plogotlp.NewExportResponse(), errDown
	}
	return resp, err
}

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
		return sinkExporter{}, nil // takes everything, as debug does
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

// sinkExporter takes every batch and keeps nothing, as the debug exporter
// does.
type sinkExporter struct{}

func (sinkExporter) Start(context.Context, component.Host) error  { return nil }
func (sinkExporter) Shutdown(context.Context) error               { return nil }
func (sinkExporter) Capabilities() consumer.Capabilities          { return consumer.Capabilities{} }
func (sinkExporter) ConsumeLogs(context.Context, plog.Logs) error { return nil }

var _ exporter.Logs = sinkExporter{}

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
