package sim

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// seriesKey is what a source keeps recording: the Event's namespace, the
// object it is about, its reason and the source's reporting controller.
// Written Events are summed by object (the controller left out: the
// exporter writes its own).
type seriesKey struct {
	Namespace, Kind, Name, Reason, Controller string
}

func (k seriesKey) String() string {
	s := fmt.Sprintf("%s/%s/%s %s", k.Namespace, k.Kind, k.Name, k.Reason)
	if k.Controller != "" {
		s += " by " + k.Controller
	}
	return s
}

// object is k without its controller: what a written Event is summed by.
func (k seriesKey) object() seriesKey {
	k.Controller = ""
	return k
}

// ledger is what the cluster and the apps made, per key: the truth the
// written Events are checked against.
type ledger struct {
	mu       sync.Mutex
	order    []seriesKey
	entries  map[seriesKey]*entry
	rejected map[string]int // per app: records refused in a partial success
}

type entry struct {
	made    int         // occurrences the cluster recorded (watched sources)
	taken   int         // records an app was told were taken (OTLP)
	unknown int         // records an app gave up on without an answer: counted at most once
	refused int         // records an app was told were refused for good
	times   []time.Time // when occurrences were made or sent first
	arrived []arrival   // when a processor took a record of the key
	splits  int         // series a configuration change may have ended early
}

func newLedger() *ledger {
	return &ledger{entries: map[seriesKey]*entry{}, rejected: map[string]int{}}
}

// sent notes when an app sent a record of k first.
func (l *ledger) sent(k seriesKey, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.get(k)
	e.times = append(e.times, at)
}

// rejected notes records of an app that a receiver refused in a partial
// success: every app of the simulator sends only where it may write.
func (l *ledger) reject(app string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rejected[app] += n
}

func (l *ledger) get(k seriesKey) *entry {
	e := l.entries[k]
	if e == nil {
		e = &entry{}
		l.entries[k] = e
		l.order = append(l.order, k)
	}
	return e
}

func (l *ledger) made(k seriesKey, n int, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.get(k)
	e.made += n
	for range n {
		e.times = append(e.times, at)
	}
}

// arrived notes keys whose records a processor took (or may have taken).
func (l *ledger) arrived(keys []seriesKey, a arrival) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		e := l.get(k)
		e.arrived = append(e.arrived, a)
	}
}

// answered notes an app's outcome for n records of k.
func (l *ledger) answered(k seriesKey, taken, unknown, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.get(k)
	e.taken += taken
	e.unknown += unknown
	e.refused += refused
}

// occurrences is what an Event object states, as kubectl reads it: its
// series count, else its count, else one.
func occurrences(ev *corev1.Event) int64 {
	switch {
	case ev.Series != nil && ev.Series.Count > 0:
		return int64(ev.Series.Count)
	case ev.Count > 0:
		return int64(ev.Count)
	}
	return 1
}

func keyOf(ev *corev1.Event) seriesKey {
	return seriesKey{Namespace: ev.Namespace, Kind: ev.InvolvedObject.Kind, Name: ev.InvolvedObject.Name, Reason: ev.Reason}
}

// Violation is one property a run broke.
type Violation struct {
	Property string // P1 ... P5
	Detail   string
}

func (v Violation) String() string { return v.Property + ": " + v.Detail }

