package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// outputEvent is one Event object the pipeline wrote, as the report shows it.
type outputEvent struct {
	Group     string // scenario, or "ns/<namespace>" for Events that are not the storm's
	Namespace string
	Name      string
	LastSeen  time.Time
	Type      string
	Reason    string
	Object    string // kind/name, kind in lower case as kubectl prints it
	Count     int64  // occurrences it states
	Message   string
	Writes    int64 // API writes the pipeline made to it
	Pair      recordermodel.Pair
}

// toOutput reads an Event the pipeline wrote (as core/v1 serves it) and
// assigns it to the scenario of its regarding object.
func toOutput(in *corev1.Event, idx map[objectKey]string, writes map[string]int64) outputEvent {
	ev := k8sevent.FromCoreV1(in)
	ref := in.InvolvedObject
	group, ok := idx[objectKey{ref.Kind, ref.Namespace, ref.Name, string(ref.UID)}]
	if !ok {
		group = "ns/" + in.Namespace
	}
	return outputEvent{
		Group:     group,
		Namespace: in.Namespace,
		Name:      in.Name,
		LastSeen:  ev.LatestTime(),
		Type:      in.Type,
		Reason:    in.Reason,
		Object:    strings.ToLower(ref.Kind) + "/" + ref.Name,
		Count:     ev.Occurrences(),
		Message:   in.Message,
		Writes:    writes[in.Namespace+"/"+in.Name],
		Pair:      recordermodel.Pair{Object: ref.Kind + "/" + ref.Name, Reason: in.Reason},
	}
}

// row is one line of the before/after table.
type row struct {
	Group string
	// Storm: a scenario the demo replayed, whose occurrences and raw
	// writes were counted as they were sent. Other groups (Events the
	// receiver found in an existing cluster) know only what the output
	// states, and a recorder without compression would have made one
	// write per occurrence.
	Storm       bool
	Occurrences int64
	RawWrites   int64
	Writes      int64 // the pipeline's
	Objects     int
	Counted     int64 // sum of the output objects' counts
	// Storm rows only: what client-go's recorders would have written for
	// the same occurrences, their count errors and the pipeline's.
	Truth          int64 // occurrences the baseline counted (= Occurrences when none was lost on the way)
	Record, Events recorderCost
	CountErr       int64 // the pipeline's, per (object, reason) pair
	Unseen         int
}

// exact says whether the output's counts add up to the occurrences, pair
// by pair.
func (r row) exact() bool { return r.Counted == r.Occurrences && r.CountErr == 0 && r.Unseen == 0 }

// sent is what the storm wrote for one scenario.
type sent struct{ Occurrences, Writes int64 }

// buildRows makes the table: one row per scenario in the given order (also
// when nothing came out), then the other groups by name.
func buildRows(order []string, storm map[string]sent, base map[string]baseline, events []outputEvent) []row {
	rows := map[string]*row{}
	for _, name := range order {
		s, b := storm[name], base[name]
		rows[name] = &row{Group: name, Storm: true, Occurrences: s.Occurrences, RawWrites: s.Writes,
			Truth: b.sum(), Record: b.Record, Events: b.Events}
	}
	byGroup := map[string][]outputEvent{}
	var others []string
	for i := range events {
		e := &events[i]
		r := rows[e.Group]
		if r == nil {
			r = &row{Group: e.Group}
			rows[e.Group] = r
			others = append(others, e.Group)
		}
		byGroup[e.Group] = append(byGroup[e.Group], *e)
		r.Objects++
		r.Counted += e.Count
		r.Writes += e.Writes
		if !r.Storm {
			r.Occurrences += e.Count
			r.RawWrites += e.Count
		}
	}
	for _, name := range order {
		rows[name].CountErr, rows[name].Unseen = pipelineCost(base[name], byGroup[name])
	}
	sort.Strings(others)
	out := make([]row, 0, len(rows))
	for _, name := range append(append([]string(nil), order...), others...) {
		out = append(out, *rows[name])
	}
	return out
}

// totalWrites sums the pipeline's writes over the rows.
func totalWrites(rows []row) int64 {
	var n int64
	for _, r := range rows {
		n += r.Writes
	}
	return n
}

