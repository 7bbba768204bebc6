package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/config/configretry"

	"github.com/k8sevents/otel-k8sevents/internal/retry"
)

// errStopping ends a record's wait when the exporter shuts down while its
// write is failing: the push's caller keeps it (a persistent queue, or,
// without a queue, the processor's saved outbox).
var errStopping = errors.New("exporter shutting down while the write fails")

// batch is one push waiting for its records.
type batch struct {
	left int           // records not resolved yet
	errs []error       // per record: nil (written or dropped for good) or why it was not written
	done chan struct{} // closed when left reaches 0
}

func (b *batch) resolve(idx int, err error) {
	b.errs[idx] = err
	if b.left--; b.left == 0 {
		close(b.done)
	}
}

// dispatcher is the shell around lanes: one goroutine writes the records
// the lanes pick, one at a time under the client's QPS cap, and retries a
// failed one in place with retry_on_failure's backoff.
type dispatcher struct {
	write   func(ctx context.Context, p *pending) error // nil, or a retryable error
	retry   configretry.BackOffConfig
	timeout time.Duration // of one write; 0: none

	// handBack: at stop, the records not in flight are handed back too,
	// not only the failing ones, and a later push at once: a persistent
	// queue (with retries on, which make a shutdown's error keep the
	// request) writes them at the next start, so shutdown does not wait
	// for a backlog written at the QPS cap. An in-memory queue would lose
	// them: the exporter writes them before it stops. (Without a queue no
	// push is left by then: the components before it stopped first.)
	handBack bool

	mu       sync.Mutex
	lanes    *lanes
	stopping bool
	closed   bool // the writer is gone: a late push is handed back at once

	wake     chan struct{} // work was added (buffered 1)
	quit     chan struct{}
	finished chan struct{}
}

func newDispatcher(write func(context.Context, *pending) error, retry configretry.BackOffConfig, timeout time.Duration) *dispatcher {
	return &dispatcher{write: write, retry: retry, timeout: timeout, lanes: newLanes(),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), finished: make(chan struct{})}
}

// run adds a push's records to the lanes and waits until each is written,
// dropped for good, or failed (the exporter stops, retries ran out, ctx
// ended); the answer holds, per record, why it was not written.
func (d *dispatcher) run(ctx context.Context, ps []*pending) []error {
	if len(ps) == 0 {
		return nil
	}
	b := &batch{left: len(ps), errs: make([]error, len(ps)), done: make(chan struct{})}
	for i, p := range ps {
		p.b, p.idx = b, i
	}
	d.mu.Lock()
	if d.closed || d.stopping && d.handBack {
		for i := range ps {
			b.resolve(i, errStopping)
		}
	} else {
		d.lanes.add(ps...)
	}
	d.mu.Unlock()
	d.signal()
	select {
	case <-b.done:
		return b.errs
	case <-ctx.Done():
	}
	d.mu.Lock()
	for _, p := range d.lanes.withdraw(b) {
		b.resolve(p.idx, ctx.Err())
	}
	d.mu.Unlock()
	<-b.done // the record in flight, if any
	return b.errs
}

func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// loop writes until quit.
func (d *dispatcher) loop() {
	defer close(d.finished)
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-d.quit
		cancel()
	}()
	for {
		d.mu.Lock()
		p, wake := d.lanes.take(time.Now())
		d.mu.Unlock()
		if p == nil {
			if !d.sleep(wake) {
				return
			}
			continue
		}
		ctx, done := base, func() {}
		if d.timeout > 0 {
			ctx, done = context.WithTimeout(base, d.timeout)
		}
		err := d.write(ctx, p)
		done()
		d.resolve(p, err)
	}
}

// sleep waits for work, for wake (non-zero), or quit (false).
func (d *dispatcher) sleep(wake time.Time) bool {
	var timer <-chan time.Time
	if !wake.IsZero() {
		t := time.NewTimer(time.Until(wake))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-d.wake:
	case <-timer:
	case <-d.quit:
		return false
	}
	return true
}

// resolve settles a write: written (or dropped for good), retried later
// in place, or handed back (stopping, or retries off).
func (d *dispatcher) resolve(p *pending, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case err == nil:
		d.lanes.done(p)
	case d.stopping || !d.retry.Enabled:
		d.lanes.done(p)
		if d.stopping {
			err = fmt.Errorf("%w: %w", errStopping, err)
		}
	default:
		delay := func(attempt int) time.Duration { return retry.FromConfig(d.retry).Delay(attempt, err) }
		d.lanes.failed(p, err, time.Now(), delay)
		return // stays at the head of its lane
	}
	p.b.resolve(p.idx, err)
}

// stop ends the retries that wait: from now on a failed write is handed
// back at once (exporterhelper drains its queue with one attempt each and
// keeps a failed request in a persistent queue). With handBack, every
// record not in flight is handed back too.
func (d *dispatcher) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopping = true
	ps, errs := d.lanes.waiting()
	for i, p := range ps {
		p.b.resolve(p.idx, fmt.Errorf("%w: %w", errStopping, errs[i]))
	}
	if d.handBack {
		for _, p := range d.lanes.idle() {
			p.b.resolve(p.idx, fmt.Errorf("%w: not written yet, left to the persistent queue", errStopping))
		}
	}
}

// close stops the writer; records still in the lanes (a push without a
// queue that was not done) are handed back.
func (d *dispatcher) close() {
	close(d.quit)
	<-d.finished
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for _, p := range d.lanes.drain() {
		p.b.resolve(p.idx, errStopping)
	}
}
