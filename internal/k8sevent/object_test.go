package k8sevent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/k8sobjects"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Records of contrib's k8sobjects receiver (internal/harness/k8sobjects
// builds them as v0.151.0 does): the Event object in the body.

// objectRecords are obj's records in both of the receiver's modes.
func objectRecords(t *testing.T, obj runtime.Object) map[string]plog.Logs {
	t.Helper()
	out := map[string]plog.Logs{}
	for _, typ := range []watch.EventType{watch.Added, watch.Modified} {
		ld, err := k8sobjects.Watch(typ, obj)
		require.NoError(t, err)
		out["watch "+string(typ)] = ld
	}
	ld, err := k8sobjects.Pull(obj)
	require.NoError(t, err)
	out["pull"] = ld
	return out
}

// decodeOnly decodes the one record of ld.
func decodeOnly(t *testing.T, ld plog.Logs, opts k8sevent.DecodeOptions) (k8sevent.Event, k8sevent.Problem, bool) {
	t.Helper()
	require.Equal(t, 1, ld.LogRecordCount())
	rl := ld.ResourceLogs().At(0)
	return k8sevent.Decode(rl.Resource(), rl.ScopeLogs().At(0).LogRecords().At(0), opts)
}

// The object in the body reads as the Event the typed object is, in both
// API groups and both modes, with SkipTimes too (a record of the receiver
// has no timestamp: the object's latest time is its occurrence's).
func TestDecodeK8sObjectsRecord(t *testing.T) {
	for group, tc := range map[string]struct {
		obj  runtime.Object
		want k8sevent.Event
	}{
		"core/v1":          {fullCoreV1(), k8sevent.FromCoreV1(fullCoreV1())},
		"events.k8s.io/v1": {fullEventsV1(), k8sevent.FromEventsV1(fullEventsV1())},
	} {
		for mode, ld := range objectRecords(t, tc.obj) {
			t.Run(group+" "+mode, func(t *testing.T) {
				for _, opts := range []k8sevent.DecodeOptions{{}, {SkipTimes: true}} {
					ev, problems, found := decodeOnly(t, ld, opts)
					require.True(t, found)
					assert.Zero(t, problems, "problems: %v", problems)
					requireSameEvent(t, &tc.want, &ev)
					assert.Equal(t, "prod", ev.Namespace)
					assert.True(t, ev.Time.Equal(tObserved), "the occurrence is the series' last: %v", ev.Time)
				}
			})
		}
	}
}

// The resource's k8s.namespace.name is the Event object's namespace, not
// the regarding object's: a cluster-scoped object's Event reads with no
// regarding namespace. The counts of an object without series, its
// creation time as the first occurrence when it states none, and the
// cluster (which no Event object states) from the attributes.
func TestDecodeK8sObjectsNodeEvent(t *testing.T) {
	created := time.Date(2026, 3, 1, 11, 59, 0, 0, time.UTC)
	in := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a.17f", Namespace: "default", UID: "ev-uid-2",
			CreationTimestamp: metav1.NewTime(created)},
		Regarding:                corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
		Reason:                   "NodeNotReady",
		Note:                     "Node node-a status is now: NodeNotReady",
		Type:                     corev1.EventTypeNormal,
		DeprecatedSource:         corev1.EventSource{Component: "node-controller"},
		DeprecatedLastTimestamp:  metav1.NewTime(tLast),
		DeprecatedCount:          3,
		ReportingController:      "node-controller",
		DeprecatedFirstTimestamp: metav1.Time{},
	}
	for mode, ld := range objectRecords(t, in) {
		t.Run(mode, func(t *testing.T) {
			res := ld.ResourceLogs().At(0).Resource().Attributes()
			require.Equal(t, map[string]any{"k8s.namespace.name": "default"}, res.AsRaw(), "as the receiver writes it")
			res.PutStr(k8sevent.AttrClusterName, "prod-eu")
			res.PutStr(k8sevent.AttrReason, "NotTheObjectsReason")
			ev, problems, found := decodeOnly(t, ld, k8sevent.DecodeOptions{})
			require.True(t, found)
			assert.Zero(t, problems)
			assert.Equal(t, "default", ev.Namespace)
			assert.Equal(t, k8sevent.ObjectRef{Kind: "Node", Name: "node-a", UID: "node-a"}, ev.Regarding)
			assert.Equal(t, "NodeNotReady", ev.Reason, "the body, not the attributes")
			assert.Equal(t, "prod-eu", ev.Cluster.Name)
			assert.Equal(t, int64(3), ev.Count)
			assert.Equal(t, int64(3), ev.Occurrences())
			assert.Equal(t, created, ev.FirstTimestamp, "creation time as the first occurrence")
			assert.Equal(t, tLast, ev.Time)
			_, fatal := k8sevent.Sanitize(&ev, tLast)
			assert.Zero(t, fatal)
		})
	}
}

