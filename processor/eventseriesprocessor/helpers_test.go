package eventseriesprocessor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadatatest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// counterSum is the sum of a counter's points in tel whose attributes
// include every "key=value" of where, 0 while nothing was counted (the
// metric is not recorded yet).
func counterSum(tel *componenttest.Telemetry, name string, where ...string) int64 {
	var n int64
	for _, v := range counterPoints(tel, name, where...) {
		n += v
	}
	return n
}

// gaugeValue is the last value of a gauge without attributes in tel.
func gaugeValue(t testing.TB, tel *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err)
	dps := m.Data.(metricdata.Gauge[int64]).DataPoints
	require.Len(t, dps, 1, name)
	return dps[0].Value
}

// counterPoints is a counter's points in tel whose attributes include every
// "key=value" of where, by their attributes ("key=value,..." in key order);
// empty while nothing was counted.
func counterPoints(tel *componenttest.Telemetry, name string, where ...string) map[string]int64 {
	points := map[string]int64{}
	m, err := tel.GetMetric(name)
	if err != nil {
		return points
	}
next:
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		for _, kv := range where {
			key, value, _ := strings.Cut(kv, "=")
			if v, ok := dp.Attributes.Value(attribute.Key(key)); !ok || v.Emit() != value {
				continue next
			}
		}
		points[dp.Attributes.Encoded(attribute.DefaultEncoder())] += dp.Value
	}
	return points
}

// invalidPoints is input_problems' points for the problems of an Event
// (every problem but not_event, clamped, unchanged and unproven), by
// problem and outcome.
func invalidPoints(tel *componenttest.Telemetry) map[[2]string]int64 {
	points := map[[2]string]int64{}
	m, err := tel.GetMetric("otelcol_processor_eventseries_input_problems")
	if err != nil {
		return points
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		p, _ := dp.Attributes.Value("problem")
		o, _ := dp.Attributes.Value("outcome")
		switch p.AsString() {
		case "not_event", "clamped", "unchanged", "unproven":
			continue
		}
		points[[2]string{p.AsString(), o.AsString()}] += dp.Value
	}
	return points
}

// harness runs one processor built by the factory into a sink.
type harness struct {
	t    testing.TB
	p    *eventSeriesProcessor
	sink *consumertest.LogsSink
	tel  *componenttest.Telemetry
}

func newHarness(t testing.TB, mutate func(*Config)) *harness {
	return newHarnessWith(t, mutate, time.Now, &faultSink{})
}

// newHarnessWith runs the processor on clock (its processing clock) into
// sink, which may refuse or block.
func newHarnessWith(t testing.TB, mutate func(*Config), clock func() time.Time, sink logsSink) *harness {
	cfg := createDefaultConfig()
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	p, err := newProcessor(metadatatest.NewSettings(tel), cfg, sink, clock)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	h := &harness{t: t, p: p, sink: sink.base(), tel: tel}
	t.Cleanup(func() {
		_ = h.p.Shutdown(context.Background())
		_ = tel.Shutdown(context.Background())
	})
	return h
}

func eventTime(cfg *Config) { cfg.TimeSource = timeEvent }

func (h *harness) consume(ld plog.Logs) {
	h.t.Helper()
	require.NoError(h.t, h.p.ConsumeLogs(context.Background(), ld))
	settle(h.t, h.p)
}

func (h *harness) shutdown() {
	h.t.Helper()
	require.NoError(h.t, h.p.Shutdown(context.Background()))
}

// records returns every record emitted so far, in order, with its resource.
func (h *harness) records() []emitted {
	var out []emitted
	for _, ld := range h.sink.AllLogs() {
		out = append(out, flatten(ld)...)
	}
	return out
}

type emitted struct {
	res   pcommon.Resource
	scope string
	lr    plog.LogRecord
}

func (e emitted) event(t testing.TB) k8sevent.Event {
	ev, _, found := k8sevent.Decode(e.res, e.lr, k8sevent.DecodeOptions{})
	require.True(t, found)
	return ev
}

func (e emitted) str(k string) string {
	v, ok := e.lr.Attributes().Get(k)
	if !ok {
		return ""
	}
	return v.AsString()
}

func (e emitted) fromTimer() bool { return e.scope == metadata.ScopeName }

func flatten(ld plog.Logs) []emitted {
	var out []emitted
	for i := range ld.ResourceLogs().Len() {
		rl := ld.ResourceLogs().At(i)
		for j := range rl.ScopeLogs().Len() {
			sl := rl.ScopeLogs().At(j)
			for k := range sl.LogRecords().Len() {
				out = append(out, emitted{res: rl.Resource(), scope: sl.Scope().Name(), lr: sl.LogRecords().At(k)})
			}
		}
	}
	return out
}

func podEvent(pod, reason, note string) k8sevent.Event {
	return k8sevent.Event{
		Type: k8sevent.TypeWarning, Reason: reason, Action: "Sync", Note: note,
		Regarding:           k8sevent.ObjectRef{Kind: "Pod", Namespace: "ns", Name: pod, UID: "uid-" + pod, APIVersion: "v1"},
		ReportingController: "kubelet", ReportingInstance: "node-1", SourceComponent: "kubelet", SourceHost: "node-1",
	}
}

// logsOf builds one ResourceLogs per Event (as the contrib receiver does),
// every field as a record attribute, in scope "test".
func logsOf(evs ...k8sevent.Event) plog.Logs {
	ld := plog.NewLogs()
	for i := range evs {
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		sl.Scope().SetName("test")
		k8sevent.Encode(&evs[i], sl.LogRecords().AppendEmpty())
	}
	return ld
}

// contribRecord builds a record the way the contrib k8s_events receiver does:
// the regarding object on the resource, the rest on the record.
func contribRecord(ev k8sevent.Event) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	res := rl.Resource().Attributes()
	res.PutStr(k8sevent.AttrObjectKind, ev.Regarding.Kind)
	res.PutStr(k8sevent.AttrObjectName, ev.Regarding.Name)
	res.PutStr(k8sevent.AttrObjectUID, ev.Regarding.UID)
	res.PutStr(k8sevent.AttrObjectFieldPath, ev.Regarding.FieldPath)
	res.PutStr(k8sevent.AttrObjectAPIVersion, ev.Regarding.APIVersion)
	res.PutStr(k8sevent.AttrObjectResourceVer, ev.Regarding.ResourceVersion)
	res.PutStr(k8sevent.AttrNodeName, ev.SourceHost)
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(ev.Time))
	lr.Body().SetStr(ev.Note)
	k8sevent.SetType(lr, ev.Type)
	attrs := lr.Attributes()
	attrs.PutStr(k8sevent.AttrReason, ev.Reason)
	attrs.PutStr(k8sevent.AttrAction, ev.Action)
	attrs.PutStr(k8sevent.AttrStartTime, ev.FirstTimestamp.String())
	attrs.PutStr(k8sevent.AttrEventName, ev.Name)
	attrs.PutStr(k8sevent.AttrEventUID, ev.UID)
	attrs.PutStr(k8sevent.AttrNamespace, ev.Regarding.Namespace)
	if ev.Count != 0 {
		attrs.PutInt(k8sevent.AttrCount, ev.Count)
	}
	return ld
}
