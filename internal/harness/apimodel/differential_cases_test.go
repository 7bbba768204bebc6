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

func listCases() []diffCase {
	ctl := func(c string) func(*corev1.Event) {
		return func(e *corev1.Event) { e.ReportingController, e.Source.Component = c, "" }
	}
	create := func(name string, mut ...func(*corev1.Event)) step {
		return post("", "", corePath, coreEvent(name, mut...))
	}
	list := func(path, query string) step { return get("", "", path+"?"+query) }
	return []diffCase{
		{name: "field selectors", steps: []step{
			create("e1", func(e *corev1.Event) { e.Type = corev1.EventTypeWarning }),
			create("e2", func(e *corev1.Event) { e.Reason = "Killing"; e.InvolvedObject.Name = "web-2" }),
			create("e3", ctl("apimodel.test/ctl-{ns}")),
			create("e4", func(e *corev1.Event) { e.Labels = map[string]string{"tier": "db"} }),
			list(corePath, "fieldSelector=type%3DWarning"),
			list(corePath, "fieldSelector=type%21%3DWarning"),
			list(corePath, "fieldSelector=reason%3DKilling,involvedObject.name%3Dweb-2"),
			list(corePath, "fieldSelector=involvedObject.kind%3DPod,involvedObject.uid%3Dpod-uid-1,involvedObject.apiVersion%3Dv1"),
			list("/api/v1/events", "fieldSelector=reportingComponent%3Dapimodel.test/ctl-{ns}"),
			list(corePath, "fieldSelector=source%3Dapimodel.test/ctl-{ns}"),
			list(corePath, "fieldSelector=source%3Dkubelet"),
			list(corePath, "fieldSelector=metadata.name%3De2"),
			list(corePath, "fieldSelector=metadata.namespace%3D{ns}"),
			list(corePath, "fieldSelector=involvedObject.fieldPath%3D,involvedObject.resourceVersion%3D"),
			list(corePath, "fieldSelector=note%3Dx"),
			list(corePath, "fieldSelector=regarding.name%3Dweb-2"),
			list(corePath, "labelSelector=tier%3Ddb"),
			list(eventsPath, "fieldSelector=regarding.name%3Dweb-2,reason%3DKilling"),
			list(eventsPath, "fieldSelector=reportingController%3Dapimodel.test/ctl-{ns}"),
			list(eventsPath, "fieldSelector=regarding.kind%3DPod,regarding.namespace%3D{ns},regarding.uid%3Dpod-uid-1,type%3DWarning"),
			list(eventsPath, "fieldSelector=regarding.apiVersion%3Dv1,regarding.fieldPath%3D,regarding.resourceVersion%3D"),
			list(eventsPath, "fieldSelector=source%3Dkubelet"),
			list(eventsPath, "fieldSelector=involvedObject.name%3Dweb-2"),
			list(eventsPath, "fieldSelector=metadata.name%3De1"),
			list(eventsPath, "fieldSelector=bad selector"),
		}},
		{name: "pagination", steps: []step{
			create("p1"), create("p2"), create("p3"), create("p4"), create("p5"),
			step{label: "page1", method: "GET", path: corePath + "?limit=2"},
			create("p0"), // after the first page: not in the later ones
			step{label: "page2", method: "GET", path: corePath + "?limit=2&continue={continue:page1}"},
			step{label: "page3", method: "GET", path: corePath + "?limit=2&continue={continue:page2}"},
			list(corePath, "limit=2&fieldSelector=type%3DNormal"),
			list(eventsPath, "limit=4"),
			list(corePath, "limit=2&continue=garbage"),
			list(corePath, "limit=2&resourceVersion=1&continue={continue:page1}"),
			list(corePath, "resourceVersion={resourceVersion:page1}&resourceVersionMatch=Exact&limit=3"),
		}},
	}
}