// check holds the run's result against the ledger: the properties of the
// pipeline's promise. controllers are the reporting controllers the
// collectors write as.
func (w *World) check(controllers ...string) []Violation {
	ours := func(ev *corev1.Event) bool { return slices.Contains(controllers, ev.ReportingController) }
	written := map[seriesKey]int64{}
	objects := map[seriesKey]int{}
	for _, ev := range w.api.Events() {
		if ours(&ev) {
			k := keyOf(&ev)
			written[k] += occurrences(&ev)
			objects[k]++
		}
	}
	// What the sources made, per object: the sums, and the series bound.
	made := map[seriesKey]*entry{}
	bound := map[seriesKey]int{}
	w.ledger.mu.Lock()
	var keys []seriesKey
	for _, k := range w.ledger.order {
		e, obj := w.ledger.entries[k], k.object()
		if made[obj] == nil {
			made[obj] = &entry{}
			keys = append(keys, obj)
		}
		made[obj].made += e.made
		made[obj].taken += e.taken
		made[obj].unknown += e.unknown
		made[obj].refused += e.refused
		bound[obj] += seriesBound(e.arrived) + e.splits
	}
	w.ledger.mu.Unlock()
	out := w.checkSink(written)
	for _, k := range keys {
		e := made[k]
		got := written[k]
		low, high := int64(e.made+e.taken), int64(e.made+e.taken+e.unknown)
		switch {
		case got < low:
			out = append(out, Violation{"P1", fmt.Sprintf("%s: written counts add up to %d, %d occurrences were accepted (lost %d)", k, got, low, low-got)})
		case got > high:
			out = append(out, Violation{"P2", fmt.Sprintf("%s: written counts add up to %d, at most %d could be (counted %d twice)", k, got, high, got-high)})
		}
		if objects[k] > bound[k] {
			out = append(out, Violation{"P3", fmt.Sprintf("%s: %d objects written, its records made at most %d series", k, objects[k], bound[k])})
		}
		if e.refused > 0 {
			out = append(out, Violation{"P0", fmt.Sprintf("%s: %d records its client may write were refused for good", k, e.refused)})
		}
		delete(written, k)
	}
	for k, got := range written {
		out = append(out, Violation{"P1", fmt.Sprintf("%s: written counts add up to %d, nothing was made for it", k, got)})
	}
	for app, n := range w.ledger.rejected {
		out = append(out, Violation{"P0", fmt.Sprintf("app %s: %d records it may write were rejected (partial success)", app, n)})
	}
	out = append(out, w.checkNeverDown(ours)...)
	out = append(out, w.checkWrittenWhereAllowed(ours)...)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// checkNeverDown is P5: no write of the collectors lowered an object's count.
func (w *World) checkNeverDown(ours func(*corev1.Event) bool) []Violation {
	var out []Violation
	for _, wr := range w.api.Writes() {
		if wr.Before == nil || wr.After == nil || !ours(wr.After) {
			continue
		}
		if before, after := occurrences(wr.Before), occurrences(wr.After); after < before {
			out = append(out, Violation{"P5", fmt.Sprintf("%s %s/%s at resourceVersion %s: count %d -> %d", wr.Verb, wr.Namespace, wr.Name, wr.ResourceVersion, before, after)})
		}
	}
	return out
}

// checkWrittenWhereAllowed holds P4 for the OTLP shapes: a collector
// writes an Event only in a namespace some app may create Events in, and
// the Event shows as its reporter (`<username>@<namespace>`) an app that
// may create Events there; the mirror writes where the watched Events
// are, which its RBAC allows.
func (w *World) checkWrittenWhereAllowed(ours func(*corev1.Event) bool) []Violation {
	if w.shape == ShapeMirror {
		return nil
	}
	var out []Violation
	for _, wr := range w.api.Writes() {
		if wr.After == nil || !ours(wr.After) {
			continue
		}
		users := w.mayCreate[wr.Namespace]
		if len(users) == 0 {
			out = append(out, Violation{"P4", fmt.Sprintf("%s %s/%s: no app may create Events in namespace %s", wr.Verb, wr.Namespace, wr.Name, wr.Namespace)})
			continue
		}
		at := strings.LastIndex(wr.After.ReportingInstance, "@")
		if at < 0 || wr.After.ReportingInstance[at+1:] != wr.Namespace || !users[wr.After.ReportingInstance[:at]] {
			out = append(out, Violation{"P4", fmt.Sprintf("%s %s/%s: reported as %q, not an app that may create Events in namespace %s",
				wr.Verb, wr.Namespace, wr.Name, wr.After.ReportingInstance, wr.Namespace)})
		}
	}
	return out
}

// report is a failing run's story: the schedule, what happened, the
// violations and the Events written.
func (w *World) report(v []Violation) string {
	var b strings.Builder
	for _, x := range v {
		fmt.Fprintln(&b, x)
	}
	fmt.Fprintln(&b, "what happened:")
	for _, l := range w.log {
		fmt.Fprintln(&b, "  "+l)
	}
	return b.String()
}

// written counts the objects the collectors wrote and their writes.
func (w *World) written(controllers ...string) (objects, writes int) {
	for _, ev := range w.api.Events() {
		if slices.Contains(controllers, ev.ReportingController) {
			objects++
		}
	}
	for _, wr := range w.api.Writes() {
		if ev := cmp.Or(wr.After, wr.Before); ev != nil && slices.Contains(controllers, ev.ReportingController) {
			writes++
		}
	}
	return objects, writes
}
