package apimodel

// More of the differential test's cases: lists, watches, authentication
// and authorization, leases, discovery.

import (
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
		{name: "namespaces: a watch sees the current one, then one created", steps: []step{
			get("a", "", "/api/v1/namespaces/{ns}"),
			watchFor("/api/v1/namespaces?watch=1&fieldSelector=metadata.name%3D{ns}", 1, 20*time.Second),
			watchFor("/api/v1/namespaces?watch=1&fieldSelector=metadata.name%3D{missing}&resourceVersion={resourceVersion:a}", 1, 20*time.Second,
				post("", "", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"{missing}"}}`)),
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
		{name: "a resourceVersion not reached yet", steps: []step{
			get("", "", corePath+"?resourceVersion=99999999"),
			get("", "", corePath+"?resourceVersion=99999999&resourceVersionMatch=Exact"),
			get("", "", corePath+"?resourceVersion=99999999&resourceVersionMatch=NotOlderThan"),
			watchFor(corePath+"?watch=1&timeoutSeconds=1&resourceVersion=99999999", 1, 20*time.Second,
				post("", "", corePath, coreEvent("before"))),
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
	ssar := func(spec string) string {
		return `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":` + spec + `}`
	}
	const trPath, sarPath = "/apis/authentication.k8s.io/v1/tokenreviews", "/apis/authorization.k8s.io/v1/subjectaccessreviews"
	const ssarPath = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
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
		{name: "SelfSubjectAccessReview", steps: []step{
			post("", asWriter, ssarPath, ssar(`{"resourceAttributes":{"namespace":"{ns}","verb":"create","resource":"events"}}`)),
			post("", asWriter, ssarPath, ssar(`{"resourceAttributes":{"namespace":"{ns}","verb":"create","group":"events.k8s.io","resource":"events"}}`)),
			post("", asWriter, ssarPath, ssar(`{"resourceAttributes":{"namespace":"{ns}","verb":"delete","resource":"pods"}}`)),
			post("", asNobody, ssarPath, ssar(`{"resourceAttributes":{"namespace":"{ns}","verb":"create","resource":"events"}}`)),
			post("", asLimited, ssarPath, ssar(`{"resourceAttributes":{"namespace":"`+limitedNamespace+`","verb":"create","resource":"events"}}`)),
			post("", asLimited, ssarPath, ssar(`{"resourceAttributes":{"namespace":"{ns}","verb":"create","resource":"events"}}`)),
			post("", asWriter, ssarPath, ssar(`{}`)),
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
