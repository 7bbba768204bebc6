package k8sevent_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// contribRecord builds a resource and log record with the attributes, body,
// severity and timestamp that the contrib k8s_events receiver writes for a
// core/v1 Warning Event.
func contribRecord(created, last time.Time) (pcommon.Resource, plog.LogRecord) {
	res := pcommon.NewResource()
	ra := res.Attributes()
	ra.PutStr("k8s.node.name", "node-a")
	ra.PutStr("k8s.object.kind", "Pod")
	ra.PutStr("k8s.object.name", "web-0")
	ra.PutStr("k8s.object.uid", "pod-uid-1")
	ra.PutStr("k8s.object.fieldpath", "spec.containers{app}")
	ra.PutStr("k8s.object.api_version", "v1")
	ra.PutStr("k8s.object.resource_version", "4711")

	lr := plog.NewLogRecord()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(last))
	lr.Body().SetStr("Back-off restarting failed container app in pod web-0")
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.SetSeverityText("Warning")
	la := lr.Attributes()
	la.PutStr("k8s.event.reason", "BackOff")
	la.PutStr("k8s.event.action", "")
	la.PutStr("k8s.event.start_time", created.String())
	la.PutStr("k8s.event.name", "web-0.18a2b3c4d5e6f708")
	la.PutStr("k8s.event.uid", "ev-uid-1")
	la.PutInt("k8s.event.count", 7)
	la.PutStr("k8s.namespace.name", "prod")
	return res, lr
}

func TestDecodeContribReceiverRecord(t *testing.T) {
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	last := time.Date(2026, 3, 1, 12, 5, 30, 0, time.UTC)
	require.Equal(t, "2026-03-01 12:00:00 +0000 UTC", created.String())

	res, lr := contribRecord(created, last)
	ev, problems, found := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
	require.True(t, found)
	require.Zero(t, problems, "problems: %v", problems)

	assert.Equal(t, k8sevent.ObjectRef{
		Kind: "Pod", Namespace: "prod", Name: "web-0", UID: "pod-uid-1",
		APIVersion: "v1", FieldPath: "spec.containers{app}", ResourceVersion: "4711",
	}, ev.Regarding)
	assert.True(t, ev.Related.IsZero())
	assert.Equal(t, "BackOff", ev.Reason)
	assert.Empty(t, ev.Action)
	assert.Equal(t, "Back-off restarting failed container app in pod web-0", ev.Note)
	assert.Equal(t, k8sevent.TypeWarning, ev.Type)
	assert.Equal(t, "web-0.18a2b3c4d5e6f708", ev.Name)
	assert.Equal(t, "ev-uid-1", ev.UID)
	assert.Empty(t, ev.Namespace)
	assert.Equal(t, "prod", ev.ObjectNamespace())
	assert.Equal(t, int64(7), ev.Count)
	assert.Equal(t, "node-a", ev.SourceHost)
	assert.Empty(t, ev.SourceComponent)
	assert.True(t, ev.Time.Equal(last), "Time %v", ev.Time)
	assert.True(t, ev.FirstTimestamp.Equal(created), "FirstTimestamp %v", ev.FirstTimestamp)
	assert.True(t, ev.LastTimestamp.IsZero())
	assert.True(t, ev.EventTime.IsZero())
	assert.Zero(t, ev.SeriesCount)

	repaired, fatal := k8sevent.Sanitize(&ev, time.Now())
	assert.Zero(t, repaired)
	assert.Zero(t, fatal)

	// The core/v1 object made of it is one the API server accepts.
	out := ev.ToCoreV1()
	assert.Equal(t, "prod", out.Namespace)
	assert.Equal(t, "prod", out.InvolvedObject.Namespace)
	back := k8sevent.FromCoreV1(out)
	require.NoError(t, k8sevent.Validate(&back, k8sevent.APICoreV1))
	require.NoError(t, k8sevent.Validate(&ev, k8sevent.APICoreV1))
}

