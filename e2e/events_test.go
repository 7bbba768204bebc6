package e2e

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Helpers that read Events back from an API server and count them the way
// the end-to-end tests compare a source cluster with its mirror. They are
// deliberately independent of internal/k8sevent: the tests must not judge
// the components with the components' own arithmetic.

// eventPair is a (regarding object, reason): the unit whose total count a
// mirror must reproduce exactly.
type eventPair struct {
	Kind, Namespace, Name, UID, Reason string
}

func (p eventPair) String() string {
	return fmt.Sprintf("%s %s/%s (%s) %s", p.Kind, p.Namespace, p.Name, p.UID, p.Reason)
}

// eventSeriesKey is what makes two occurrences one series (one Event object
// from the exporter): the pair plus what else an isomorphic event shares.
// The reporting controller and instance are left out: the exporter
// overwrites them with its own.
type eventSeriesKey struct {
	eventPair
	APIVersion, FieldPath, Type, Action, Note string
}

func pairOf(ev *corev1.Event) eventPair {
	o := ev.InvolvedObject
	return eventPair{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: string(o.UID), Reason: ev.Reason}
}

func seriesKeyOf(ev *corev1.Event) eventSeriesKey {
	o := ev.InvolvedObject
	return eventSeriesKey{eventPair: pairOf(ev), APIVersion: o.APIVersion, FieldPath: o.FieldPath,
		Type: ev.Type, Action: ev.Action, Note: ev.Message}
}

