package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/internal/ratelog"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
)

// problemLogInterval is how often one kind of bad input is logged.
const problemLogInterval = time.Minute

// eventSeriesProcessor is the shell around engine.Engine: it decodes
// records, tells the engine the time, turns its emissions into records,
// runs its timers in processing time and reports what it counted.
type eventSeriesProcessor struct {
	cfg       *Config
	id        component.ID
	next      consumer.Logs
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	clock     func() time.Time
	eventTime bool

	mu        sync.Mutex // guards everything below, and orders what goes to next
	engine    *engine.Engine
	watermark int64
	reported  engine.Stats
	logRate   *ratelog.Limiter[k8sevent.Problem]
	timerAt   int64 // deadline the timer goroutine waits for; 0 when none
	dirty     bool  // the engine changed since the last save

	store     storage.Client // nil without storage
	saveEvery time.Duration

	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
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
	return &eventSeriesProcessor{
		cfg: cfg, id: set.ID, next: next, logger: set.Logger, telemetry: tb, clock: clock,
		eventTime: cfg.TimeSource == timeEvent,
		saveEvery: saveInterval,
		engine:    eng,
		logRate:   ratelog.New[k8sevent.Problem](problemLogInterval),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}, nil
}

func (p *eventSeriesProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (p *eventSeriesProcessor) Start(ctx context.Context, host component.Host) error {
	if err := p.restore(ctx, host); err != nil {
		return err
	}
	if !p.eventTime {
		p.wg.Add(1)
		go p.runTimers()
	}
	if p.store != nil {
		p.wg.Add(1)
		go p.runSaves()
	}
	return nil
}

// Shutdown stops the timers, emits the state of every open series and
// saves the state. The flush keeps the caches, so a restored series goes on
// under its name and its next record updates the object the flush wrote.
func (p *eventSeriesProcessor) Shutdown(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	default:
		close(p.done)
	}
	p.wg.Wait()
	defer p.telemetry.Shutdown()
	p.mu.Lock()
	err := p.forward(ctx, p.engine.Flush(p.now(0)))
	p.dirty = true // the flush marks what it emitted
	p.mu.Unlock()
	if p.store == nil {
		return err
	}
	return errors.Join(err, p.save(ctx), p.store.Close(ctx))
}

func (p *eventSeriesProcessor) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := output{legacy: p.cfg.Mode == modeLegacy}
	var counts problemCounts
	batchNow := p.now(0)
	opts := k8sevent.DecodeOptions{SkipTimes: true}
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		var base k8sevent.Event
		resProblems, resFound := k8sevent.DecodeAttributes(rl.Resource().Attributes(), &base, opts)
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			sl := sls.At(j)
			src := source{rl: i, sl: j}
			lrs := sl.LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				ev := base
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
				now := batchNow
				if p.eventTime {
					now = p.now(ev.Time.UnixNano())
				}
				repaired, fatal := k8sevent.Sanitize(&ev, time.Unix(0, now))
				problems |= resProblems | repaired
				if fatal != 0 {
					counts.add(problems|fatal, p.outcome())
					p.logProblem(problems|fatal, &ev)
					if p.cfg.NonEventRecords == recordsPass {
						out.pass(src, rl, sl, lr)
					}
					continue
				}
				if problems != 0 {
					counts.add(problems, "repaired")
					p.logProblem(problems, &ev)
				}
				for _, em := range p.engine.Observe(&ev, now) {
					if em.FromInput {
						out.emitInput(src, rl, sl, lr, &em, &ev, repaired)
					} else {
						out.emitTimer(&em)
					}
				}
			}
		}
	}
	p.report(ctx, &counts)
	p.dirty = true
	p.armTimer()
	if out.len() == 0 {
		return nil
	}
	if err := p.next.ConsumeLogs(ctx, out.logs); err != nil {
		// The occurrences are counted: a sender that retried the batch would
		// have them counted twice. The next record of each series carries its
		// cumulative count, so what was refused here is caught up then.
		return consumererror.NewPermanent(fmt.Errorf("eventseries: %d records refused downstream after their occurrences were counted: %w", out.len(), err))
	}
	return nil
}

// now is the engine time: wall clock in processing time; in event time the
// watermark, moved on by t (an occurrence time) when later.
func (p *eventSeriesProcessor) now(t int64) int64 {
	if !p.eventTime {
		return p.clock().UnixNano()
	}
	p.watermark = max(p.watermark, t)
	return p.watermark
}

