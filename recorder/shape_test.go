package recorder

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// clientGoLegacyEvent is what client-go's own tools/record recorder makes
// of one Eventf call on the same input (read off its broadcaster).
func clientGoLegacyEvent(t *testing.T, call func(record.EventRecorder)) *corev1.Event {
	t.Helper()
	b := record.NewBroadcaster()
	defer b.Shutdown()
	got := make(chan *corev1.Event, 1)
	b.StartEventWatcher(func(ev *corev1.Event) { got <- ev })
	call(b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "example.com/test-controller", Host: "test-0"}))
	return <-got
}

// clientGoEventsEvent is what client-go's tools/events recorder makes of
// one Eventf call.
func clientGoEventsEvent(t *testing.T, call func(events.EventRecorder)) *eventsv1.Event {
	t.Helper()
	b := events.NewBroadcaster(nil)
	defer b.Shutdown()
	got := make(chan *eventsv1.Event, 1)
	if _, err := b.StartEventWatcher(func(o runtime.Object) { got <- o.(*eventsv1.Event) }); err != nil {
		t.Fatal(err)
	}
	call(b.NewRecorder(scheme.Scheme, "example.com/test-controller"))
	return <-got
}

// recordOf is the one record our recorder sends for one call.
func recordOf(t *testing.T, call func(r *Recorder)) sdklog.Record {
	t.Helper()
	exp := &memExporter{}
	r := newTestRecorder(t, exp, nil)
	call(r)
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := exp.got()
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	return recs[0]
}

// TestLegacyRecordMatchesClientGo: an AnnotatedEventf through our
// tools/record recorder carries, per the README's contract table, what
// client-go's own recorder puts in its core/v1 Event on the same input.
func TestLegacyRecordMatchesClientGo(t *testing.T) {
	pod := testPod("web-1")
	ann := map[string]string{"example.com/run": "7"}
	before := time.Now()
	want := clientGoLegacyEvent(t, func(rec record.EventRecorder) {
		rec.AnnotatedEventf(pod, ann, corev1.EventTypeWarning, "BackOff", "Back-off %d", 3)
	})
	got := recordOf(t, func(r *Recorder) {
		r.LegacyRecorder(nil, "").AnnotatedEventf(pod, ann, corev1.EventTypeWarning, "BackOff", "Back-off %d", 3)
	})
	wantRun := want.Annotations["example.com/run"]
	// client-go keeps the caller's map in its Event: a change after the
	// call shows in the Event. Ours copies it, so the record keeps "7".
	ann["example.com/run"] = "changed after the call"

	if got.EventName() != EventName || EventName != "k8s.event" {
		t.Errorf("event name %q", got.EventName())
	}
	if got.Body().Emit() != want.Message || got.SeverityText() != want.Type || got.Severity() != log.SeverityWarn {
		t.Errorf("body %q severity %q/%v; client-go message %q type %q", got.Body().Emit(), got.SeverityText(), got.Severity(), want.Message, want.Type)
	}
	if got.Timestamp().Before(before) || got.Timestamp().After(time.Now()) {
		t.Errorf("timestamp %v not the call's time", got.Timestamp())
	}
	o := want.InvolvedObject
	wantAttrs := map[string]string{
		AttrReason: want.Reason, AttrNamespace: o.Namespace, AttrObjectKind: o.Kind, AttrObjectName: o.Name,
		AttrObjectUID: string(o.UID), AttrObjectAPIVersion: o.APIVersion, AttrObjectResourceVer: o.ResourceVersion,
		AttrReportingController: want.ReportingController, AttrReportingInstance: want.ReportingInstance,
		AttrSourceComponent:                  want.Source.Component,
		AnnotationPrefix + "example.com/run": wantRun,
	}
	if a := attrs(&got); !equalMaps(a, wantAttrs) {
		t.Errorf("attributes\n got %v\nwant %v", a, wantAttrs)
	}
	if o.Kind != "Pod" || o.APIVersion != "v1" || wantRun != "7" {
		t.Fatalf("client-go's reference %+v annotations %v: the comparison would be empty", o, want.Annotations)
	}
}