func watchCases() []diffCase {
	return []diffCase{
		{name: "watch from a resourceVersion, both APIs", steps: []step{
			post("a", "", corePath, coreEvent("a")),
			watchFor(corePath+"?watch=1&resourceVersion={resourceVersion:a}", 5, 20*time.Second,
				post("", "", eventsPath, newEvent("b")),
				patch("", "", corePath+"/a", mergeType, `{"count":2}`),
				patch("", "", eventsPath+"/b", mergeType, `{"series":{"count":2,"lastObservedTime":"2026-01-02T03:05:05.000000Z"}}`),
				post("", "", "/api/v1/namespaces/{ns2}/events", coreEvent("other", func(e *corev1.Event) { e.InvolvedObject.Namespace = "{ns2}" })),
				del("", "", corePath+"/a"),
				del("", "", eventsPath+"/b"),
			),
			watchFor(eventsPath+"?watch=1&resourceVersion={resourceVersion:a}", 5, 20*time.Second),
			watchFor("/api/v1/events?watch=1&resourceVersion={resourceVersion:a}&fieldSelector=metadata.namespace%3D{ns2}", 1, 20*time.Second),
		}},
		{name: "watch with a field selector: in and out of it", steps: []step{
			post("a", "", corePath, coreEvent("a")),
			watchFor(corePath+"?watch=1&resourceVersion={resourceVersion:a}&fieldSelector=type%3DNormal", 3, 20*time.Second,
				patch("", "", corePath+"/a", mergeType, `{"type":"Warning"}`),
				patch("", "", corePath+"/a", mergeType, `{"count":3}`),
				patch("", "", corePath+"/a", mergeType, `{"type":"Normal"}`),
				post("", "", corePath, coreEvent("w", func(e *corev1.Event) { e.Type = corev1.EventTypeWarning })),
				post("", "", corePath, coreEvent("n")),
			),
		}},
		{name: "watch from now: the current objects first", steps: []step{
			post("a", "", corePath, coreEvent("a")),
			post("b", "", eventsPath, newEvent("b")),
			watchFor(corePath+"?watch=1", 3, 20*time.Second, post("", "", corePath, coreEvent("c"))),
			watchFor(eventsPath+"?watch=1&resourceVersion=0", 3, 20*time.Second),
			watchFor(corePath+"?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan", 4, 20*time.Second),
		}},
		{name: "no bookmarks: Events are not watch-cached", steps: []step{
			post("a", "", corePath, coreEvent("a")),
			watchFor(corePath+"?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion={resourceVersion:a}", 10, 20*time.Second,
				patch("", "", corePath+"/a", mergeType, `{"count":2}`)),
		}},
		{name: "bookmarks from an Events watch cache", eventsWatchCache: true, steps: []step{
			post("a", "", corePath, coreEvent("a")),
			watchFor(corePath+"?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion={resourceVersion:a}", 10, 20*time.Second,
				patch("b", "", corePath+"/a", mergeType, `{"count":2}`)),
			watchFor(corePath+"?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion={resourceVersion:b}", 10, 20*time.Second),
			watchFor(corePath+"?watch=1&timeoutSeconds=3&resourceVersion={resourceVersion:a}", 10, 20*time.Second),
		}},
		{name: "compaction: 410 for older resourceVersions", steps: []step{
			post("a", "", corePath, coreEvent("a")),
			post("b", "", corePath, coreEvent("b")),
			step{label: "page1", method: "GET", path: corePath + "?limit=1"},
			step{compact: true},
			watchFor(corePath+"?watch=1&resourceVersion={resourceVersion:a}", 1, 20*time.Second),
			get("", "", corePath+"?limit=1&continue={continue:page1}"),
			get("", "", corePath+"?resourceVersion={resourceVersion:a}&resourceVersionMatch=Exact"),
			watchFor(corePath+"?watch=1&timeoutSeconds=1&resourceVersion={resourceVersion:b}", 1, 20*time.Second,
				post("", "", corePath, coreEvent("c"))),
		}},
	}
}

