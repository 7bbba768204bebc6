package eventseriesprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestEmittedResourceNamesItsObject: records about different objects that
// arrive in one input resource (an app's, which names the app's own pod and
// node) go out each on a resource naming its regarding object, as contrib's
// k8s_events receiver and the semantic conventions place it, so that
// k8sattributes associates the Event with that object; every record's
// source host reads back as it came, also for a Node's Event, whose
// resource k8s.node.name is now the Node's name; timer records too.
func TestEmittedResourceNamesItsObject(t *testing.T) {
	node := k8sevent.Event{
		Type: k8sevent.TypeWarning, Reason: "NodeNotReady", Note: "x",
		Regarding:       k8sevent.ObjectRef{Kind: "Node", Name: "n7", UID: "uid-n7", APIVersion: "v1"},
		SourceComponent: "node-controller", ReportingController: "node-controller", ReportingInstance: "cp-1",
	}
	dep := k8sevent.Event{
		Type: k8sevent.TypeNormal, Reason: "ScalingReplicaSet", Note: "y",
		Regarding:           k8sevent.ObjectRef{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "uid-web", APIVersion: "apps/v1"},
		ReportingController: "deployment-controller", ReportingInstance: "cp-1", SourceComponent: "deployment-controller",
	}
	// a's series is open at shutdown, which writes its count: a timer record.
	in := []k8sevent.Event{podEvent("a", "BackOff", "x"), node, podEvent("a", "BackOff", "x"), dep, podEvent("b", "Pulled", "z"),
		podEvent("a", "BackOff", "x")}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "app")
	rl.Resource().Attributes().PutStr("k8s.pod.name", "the-sender")
	rl.Resource().Attributes().PutStr(k8sevent.AttrNodeName, "node-of-sender")
	sl := rl.ScopeLogs().AppendEmpty()
	for i := range in {
		in[i].Time = t0.Add(time.Duration(i) * time.Second)
		k8sevent.Encode(&in[i], sl.LogRecords().AppendEmpty())
	}
	// The source host each object's records came with, as the codec reads
	// it: the deployment's record has none, and the resource's
	// k8s.node.name is read for it (the legacy place).
	hosts := map[string]string{}
	for i := range in {
		ev, _, _ := k8sevent.Decode(rl.Resource(), sl.LogRecords().At(i), k8sevent.DecodeOptions{})
		hosts[ev.Regarding.Name] = ev.SourceHost
	}
	require.Equal(t, map[string]string{"a": "node-1", "b": "node-1", "n7": "", "web": "node-of-sender"}, hosts)

	h := newHarnessWith(t, eventTime, func() time.Time { return t0.Add(time.Hour) }, &faultSink{})
	h.consume(ld)
	h.shutdown()
	recs := h.records()
	require.GreaterOrEqual(t, len(recs), len(in))
	timers := 0
	for _, r := range recs {
		ev := r.event(t)
		res := r.res.Attributes().AsRaw()
		assert.Equal(t, ev.Regarding.Name, res[k8sevent.AttrObjectName])
		assert.Equal(t, ev.Regarding.Kind, res[k8sevent.AttrObjectKind])
		assert.Equal(t, ev.Regarding.UID, res[k8sevent.AttrObjectUID])
		if !r.fromTimer() {
			assert.Equal(t, "app", res["service.name"], "the input resource's other keys stay")
		} else {
			timers++
		}
		switch ev.Regarding.Kind {
		case "Pod":
			assert.Equal(t, ev.Regarding.Name, res["k8s.pod.name"])
			assert.Equal(t, ev.Regarding.UID, res["k8s.pod.uid"])
			assert.Equal(t, "ns", res[k8sevent.AttrNamespace])
			assert.NotContains(t, res, k8sevent.AttrNodeName, "the sender's node is not the Pod's")
		case "Node":
			assert.Equal(t, "n7", res[k8sevent.AttrNodeName])
			assert.Equal(t, "uid-n7", res["k8s.node.uid"])
			assert.NotContains(t, res, "k8s.pod.name")
		case "Deployment":
			assert.Equal(t, "web", res["k8s.deployment.name"])
			assert.NotContains(t, res, "k8s.pod.name")
		}
		assert.Equal(t, hosts[ev.Regarding.Name], ev.SourceHost, "%s: source host", ev.Regarding.Name)
	}
	assert.Positive(t, timers, "a timer record was checked too")
}

// TestOnlyRecordMovesWithItsResourceLogs: the only record of a ResourceLogs
// goes out with its ResourceLogs moved whole (no copy of its resource, which
// names the object as contrib's receiver places it); a record that shares
// its ResourceLogs with another goes out through a copy of the resource.
// Both ways write the same resource, schema URLs, scope and record.
func TestOnlyRecordMovesWithItsResourceLogs(t *testing.T) {
	type out struct {
		res, attrs                   map[string]any
		scope, version, rlURL, slURL string
		body                         string
		ts                           time.Time
	}
	run := func(withLogLine bool) out {
		ev := podEvent("web-0", "BackOff", "Back-off restarting")
		ev.Regarding.FieldPath = "spec.containers{app}"
		ev.Name, ev.UID, ev.Time, ev.FirstTimestamp = "web-0.17f0", "event-uid", t0, t0
		ld := contribRecord(ev)
		rl := ld.ResourceLogs().At(0)
		rl.SetSchemaUrl("https://example.com/resource")
		rl.Resource().Attributes().PutStr("service.name", "app")
		rl.Resource().Attributes().PutStr(k8sevent.AttrSeriesState, "ongoing") // owned: stripped
		sl := rl.ScopeLogs().At(0)
		sl.SetSchemaUrl("https://example.com/scope")
		sl.Scope().SetName("k8s_events")
		sl.Scope().SetVersion("1.2.3")
		if withLogLine {
			// a second record: the resource is copied, not moved (this one
			// reads as an Event record without a reason, and is dropped)
			sl.LogRecords().AppendEmpty().Body().SetStr("a log line")
		}
		h := newHarness(t, eventTime)
		h.consume(ld)
		var got []out
		for _, ld := range h.sink.AllLogs() {
			for i := range ld.ResourceLogs().Len() {
				orl := ld.ResourceLogs().At(i)
				osl := orl.ScopeLogs().At(0)
				lr := osl.LogRecords().At(0)
				if lr.EventName() != k8sevent.EventName {
					continue
				}
				require.Equal(t, 1, osl.LogRecords().Len())
				got = append(got, out{res: orl.Resource().Attributes().AsRaw(), attrs: lr.Attributes().AsRaw(),
					scope: osl.Scope().Name(), version: osl.Scope().Version(), rlURL: orl.SchemaUrl(),
					slURL: osl.SchemaUrl(), body: lr.Body().Str(), ts: lr.Timestamp().AsTime()})
			}
		}
		require.Len(t, got, 1, "one Event record emitted")
		return got[0]
	}
	moved, copied := run(false), run(true)
	assert.Equal(t, copied, moved)
	assert.Equal(t, "app", moved.res["service.name"])
	assert.Equal(t, "web-0", moved.res["k8s.pod.name"])
	assert.Equal(t, "app", moved.res[k8sevent.AttrContainerName])
	assert.NotContains(t, moved.res, k8sevent.AttrSeriesState)
	assert.NotContains(t, moved.res, k8sevent.AttrNodeName, "the source host goes on the record")
	assert.Equal(t, "node-1", moved.attrs[k8sevent.AttrSourceHost])
	assert.Equal(t, "k8s_events", moved.scope)
	assert.Equal(t, "https://example.com/resource", moved.rlURL)
}