// TestEventsRecordMatchesClientGo: Eventf through our tools/events
// recorder carries what client-go's events.k8s.io Event holds, the related
// object and the action included.
func TestEventsRecordMatchesClientGo(t *testing.T) {
	pod, node := testPod("web-2"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-node-1"}}
	want := clientGoEventsEvent(t, func(rec events.EventRecorder) {
		rec.Eventf(pod, node, corev1.EventTypeNormal, "Scheduled", "Binding", "assigned %s to %s", "shop/web-2", "node-1")
	})
	got := recordOf(t, func(r *Recorder) {
		r.EventsRecorder(nil, "").Eventf(pod, node, corev1.EventTypeNormal, "Scheduled", "Binding", "assigned %s to %s", "shop/web-2", "node-1")
	})
	if got.Body().Emit() != want.Note || got.SeverityText() != want.Type || got.Severity() != log.SeverityInfo || got.EventName() != EventName {
		t.Errorf("body %q severity %q/%v name %q; client-go note %q type %q", got.Body().Emit(), got.SeverityText(), got.Severity(), got.EventName(), want.Note, want.Type)
	}
	o, rel := want.Regarding, want.Related
	wantAttrs := map[string]string{
		AttrReason: want.Reason, AttrAction: want.Action, AttrNamespace: o.Namespace, AttrObjectKind: o.Kind,
		AttrObjectName: o.Name, AttrObjectUID: string(o.UID), AttrObjectAPIVersion: o.APIVersion, AttrObjectResourceVer: o.ResourceVersion,
		AttrRelatedKind: rel.Kind, AttrRelatedName: rel.Name, AttrRelatedUID: string(rel.UID), AttrRelatedAPIVersion: rel.APIVersion,
		AttrReportingController: want.ReportingController,
		// client-go makes the instance "<controller>-<hostname>" and lets no
		// caller choose it; ours is Options.ReportingInstance.
		AttrReportingInstance: "test-0",
	}
	if a := attrs(&got); !equalMaps(a, wantAttrs) {
		t.Errorf("attributes\n got %v\nwant %v", a, wantAttrs)
	}
}

// TestClusterScopedObjectWritesEmptyNamespace: a Node's event names no
// namespace, and says so, so that the resource's k8s.namespace.name (an
// app's own pod namespace) cannot stand in for it.
func TestClusterScopedObjectWritesEmptyNamespace(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	got := recordOf(t, func(r *Recorder) { r.LegacyRecorder(nil, "").Event(node, corev1.EventTypeNormal, "NodeReady", "ready") })
	v, ok := attrs(&got)[AttrNamespace]
	if !ok || v != "" {
		t.Errorf("k8s.namespace.name = %q (present %v), want present and empty", v, ok)
	}
}

// TestInvalidCallsRefusedLikeClientGo: no object, or a type client-go
// refuses, is counted and sends nothing.
func TestInvalidCallsRefusedLikeClientGo(t *testing.T) {
	exp := &memExporter{}
	r := newTestRecorder(t, exp, nil)
	r.LegacyRecorder(nil, "").Event(testPod("a"), "Bogus", "Reason", "x")
	r.EventsRecorder(nil, "").Eventf(nil, nil, corev1.EventTypeNormal, "Reason", "Act", "x")
	r.LegacyRecorder(nil, "").Event(&struct{ corev1.Pod }{}, corev1.EventTypeNormal, "Reason", "x") // kind not in the scheme
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := r.Stats()
	if s.Invalid != 3 || s.Accepted != 0 || len(exp.got()) != 0 {
		t.Errorf("stats %+v, %d records; want 3 invalid, nothing sent", s, len(exp.got()))
	}
	checkAccounting(t, s)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