func TestDecodeContribStartTimeOtherZone(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	created := time.Date(2026, 3, 1, 13, 0, 0, 500, loc)
	res, lr := contribRecord(created, created.Add(time.Minute))
	ev, problems, found := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
	require.True(t, found)
	require.Zero(t, problems)
	assert.True(t, ev.FirstTimestamp.Equal(created), "%v != %v", ev.FirstTimestamp, created)
}

// A record-level first_timestamp beats the contrib start_time fallback,
// whichever order the attributes come in.
func TestFirstTimestampBeatsStartTime(t *testing.T) {
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
	for _, startFirst := range []bool{true, false} {
		lr := plog.NewLogRecord()
		if startFirst {
			lr.Attributes().PutStr(k8sevent.AttrStartTime, start.String())
			lr.Attributes().PutStr(k8sevent.AttrFirstTimestamp, first.Format(time.RFC3339))
		} else {
			lr.Attributes().PutStr(k8sevent.AttrFirstTimestamp, first.Format(time.RFC3339))
			lr.Attributes().PutStr(k8sevent.AttrStartTime, start.String())
		}
		ev, problems, found := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
		require.True(t, found)
		require.Zero(t, problems)
		assert.True(t, ev.FirstTimestamp.Equal(first), "startFirst=%v: %v", startFirst, ev.FirstTimestamp)
	}
}

func TestRecordAttributesWinOverResource(t *testing.T) {
	res := pcommon.NewResource()
	res.Attributes().PutStr(k8sevent.AttrReason, "FromResource")
	res.Attributes().PutStr(k8sevent.AttrObjectName, "res-obj")
	res.Attributes().PutStr(k8sevent.AttrObjectKind, "Pod")
	res.Attributes().PutStr(k8sevent.AttrNamespace, "res-ns")
	res.Attributes().PutInt(k8sevent.AttrCount, 2)
	res.Attributes().PutStr(k8sevent.AttrNodeName, "res-node")
	lr := plog.NewLogRecord()
	lr.Attributes().PutStr(k8sevent.AttrReason, "FromRecord")
	lr.Attributes().PutStr(k8sevent.AttrObjectName, "rec-obj")
	lr.Attributes().PutStr(k8sevent.AttrNamespace, "rec-ns")
	lr.Attributes().PutInt(k8sevent.AttrCount, 9)
	lr.Attributes().PutStr(k8sevent.AttrNodeName, "rec-node")

	ev, problems, found := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
	require.True(t, found)
	require.Zero(t, problems)
	assert.Equal(t, "FromRecord", ev.Reason)
	assert.Equal(t, "rec-obj", ev.Regarding.Name)
	assert.Equal(t, "Pod", ev.Regarding.Kind, "resource-only key still read")
	assert.Equal(t, "rec-ns", ev.Regarding.Namespace)
	assert.Equal(t, int64(9), ev.Count)
	assert.Equal(t, "rec-node", ev.SourceHost)
}

func TestNamespaceAndNodeAloneAreNotAnEvent(t *testing.T) {
	res := pcommon.NewResource()
	res.Attributes().PutStr(k8sevent.AttrNamespace, "prod")
	res.Attributes().PutStr(k8sevent.AttrNodeName, "node-a")
	res.Attributes().PutStr("k8s.pod.name", "web-0")
	lr := plog.NewLogRecord()
	lr.Body().SetStr("GET /healthz 200")
	lr.SetSeverityText("INFO")
	lr.SetTimestamp(pcommon.NewTimestampFromTime(tLast))
	lr.Attributes().PutStr(k8sevent.AttrNamespace, "prod")
	lr.Attributes().PutStr(k8sevent.AttrNodeName, "node-a")
	lr.Attributes().PutStr("log.iostream", "stdout")

	_, _, found := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
	assert.False(t, found)

	_, _, found = k8sevent.Decode(pcommon.NewResource(), plog.NewLogRecord(), k8sevent.DecodeOptions{})
	assert.False(t, found, "empty record")

	// Any other contract key makes it one.
	lr.Attributes().PutStr(k8sevent.AttrReason, "X")
	_, _, found = k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
	assert.True(t, found)
}

