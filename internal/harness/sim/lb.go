package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// loadBalancer is contrib's load_balancing exporter as tier 1 configures
// it (routing_key: attributes, a static list of tier-2 collectors): each
// record goes to the backend its routing attributes hash to, and each
// backend has an otlp exporter of its own (exporterhelper with the
// configuration's sending_queue, retry_on_failure and timeout). Only the
// gRPC connection to the backend is the simulator's: the request is
// handed to the tier-2 process in memory. The ring is a plain hash of the
// key over the backends: which backend an object lands on does not matter
// here, only that it is always the same one.
type loadBalancer struct {
	attrs    []string
	backends []exporter.Logs
}

// lbConfig is the part of load_balancing's configuration the simulator reads.
type lbConfig struct {
	RoutingKey        string   `mapstructure:"routing_key"`
	RoutingAttributes []string `mapstructure:"routing_attributes"`
	Protocol          struct {
		OTLP struct {
			Queue   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
			Retry   configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
			Timeout time.Duration                                            `mapstructure:"timeout"`
		} `mapstructure:"otlp"`
	} `mapstructure:"protocol"`
	Resolver struct {
		Static struct {
			Hostnames []string `mapstructure:"hostnames"`
		} `mapstructure:"static"`
	} `mapstructure:"resolver"`
}

func newLoadBalancer(p *process, inc *incarnation, id component.ID) (*loadBalancer, error) {
	var cfg lbConfig
	cfg.Protocol.OTLP.Queue = configoptional.Default(exporterhelper.NewDefaultQueueConfig())
	cfg.Protocol.OTLP.Retry = configretry.NewDefaultBackOffConfig()
	cfg.Protocol.OTLP.Timeout = 5 * time.Second // the otlp exporter's default
	if err := sectionLoose(p.conf, "exporters", id, &cfg); err != nil {
		return nil, err
	}
	if cfg.RoutingKey != "attributes" {
		return nil, fmt.Errorf("load_balancing: routing_key %q is not simulated", cfg.RoutingKey)
	}
	lb := &loadBalancer{attrs: cfg.RoutingAttributes}
	for _, hostname := range cfg.Resolver.Static.Hostnames {
		name, _, _ := strings.Cut(hostname, ":")
		target, ok := p.w.procs[name]
		if !ok {
			return nil, fmt.Errorf("load_balancing: backend %q is no process", hostname)
		}
		set := exportertest.NewNopSettings(component.MustNewType("otlp"))
		set.ID = component.MustNewIDWithName("otlp", name)
		push := func(ctx context.Context, ld plog.Logs) error { return p.send(ctx, inc, target, ld) }
		exp, err := exporterhelper.NewLogs(context.Background(), set, &cfg, push,
			exporterhelper.WithQueue(cfg.Protocol.OTLP.Queue),
			exporterhelper.WithRetry(cfg.Protocol.OTLP.Retry),
			exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: cfg.Protocol.OTLP.Timeout}))
		if err != nil {
			return nil, fmt.Errorf("load_balancing: backend %s: %w", name, err)
		}
		lb.backends = append(lb.backends, exp)
	}
	if len(lb.backends) == 0 {
		return nil, errors.New("load_balancing: no backends")
	}
	return lb, nil
}

// send is one request from a tier-1 incarnation to a tier-2 process: an
// effect of the sender (a crash before it means it never left; after it,
// the backend took it and the sender never heard), answered as the otlp
// exporter reads a gRPC status.
func (p *process) send(ctx context.Context, inc *incarnation, to *process, ld plog.Logs) error {
	n, alive := inc.life.before(effectSend)
	if !alive {
		return errCrashed
	}
	_, err := call(ctx, to, nil, ld)
	if !inc.life.after(effectSend, n) {
		return errCrashed
	}
	if err != nil && !retryable(err) {
		return permanent(err)
	}
	return err
}

func (lb *loadBalancer) Start(ctx context.Context, host component.Host) error {
	for _, b := range lb.backends {
		if err := b.Start(ctx, host); err != nil {
			return err
		}
	}
	return nil
}

func (lb *loadBalancer) Shutdown(ctx context.Context) error {
	var errs []error
	for _, b := range lb.backends {
		errs = append(errs, b.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

func (lb *loadBalancer) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// ConsumeLogs splits ld by backend and hands each part to its backend's
// exporter in turn, as load_balancing does; the errors are joined. The
// routing key is hashed with CRC-32 (IEEE), load_balancing's ring hash, so
// that the kept schedules keep the routing they were found with.
func (lb *loadBalancer) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	parts := make([]plog.Logs, len(lb.backends))
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				i := int(crc32.ChecksumIEEE([]byte(lb.routingKey(rl.Resource().Attributes(), sl.Scope().Attributes(), lr.Attributes()))) % uint32(len(parts)))
				if parts[i] == (plog.Logs{}) {
					parts[i] = plog.NewLogs()
				}
				out := parts[i].ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(out.Resource())
				osl := out.ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(osl.Scope())
				lr.CopyTo(osl.LogRecords().AppendEmpty())
			}
		}
	}
	var errs []error
	for i, part := range parts {
		if part != (plog.Logs{}) {
			errs = append(errs, lb.backends[i].ConsumeLogs(ctx, part))
		}
	}
	return errors.Join(errs...)
}

// routingKey joins the routing attributes' values, each looked up on the
// resource, then the scope, then the record.
func (lb *loadBalancer) routingKey(maps ...pcommon.Map) string {
	var b strings.Builder
	for _, name := range lb.attrs {
		for _, m := range maps {
			if v, ok := m.Get(name); ok {
				b.WriteString(v.AsString())
				break
			}
		}
		b.WriteByte(0)
	}
	return b.String()
}
