package apimodel

// The differential test's cases: request sequences for every behaviour the
// model implements.

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	corePath    = "/api/v1/namespaces/{ns}/events"
	eventsPath  = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
	leasesPath  = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
	smpType     = "application/strategic-merge-patch+json"
	mergeType   = "application/merge-patch+json"
	jsonPatchTy = "application/json-patch+json"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// coreEvent is a core/v1 Event as client-go's record package writes one,
// changed by mut.
func coreEvent(name string, mut ...func(*corev1.Event)) string {
	ev := &corev1.Event{
		TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "{ns}", Name: "web-1", UID: "pod-uid-1", APIVersion: "v1"},
		Reason:         "Started", Message: "Started container web",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0), Count: 1, Type: corev1.EventTypeNormal,
	}
	for _, m := range mut {
		m(ev)
	}
	return mustJSON(ev)
}

// newEvent is an events.k8s.io/v1 Event as client-go's events package
// writes one, changed by mut.
func newEvent(name string, mut ...func(*eventsv1.Event)) string {
	ev := &eventsv1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta:          metav1.ObjectMeta{Name: name},
		EventTime:           metav1.NewMicroTime(t0.Add(123456 * time.Microsecond)),
		ReportingController: "apimodel.test/controller", ReportingInstance: "controller-1",
		Action: "Scheduling", Reason: "Scheduled", Note: "Scheduled web-1", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "{ns}", Name: "web-1", UID: "pod-uid-1", APIVersion: "v1"},
	}
	for _, m := range mut {
		m(ev)
	}
	return mustJSON(ev)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func diffCases() []diffCase {
	var cases []diffCase
	for _, group := range [][]diffCase{crudCases(), validationCases(), patchCases(), listCases(), watchCases(), authCases(), otherCases()} {
		cases = append(cases, group...)
	}
	return cases
}

