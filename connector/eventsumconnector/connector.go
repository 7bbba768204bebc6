package eventsumconnector // import "github.com/k8sevents/otel-k8sevents/connector/eventsumconnector"

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/k8sevents/otel-k8sevents/connector/eventsumconnector/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/ratelog"
	"github.com/k8sevents/otel-k8sevents/internal/retry"
)

// OverflowKey is the one attribute of a metric's overflow series, as the
// OpenTelemetry metrics SDK names it.
const OverflowKey = "otel.metric.overflow"

// metricDef is one configured metric and its sums.
type metricDef struct {
	name, desc, source string
	keys               []string
	defaults           []string // "" where the attribute has no default_value
	table              *table
}

// eventSum sums the source attribute of each record into cumulative
// counters and sends those that grew after every batch. A send the next
// consumer refuses is not an error for the logs pipeline: the sums already
// hold the batch, and a retry of it would count it twice; the refused
// series go again, with their later values, after the next batch.
type eventSum struct {
	component.StartFunc
	component.ShutdownFunc
	next      consumer.Metrics
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	refusals  *ratelog.Limiter[string]
	start     pcommon.Timestamp
	clock     func() time.Time
	// after runs f once after d (time.AfterFunc; tests run it at once).
	after func(d time.Duration, f func()) (stop func() bool)

	mu      sync.Mutex // the sums, and one send at a time so that values go out in order
	metrics []*metricDef
	values  []string      // scratch
	backoff retry.Backoff // of the pending retry
	retry   func() bool   // stops the pending retry; nil when none
	stopped bool
}

// sendRetry is the wait before a refused send goes again when no batch
// comes to carry it.
var sendRetry = retry.Policy{Initial: time.Second, Multiplier: 2, Max: 30 * time.Second}

func newEventSum(set component.TelemetrySettings, cfg *Config, next consumer.Metrics, clock func() time.Time) (*eventSum, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, fmt.Errorf("eventsum telemetry: %w", err)
	}
	c := &eventSum{next: next, logger: set.Logger, telemetry: tb, refusals: ratelog.New[string](time.Minute),
		start: pcommon.NewTimestampFromTime(clock()), clock: clock, backoff: retry.Backoff{Policy: sendRetry},
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
	names := make([]string, 0, len(cfg.Logs))
	for name := range cfg.Logs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		info := cfg.Logs[name]
		m := &metricDef{name: name, desc: info.Description, source: info.SourceAttribute, table: newTable(cfg.MaxSeries)}
		for _, a := range info.Attributes {
			m.keys = append(m.keys, a.Key)
			d := ""
			if a.DefaultValue != nil {
				d = fmt.Sprint(a.DefaultValue)
			}
			m.defaults = append(m.defaults, d)
		}
		c.metrics = append(c.metrics, m)
	}
	c.ShutdownFunc = c.shutdown
	return c, nil
}

// shutdown stops the pending retry and makes one last attempt to send
// what is still refused.
func (c *eventSum) shutdown(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.retry != nil {
		c.retry()
		c.retry = nil
	}
	c.send(ctx)
	c.telemetry.Shutdown()
	return nil
}

func (*eventSum) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeLogs sums the batch and sends the series that grew.
func (c *eventSum) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var skipped, overflowed int64
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		rl := ld.ResourceLogs().At(i)
		res := rl.Resource().Attributes()
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			records := rl.ScopeLogs().At(j).LogRecords()
			for k := 0; k < records.Len(); k++ {
				s, o := c.sum(records.At(k).Attributes(), res)
				skipped, overflowed = skipped+s, overflowed+o
			}
		}
	}
	if skipped > 0 {
		c.telemetry.ConnectorEventsumSkippedRecords.Add(ctx, skipped)
	}
	if overflowed > 0 {
		c.telemetry.ConnectorEventsumOverflowRecords.Add(ctx, overflowed)
	}
	c.send(ctx)
	return nil
}

// sum adds one record to every metric whose source attribute it has.
func (c *eventSum) sum(attrs, res pcommon.Map) (skipped, overflowed int64) {
	for _, m := range c.metrics {
		v, ok := lookup(attrs, res, m.source)
		if !ok {
			continue // not a record this metric sums (e.g. not from the eventseries processor)
		}
		n, ok := count(v)
		if !ok {
			skipped++
			continue
		}
		c.values = c.values[:0]
		for i, key := range m.keys {
			val, ok := lookup(attrs, res, key)
			s := ""
			if ok {
				s = val.AsString()
			}
			if s == "" {
				s = m.defaults[i]
			}
			if s == "" {
				break
			}
			c.values = append(c.values, s)
		}
		if len(c.values) < len(m.keys) {
			skipped++ // an attribute missing, without a default: contrib's sum skips it too
			continue
		}
		if m.table.add(c.values, n) {
			overflowed++
		}
	}
	return skipped, overflowed
}

// send hands the grown series to the next consumer as cumulative sums.
func (c *eventSum) send(ctx context.Context) {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	now := pcommon.NewTimestampFromTime(c.clock())
	taken := make([][]*series, len(c.metrics))
	for i, m := range c.metrics {
		taken[i] = m.table.takeDirty()
		if len(taken[i]) == 0 {
			continue
		}
		metric := sm.Metrics().AppendEmpty()
		metric.SetName(m.name)
		metric.SetDescription(m.desc)
		sum := metric.SetEmptySum()
		sum.SetIsMonotonic(true)
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for _, s := range taken[i] {
			dp := sum.DataPoints().AppendEmpty()
			dp.SetStartTimestamp(c.start)
			dp.SetTimestamp(now)
			dp.SetIntValue(s.sum)
			if s.values == nil {
				dp.Attributes().PutBool(OverflowKey, true)
				continue
			}
			for j, key := range m.keys {
				dp.Attributes().PutStr(key, s.values[j])
			}
		}
	}
	if sm.Metrics().Len() == 0 {
		return
	}
	err := c.next.ConsumeMetrics(ctx, md)
	if err == nil {
		c.backoff.Reset()
		return
	}
	for i, m := range c.metrics {
		m.table.refused(taken[i])
	}
	c.telemetry.ConnectorEventsumRefusedSends.Add(context.Background(), 1)
	if c.refusals.Allow("refused", c.clock()) {
		c.logger.Warn("Next consumer refused the sums; they go again, with their later values, with the next batch or after a backoff (logged once a minute)",
			zap.Int("metrics", sm.Metrics().Len()), zap.Error(err))
	}
	if c.retry == nil && !c.stopped {
		c.retry = c.after(c.backoff.Failed(err), c.retrySend)
	}
}

// retrySend sends again what was refused, when no batch came to carry it.
func (c *eventSum) retrySend() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retry = nil
	if !c.stopped {
		c.send(context.Background())
	}
}

// lookup reads key from the record's attributes, then its resource's, as
// the record contract places keys.
func lookup(attrs, res pcommon.Map, key string) (pcommon.Value, bool) {
	if v, ok := attrs.Get(key); ok {
		return v, true
	}
	return res.Get(key)
}

// count reads a source attribute's value (see wholeNumber).
func count(v pcommon.Value) (int64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return wholeNumber(v.Int(), 0, "", kindInt)
	case pcommon.ValueTypeDouble:
		return wholeNumber(0, v.Double(), "", kindDouble)
	case pcommon.ValueTypeStr:
		return wholeNumber(0, 0, v.Str(), kindString)
	default:
		return wholeNumber(0, 0, "", kindOther)
	}
}