func TestDecodeNonStringValues(t *testing.T) {
	res := pcommon.NewResource()
	res.Attributes().PutEmptyMap(k8sevent.AttrObjectKind).PutStr("a", "b")
	lr := plog.NewLogRecord()
	a := lr.Attributes()
	a.PutInt(k8sevent.AttrReason, 42)
	a.PutDouble(k8sevent.AttrAction, 1.5)
	a.PutBool(k8sevent.AttrObjectName, true)
	a.PutEmptyBytes(k8sevent.AttrObjectUID).FromRaw([]byte{0xff, 0x00})
	a.PutEmptySlice(k8sevent.AttrEventName).AppendEmpty().SetStr("x")
	a.PutEmpty(k8sevent.AttrEventUID)
	a.PutInt(k8sevent.AttrFirstTimestamp, 5)
	a.PutStr(k8sevent.AttrAggregated, "true")
	body := lr.Body().SetEmptyMap()
	body.PutStr("msg", "hello")
	body.PutEmptyMap("nested").PutInt("n", 1)

	var ev k8sevent.Event
	var problems k8sevent.Problem
	var found bool
	require.NotPanics(t, func() { ev, problems, found = k8sevent.Decode(res, lr, k8sevent.DecodeOptions{}) })
	assert.True(t, found)
	assert.Equal(t, k8sevent.ProblemBadValue, problems, "a non-string timestamp is a bad value")
	assert.Equal(t, "42", ev.Reason)
	assert.Equal(t, "1.5", ev.Action)
	assert.Equal(t, "true", ev.Regarding.Name)
	assert.Equal(t, `{"a":"b"}`, ev.Regarding.Kind)
	assert.NotEmpty(t, ev.Regarding.UID)
	assert.Equal(t, `["x"]`, ev.Name)
	assert.Empty(t, ev.UID)
	assert.False(t, ev.Aggregated, "only a bool true sets aggregated")
	assert.JSONEq(t, `{"msg":"hello","nested":{"n":1}}`, ev.Note)
	assert.True(t, ev.FirstTimestamp.IsZero())
}

func TestDecodeCount(t *testing.T) {
	tests := []struct {
		name    string
		put     func(m pcommon.Map)
		want    int64
		problem k8sevent.Problem
	}{
		{"int", func(m pcommon.Map) { m.PutInt(k8sevent.AttrCount, 5) }, 5, 0},
		{"string", func(m pcommon.Map) { m.PutStr(k8sevent.AttrCount, "5") }, 5, 0},
		{"double", func(m pcommon.Map) { m.PutDouble(k8sevent.AttrCount, 5.0) }, 5, 0},
		{"negative int", func(m pcommon.Map) { m.PutInt(k8sevent.AttrCount, -3) }, -3, 0},
		{"bool", func(m pcommon.Map) { m.PutBool(k8sevent.AttrCount, true) }, 0, k8sevent.ProblemBadValue},
		{"bad string", func(m pcommon.Map) { m.PutStr(k8sevent.AttrCount, "five") }, 0, k8sevent.ProblemBadValue},
		{"NaN", func(m pcommon.Map) { m.PutDouble(k8sevent.AttrCount, math.NaN()) }, 0, k8sevent.ProblemBadValue},
		{"+Inf", func(m pcommon.Map) { m.PutDouble(k8sevent.AttrCount, math.Inf(1)) }, 0, k8sevent.ProblemBadValue},
		{"map", func(m pcommon.Map) { m.PutEmptyMap(k8sevent.AttrCount) }, 0, k8sevent.ProblemBadValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := plog.NewLogRecord()
			lr.Attributes().PutStr(k8sevent.AttrReason, "R")
			tt.put(lr.Attributes())
			ev, problems, found := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
			require.True(t, found)
			assert.Equal(t, tt.problem, problems)
			assert.Equal(t, tt.want, ev.Count)

			// The series count uses the same parser.
			lr = plog.NewLogRecord()
			tt.put(lr.Attributes())
			v, _ := lr.Attributes().Get(k8sevent.AttrCount)
			v.CopyTo(lr.Attributes().PutEmpty(k8sevent.AttrSeriesCount))
			lr.Attributes().Remove(k8sevent.AttrCount)
			ev, problems, _ = k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
			assert.Equal(t, tt.problem, problems)
			assert.Equal(t, tt.want, ev.SeriesCount)
		})
	}
}

