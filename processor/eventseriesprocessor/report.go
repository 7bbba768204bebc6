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
	add(tb.ProcessorEventseriesOccurrences, s.Occurrences, &last.Occurrences)
	for kind, name := range engine.KindNames {
		if name == "" {
			name = "legacy"
		}
		add(tb.ProcessorEventseriesRecordsOut, s.Out[kind], &last.Out[kind], attribute.String("state", name))
	}
	add(tb.ProcessorEventseriesCompressed, s.Compressed, &last.Compressed)
	add(tb.ProcessorEventseriesSpamDropped, s.SpamDropped, &last.SpamDropped)
	add(tb.ProcessorEventseriesSeriesStarted, s.SeriesStarted, &last.SeriesStarted)
	add(tb.ProcessorEventseriesSeriesFinished, s.SeriesFinished, &last.SeriesFinished)
	add(tb.ProcessorEventseriesHeartbeats, s.Heartbeats, &last.Heartbeats)
	add(tb.ProcessorEventseriesEvictions, s.Evictions, &last.Evictions)
	add(tb.ProcessorEventseriesUnchangedRecords, s.Unchanged, &last.Unchanged)
	add(tb.ProcessorEventseriesUnprovenRecords, s.Unproven, &last.Unproven)
	add(tb.ProcessorEventseriesFolded, s.Folded, &last.Folded)
	add(tb.ProcessorEventseriesUnfilteredRecords, s.Unfiltered, &last.Unfiltered)
	add(tb.ProcessorEventseriesRestoreDropped, s.RestoreDropped, &last.RestoreDropped)
	var zero int64
	add(tb.ProcessorEventseriesNonEventRecords, c.nonEvent, &zero, attribute.String("outcome", p.outcome()))
	for k, n := range c.invalid {
		zero = 0
		add(tb.ProcessorEventseriesInvalidRecords, n, &zero, attribute.String("problem", k[0]), attribute.String("outcome", k[1]))
	}
	zero = 0
	add(tb.ProcessorEventseriesClampedRecords, c.clamped, &zero)
	tb.ProcessorEventseriesOpenEntries.Record(ctx, int64(p.engine.Len()))
}
