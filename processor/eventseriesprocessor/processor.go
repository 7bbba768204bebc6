package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/internal/ratelog"
	"github.com/k8sevents/otel-k8sevents/internal/retry"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
)

// problemLogInterval is how often one kind of bad input is logged.
const problemLogInterval = time.Minute

// eventSeriesProcessor is the shell around engine.Engine: it decodes
// records, tells the engine the time, turns its emissions into records,
// hands them to the next consumer in the order decided (deliver.go), runs
// its timers in processing time and reports what it counted.
type eventSeriesProcessor struct {
	cfg       *Config
	id        component.ID
	next      consumer.Logs
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	clock     func() time.Time
	eventTime bool
	maxLead   int64 // event time: how far past the processing clock one record may move the watermark

	// turn is held by whoever decides records (deliver.go): entries are
	// logged and the output placed in the outbox in the order decided.
	// Neither it nor p.mu is held across a call to next, so a blocked next
	// holds up neither input waiting for its turn, saves nor metrics.
	turn chan struct{}

	mu        sync.Mutex // guards everything below
	running   bool       // Start launched the goroutine that delivers
	engine    *engine.Engine
	watermark int64
	pending   outbox        // decided, not yet taken by next
	heldSince int64         // processing time since which pending holds records
	refusal   error         // next's answer to the last attempt, while the batch it refused waits
	attempted chan struct{} // closed (and replaced) after each attempt to hand on what waits
	resends   resendMemory  // batches counted whose answer may not have reached their sender (resend.go)
	reported  reported      // what report last added (report.go)
	marks     []bool        // output.deferFrom's, reused
	sanitizer k8sevent.Sanitizer
	logRate   *ratelog.Limiter[k8sevent.Problem] // bad input, one line a minute per problem
	repeatLog *ratelog.Limiter[string]           // a failure that repeats (refusal, resend, save), one line a minute per kind
	timerAt   int64                              // deadline the goroutine waits for; 0 when none
	dirty     bool                               // the engine or the outbox changed since the last save
	backoff   retry.Backoff                      // of the refused records' delivery

	store     storage.Client // nil without storage
	v8Layout  bool           // the storage holds a state of version 8's keys, which the next save replaces
	saveMu    sync.Mutex     // one save at a time: a save truncates the log by what it covers
	wal       walState
	saveEvery time.Duration

	wake      chan struct{}
	done      chan struct{}
	runCtx    context.Context // of the goroutines' calls to next; cancelled at shutdown
	cancelRun context.CancelFunc
	wg        sync.WaitGroup
}

func newProcessor(set processor.Settings, cfg *Config, next consumer.Logs, clock func() time.Time) (*eventSeriesProcessor, error) {
	eng, err := engine.New(cfg.engineConfig())
	if err != nil {
		return nil, fmt.Errorf("eventseries engine: %w", err)
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("eventseries telemetry: %w", err)
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	p := &eventSeriesProcessor{
		cfg: cfg, id: set.ID, next: next, logger: set.Logger, telemetry: tb, clock: clock,
		eventTime: cfg.TimeSource == timeEvent,
		maxLead:   int64(cfg.EventTimeMaxLead),
		turn:      make(chan struct{}, 1),
		attempted: make(chan struct{}),
		saveEvery: saveInterval,
		backoff:   retry.Backoff{Policy: deliveryRetry},
		engine:    eng,
		wal:       walState{enabled: cfg.WriteAheadLog.Enabled, maxBytes: cfg.WriteAheadLog.MaxBytes},
		logRate:   ratelog.New[k8sevent.Problem](problemLogInterval),
		repeatLog: ratelog.New[string](problemLogInterval),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		runCtx:    runCtx,
		cancelRun: cancelRun,
	}
	// Read when the metrics are: a batch being handed over counts until the
	// next consumer took it.
	err = tb.RegisterProcessorEventseriesPendingRecordsCallback(func(_ context.Context, o metric.Int64Observer) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		o.Observe(int64(p.pending.records))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("eventseries telemetry: %w", err)
	}
	return p, nil
}

func (p *eventSeriesProcessor) Capabilities() consumer.Capabilities {
	// Input records are moved into the output (see output); a pipeline that
	// shares its input with other consumers clones it for this processor.
	return consumer.Capabilities{MutatesData: true}
}

func (p *eventSeriesProcessor) Start(ctx context.Context, host component.Host) error {
	if err := p.restore(ctx, host); err != nil {
		return err
	}
	p.wg.Add(1)
	go p.run()
	p.mu.Lock()
	p.running = true
	p.mu.Unlock()
	if p.store != nil {
		p.wg.Add(1)
		go p.runSaves()
	}
	return nil
}

// Shutdown stops the goroutines, letting a delivery in flight finish
// (until ctx ends), emits the state of every open series, hands what waits
// to the next consumer and saves the state. The flush keeps the caches, so
// a restored series goes on under its name and its next record updates
// the object the flush wrote. With storage the state, what waits included,
// is saved before the last delivery too: a collector killed while the next
// consumer blocks loses nothing.
func (p *eventSeriesProcessor) Shutdown(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	default:
		close(p.done)
	}
	p.stopRun(ctx)
	defer p.telemetry.Shutdown()
	var errs []error
	if err := p.takeTurn(ctx); err != nil {
		errs = append(errs, fmt.Errorf("eventseries: no shutdown flush, a batch is still being counted: %w", err))
	} else {
		p.mu.Lock()
		p.holdTimers(ctx, p.engine.Flush(p.now(0)))
		p.mu.Unlock()
		if p.store != nil {
			errs = append(errs, p.save(ctx))
		}
		errs = append(errs, p.undelivered(p.deliver(ctx)))
		p.endTurn()
	}
	if p.store != nil {
		errs = append(errs, p.save(ctx), p.store.Close(ctx))
	}
	return errors.Join(errs...)
}

