package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/k8sevents/otel-k8sevents/internal/retry"
)

// Delivery. The engine marks a record emitted when it decides it, so a
// record the next consumer refuses must still go out: with no later record
// of its event, its count would be lost. Decided records wait in the outbox
// until the next consumer takes them, oldest first. One goroutine hands
// them on (run), on the processor's own context: never a caller's, whose
// deadline would turn a blocking consumer (a full exporter queue) into a
// refusal after the batch was counted, and a fanout's other consumers into
// a second copy at the retry. Only the caller's client.Info and span
// context go along: a batch decided in a caller's call is handed on in the
// processor's context plus those two, one delivery per batch, so batches of
// different callers never merge. What processing-time timers and the
// shutdown flush decide, and batches restored from storage, have no caller.
// New input is counted only once the outbox is empty (admit): the caller
// waits for that on its own context and, if the context ends or the oldest
// batch is refused, is refused before counting, so its retry is exact; once
// counted, the batch is the processor's and the caller is answered at once.
// The deadlines wait while records do. So the outbox holds at most what one
// batch and one round of timers decided, plus the shutdown flush. The state
// saves include it.

// deliveryRetry is the goroutine's wait before it sends refused records
// again.
var deliveryRetry = retry.Policy{Initial: 200 * time.Millisecond, Multiplier: 2, Max: 5 * time.Second}