func crudCases() []diffCase {
	return []diffCase{
		{name: "core create, read through both APIs", steps: []step{
			post("a", "", corePath, coreEvent("a", func(e *corev1.Event) {
				e.Labels = map[string]string{"app": "web"}
				e.Related = &corev1.ObjectReference{Kind: "Node", Name: "node-1"}
			})),
			get("", "", corePath+"/a"),
			get("", "", eventsPath+"/a"),
			post("", "", corePath, coreEvent("a")), // AlreadyExists
			get("", "", corePath+"/nope"),
			get("", "", eventsPath+"/nope"),
		}},
		{name: "events.k8s.io create, read through both APIs", steps: []step{
			post("b", "", eventsPath, newEvent("b", func(e *eventsv1.Event) {
				e.Series = &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Minute))}
				e.Related = &corev1.ObjectReference{Kind: "Node", Name: "node-1"}
			})),
			get("", "", eventsPath+"/b"),
			get("", "", corePath+"/b"),
			post("", "", eventsPath, newEvent("b")),
		}},
		{name: "protobuf bodies, as typed clients send them", steps: []step{
			{label: "p", method: http.MethodPost, path: corePath, ctype: protobufType, body: coreEvent("p")},
			{method: http.MethodPost, path: eventsPath, ctype: protobufType, body: newEvent("q")},
			{method: http.MethodPost, path: eventsPath, ctype: protobufType, body: newEvent("bad", func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} })},
			{method: http.MethodPut, path: corePath + "/p", ctype: protobufType, body: coreEvent("p", func(e *corev1.Event) {
				e.ResourceVersion, e.Count = "{resourceVersion:p}", 2
			})},
			{method: http.MethodDelete, path: eventsPath + "/q", ctype: protobufType,
				body: `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":"6c1a3bd4-0000-4000-8000-000000000000"}}`},
			{method: http.MethodPost, path: "/apis/authentication.k8s.io/v1/tokenreviews", ctype: protobufType,
				body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"{token:writer}"}}`},
			{method: http.MethodPost, path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", ctype: protobufType,
				body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"{user:nobody}","resourceAttributes":{"namespace":"{ns}","verb":"create","resource":"events"}}}`},
			get("", "", corePath),
		}},
		{name: "generateName", steps: []step{
			post("g", "", corePath, coreEvent("", func(e *corev1.Event) { e.GenerateName = "web-1." })),
			post("", "", eventsPath, newEvent("", func(e *eventsv1.Event) { e.GenerateName = "web-1." })),
		}},
		{name: "namespaces: missing, mismatched", steps: []step{
			post("", "", "/api/v1/namespaces/{missing}/events", coreEvent("a")),
			post("", "", "/apis/events.k8s.io/v1/namespaces/{missing}/events", newEvent("a")),
			post("", "", corePath, coreEvent("a", func(e *corev1.Event) { e.Namespace = "{ns2}" })),
			post("", "", eventsPath, newEvent("a", func(e *eventsv1.Event) { e.Namespace = "{ns2}" })),
			get("", "", "/api/v1/namespaces/{ns}"),
			get("", "", "/api/v1/namespaces/{missing}"),
			post("", "", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"{ns}"}}`),
			post("", "", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"Bad_Namespace"}}`),
		}},
		{name: "update and delete", steps: []step{
			post("a", "", corePath, coreEvent("a")),
			put("a2", "", corePath+"/a", coreEvent("a", func(e *corev1.Event) {
				e.ResourceVersion, e.Count, e.Message = "{resourceVersion:a}", 2, "again"
			})),
			put("", "", corePath+"/a", coreEvent("a", func(e *corev1.Event) { e.ResourceVersion, e.Count = "{resourceVersion:a}", 3 })), // stale
			put("", "", corePath+"/a", coreEvent("a", func(e *corev1.Event) { e.Count = 4 })),                                           // unconditional
			put("", "", corePath+"/a", coreEvent("a", func(e *corev1.Event) { e.Count = 4 })),                                           // no change
			put("", "", corePath+"/other", coreEvent("a")),                                                                              // name mismatch
			put("", "", corePath+"/c", coreEvent("c")),                                                                                  // creates
			put("", "", eventsPath+"/a", newEvent("a")),                                                                                 // strict update: immutable fields
			del("", "", corePath+"/a"),
			get("", "", corePath+"/a"),
			del("", "", eventsPath+"/a"),
			del("", "", eventsPath+"/c"),
			put("", "", "/api/v1/namespaces/{missing}/events/m", coreEvent("m")),
			post("", "", corePath, coreEvent("rv", func(e *corev1.Event) { e.ResourceVersion = "5" })),
			post("d", "", corePath, coreEvent("d")),
			step{method: http.MethodDelete, path: corePath + "/d", ctype: "application/json",
				body: `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"resourceVersion":"1"}}`},
			step{method: http.MethodDelete, path: corePath + "/d", ctype: "application/json",
				body: `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":"6c1a3bd4-0000-4000-8000-000000000000"}}`},
			step{method: http.MethodDelete, path: corePath + "/d", ctype: "application/json",
				body: `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":"{uid:d}","resourceVersion":"{resourceVersion:d}"}}`},
		}},
	}
}

func validationCases() []diffCase {
	long := strings.Repeat("x", 1025)
	core := func(mut func(*corev1.Event)) step { return post("", "", corePath, coreEvent("v", mut)) }
	ev := func(mut func(*eventsv1.Event)) step { return post("", "", eventsPath, newEvent("v", mut)) }
	withTime := func(e *corev1.Event) { e.EventTime = metav1.NewMicroTime(t0) }
	return []diffCase{
		{name: "core/v1 validation", steps: []step{
			core(func(e *corev1.Event) { e.Name = "" }),
			core(func(e *corev1.Event) { e.Name = "a/b" }),
			core(func(e *corev1.Event) { e.Name = "Bad_Name" }), // core/v1 takes it
			core(func(e *corev1.Event) { e.InvolvedObject.Namespace = "{ns2}" }),
			core(func(e *corev1.Event) { e.InvolvedObject.Namespace = "" }),
			core(func(e *corev1.Event) { e.Name = "v2"; e.Message = long }), // no eventTime: no limit
			core(func(e *corev1.Event) { withTime(e); e.Name = "v3" }),      // eventTime: the new fields are required
			core(func(e *corev1.Event) {
				withTime(e)
				e.Name, e.Message, e.Action, e.ReportingController, e.ReportingInstance = "v4", long, "Act", "Bad Controller!", strings.Repeat("i", 129)
			}),
			core(func(e *corev1.Event) {
				withTime(e)
				e.Name, e.Action, e.ReportingController, e.ReportingInstance = "v5", "Act", "apimodel.test/c", "i"
				e.Series = &corev1.EventSeries{Count: 1}
			}),
		}},
		{name: "events.k8s.io/v1 validation", steps: []step{
			ev(func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} }),
			ev(func(e *eventsv1.Event) {
				e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(t0)}
			}),
			ev(func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{Count: 2} }),
			ev(func(e *eventsv1.Event) { e.ReportingController = "Bad Controller!" }),
			ev(func(e *eventsv1.Event) {
				e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
			}),
			ev(func(e *eventsv1.Event) { e.Note = long }),
			ev(func(e *eventsv1.Event) { e.Type = "Error" }),
			ev(func(e *eventsv1.Event) { e.Name = "Bad_Name" }),
			ev(func(e *eventsv1.Event) { e.Regarding.Namespace = "" }),
			ev(func(e *eventsv1.Event) {
				e.DeprecatedCount, e.DeprecatedSource = 2, corev1.EventSource{Component: "c"}
				e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp = metav1.NewTime(t0), metav1.NewTime(t0)
			}),
			ev(func(e *eventsv1.Event) { e.Action = strings.Repeat("a", 129); e.Reason = strings.Repeat("r", 129) }),
			ev(func(e *eventsv1.Event) { e.Name = "ok" }),
		}},
	}
}