// undelivered says what becomes of the records the next consumer refused
// at shutdown: kept in storage, sent after the restart; or lost.
func (p *eventSeriesProcessor) undelivered(err error) error {
	if err == nil {
		return nil
	}
	p.mu.Lock()
	n := p.pending.records
	p.mu.Unlock()
	if p.store != nil {
		p.logger.Warn("Records the next consumer refused at shutdown are kept in storage and sent after the restart",
			zap.Int("records", n), zap.Error(err))
		return nil
	}
	return fmt.Errorf("eventseries: %d records lost at shutdown (no storage), the next consumer refused them: %w", n, err)
}

// ConsumeLogs counts the batch once the records decided before it are
// taken by the next consumer (admit): until then the caller waits, on its
// own context, and when that ends, or what waits is refused again, the
// batch is refused, retryable and not counted, so the sender's retry
// counts it exactly once. With the write-ahead log, the batch is then
// written to it, and refused the same way if that fails; a sender's resend
// of a batch whose answer may have been lost is recognised there and
// answered without counting it again (resend.go). Once counted, the batch's
// records are this processor's: the goroutine hands them on (deliver.go),
// and the caller is answered nil at once, before a blocked next consumer
// could outlast the sender's deadline and make it send the batch again.
func (p *eventSeriesProcessor) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if err := p.admit(ctx); err != nil {
		return err
	}
	defer p.endTurn()
	wall := p.clock().UnixNano() // in processing time, what the batch is counted at, and replayed at
	entry, err := p.walEntryOf(ld, wall)
	if err != nil {
		return fmt.Errorf("eventseries: batch not counted: %w", err)
	}
	if p.isResend(entry, wall) {
		return nil
	}
	if err := p.logBatch(ctx, entry); err != nil {
		return fmt.Errorf("eventseries: batch not counted: %w", err)
	}
	p.mu.Lock()
	p.logged(len(entry))
	out := p.observe(ctx, ld, wall)
	decided := out.len() > 0
	p.hold(&out, callerOf(ctx))
	p.armTimer()
	p.mu.Unlock()
	if decided {
		p.wakeUp() // the goroutine hands the records on
	}
	if ctx.Err() != nil || fromNetwork(ctx) {
		// The sender gave up while the batch was counted, or it is an OTLP
		// client that may send it again whatever this answer: another part
		// of its request failed (tier 1 splits a request over tier-2
		// collectors), or the answer is lost on the way back.
		p.remember(entry, wall)
	}
	return nil
}

