// Package k8sobjects builds the log records of contrib's k8sobjects receiver
// (v0.151.0, unstructured_to_logdata.go) for tests: the object as its
// dynamic client decodes it (JSON into unstructured: strings, int64,
// float64, null), put whole into the body; in watch mode the watch event
// {"type", "object"} around it, with event.domain and event.name on the
// record. One ResourceLogs per namespace of the Event objects, with
// k8s.namespace.name (the object's own namespace) on the resource and
// k8s.resource.name on every record; no timestamp, no severity.
package k8sobjects

import (
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// ScopeName is the receiver's instrumentation scope.
const ScopeName = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/k8sobjectsreceiver"

// Object is obj as the receiver's dynamic client hands it over: its JSON
// decoded into unstructured, apiVersion and kind set (an API server's watch
// events and list items carry them).
func Object(obj runtime.Object) (map[string]any, error) {
	obj = obj.DeepCopyObject()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("kind of %T: %w", obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", obj, err)
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode %T: %w", obj, err)
	}
	return u.Object, nil
}

// Watch is the receiver's output for one watch event (watch mode) of obj.
func Watch(typ watch.EventType, obj runtime.Object) (plog.Logs, error) {
	o, err := Object(obj)
	if err != nil {
		return plog.Logs{}, err
	}
	u := unstructured.Unstructured{Object: o}
	return Logs(map[string]any{"type": string(typ), "object": o}, u.GetNamespace(), func(attrs pcommon.Map) {
		if name := u.GetName(); name != "" {
			attrs.PutStr("event.domain", "k8s")
			attrs.PutStr("event.name", name)
		}
	}), nil
}

// Pull is the receiver's output for one pull (pull mode) that listed objs.
func Pull(objs ...runtime.Object) (plog.Logs, error) {
	out := plog.NewLogs()
	for _, obj := range objs {
		o, err := Object(obj)
		if err != nil {
			return plog.Logs{}, err
		}
		u := unstructured.Unstructured{Object: o}
		Logs(o, u.GetNamespace(), nil).ResourceLogs().MoveAndAppendTo(out.ResourceLogs())
	}
	return groupByNamespace(out), nil
}

// Logs is one record with body as the receiver writes it, in namespace ns
// (none: ""), its record attributes completed by attrs (nil: none).
func Logs(body map[string]any, ns string, attrs func(pcommon.Map)) plog.Logs {
	out := plog.NewLogs()
	rl := out.ResourceLogs().AppendEmpty()
	if ns != "" {
		rl.Resource().Attributes().PutStr("k8s.namespace.name", ns)
	}
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(ScopeName)
	sl.Scope().SetVersion("0.151.0")
	lr := sl.LogRecords().AppendEmpty()
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	lr.Attributes().PutStr("k8s.resource.name", "events")
	if attrs != nil {
		attrs(lr.Attributes())
	}
	// FromRaw takes what unstructured holds; its error (a type it does not
	// know) the receiver ignores too.
	_ = lr.Body().SetEmptyMap().FromRaw(body)
	return out
}

// groupByNamespace puts the records of one namespace under one resource,
// in the order the namespaces first appear, as the receiver does.
func groupByNamespace(in plog.Logs) plog.Logs {
	out := plog.NewLogs()
	byNS := map[string]plog.LogRecordSlice{}
	for _, rl := range in.ResourceLogs().All() {
		ns := ""
		if v, ok := rl.Resource().Attributes().Get("k8s.namespace.name"); ok {
			ns = v.Str()
		}
		dst, ok := byNS[ns]
		if !ok {
			outRL := out.ResourceLogs().AppendEmpty()
			rl.Resource().CopyTo(outRL.Resource())
			sl := outRL.ScopeLogs().AppendEmpty()
			rl.ScopeLogs().At(0).Scope().CopyTo(sl.Scope())
			dst = sl.LogRecords()
			byNS[ns] = dst
		}
		rl.ScopeLogs().At(0).LogRecords().MoveAndAppendTo(dst)
	}
	return out
}