func patchCases() []diffCase {
	seriesSMP := `{"series":{"count":4,"lastObservedTime":"2026-01-02T03:09:05.000000Z"}}`
	return []diffCase{
		{name: "core/v1 patches", steps: []step{
			post("a", "", corePath, coreEvent("a")),
			patch("", "", corePath+"/a", smpType, `{"count":2,"lastTimestamp":"2026-01-02T03:05:05Z","message":"twice"}`),
			patch("", "", corePath+"/a", mergeType, `{"count":3,"metadata":{"labels":{"k":"v"}}}`),
			patch("", "", corePath+"/a", jsonPatchTy, `[{"op":"replace","path":"/count","value":4}]`),
			patch("", "", corePath+"/a", jsonPatchTy, `[{"op":"test","path":"/count","value":1}]`),
			patch("", "", corePath+"/a", jsonPatchTy, `[{"op":"replace","path":"/nosuch/field","value":1}]`),
			patch("", "", corePath+"/a", mergeType, `{"metadata":{"resourceVersion":"{resourceVersion:a}"},"count":5}`), // stale
			patch("", "", corePath+"/a", mergeType, `{"count":4}`),                                                      // no change
			patch("", "", corePath+"/a", mergeType, `{"involvedObject":{"namespace":"{ns2}"}}`),
			patch("", "", corePath+"/a", mergeType, `{"metadata":{"name":"b"}}`),
			patch("", "", corePath+"/a", mergeType, `not json`),
			patch("", "", corePath+"/a", smpType, `not json`),
			patch("", "", corePath+"/nope", smpType, `{"count":2}`),
			patch("", "", corePath+"/nope", mergeType, `{"count":2}`),
			patch("", "", corePath+"/nope", jsonPatchTy, `[{"op":"replace","path":"/count","value":2}]`),
			patch("", "", eventsPath+"/a", mergeType, seriesSMP), // a core Event patched through events.k8s.io
		}},
		{name: "events.k8s.io/v1 patches", steps: []step{
			post("b", "", eventsPath, newEvent("b")),
			patch("", "", eventsPath+"/b", smpType, `{"series":{"count":2,"lastObservedTime":"2026-01-02T03:05:05.000000Z"}}`),
			patch("", "", eventsPath+"/b", mergeType, seriesSMP),
			patch("", "", eventsPath+"/b", jsonPatchTy, `[{"op":"replace","path":"/series/count","value":5}]`),
			patch("", "", eventsPath+"/b", mergeType, `{"series":{"count":1}}`),
			patch("", "", eventsPath+"/b", mergeType, `{"note":"changed"}`),
			patch("", "", eventsPath+"/b", smpType, `{"reportingController":"other.test/c","type":"Warning"}`),
			patch("", "", eventsPath+"/b", mergeType, `{"metadata":{"resourceVersion":"{resourceVersion:b}"},"series":{"count":6}}`),
			patch("", "", eventsPath+"/nope", smpType, seriesSMP),
			patch("", "", corePath+"/b", mergeType, `{"count":7,"message":"through core"}`), // legacy validation only
			get("", "", eventsPath+"/b"),
		}},
	}
}