func authCases() []diffCase {
	review := func(token string, audiences ...string) string {
		aud, _ := json.Marshal(audiences)
		return `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"` + token + `","audiences":` + string(aud) + `}}`
	}
	sar := func(spec string) string {
		return `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":` + spec + `}`
	}
	const trPath, sarPath = "/apis/authentication.k8s.io/v1/tokenreviews", "/apis/authorization.k8s.io/v1/subjectaccessreviews"
	return []diffCase{
		{name: "authentication and authorization answers", steps: []step{
			get("", asBadToken, corePath),
			get("", asAnonymous, corePath),
			get("", asAnonymous, "/readyz"),
			get("", asAnonymous, "/api"),
			get("", asNobody, corePath),
			get("", asNobody, "/api/v1/events"),
			get("", asNobody, corePath+"/x"),
			post("", asNobody, eventsPath, newEvent("x")),
			post("", asNobody, trPath, review("{token:writer}")),
			post("", asLimited, "/api/v1/namespaces/"+limitedNamespace+"/events", coreEvent("{ns}", func(e *corev1.Event) {
				e.InvolvedObject.Namespace = limitedNamespace
			})),
			get("", asLimited, "/api/v1/namespaces/"+limitedNamespace+"/events/{ns}"),
			del("", asLimited, "/api/v1/namespaces/"+limitedNamespace+"/events/{ns}"),
			post("", asLimited, corePath, coreEvent("x")),
			post("", asWriter, corePath, coreEvent("x")),
			get("", asWriter, "/readyz"),
			get("", asWriter, "/api/v1/namespaces/{ns}"),
		}},
		{name: "TokenReview", steps: []step{
			post("", "", trPath, review("{token:writer}")),
			post("", "", trPath, review("{token:writer}", "https://kubernetes.default.svc.cluster.local", "other")),
			post("", "", trPath, review("{token:writer}", "collector")),
			post("", "", trPath, review("{token:collector}")),
			post("", "", trPath, review("{token:collector}", "collector")),
			post("", "", trPath, review("{token:expired}")),
			post("", "", trPath, review("garbage")),
			post("", "", trPath, review("{token:admin}")),
			post("", "", trPath, review("{token:admin}", "collector")),
			post("", "", trPath, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}`),
			get("", "{token:collector}", corePath),
		}},
		{name: "SubjectAccessReview", steps: []step{
			post("", "", sarPath, sar(`{"user":"{user:writer}","resourceAttributes":{"namespace":"{ns}","verb":"create","resource":"events"}}`)),
			post("", "", sarPath, sar(`{"user":"{user:writer}","resourceAttributes":{"namespace":"{ns}","verb":"create","group":"events.k8s.io","resource":"events"}}`)),
			post("", "", sarPath, sar(`{"user":"{user:nobody}","resourceAttributes":{"namespace":"{ns}","verb":"create","resource":"events"}}`)),
			post("", "", sarPath, sar(`{"user":"{user:limited}","resourceAttributes":{"namespace":"`+limitedNamespace+`","verb":"create","resource":"events"}}`)),
			post("", "", sarPath, sar(`{"user":"{user:limited}","resourceAttributes":{"namespace":"{ns}","verb":"create","resource":"events"}}`)),
			post("", "", sarPath, sar(`{"user":"someone","groups":["system:masters"],"resourceAttributes":{"namespace":"{ns}","verb":"delete","resource":"pods"}}`)),
			post("", "", sarPath, sar(`{"resourceAttributes":{"namespace":"{ns}","verb":"create","resource":"events"}}`)),
			post("", "", sarPath, sar(`{"user":"{user:writer}"}`)),
		}},
	}
}

func otherCases() []diffCase {
	lease := func(mut string) string {
		return `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"leader"` + mut + `},"spec":{"holderIdentity":"a","leaseDurationSeconds":15}}`
	}
	return []diffCase{
		{name: "leases", steps: []step{
			get("", asWriter, leasesPath+"/leader"),
			post("l", asWriter, leasesPath, lease("")),
			post("", asWriter, leasesPath, lease("")),
			get("", asWriter, leasesPath+"/leader"),
			put("l2", asWriter, leasesPath+"/leader", lease(`,"resourceVersion":"{resourceVersion:l}"`)),
			put("", asWriter, leasesPath+"/leader", lease(`,"resourceVersion":"{resourceVersion:l}"`)),
			put("", asWriter, leasesPath+"/leader", lease("")),
			post("", asWriter, leasesPath, strings.Replace(lease(""), `"leaseDurationSeconds":15`, `"leaseDurationSeconds":0`, 1)),
		}},
		{name: "discovery and version", steps: []step{
			get("", "", "/apis/events.k8s.io"),
			get("", "", "/healthz"),
			get("", "", "/readyz"),
			get("", "", "/apis/nosuch.k8s.io/v1"),
		}},
	}
}
