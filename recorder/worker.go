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
	w := &worker{r: r, batch: make([]entry, 0, r.opts.MaxBatch)}
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
	r       *Recorder
	batch   []entry
	records []sdklog.Record
	// downSince is when the first of the current run of failed exports
	// happened; zero while exports succeed.
	downSince time.Time
}

// fill takes the next batch: it waits for a first entry, then up to
// BatchDelay for the batch to fill; once Shutdown was called it takes what
// is queued without waiting. It reports whether Shutdown was called.
func (w *worker) fill() bool {
	r := w.r
	w.batch = w.batch[:0]
	select {
	case e := <-r.queue:
		w.batch = append(w.batch, e)
	case <-r.stopping:
	}
	linger := time.NewTimer(r.opts.BatchDelay)
	defer linger.Stop()
	stopping := r.stopping
	for len(w.batch) < r.opts.MaxBatch {
		select {
		case e := <-r.queue:
			w.batch = append(w.batch, e)
			continue
		default:
		}
		if stopping == nil { // Shutdown: nothing more to wait for
			return true
		}
		select {
		case e := <-r.queue:
			w.batch = append(w.batch, e)
		case <-stopping:
			stopping = nil
		case <-linger.C:
			return isClosed(r.stopping)
		}
	}
	return isClosed(r.stopping)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
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
	ctx, cancel := context.WithTimeout(w.r.ctx, w.r.opts.ExportTimeout)
	defer cancel()
	if err := w.r.exporter.Export(ctx, w.records); err != nil {
		return err
	}
	return nil
}

// sleep waits d; false when Shutdown's context ended first.
func (w *worker) sleep(d time.Duration) bool {
	if w.r.ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.r.ctx.Done():
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