// What carries no occurrence: the watch events that are none (DELETED: the
// object is gone; ERROR with a Status), and objects of other kinds or of an
// Event API version not read, in either mode.
func TestK8sObjectsRecordsWithoutOccurrence(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "prod"}}
	records := map[string]plog.Logs{}
	for name, build := range map[string]func() (plog.Logs, error){
		"deleted":      func() (plog.Logs, error) { return k8sobjects.Watch(watch.Deleted, fullEventsV1()) },
		"deleted core": func() (plog.Logs, error) { return k8sobjects.Watch(watch.Deleted, fullCoreV1()) },
		"pod watched":  func() (plog.Logs, error) { return k8sobjects.Watch(watch.Added, pod) },
		"pod pulled":   func() (plog.Logs, error) { return k8sobjects.Pull(pod) },
		"error status": func() (plog.Logs, error) {
			return k8sobjects.Watch(watch.Error, &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone})
		},
	} {
		ld, err := build()
		require.NoError(t, err, name)
		records[name] = ld
	}
	other := map[string]any{"apiVersion": "events.k8s.io/v2", "kind": "Event", "reason": "BackOff",
		"regarding": map[string]any{"kind": "Pod", "name": "web-0"}}
	records["unknown version"] = k8sobjects.Logs(other, "prod", nil)
	records["bookmark"] = k8sobjects.Logs(map[string]any{"type": "BOOKMARK", "object": map[string]any{
		"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": map[string]any{"resourceVersion": "12"}}}, "", nil)
	for name, ld := range records {
		t.Run(name, func(t *testing.T) {
			// Contract keys on the record do not make it one: the body says
			// what it is.
			rl := ld.ResourceLogs().At(0)
			lr := rl.ScopeLogs().At(0).LogRecords().At(0)
			lr.Attributes().PutStr(k8sevent.AttrReason, "BackOff")
			body := lr.Body().AsRaw()
			_, _, found := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})
			assert.False(t, found)
			assert.Equal(t, body, lr.Body().AsRaw(), "decoding leaves the record as it is")
		})
	}
}

