package recorder

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
	return clientGoLegacyEventFrom(t, "test-0", call)
}

// clientGoLegacyEventFrom is clientGoLegacyEvent with host as the
// recorder's EventSource.Host.
func clientGoLegacyEventFrom(t *testing.T, host string, call func(record.EventRecorder)) *corev1.Event {
	t.Helper()
	b := record.NewBroadcaster()
	defer b.Shutdown()
	got := make(chan *corev1.Event, 1)
	b.StartEventWatcher(func(ev *corev1.Event) { got <- ev })
	call(b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "example.com/test-controller", Host: host}))
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
	return recordWith(t, nil, call)
}

// recordWith is recordOf with Options changed by mod.
func recordWith(t *testing.T, mod func(*Options), call func(r *Recorder)) sdklog.Record {
	t.Helper()
	exp := &memExporter{}
	r := newTestRecorder(t, exp, mod)
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
// tools/record recorder carries, per the contract (docs/contract.md),
// what client-go's own recorder puts in its core/v1 Event on the same input.
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

// TestSourceHostMatchesClientGo: with SourceHost set, as a node agent
// sets client-go's EventSource.Host, a tools/record record carries the
// source host under the contract's key and reports it as the instance,
// as client-go's core/v1 Event does; a tools/events record carries no
// source, as client-go's events.k8s.io Event has no deprecatedSource.
func TestSourceHostMatchesClientGo(t *testing.T) {
	pod := testPod("web-3")
	want := clientGoLegacyEventFrom(t, "node-7", func(rec record.EventRecorder) {
		rec.Event(pod, corev1.EventTypeNormal, "Pulled", "pulled")
	})
	onNode := func(o *Options) { o.SourceHost = "node-7" }
	legacy := recordWith(t, onNode, func(r *Recorder) {
		r.LegacyRecorder(nil, "").Event(pod, corev1.EventTypeNormal, "Pulled", "pulled")
	})
	got := attrs(&legacy)
	if want.Source.Host != "node-7" || got[AttrSourceHost] != want.Source.Host || got[AttrReportingInstance] != want.ReportingInstance {
		t.Errorf("source host %q, instance %q; client-go's source %+v, instance %q",
			got[AttrSourceHost], got[AttrReportingInstance], want.Source, want.ReportingInstance)
	}
	if _, ok := got["k8s.node.name"]; ok {
		t.Errorf("k8s.node.name written: the contract's key for the source host is %s", AttrSourceHost)
	}
	wantNew := clientGoEventsEvent(t, func(rec events.EventRecorder) {
		rec.Eventf(pod, nil, corev1.EventTypeNormal, "Pulled", "Pull", "pulled")
	})
	newer := recordWith(t, onNode, func(r *Recorder) {
		r.EventsRecorder(nil, "").Eventf(pod, nil, corev1.EventTypeNormal, "Pulled", "Pull", "pulled")
	})
	gotNew := attrs(&newer)
	if v, ok := gotNew[AttrSourceHost]; ok || wantNew.DeprecatedSource.Host != "" {
		t.Errorf("tools/events record has source host %q; client-go's deprecatedSource %+v", v, wantNew.DeprecatedSource)
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

// contractTableKeys reads the attribute keys of the log-record contract's
// tables (docs/contract.md, section Attributes): each backticked key of a
// row, where ".name" continues the key before it (`k8s.event.related.kind`,
// `.name`).
func contractTableKeys(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "## Attributes")
	if !ok {
		t.Fatal("docs/contract.md has no Attributes section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	keys := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		prefix := ""
		for i, part := range strings.Split(line, "`") {
			if i%2 == 0 {
				continue
			}
			if strings.HasPrefix(part, ".") && prefix != "" {
				part = prefix + part
			} else if dot := strings.LastIndex(part, "."); dot > 0 {
				prefix = part[:dot]
			}
			keys[part] = true
		}
	}
	return keys
}

// TestRecordsCarryOnlyContractKeys: every attribute a record can carry
// (both recorders, related object, source host) is a key of the contract's
// table (docs/contract.md), but the annotations, which the codec passes by.
func TestRecordsCarryOnlyContractKeys(t *testing.T) {
	table := contractTableKeys(t)
	exp := &memExporter{}
	r := newTestRecorder(t, exp, func(o *Options) { o.SourceHost = "node-1" })
	pod := testPod("p")
	rel := &corev1.ObjectReference{Kind: "Node", Name: "node-1", Namespace: "x", UID: "u", APIVersion: "v1", FieldPath: "f", ResourceVersion: "9"}
	podRef := &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "p", UID: "u", APIVersion: "v1", FieldPath: "spec.containers{c}", ResourceVersion: "1"}
	r.LegacyRecorder(nil, "").AnnotatedEventf(podRef, map[string]string{"a": "b"}, corev1.EventTypeNormal, "R", "n")
	r.EventsRecorder(nil, "").Eventf(pod, rel, corev1.EventTypeWarning, "R", "A", "n")
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, rec := range exp.got() {
		for k := range attrs(&rec) {
			if strings.HasPrefix(k, AnnotationPrefix) {
				continue
			}
			seen++
			if !table[k] {
				t.Errorf("attribute %q is not in docs/contract.md's Attributes table", k)
			}
		}
	}
	if seen < 25 || !table["k8s.event.related.resource_version"] {
		t.Fatalf("%d attributes checked, table keys %v: the check would be empty", seen, table)
	}
}
