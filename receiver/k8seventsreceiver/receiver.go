package k8seventsreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver"

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadata"
)

// leaderElector is the contrib k8s_leader_elector extension's interface,
// declared here so that the receiver does not depend on its module.
type leaderElector interface {
	SetCallBackFuncs(onStartLeading func(context.Context), onStopLeading func())
}

type k8seventsReceiver struct {
	cfg       *Config
	set       receiver.Settings
	next      consumer.Logs
	telemetry *metadata.TelemetryBuilder
	client    kubernetes.Interface
	store     storage.Client
	cluster   *clusterIdentity

	mu       sync.Mutex // guards what follows: leader callbacks come from another goroutine
	cancel   context.CancelFunc
	watchers []*watcher
	stopped  bool // Shutdown ran: a late leader callback must not start watching
	wg       sync.WaitGroup

	openWatches atomic.Int64 // the watches_open gauge: an operator alerts on 0 at the leader
}

func newReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*k8seventsReceiver, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("k8sevents telemetry: %w", err)
	}
	r := &k8seventsReceiver{cfg: cfg, set: set, next: next, telemetry: tb}
	err = tb.RegisterReceiverK8seventsWatchesOpenCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(r.openWatches.Load())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("k8sevents telemetry: %w", err)
	}
	return r, nil
}

func (r *k8seventsReceiver) Start(ctx context.Context, host component.Host) error {
	cs, err := r.cfg.Clientset(0, 0)
	if err != nil {
		return fmt.Errorf("k8sevents: %w", err)
	}
	r.client = cs
	r.cluster = newClusterIdentity(r.cfg.ClusterName, r.client, r.set.Logger)
	if r.cfg.Storage != nil {
		ext, ok := hostExtension[storage.Extension](host, *r.cfg.Storage)
		if !ok {
			return fmt.Errorf("k8sevents: storage %q is not a storage extension in this collector", r.cfg.Storage)
		}
		client, err := ext.GetClient(ctx, component.KindReceiver, r.set.ID, "")
		if err != nil {
			return fmt.Errorf("k8sevents: storage %q: %w", r.cfg.Storage, err)
		}
		r.store = client
	}
	if r.cfg.K8sLeaderElector == nil {
		r.startWatching(context.Background())
		return nil
	}
	elector, ok := hostExtension[leaderElector](host, *r.cfg.K8sLeaderElector)
	if !ok {
		return fmt.Errorf("k8sevents: k8s_leader_elector %q is not a leader elector extension in this collector", r.cfg.K8sLeaderElector)
	}
	elector.SetCallBackFuncs(r.startWatching, r.stopWatching)
	return nil
}

// hostExtension finds the extension id in host as a T.
func hostExtension[T any](host component.Host, id component.ID) (T, bool) {
	ext, found := host.GetExtensions()[id]
	t, ok := ext.(T)
	return t, found && ok
}

// startWatching starts one watch per namespace (one for all when none is
// listed); as leader, ctx ends when leadership does.
func (r *k8seventsReceiver) startWatching(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil || r.stopped {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	namespaces := r.cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	r.watchers = r.watchers[:0]
	for _, ns := range namespaces {
		w := &watcher{
			ns: ns, fieldSelector: r.fieldSelector(), cfg: r.cfg,
			api: newEventAPI(r.client, r.cfg.API), next: r.next,
			logger: r.set.Logger, telemetry: r.telemetry, clock: time.Now, cluster: r.cluster,
			open: &r.openWatches,
		}
		if r.store != nil {
			w.store = r.store
		}
		r.watchers = append(r.watchers, w)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			w.run(ctx)
		}()
	}
	r.set.Logger.Info("Watching events", zap.Strings("namespaces", namespaces), zap.String("api", r.cfg.API))
}

// stopWatching stops every watch and waits until each saved its checkpoint.
func (r *k8seventsReceiver) stopWatching() {
	r.mu.Lock()
	cancel := r.cancel
	r.cancel = nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.wg.Wait()
}

// fieldSelector is the configured one plus the excluded namespaces.
func (r *k8seventsReceiver) fieldSelector() string {
	parts := []string{}
	if r.cfg.FieldSelector != "" {
		parts = append(parts, r.cfg.FieldSelector)
	}
	for _, ns := range r.cfg.ExcludeNamespaces {
		parts = append(parts, "metadata.namespace!="+ns)
	}
	return strings.Join(parts, ",")
}

// Shutdown stops watching for good (the leader elector cannot take its
// callbacks back) and closes the storage client.
func (r *k8seventsReceiver) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.stopWatching()
	r.telemetry.Shutdown()
	r.mu.Lock()
	store := r.store
	r.store = nil // Shutdown may be called again
	r.mu.Unlock()
	if store != nil {
		if err := store.Close(ctx); err != nil {
			return fmt.Errorf("k8sevents: close storage: %w", err)
		}
	}
	return nil
}
