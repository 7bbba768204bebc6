package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

// What the processor reports of its work: bad input (counted per batch,
// logged at a bounded rate) and the engine's counters as metrics.

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
)

// problemCounts gathers a batch's bad input for one metric update.
type problemCounts struct {
	nonEvent int64
	clamped  int64               // event time: records more than event_time_max_lead ahead
	invalid  map[[2]string]int64 // problem, outcome
}

func (c *problemCounts) add(problems k8sevent.Problem, outcome string) {
	if c.invalid == nil {
		c.invalid = map[[2]string]int64{}
	}
	problems.Each(func(name string) { c.invalid[[2]string{name, outcome}]++ })
}

// outcome names what happens to records without an Event.
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

// maxMetric is where the counters stop: the metrics SDK sums through
// float64, exact up to 2^53 and wrapping to -2^63 near MaxInt64 (hostile
// counts got there).
const maxMetric = 1 << 53

// reported is what report last added to each counter that follows the
// engine's counts.
type reported struct {
	occurrences, compressed, folded                 int64
	passed, exempt                                  [len(engine.KindNames)]int64
	held                                            int64
	started, finished, evicted, unchanged, unproven int64
	restoreDropped                                  int64
}

// report adds to the metrics what the engine counted since the last report.
// The engine's counts only grow: one that went down wrapped past MaxInt64.
// Counters saturate at maxMetric; they never wrap.
func (p *eventSeriesProcessor) report(ctx context.Context, c *problemCounts) {
	s, last, tb := &p.engine.Stats, &p.reported, p.telemetry
	add := func(counter metric.Int64Counter, now int64, before *int64, attrs ...attribute.KeyValue) {
		if now < *before {
			now = maxMetric
		}
		now = min(now, maxMetric)
		if now > *before {
			counter.Add(ctx, now-*before, metric.WithAttributes(attrs...))
			*before = now
		}
	}
	add(tb.ProcessorEventseriesOccurrences, s.Occurrences, &last.occurrences)
	into := func(v string) attribute.KeyValue { return attribute.String("into", v) }
	add(tb.ProcessorEventseriesMergedOccurrences, s.Compressed, &last.compressed, into("series"))
	add(tb.ProcessorEventseriesMergedOccurrences, s.Folded, &last.folded, into("summary"))

	for kind, name := range engine.KindNames {
		if name == "" {
			name = "legacy"
		}
		state := attribute.String("state", name)
		add(tb.ProcessorEventseriesRecords, s.Out[kind]-s.OutUnfiltered[kind], &last.passed[kind], state, attribute.String("filter", "passed"))
		add(tb.ProcessorEventseriesRecords, s.OutUnfiltered[kind], &last.exempt[kind], state, attribute.String("filter", "exempt"))
	}
	add(tb.ProcessorEventseriesRecords, s.SpamDropped, &last.held, attribute.String("filter", "held"))

	event := func(v string) attribute.KeyValue { return attribute.String("event", v) }
	add(tb.ProcessorEventseriesSeries, s.SeriesStarted, &last.started, event("started"))
	add(tb.ProcessorEventseriesSeries, s.SeriesFinished, &last.finished, event("finished"))
	add(tb.ProcessorEventseriesSeries, s.Evictions, &last.evicted, event("evicted"))

	add(tb.ProcessorEventseriesState, s.RestoreDropped, &last.restoreDropped,
		attribute.String("operation", "restore"), attribute.String("outcome", "entries_dropped"))

	add(tb.ProcessorEventseriesInputProblems, s.Unchanged, &last.unchanged,
		attribute.String("problem", "unchanged"), attribute.String("outcome", "ignored"))
	add(tb.ProcessorEventseriesInputProblems, s.Unproven, &last.unproven,
		attribute.String("problem", "unproven"), attribute.String("outcome", "counted"))
	var zero int64
	add(tb.ProcessorEventseriesInputProblems, c.nonEvent, &zero,
		attribute.String("problem", "not_event"), attribute.String("outcome", p.outcome()))
	for k, n := range c.invalid {
		zero = 0
		add(tb.ProcessorEventseriesInputProblems, n, &zero, attribute.String("problem", k[0]), attribute.String("outcome", k[1]))
	}
	zero = 0
	add(tb.ProcessorEventseriesInputProblems, c.clamped, &zero,
		attribute.String("problem", "clamped"), attribute.String("outcome", "counted"))
	tb.ProcessorEventseriesOpenEntries.Record(ctx, int64(p.engine.Len()))
}