// takeTurn waits for the right to decide records: one holder at a time
// numbers the log entries and places what it decides in the outbox in the
// order decided. It is never held across a call to the next consumer.
func (p *eventSeriesProcessor) takeTurn(ctx context.Context) error {
	select {
	case p.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *eventSeriesProcessor) endTurn() { <-p.turn }

// admit waits, on the caller's context, until the outbox is empty, and
// returns holding the turn. It refuses (nothing counted) when ctx ends
// first, at shutdown, or when the oldest waiting batch is refused again by
// the delivery attempt this caller asked for: one attempt per call, as a
// sender's retry hands on what waits before its own batch goes in.
func (p *eventSeriesProcessor) admit(ctx context.Context) error {
	retried := false
	for {
		if err := p.takeTurn(ctx); err != nil {
			return fmt.Errorf("eventseries: batch not counted, earlier records are still being decided: %w", err)
		}
		p.mu.Lock()
		running, waiting, refusal, attempt := p.running, p.pending.records, p.refusal, p.attempted
		p.mu.Unlock()
		var err error
		switch {
		case !running:
			err = errors.New("eventseries: batch not counted, the processor was not started")
		case p.stopping():
			err = errors.New("eventseries: batch not counted, the processor is shutting down")
		case waiting == 0 && ctx.Err() == nil:
			return nil
		case waiting == 0:
			err = fmt.Errorf("eventseries: batch not counted: %w", ctx.Err())
		case refusal != nil && retried:
			// %v: the refusal may hold a consumer's permanent verdict on the
			// earlier records, which the sender must not take for its batch's.
			err = fmt.Errorf("eventseries: batch not counted, %d earlier records wait for the next consumer: %v", waiting, refusal)
		}
		p.endTurn()
		if err != nil {
			return err
		}
		if refusal != nil {
			p.wakeUp() // the goroutine sends what waits again now, not at its backoff
			retried = true
		}
		select {
		case <-attempt:
		case <-p.done:
		case <-ctx.Done():
			return fmt.Errorf("eventseries: batch not counted, %d earlier records wait for the next consumer: %w", waiting, ctx.Err())
		}
	}
}

// stopping reports whether Shutdown began.
func (p *eventSeriesProcessor) stopping() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// hold queues what was decided behind what waits, as one batch of from's
// (the zero caller: a timer's); the caller holds p.mu (the decision and its
// place in the outbox are saved together) and the turn.
func (p *eventSeriesProcessor) hold(out *output, from caller) {
	if out.len() == 0 {
		return
	}
	if p.pending.records == 0 {
		p.heldSince = p.clock().UnixNano()
	}
	if err := p.pending.push(out.logs, from, p.store != nil); err != nil {
		// Never seen: pdata we built marshals. The records still go out; only
		// a crash before they do would lose them.
		p.logger.Error("Records not kept in the saved state", zap.Error(err))
	}
	p.dirty = true
}

// deliver hands the waiting records to the next consumer, oldest first,
// until none is left or it refuses one (that error is returned; the
// records stay first in line). A permanent refusal drops the batch: it
// would be refused forever and hold up everything behind it; a fanout's
// only when every consumer's is. Only the
// goroutine (run) delivers, and Shutdown once it stopped: the batches
// leave in the order decided. Each batch goes in ctx plus what its caller
// carries (caller.context). Each attempt wakes the callers waiting in
// admit.
func (p *eventSeriesProcessor) deliver(ctx context.Context) error {
	for {
		p.mu.Lock()
		b, ok := p.pending.head()
		p.mu.Unlock()
		if !ok {
			return nil
		}
		n := b.logs.LogRecordCount()
		err := p.next.ConsumeLogs(b.from.context(ctx), b.logs)
		permanent := err != nil && refusedForGood(err)
		p.mu.Lock()
		p.refusal = nil
		if err == nil || permanent {
			p.pending.pop(n)
			p.dirty = true
			p.backoff.Reset()
			p.resumeInput()
		} else {
			p.refusal = err
		}
		close(p.attempted)
		p.attempted = make(chan struct{})
		waiting := p.pending.records
		p.mu.Unlock()
		switch {
		case permanent:
			p.refused(n, "dropped")
			p.logger.Error("Next consumer refused records for good; dropped", zap.Int("records", n), zap.Error(err))
		case err != nil:
			p.refused(n, "retried")
			if p.repeatLog.Allow("retried", p.clock()) {
				p.logger.Warn("Next consumer refused records; they are kept and sent before anything newer (logged once a minute)",
					zap.Int("records", n), zap.Int("waiting", waiting), zap.Error(err))
			}
			return err
		}
	}
}

// minStall is the shortest hold-up of the outbox that postpones the ends
// of series: shorter ones happen with every batch handed on, and are far
// below any finish_after a pass over every open series would matter for.
const minStall = time.Second

// resumeInput notes that the outbox is empty again, so input is admitted:
// in processing time, the series' ends move on by a stall of at least
// minStall, the time their occurrences could not come in, before any
// input or timer can see the time. What falls due all the same goes in
// line. The caller holds p.mu.
func (p *eventSeriesProcessor) resumeInput() {
	if p.pending.records > 0 || p.heldSince == 0 {
		return
	}
	from, now := p.heldSince, p.clock().UnixNano()
	p.heldSince = 0
	if p.eventTime || now-from < int64(minStall) {
		return
	}
	p.holdTimers(context.Background(), p.engine.Postpone(from, now))
}

// refusedForGood reports whether err refuses a batch for good: a
// permanent error and, when it joins the answers of several consumers (a
// fanout behind the processor), every one of them permanent. One
// consumer's verdict on the data must not drop the batch for another that
// asked for a retry.
func refusedForGood(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		for _, e := range errs {
			if !refusedForGood(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return consumererror.IsPermanent(err)
}

func (p *eventSeriesProcessor) refused(n int, outcome string) {
	p.telemetry.ProcessorEventseriesRefusedRecords.Add(context.Background(), int64(n),
		metric.WithAttributes(attribute.String("outcome", outcome)))
}

// run is the processor's goroutine: it hands on what was decided as soon
// as it is woken, sends again what the next consumer refused, with
// backoff, and in processing time fires the engine's deadlines.
func (p *eventSeriesProcessor) run() {
	defer p.wg.Done()
	timer := time.NewTimer(p.nextWait(false))
	defer timer.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
		case <-timer.C:
		}
		failed := !p.tick()
		timer.Reset(p.nextWait(failed))
	}
}

// tick delivers what waits, then fires the deadlines due (processing
// time) and delivers their records. It reports false when the next
// consumer refused.
func (p *eventSeriesProcessor) tick() bool {
	if p.deliver(p.runCtx) != nil {
		return false
	}
	if !p.due() {
		return true
	}
	if p.takeTurn(p.runCtx) != nil {
		return true // shutting down
	}
	p.mu.Lock()
	p.timerAt = 0
	p.holdTimers(context.Background(), p.engine.Advance(p.now(0)))
	p.mu.Unlock()
	p.endTurn()
	return p.deliver(p.runCtx) == nil
}

// due reports whether a deadline has come, in processing time (in event
// time the records' timestamps fire them, in observe).
func (p *eventSeriesProcessor) due() bool {
	if p.eventTime {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.engine.NextDeadline()
	return ok && d <= p.now(0)
}

// nextWait is how long the goroutine sleeps: the retry backoff while
// records wait, else until the next deadline.
func (p *eventSeriesProcessor) nextWait(failed bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending.records > 0 {
		p.timerAt = 0
		if failed {
			return p.backoff.Failed(p.refusal)
		}
		return p.backoff.Initial // records decided since the last attempt
	}
	if d, ok := p.engine.NextDeadline(); ok && !p.eventTime {
		p.timerAt = d
		return max(time.Duration(d-p.now(0)), 0)
	}
	p.timerAt = 0
	return time.Hour
}

// wakeUp makes the goroutine deliver what waits and compute its wait again.
func (p *eventSeriesProcessor) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// stopRun stops the goroutines at shutdown. A delivery in flight (a
// blocking next consumer) is waited for until ctx ends, not cut short: cut,
// a fanout behind the processor would have handed the batch to some of its
// consumers already, and they would get it again when it is sent again.
func (p *eventSeriesProcessor) stopRun(ctx context.Context) {
	stopped := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		p.cancelRun()
		<-stopped
	}
	p.cancelRun()
}