func TestDecodeTimes(t *testing.T) {
	ts := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	lr := plog.NewLogRecord()
	lr.Attributes().PutStr(k8sevent.AttrLastTimestamp, ts.Format(time.RFC3339Nano))
	lr.Attributes().PutStr(k8sevent.AttrEventTime, "")
	ev, problems, _ := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
	assert.Zero(t, problems, "an empty time string is absent, not bad")
	assert.True(t, ev.LastTimestamp.Equal(ts))
	assert.True(t, ev.Time.Equal(ts), "zero record timestamp falls back to LatestTime")

	ev, problems, _ = k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{SkipTimes: true})
	assert.Zero(t, problems)
	assert.True(t, ev.LastTimestamp.IsZero())
	assert.True(t, ev.Time.IsZero())

	lr.Attributes().PutStr(k8sevent.AttrSeriesLastObserved, "yesterday")
	ev, problems, _ = k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
	assert.Equal(t, k8sevent.ProblemBadValue, problems)
	assert.True(t, ev.SeriesLastObservedTime.IsZero())
	_, problems, _ = k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{SkipTimes: true})
	assert.Zero(t, problems, "SkipTimes does not parse")
}

func TestDecodeSeverity(t *testing.T) {
	tests := []struct {
		text string
		num  plog.SeverityNumber
		want string
	}{
		{"", plog.SeverityNumberUnspecified, ""},
		{"", plog.SeverityNumberInfo, k8sevent.TypeNormal},
		{"", plog.SeverityNumberDebug, k8sevent.TypeNormal},
		{"", plog.SeverityNumberWarn, k8sevent.TypeWarning},
		{"", plog.SeverityNumberError, k8sevent.TypeError},
		{"", plog.SeverityNumberError4, k8sevent.TypeError},
		{"", plog.SeverityNumberFatal, k8sevent.TypeCritical},
		{"Normal", plog.SeverityNumberWarn, k8sevent.TypeNormal},
		{"Warning", plog.SeverityNumberUnspecified, k8sevent.TypeWarning},
	}
	for _, tt := range tests {
		lr := plog.NewLogRecord()
		lr.SetSeverityText(tt.text)
		lr.SetSeverityNumber(tt.num)
		ev, _, _ := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
		assert.Equal(t, tt.want, ev.Type, "%q/%v", tt.text, tt.num)
	}
	// Written back, each type gets contrib's k8s_events severity.
	for typ, num := range map[string]plog.SeverityNumber{
		k8sevent.TypeNormal: plog.SeverityNumberInfo, k8sevent.TypeWarning: plog.SeverityNumberWarn,
		k8sevent.TypeError: plog.SeverityNumberError, k8sevent.TypeCritical: plog.SeverityNumberFatal,
	} {
		lr := plog.NewLogRecord()
		k8sevent.SetType(lr, typ)
		assert.Equal(t, typ, lr.SeverityText())
		assert.Equal(t, num, lr.SeverityNumber(), typ)
	}
}

