package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"
	"golang.org/x/net/netutil"
	"google.golang.org/grpc"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver/internal/metadata"
)

type otlpReceiver struct {
	cfg        *Config
	set        receiver.Settings
	next       consumer.Logs
	telemetry  *metadata.TelemetryBuilder
	budgets    *budgets
	access     *access     // its client is set by Start
	namespaces *namespaces // set by Start
	cluster    k8sevent.Cluster
	now        func() time.Time

	// decodes holds a token for each request being decoded, across
	// connections and protocols: a decoded request takes several times its
	// size, and this bounds how many are decoded at once.
	decodes chan struct{}

	obsGRPC, obsHTTP *receiverhelper.ObsReport
	serverGRPC       *grpc.Server
	serverHTTP       *http.Server
	wg               sync.WaitGroup
}

func newReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*otlpReceiver, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("k8seventsotlp telemetry: %w", err)
	}
	r := &otlpReceiver{cfg: cfg, set: set, next: next, telemetry: tb, budgets: newBudgets(cfg.PerClient),
		decodes: make(chan struct{}, cfg.MaxConcurrentDecodes),
		cluster: k8sevent.Cluster{Name: cfg.ClusterName, UID: cfg.ClusterUID}, now: time.Now}
	r.access = newAccess(nil, cfg.Cache, cfg.Timeout, tb, func() time.Time { return r.now() })
	for transport, obs := range map[string]**receiverhelper.ObsReport{"grpc": &r.obsGRPC, "http": &r.obsHTTP} {
		if *obs, err = receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{ReceiverID: set.ID, Transport: transport, ReceiverCreateSettings: set}); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *otlpReceiver) Start(ctx context.Context, host component.Host) error {
	cs, err := r.cfg.Clientset(r.cfg.QPS, r.cfg.Burst)
	if err != nil {
		return fmt.Errorf("k8seventsotlp: %w", err)
	}
	r.access.client = cs
	if r.namespaces, err = watchNamespaces(cs, r.set.Logger); err != nil {
		return fmt.Errorf("k8seventsotlp: %w", err)
	}
	if err := r.startGRPC(ctx, host); err != nil {
		return errors.Join(err, r.Shutdown(ctx))
	}
	if err := r.startHTTP(ctx, host); err != nil {
		return errors.Join(err, r.Shutdown(ctx))
	}
	return nil
}

func (r *otlpReceiver) startGRPC(ctx context.Context, host component.Host) error {
	cfg := r.cfg.Protocols.GRPC.Get()
	if cfg == nil {
		return nil
	}
	// configgrpc installs the authenticator; its status errors
	// (Unavailable when the API server cannot be asked) reach the caller.
	// A call without a bearer token is refused at its headers.
	srv, err := cfg.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings,
		configgrpc.WithGrpcServerOption(grpc.InTapHandle(r.requireBearer)))
	if err != nil {
		return fmt.Errorf("k8seventsotlp grpc: %w", err)
	}
	srv.RegisterService(&logsService, r)
	ln, err := cfg.NetAddr.Listen(ctx)
	if err != nil {
		return fmt.Errorf("k8seventsotlp grpc: %w", err)
	}
	ln = netutil.LimitListener(ln, r.cfg.MaxConnections)
	r.set.Logger.Info("Starting GRPC server", zap.String("endpoint", ln.Addr().String()))
	r.serverGRPC = srv
	r.serve(host, func() error { return srv.Serve(ln) }, grpc.ErrServerStopped)
	return nil
}

func (r *otlpReceiver) startHTTP(ctx context.Context, host component.Host) error {
	cfg := r.cfg.Protocols.HTTP.Get()
	if cfg == nil {
		return nil
	}
	// The receiver authenticates HTTP requests itself, with the same
	// authenticator: confighttp answers every authenticator error 401,
	// which an OTLP sender never retries, and a token that could not be
	// reviewed while the API server was away would be lost.
	serverCfg := *cfg
	if !serverCfg.Auth.HasValue() {
		return errors.New("k8seventsotlp http: auth is required")
	}
	authCfg := *serverCfg.Auth.Get()
	serverCfg.Auth = configoptional.None[confighttp.AuthConfig]()
	authenticator, err := authCfg.Config.GetServerAuthenticator(ctx, host.GetExtensions())
	if err != nil {
		return fmt.Errorf("k8seventsotlp http: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(logsPath, authenticated(authenticator, authCfg.RequestParameters, http.HandlerFunc(r.handleLogs)))
	srv, err := serverCfg.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, mux)
	if err != nil {
		return fmt.Errorf("k8seventsotlp http: %w", err)
	}
	ln, err := serverCfg.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("k8seventsotlp http: %w", err)
	}
	ln = netutil.LimitListener(ln, r.cfg.MaxConnections)
	r.set.Logger.Info("Starting HTTP server", zap.String("endpoint", ln.Addr().String()))
	r.serverHTTP = srv
	r.serve(host, func() error { return srv.Serve(ln) }, http.ErrServerClosed)
	return nil
}

// serve runs a server until it is stopped; any other end is fatal.
func (r *otlpReceiver) serve(host component.Host, run func() error, stopped error) {
	r.wg.Go(func() {
		if err := run(); err != nil && !errors.Is(err, stopped) && !errors.Is(err, net.ErrClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	})
}

func (r *otlpReceiver) Shutdown(ctx context.Context) error {
	var err error
	if r.serverHTTP != nil {
		err = r.serverHTTP.Shutdown(ctx)
	}
	if r.serverGRPC != nil {
		r.serverGRPC.GracefulStop()
	}
	r.wg.Wait()
	r.namespaces.shutdown()
	r.telemetry.Shutdown()
	return err
}

// Export takes one request as the gRPC service does, once the
// authenticator put the caller's identity into ctx: the service's method,
// and the way in-process harnesses (the fault simulator) send to the
// receiver without a socket.
func (r *otlpReceiver) Export(ctx context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	return r.export(ctx, r.obsGRPC, "protobuf", req)
}

// export takes one request and makes its answer: partial success for the
// records refused, or a status error for the whole request.
func (r *otlpReceiver) export(ctx context.Context, obs *receiverhelper.ObsReport, format string, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	resp := plogotlp.NewExportResponse()
	ld := req.Logs()
	total := ld.LogRecordCount()
	ctx = obs.StartLogsOp(ctx)
	refused, err := r.consume(ctx, ld)
	obs.EndLogsOp(ctx, format, total-refused.count(), err)
	if err != nil {
		return resp, err
	}
	if n := refused.count(); n > 0 {
		resp.PartialSuccess().SetRejectedLogRecords(int64(n))
		resp.PartialSuccess().SetErrorMessage(refused.message(total))
	}
	return resp, nil
}