// listEvents reads every Event (core/v1, all namespaces, in pages) that keep
// accepts; keep nil accepts all.
func listEvents(ctx context.Context, cs kubernetes.Interface, keep func(*corev1.Event) bool) ([]corev1.Event, error) {
	var out []corev1.Event
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := cs.CoreV1().Events("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		for i := range l.Items {
			if keep == nil || keep(&l.Items[i]) {
				out = append(out, l.Items[i])
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// inNamespaces keeps the Events of the given namespaces.
func inNamespaces(nss ...string) func(*corev1.Event) bool {
	set := map[string]bool{}
	for _, ns := range nss {
		set[ns] = true
	}
	return func(ev *corev1.Event) bool { return set[ev.Namespace] }
}

// ourEventsIn keeps the Events a reporting controller wrote in namespaces
// nss: what a mirror test compares.
func ourEventsIn(controller string, nss []string) func(*corev1.Event) bool {
	inStorm, ours := inNamespaces(nss...), byController(controller)
	return func(ev *corev1.Event) bool { return ours(ev) && inStorm(ev) }
}

// byController keeps the Events a reporting controller wrote.
func byController(controller string) func(*corev1.Event) bool {
	return func(ev *corev1.Event) bool { return ev.ReportingController == controller }
}

// eventTally is a cluster's Events counted per pair.
type eventTally struct {
	Pairs       map[eventPair]int64
	Objects     int
	Occurrences int64
}

func tallyEvents(evs []corev1.Event) eventTally {
	t := eventTally{Pairs: map[eventPair]int64{}, Objects: len(evs)}
	for i := range evs {
		n := k8sevent.CoreV1Occurrences(&evs[i])
		t.Pairs[pairOf(&evs[i])] += n
		t.Occurrences += n
	}
	return t
}

// diffTallies lists the pairs whose totals differ (at most limit of them,
// sorted), with the sums of what is missing from and extra in got.
func diffTallies(want, got eventTally, limit int) (lines []string, missing, extra int64) {
	keys := map[eventPair]bool{}
	for p := range want.Pairs {
		keys[p] = true
	}
	for p := range got.Pairs {
		keys[p] = true
	}
	for p := range keys {
		w, g := want.Pairs[p], got.Pairs[p]
		if w == g {
			continue
		}
		if w > g {
			missing += w - g
		} else {
			extra += g - w
		}
		lines = append(lines, fmt.Sprintf("%v: want %d, got %d", p, w, g))
	}
	sort.Strings(lines)
	if len(lines) > limit {
		lines = append(lines[:limit], fmt.Sprintf("... and %d more", len(lines)-limit))
	}
	return lines, missing, extra
}

// eventSpan is the occurrence interval an Event object claims: eventTime
// (first occurrence) to the series' last observed time. An object written
// without eventTime (core/v1) falls back to first and last timestamp.
func eventSpan(ev *corev1.Event) (first, last time.Time) {
	first, last = ev.EventTime.Time, ev.EventTime.Time
	if first.IsZero() {
		first, last = ev.FirstTimestamp.Time, ev.LastTimestamp.Time
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(last) {
		last = ev.Series.LastObservedTime.Time
	}
	return first, last
}

// seriesObjects groups Event objects by series key.
func seriesObjects(evs []corev1.Event) map[eventSeriesKey][]*corev1.Event {
	groups := map[eventSeriesKey][]*corev1.Event{}
	for i := range evs {
		k := seriesKeyOf(&evs[i])
		groups[k] = append(groups[k], &evs[i])
	}
	return groups
}

// overlappingObjects finds duplicates: two objects of one series key whose
// occurrence intervals overlap both claim the same occurrences. Objects of
// one key that follow each other (a series that ended and came back, or a
// processor that forgot an open series at a restart) are not duplicates;
// an occurrence they count twice shows in the exact totals instead.
// sameFirst also reports two objects that start at the same instant (the
// same first occurrence written twice); core/v1 sources stamp occurrences
// in whole seconds, so two distinct occurrences can share an instant too,
// which is why this is only a diagnostic.
func overlappingObjects(evs []corev1.Event, limit int, sameFirst bool) []string {
	var out []string
	for k, objs := range seriesObjects(evs) {
		sort.Slice(objs, func(i, j int) bool {
			fi, _ := eventSpan(objs[i])
			fj, _ := eventSpan(objs[j])
			return fi.Before(fj)
		})
		for i := 1; i < len(objs); i++ {
			prevFirst, prevLast := eventSpan(objs[i-1])
			first, _ := eventSpan(objs[i])
			if first.Before(prevLast) || sameFirst && first.Equal(prevFirst) {
				out = append(out, fmt.Sprintf("%v %q: %s and %s overlap", k.eventPair, k.Note, objs[i-1].Name, objs[i].Name))
			}
		}
	}
	sort.Strings(out)
	if len(out) > limit {
		out = append(out[:limit], fmt.Sprintf("... and %d more", len(out)-limit))
	}
	return out
}

// multiObjectKeys counts the series keys written as more than one object.
func multiObjectKeys(evs []corev1.Event) (keys, multi int) {
	groups := seriesObjects(evs)
	for _, objs := range groups {
		if len(objs) > 1 {
			multi++
		}
	}
	return len(groups), multi
}

// markerReason is the reason of the marker Events.
const markerReason = "E2EMarker"

// writeMarker creates one core/v1 Event about a pod of its own in ns. The
// receiver watches in resourceVersion order and the exporter writes with one
// consumer in order, so once the marker is in the mirror, everything written
// to the source before it has been through the pipeline.
func writeMarker(ctx context.Context, cs kubernetes.Interface, ns, pod string) error {
	if err := stormsend.CreateNamespaces(ctx, cs, ns); err != nil {
		return err
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: pod + ".", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: pod, UID: types.UID("e2e-marker-" + pod)},
		Reason:         markerReason,
		Message:        "end of storm " + pod,
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "e2e"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	if _, err := cs.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create marker event: %w", err)
	}
	return nil
}

// hasMarker says whether the marker about pod is in cs.
func hasMarker(ctx context.Context, cs kubernetes.Interface, ns, pod string) (bool, error) {
	l, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		return false, fmt.Errorf("list marker events: %w", err)
	}
	return len(l.Items) > 0, nil
}

// eventWrites is how many Event write requests (create, patch, update; both
// APIs) an API server has answered, from its own request metrics: what a
// client really cost it, the shutdown flush included. With codes, only the
// answers with those HTTP codes count.
func eventWrites(ctx context.Context, cs kubernetes.Interface, codes ...string) (int64, error) {
	m, err := apiserverMetrics(ctx, cs)
	if err != nil {
		return 0, err
	}
	var n float64
	for _, verb := range []string{"POST", "PATCH", "PUT"} {
		if len(codes) == 0 {
			n += m.Sum("apiserver_request_total", "resource=events", "verb="+verb)
		}
		for _, code := range codes {
			n += m.Sum("apiserver_request_total", "resource=events", "verb="+verb, "code="+code)
		}
	}
	return int64(n), nil
}

// apiserverMetrics reads an API server's own metrics.
func apiserverMetrics(ctx context.Context, cs kubernetes.Interface) (collectorproc.Metrics, error) {
	return kubetest.Metrics(ctx, cs)
}