func TestEncodeContract(t *testing.T) {
	ev := k8sevent.FromCoreV1(fullCoreV1())
	ev.SeriesState = k8sevent.StateOngoing
	ev.Aggregated = true
	lr := plog.NewLogRecord()
	k8sevent.Encode(&ev, lr)

	assert.Equal(t, k8sevent.EventName, lr.EventName(), "the one EventName of a Kubernetes Event")
	a := lr.Attributes().AsRaw()
	assert.Equal(t, "BackOff", a[k8sevent.AttrReason])
	assert.Equal(t, "prod", a[k8sevent.AttrNamespace])
	assert.NotContains(t, a, k8sevent.AttrEventNamespace, "same as the regarding namespace")
	assert.Equal(t, int64(7), a[k8sevent.AttrCount])
	assert.Equal(t, int64(7), a[k8sevent.AttrSeriesCount])
	assert.Equal(t, "2026-03-01T12:00:00.123456Z", a[k8sevent.AttrEventTime])
	assert.Equal(t, "2026-03-01T12:06:01.654321Z", a[k8sevent.AttrSeriesLastObserved])
	assert.Equal(t, "2026-03-01T12:00:00Z", a[k8sevent.AttrFirstTimestamp])
	assert.Equal(t, "ongoing", a[k8sevent.AttrSeriesState])
	assert.Equal(t, true, a[k8sevent.AttrAggregated])
	assert.Equal(t, "Warning", lr.SeverityText())
	assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
	assert.Equal(t, ev.Note, lr.Body().Str())
	assert.True(t, lr.Timestamp().AsTime().Equal(tObserved))

	got := throughRecord(t, ev)
	assert.Equal(t, k8sevent.StateOngoing, got.SeriesState)
	assert.True(t, got.Aggregated)

	// Unset fields are not written.
	lr = plog.NewLogRecord()
	k8sevent.Encode(&k8sevent.Event{Type: k8sevent.TypeNormal}, lr)
	assert.Zero(t, lr.Attributes().Len())
	assert.Equal(t, plog.SeverityNumberInfo, lr.SeverityNumber())
	assert.Zero(t, lr.Timestamp())

	// Own namespace different from the regarding one is written.
	lr = plog.NewLogRecord()
	k8sevent.Encode(&k8sevent.Event{Namespace: "default", Regarding: k8sevent.ObjectRef{Kind: "Node", Name: "n"}}, lr)
	v, ok := lr.Attributes().Get(k8sevent.AttrEventNamespace)
	require.True(t, ok)
	assert.Equal(t, "default", v.Str())
}

func TestProblemString(t *testing.T) {
	assert.Equal(t, "", k8sevent.Problem(0).String())
	assert.Equal(t, "missing_reason,bad_value", (k8sevent.ProblemMissingReason | k8sevent.ProblemBadValue).String())
	var names []string
	(k8sevent.ProblemsFatal).Each(func(n string) { names = append(names, n) })
	assert.Equal(t, []string{"missing_reason", "missing_regarding", "bad_namespace", "oversized_field"}, names)
}

// TestEveryStringKeyDecodesIntoItsOwnField: a map holding one contract key
// with a string value decodes into the one Event field that encodes back
// to that key and value, and to nothing else (the decoder stores strings
// at field offsets; a wrong offset would write another field).
func TestEveryStringKeyDecodesIntoItsOwnField(t *testing.T) {
	skip := map[string]bool{ // not plain strings, or read as another key
		k8sevent.AttrNodeName: true, k8sevent.AttrCount: true, k8sevent.AttrSeriesCount: true,
		k8sevent.AttrAggregated: true, k8sevent.AttrNewOccurrences: true, k8sevent.AttrStartTime: true,
		k8sevent.AttrFirstTimestamp: true, k8sevent.AttrLastTimestamp: true, k8sevent.AttrEventTime: true,
		k8sevent.AttrSeriesLastObserved: true,
	}
	for _, k := range k8sevent.ContractKeys {
		if skip[k] {
			continue
		}
		in := pcommon.NewMap()
		in.PutStr("other.key", "x")
		in.PutStr(k, "value-of-"+k)
		var ev k8sevent.Event
		_, _ = k8sevent.DecodeAttributes(in, &ev, k8sevent.DecodeOptions{})
		lr := plog.NewLogRecord()
		k8sevent.Encode(&ev, lr)
		assert.Equal(t, map[string]any{k: "value-of-" + k}, lr.Attributes().AsRaw(), k)
	}
}
