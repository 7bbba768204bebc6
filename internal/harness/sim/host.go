package sim

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// host is a collector's host as components see it: its extensions.
type host struct {
	extensions map[component.ID]component.Component
}

func (h *host) GetExtensions() map[component.ID]component.Component { return h.extensions }

// electorExtension is the contrib k8s_leader_elector extension as the
// receiver uses it (SetCallBackFuncs), built on the same client-go leader
// election with the same defaults and the same loop, over the process's
// client: the contrib one builds its client from its own auth settings,
// which cannot reach the API server model.
type electorExtension struct {
	client   kubernetes.Interface
	identity string

	mu       sync.Mutex
	onStart  []func(context.Context)
	onStop   []func()
	leading  context.Context // non-nil while leading
	cancel   context.CancelFunc
	finished sync.WaitGroup
}

const (
	leaseName      = "otel-k8sevents"
	leaseNamespace = "otel-k8sevents"
)

func (e *electorExtension) SetCallBackFuncs(onStart func(context.Context), onStop func()) {
	e.mu.Lock()
	e.onStart, e.onStop = append(e.onStart, onStart), append(e.onStop, onStop)
	leading := e.leading
	e.mu.Unlock()
	if leading != nil {
		onStart(leading)
	}
}

func (e *electorExtension) Start(context.Context, component.Host) error {
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, leaseNamespace, leaseName,
		e.client.CoreV1(), e.client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: e.identity})
	if err != nil {
		return err
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: e.started, OnStoppedLeading: e.stopped},
	})
	if err != nil {
		return err
	}
	var ctx context.Context
	ctx, e.cancel = context.WithCancel(context.Background())
	e.finished.Go(func() {
		for ctx.Err() == nil {
			le.Run(ctx)
		}
	})
	return nil
}

func (e *electorExtension) started(ctx context.Context) {
	e.mu.Lock()
	e.leading = ctx
	callbacks := append([]func(context.Context){}, e.onStart...)
	e.mu.Unlock()
	for _, f := range callbacks {
		f(ctx)
	}
}

func (e *electorExtension) stopped() {
	e.mu.Lock()
	e.leading = nil
	callbacks := append([]func(){}, e.onStop...)
	e.mu.Unlock()
	for _, f := range callbacks {
		f()
	}
}

func (e *electorExtension) Shutdown(context.Context) error {
	if e.cancel != nil {
		e.cancel()
	}
	e.finished.Wait()
	return nil
}