// A malformed object never panics: a field of the wrong shape is ignored
// and is a bad value, as an attribute's; without a reason or regarding
// object no Event can be made (Sanitize); a body that is no Kubernetes
// object is a note, as any other map body.
func TestDecodeMalformedK8sObjectsBodies(t *testing.T) {
	valid := func() map[string]any {
		return map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event",
			"metadata":  map[string]any{"name": "web-0.1", "namespace": "prod", "uid": "u1"},
			"reason":    "BackOff",
			"regarding": map[string]any{"kind": "Pod", "namespace": "prod", "name": "web-0"},
			"eventTime": "2026-03-01T12:00:00.123456Z", "deprecatedCount": int64(2)}
	}
	tests := []struct {
		name     string
		mutate   func(obj map[string]any) map[string]any // the body, from the valid object
		problems k8sevent.Problem                        // of decoding
		fatal    k8sevent.Problem                        // of Sanitize
		found    bool
	}{
		{"valid", func(o map[string]any) map[string]any { return o }, 0, 0, true},
		{"count not a number", func(o map[string]any) map[string]any { o["deprecatedCount"] = "many"; return o },
			k8sevent.ProblemBadValue, 0, true},
		{"count a whole double", func(o map[string]any) map[string]any { o["deprecatedCount"] = 2.0; return o }, 0, 0, true},
		{"time not a time", func(o map[string]any) map[string]any { o["eventTime"] = "yesterday"; return o },
			k8sevent.ProblemBadValue, 0, true},
		{"time a number", func(o map[string]any) map[string]any { o["eventTime"] = int64(5); return o },
			k8sevent.ProblemBadValue, 0, true},
		{"null fields", func(o map[string]any) map[string]any {
			o["eventTime"], o["series"], o["related"], o["deprecatedSource"] = nil, nil, nil, nil
			return o
		}, 0, 0, true},
		{"metadata a list", func(o map[string]any) map[string]any { o["metadata"] = []any{"x"}; return o },
			k8sevent.ProblemBadValue, 0, true},
		{"series a string", func(o map[string]any) map[string]any { o["series"] = "x"; return o },
			k8sevent.ProblemBadValue, 0, true},
		{"regarding a string", func(o map[string]any) map[string]any { o["regarding"] = "web-0"; return o },
			k8sevent.ProblemBadValue, k8sevent.ProblemMissingRegarding, true},
		{"no reason", func(o map[string]any) map[string]any { delete(o, "reason"); return o },
			0, k8sevent.ProblemMissingReason, true},
		{"reason a number", func(o map[string]any) map[string]any { o["reason"] = int64(42); return o }, 0, 0, true},
		{"watched", func(o map[string]any) map[string]any { return map[string]any{"type": "MODIFIED", "object": o} }, 0, 0, true},
		{"watch type not a string", func(o map[string]any) map[string]any { return map[string]any{"type": int64(1), "object": o} },
			0, 0, false},
		{"watch object not a map", func(map[string]any) map[string]any { return map[string]any{"type": "ADDED", "object": "x"} },
			0, 0, false},
		{"kind not a string", func(o map[string]any) map[string]any { o["kind"] = int64(1); return o }, 0, 0, false},
		{"no apiVersion", func(o map[string]any) map[string]any { delete(o, "apiVersion"); return o }, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ld := k8sobjects.Logs(tc.mutate(valid()), "prod", nil)
			var ev k8sevent.Event
			var problems k8sevent.Problem
			var found bool
			require.NotPanics(t, func() { ev, problems, found = decodeOnly(t, ld, k8sevent.DecodeOptions{}) })
			require.Equal(t, tc.found, found)
			if !found {
				return
			}
			assert.Equal(t, tc.problems, problems)
			_, fatal := k8sevent.Sanitize(&ev, tLast)
			assert.Equal(t, tc.fatal, fatal)
		})
	}
}

// What the processor emits of such a record is a record of the contract:
// the object's fields as attributes, the note as body, and the state it
// decided (its name and counts), not the object's, is what is read back.
func TestEncodeEmittedOfK8sObjectsRecord(t *testing.T) {
	ld, err := k8sobjects.Watch(watch.Modified, fullCoreV1())
	require.NoError(t, err)
	rl := ld.ResourceLogs().At(0)
	lr := rl.ScopeLogs().At(0).LogRecords().At(0)
	ev, problems, found := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{})
	require.True(t, found)
	repaired, fatal := k8sevent.Sanitize(&ev, tLast)
	require.Zero(t, fatal)
	st := k8sevent.State{Name: "web-0.chosen", SeriesState: k8sevent.StateOngoing, Count: 12,
		First: tFirst.UnixNano(), Last: tObserved.UnixNano(), NewOccurrences: 5}
	k8sevent.EncodeEmitted(lr, &ev, problems|repaired, &st)

	assert.Equal(t, pcommon.ValueTypeStr, lr.Body().Type())
	assert.Equal(t, ev.Note, lr.Body().Str())
	assert.Equal(t, []string{"k8s.resource.name=Str:events", "event.domain=Str:k8s", "event.name=Str:web-0.18a2b3c4d5e6f708"},
		notContract(lr.Attributes()), "the receiver's own attributes stay")
	got, problems, found := k8sevent.Decode(pcommon.NewResource(), lr, k8sevent.DecodeOptions{})
	require.True(t, found)
	assert.Zero(t, problems)
	assert.Equal(t, "web-0.chosen", got.Name)
	assert.Empty(t, got.UID, "the source object's uid is not the written object's")
	assert.Equal(t, int64(12), got.SeriesCount)
	assert.Zero(t, got.Count, "series mode writes no legacy count")
	assert.Equal(t, int64(5), got.NewOccurrences)
	assert.Equal(t, ev.Regarding, got.Regarding)
	assert.Equal(t, ev.Reason, got.Reason)
	assert.Equal(t, k8sevent.TypeWarning, got.Type)
	assert.Equal(t, ev.ReportingController, got.ReportingController)
	assert.Equal(t, ev.SourceHost, got.SourceHost)
}