// observe decides the batch's records at the processing clock wall; the
// caller holds p.mu and the turn.
func (p *eventSeriesProcessor) observe(ctx context.Context, ld plog.Logs, wall int64) output {
	out := newOutput()
	var counts problemCounts
	batchNow := wall
	if p.eventTime {
		batchNow = p.now(0)
	}
	limit := wall + p.maxLead // event time: the watermark goes no further
	opts := k8sevent.DecodeOptions{SkipTimes: true}
	rls := ld.ResourceLogs()
	out.deferFrom(rls, p.wholeMarks(rls.Len()))
	var base, ev k8sevent.Event
	for i := range rls.Len() {
		rl := rls.At(i)
		sls := rl.ScopeLogs()
		// One record under its resource, as receivers send Events: the
		// resource is decoded straight into the record's Event, not copied.
		only := sls.Len() == 1 && sls.At(0).LogRecords().Len() == 1
		res := &base
		if only {
			res = &ev
		}
		*res = k8sevent.Event{}
		resProblems, resFound := k8sevent.DecodeAttributes(rl.Resource().Attributes(), res, opts)
		for j := range sls.Len() {
			sl := sls.At(j)
			src := source{rl: i, sl: j, dupKeys: resProblems&k8sevent.ProblemDuplicateKey != 0}
			lrs := sl.LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				if !only {
					ev = base
				}
				problems, found := k8sevent.DecodeRecord(lr, &ev, opts)
				if !found && !resFound {
					counts.nonEvent++
					if p.cfg.NonEventRecords == recordsPass {
						out.pass(src, rl, sl, lr)
					}
					continue
				}
				if ev.Time.IsZero() { // rare: recover the occurrence time from the attributes
					problems, _ = k8sevent.DecodeRecord(lr, &ev, k8sevent.DecodeOptions{})
				}
				if p.cfg.InputCounts == countsIgnore {
					ev.Count, ev.SeriesCount = 0, 0 // one occurrence, whatever it claims
				}
				now := batchNow
				if p.eventTime {
					now = p.eventNow(ev.Time.UnixNano(), limit, &counts)
				}
				repaired, fatal := p.sanitizer.Sanitize(&ev, time.Unix(0, now))
				problems |= resProblems | repaired
				if fatal != 0 {
					// An Event record that cannot be made valid is dropped
					// whatever non_event_records says: it would not write.
					counts.add(problems|fatal, "dropped")
					p.logProblem(problems|fatal, &ev)
					continue
				}
				if problems != 0 {
					counts.add(problems, "repaired")
					p.logProblem(problems, &ev)
				}
				ems := p.engine.Observe(&ev, now)
				for e := range ems { // in place: an Emission is some 500 bytes
					if ems[e].FromInput {
						out.emitInput(src, rl, sl, lr, &ems[e], &ev, problems) // decode and Sanitize findings
					} else {
						out.emitTimer(&ems[e])
					}
				}
			}
		}
	}
	out.finish()
	p.report(ctx, &counts)
	p.dirty = true
	return out
}

// wholeMarks is n marks, all false, for output.deferFrom; the caller holds p.mu.
func (p *eventSeriesProcessor) wholeMarks(n int) []bool {
	if cap(p.marks) < n {
		p.marks = make([]bool, n)
	}
	p.marks = p.marks[:n]
	clear(p.marks)
	return p.marks
}

// now is the engine time: wall clock in processing time, else the watermark.
func (p *eventSeriesProcessor) now(t int64) int64 {
	if !p.eventTime {
		return p.clock().UnixNano()
	}
	p.watermark = max(p.watermark, t)
	return p.watermark
}

// eventNow moves the watermark on to the occurrence time t, but not past
// limit (the processing clock plus event_time_max_lead): one record stamped
// years ahead would otherwise end every open series at once and stop the
// timers of every later one. The record keeps its time; only the clock is
// held back, and the record is counted.
func (p *eventSeriesProcessor) eventNow(t, limit int64, c *problemCounts) int64 {
	if t > limit {
		t = limit
		c.clamped++
	}
	return p.now(t)
}

// holdTimers puts in line the records the engine decided with no input
// (deadlines, a stall's end, the shutdown flush) and reports them with the
// open entries at once: the next report may be hours away. The caller
// holds p.mu.
func (p *eventSeriesProcessor) holdTimers(ctx context.Context, ems []engine.Emission) {
	out := newOutput()
	for i := range ems {
		out.emitTimer(&ems[i])
	}
	p.hold(&out, caller{})
	p.dirty = true // the engine moved on: what it emitted is marked, deadlines moved
	p.report(ctx, &problemCounts{})
}

// armTimer wakes the goroutine when the next deadline moved earlier than
// the one it waits for.
func (p *eventSeriesProcessor) armTimer() {
	if p.eventTime {
		return
	}
	if d, ok := p.engine.NextDeadline(); ok && (p.timerAt == 0 || d < p.timerAt) {
		p.wakeUp()
	}
}
