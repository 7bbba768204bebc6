package recorder

import (
	"context"
	"fmt"
	"time"

	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// run is the Recorder's one goroutine: it takes batches off the queue in
// order and exports each until it is sent (retrying with backoff while the
// collector is unreachable), handed to the fallback, or Shutdown's context
// ends. While it retries, the queue fills and further calls are dropped
// and counted: memory stays bounded, the caller never waits.
func (r *Recorder) run() {
	defer close(r.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &worker{r: r, ctx: ctx, batch: make([]entry, 0, r.opts.MaxBatch)}
	for {
		stopping := w.fill()
		if len(w.batch) > 0 {
			w.deliver()
		}
		if stopping && len(r.queue) == 0 {
			return
		}
	}
}

// worker is the state of run.
type worker struct {
	r        *Recorder
	ctx      context.Context // cancelled when Shutdown's context ends
	stopping bool
	batch    []entry
	records  []sdklog.Record
	// downSince is when the first of the current run of failed exports
	// happened; zero while exports succeed.
	downSince time.Time
}

// fill takes the next batch: it waits for a first entry, then up to
// BatchDelay for the batch to fill. It reports whether Shutdown was asked.
func (w *worker) fill() bool {
	w.batch = w.batch[:0]
	r := w.r
	if !w.stopping {
		select {
		case e := <-r.queue:
			w.batch = append(w.batch, e)
		case ctx := <-r.stopReq:
			w.stop(ctx)
		}
	}
	var linger <-chan time.Time
	if !w.stopping {
		t := time.NewTimer(r.opts.BatchDelay)
		defer t.Stop()
		linger = t.C
	}
	for len(w.batch) < r.opts.MaxBatch {
		if w.stopping { // drain without waiting
			select {
			case e := <-r.queue:
				w.batch = append(w.batch, e)
				continue
			default:
				return true
			}
		}
		select {
		case e := <-r.queue:
			w.batch = append(w.batch, e)
		case ctx := <-r.stopReq:
			w.stop(ctx)
		case <-linger:
			return false
		}
	}
	return w.stopping
}

// stop switches to draining: from now on, exports and retries end when
// Shutdown's context does.
func (w *worker) stop(ctx context.Context) {
	w.stopping = true
	inner, cancel := context.WithCancel(w.ctx)
	w.ctx = inner
	// One goroutine for the Recorder's lifetime end, not per call.
	go func() {
		select {
		case <-ctx.Done():
		case <-w.r.done:
		}
		cancel()
	}()
}

// deliver exports the batch, retrying with backoff; it returns when the
// batch is sent, handed to the fallback, or counted as lost.
func (w *worker) deliver() {
	r := w.r
	n := int64(len(w.batch))
	w.records = r.enc.encode(w.records[:0], w.batch)
	backoff := 100 * time.Millisecond
	for {
		err := w.export()
		if err == nil {
			r.sent.Add(n)
			w.downSince = time.Time{}
			return
		}
		r.failures.Add(1)
		if r.opts.ErrorHandler != nil {
			r.opts.ErrorHandler(fmt.Errorf("recorder: export of %d records: %w", n, err))
		}
		if w.downSince.IsZero() {
			w.downSince = time.Now()
		}
		if r.opts.Fallback != nil && time.Since(w.downSince) >= r.opts.FallbackAfter {
			w.fallBack()
			return
		}
		if !w.sleep(backoff) {
			r.lost.Add(n)
			return
		}
		backoff = min(2*backoff, r.opts.MaxBackoff)
	}
}

func (w *worker) export() error {
	ctx, cancel := context.WithTimeout(w.ctx, w.r.opts.ExportTimeout)
	defer cancel()
	if err := w.r.exporter.Export(ctx, w.records); err != nil {
		return err
	}
	return nil
}

// sleep waits d; false when the worker's context ended first.
func (w *worker) sleep(d time.Duration) bool {
	if w.ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// fallBack hands the batch to the fallback recorder (client-go's own,
// writing to the API server), in order.
func (w *worker) fallBack() {
	for i := range w.batch {
		e := &w.batch[i]
		w.r.opts.Fallback.AnnotatedEventf(e.regarding, e.annotations, e.eventType, e.reason, "%s", e.note)
	}
	w.r.fellBack.Add(int64(len(w.batch)))
}