// forward sends timer records on; the caller holds p.mu.
func (p *eventSeriesProcessor) forward(ctx context.Context, ems []engine.Emission) error {
	out := output{legacy: p.cfg.Mode == modeLegacy}
	for i := range ems {
		out.emitTimer(&ems[i])
	}
	p.report(ctx, &problemCounts{})
	if out.len() == 0 {
		return nil
	}
	if err := p.next.ConsumeLogs(ctx, out.logs); err != nil {
		return fmt.Errorf("eventseries: send %d timer records: %w", out.len(), err)
	}
	return nil
}

// runTimers fires the engine's deadlines in processing time.
func (p *eventSeriesProcessor) runTimers() {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
		case <-timer.C:
			p.mu.Lock()
			p.timerAt, p.dirty = 0, true
			if err := p.forward(context.Background(), p.engine.Advance(p.now(0))); err != nil {
				p.logger.Warn("Dropped timer records", zap.Error(err))
			}
			p.mu.Unlock()
		}
		p.mu.Lock()
		wait := time.Hour
		if d, ok := p.engine.NextDeadline(); ok {
			p.timerAt = d
			wait = max(time.Duration(d-p.now(0)), 0)
		}
		p.mu.Unlock()
		timer.Reset(wait)
	}
}

// armTimer wakes the timer goroutine when the next deadline moved earlier
// than the one it waits for.
func (p *eventSeriesProcessor) armTimer() {
	if p.eventTime {
		return
	}
	if d, ok := p.engine.NextDeadline(); ok && (p.timerAt == 0 || d < p.timerAt) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// problemCounts gathers a batch's bad input for one metric update.
type problemCounts struct {
	nonEvent int64
	invalid  map[[2]string]int64 // problem, outcome
}

func (c *problemCounts) add(problems k8sevent.Problem, outcome string) {
	if c.invalid == nil {
		c.invalid = map[[2]string]int64{}
	}
	problems.Each(func(name string) { c.invalid[[2]string{name, outcome}]++ })
}

// outcome names what happens to records without a valid Event.
func (p *eventSeriesProcessor) outcome() string {
	if p.cfg.NonEventRecords == recordsDrop {
		return "dropped"
	}
	return "passed"
}

func (p *eventSeriesProcessor) logProblem(problems k8sevent.Problem, ev *k8sevent.Event) {
	if !p.logRate.Allow(problems, p.clock()) {
		return
	}
	p.logger.Warn("Bad event record (logged once a minute per kind of problem)",
		zap.Stringer("problems", problems), zap.String("reason", ev.Reason),
		zap.String("regarding", ev.Regarding.Kind+"/"+ev.Regarding.Namespace+"/"+ev.Regarding.Name))
}

// report adds to the metrics what the engine counted since the last report.
func (p *eventSeriesProcessor) report(ctx context.Context, c *problemCounts) {
	s, last, tb := p.engine.Stats, &p.reported, p.telemetry
	add := func(counter metric.Int64Counter, now, before int64, attrs ...attribute.KeyValue) {
		if now != before {
			counter.Add(ctx, now-before, metric.WithAttributes(attrs...))
		}
	}
	add(tb.ProcessorEventseriesOccurrences, s.Occurrences, last.Occurrences)
	for kind, name := range engine.KindNames {
		if name == "" {
			name = "legacy"
		}
		add(tb.ProcessorEventseriesRecordsOut, s.Out[kind], last.Out[kind], attribute.String("state", name))
	}
	add(tb.ProcessorEventseriesCompressed, s.Compressed, last.Compressed)
	add(tb.ProcessorEventseriesSpamDropped, s.SpamDropped, last.SpamDropped)
	add(tb.ProcessorEventseriesSeriesStarted, s.SeriesStarted, last.SeriesStarted)
	add(tb.ProcessorEventseriesSeriesFinished, s.SeriesFinished, last.SeriesFinished)
	add(tb.ProcessorEventseriesHeartbeats, s.Heartbeats, last.Heartbeats)
	add(tb.ProcessorEventseriesEvictions, s.Evictions, last.Evictions)
	*last = s
	add(tb.ProcessorEventseriesNonEventRecords, c.nonEvent, 0, attribute.String("outcome", p.outcome()))
	for k, n := range c.invalid {
		add(tb.ProcessorEventseriesInvalidRecords, n, 0, attribute.String("problem", k[0]), attribute.String("outcome", k[1]))
	}
	tb.ProcessorEventseriesOpenEntries.Record(ctx, int64(p.engine.Len()))
}