// topByCount orders events by count (highest first), then last seen
// (latest first), then namespace and name, and keeps the first n.
func topByCount(events []outputEvent, n int) []outputEvent {
	out := append([]outputEvent(nil), events...)
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		switch {
		case a.Count != b.Count:
			return a.Count > b.Count
		case !a.LastSeen.Equal(b.LastSeen):
			return a.LastSeen.After(b.LastSeen)
		case a.Namespace != b.Namespace:
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// maxMessage is where the listing cuts a message, as a terminal line allows.
const maxMessage = 60

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// formatListing prints events like kubectl get events -A: the top n by count.
func formatListing(w io.Writer, events []outputEvent, now time.Time, n int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tLAST SEEN\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for _, e := range topByCount(events, n) {
		seen := "<unknown>"
		if !e.LastSeen.IsZero() {
			seen = duration.HumanDuration(now.Sub(e.LastSeen))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", e.Namespace, seen, e.Type, e.Reason, e.Object, e.Count, truncate(e.Message, maxMessage))
	}
	tw.Flush()
}

// settle stops the collector (it flushes what is open), waits for its last
// writes, lists what it wrote and reports.
func (d *demo) settle(ctx context.Context, storms map[string]sent) (*result, error) {
	d.lv.stop()
	last := d.lv.latest()
	if m, err := d.col.Metrics(ctx, d.metricsURL); err == nil {
		last = m.Pipeline() // fresher than the live view's, up to a second old
	}
	d.say("Stopping the collector (SIGTERM: the processor flushes what is still open, the exporter's queue drains) ...")
	if err := d.stopCollector(); err != nil {
		return nil, err
	}
	d.writes.waitQuiet(ctx, 2*time.Second, 20*time.Second)
	d.writes.stop()
	byObject, _, werr := d.writes.snapshot()
	if werr != nil {
		d.say("warning: %v (the write counts may be low)", werr)
	}
	events, err := listOutput(ctx, d.localCS)
	if err != nil {
		return nil, err
	}
	idx := scenarioIndex(d.scs)
	outs := make([]outputEvent, len(events))
	for i := range events {
		outs[i] = toOutput(&events[i], idx, byObject)
	}
	order := make([]string, len(d.scs))
	for i, sc := range d.scs {
		order[i] = sc.Name
	}
	res := &result{Rows: buildRows(order, storms, baselines(d.scs), outs), Events: outs, Metrics: last}
	d.report(res)
	return res, nil
}

// report prints the before/after table, the count check and the listing.
func (d *demo) report(res *result) {
	d.say("")
	d.say("Before/after: API writes an emitter without compression makes (one per occurrence), what client-go's two")
	d.say("recorders would have written for the same occurrences, and the pipeline's (creates and patches that changed")
	d.say("one of its Events, counted by watching them), with each one's count error, after %s:", time.Since(d.started).Round(time.Second))
	d.say("")
	formatTable(d.out, res.Rows)
	var counted int64
	for _, r := range res.Rows {
		counted += r.Counted
	}
	last := res.Metrics
	d.say("  all: the processor counted %s occurrences; the output's counts sum to %s", num(last.Occurrences), num(counted))
	if byWatch := totalWrites(res.Rows); last.Writes > float64(byWatch) {
		d.say("")
		d.say("The exporter made %s write requests (its metric); the other %s were patches that changed nothing,",
			num(last.Writes), num(last.Writes-float64(byWatch)))
		d.say("which the API server answers without storing anything.")
	}
	d.say("")
	d.say("The pipeline's Events, top %d by count (of %d):", d.o.top, len(res.Events))
	formatListing(d.out, res.Events, time.Now(), d.o.top)
}

// listOutput lists every Event the pipeline wrote, page by page.
func listOutput(ctx context.Context, cs kubernetes.Interface) ([]corev1.Event, error) {
	var out []corev1.Event
	opts := metav1.ListOptions{FieldSelector: outputSelector, Limit: 500}
	for range 10000 { // bounded: 5M Events
		list, err := cs.CoreV1().Events("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the pipeline's events: %w", err)
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
	return nil, errors.New("list the pipeline's events: too many pages")
}
