package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
	sink bool // a log sink beside the configuration's exporters

	conf *confmap.Conf
	// inc is set and read by the world's goroutine; requests (export) read
	// it from theirs, under mu, which every change of it holds.
	mu           sync.Mutex
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
		p.setInc(inc)
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
	p.setInc(nil)
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
	p.setInc(nil)
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

// setInc makes inc the running incarnation (nil: the process is down).
func (p *process) setInc(inc *incarnation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inc = inc
}

// export is a request arriving at the process from an app or another
// process: refused when the process is down; the answer is an effect of
// the incarnation, lost when it crashes before it is sent.
func (p *process) export(ctx context.Context, headers map[string][]string, ld plog.Logs) (plogotlp.ExportResponse, error) {
	p.mu.Lock()
	inc := p.inc
	p.mu.Unlock()
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
