package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// writeShared is writeName with adopt_open_series: the series' first
// record looks for the object to write to (its own, or an open one of its
// series another writer of this controller made) before creating one;
// every write goes to the series' slot (see adopt_decide.go).
func (w *writer) writeShared(ctx context.Context, ev *k8sevent.Event) (outcome, error) {
	key := ev.ObjectNamespace() + "/" + ev.Name
	slot, count := slotKey(w.shared.writer, ev.Name), w.sink.occurrences(ev)
	if o, ok := w.shared.recall(key); ok {
		if !o.series.matches(w.ownerOf(ev)) {
			return 0, errNotOurs // another owner's series under this name
		}
		return w.updateShared(ctx, ev, key, slot, count, o, patched)
	}
	if ev.SeriesState == "" {
		// Not a series record (the processor's legacy mode, a raw Event):
		// its key holds the note, which an object does not keep, so it
		// adopts nothing; AlreadyExists still finds its own object.
		return w.createShared(ctx, ev, key, slot, count)
	}
	o, found, err := w.locate(ctx, ev, slot)
	if err != nil {
		return created, w.classify(err, "list", ev)
	}
	if !found {
		return w.createShared(ctx, ev, key, slot, count)
	}
	out := patched
	if o.name != ev.Name {
		out = adoptedSeries
	}
	return w.updateShared(ctx, ev, key, slot, count, o, out)
}

// locate lists the objects of ev's series (field selectors on what the
// API server indexes, the rest compared here) and picks the one to write
// to (pickTarget).
func (w *writer) locate(ctx context.Context, ev *k8sevent.Event, slot string) (objState, bool, error) {
	r := ev.Regarding
	sel := fields.Set{"reportingComponent": ev.ReportingController, "reason": ev.Reason, "type": ev.Type,
		"involvedObject.kind": r.Kind, "involvedObject.namespace": r.Namespace, "involvedObject.name": r.Name,
		"involvedObject.apiVersion": r.APIVersion, "involvedObject.fieldPath": r.FieldPath}
	if r.UID != "" {
		sel["involvedObject.uid"] = r.UID
	}
	opts := metav1.ListOptions{FieldSelector: fields.SelectorFromSet(sel).String(), Limit: 500}
	var cands []objState
	for {
		l, err := w.cs.CoreV1().Events(ev.ObjectNamespace()).List(ctx, opts)
		if err != nil {
			return objState{}, false, err
		}
		for i := range l.Items {
			stored := k8sevent.FromCoreV1(&l.Items[i])
			st := stateOf(&l.Items[i].ObjectMeta, &stored)
			if sameSeries(ev, &stored, st.cluster, w.cfg.KeepRecordInstance) {
				cands = append(cands, st)
			}
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	o, found := pickTarget(cands, ev.Name, slot, ev.FirstTime(), w.shared.window, w.shared.maxSeries)
	return o, found, nil
}

// createShared creates the series' object with its slot. AlreadyExists
// (its own create whose answer was lost, an object the listing missed)
// reads it and writes the slot there if it is the record's own.
func (w *writer) createShared(ctx context.Context, ev *k8sevent.Event, key, slot string, count int64) (outcome, error) {
	rv, err := w.create(ctx, ev, map[string]string{slot: strconv.FormatInt(count, 10)})
	switch {
	case err == nil:
		w.shared.remember(key, w.ownerOf(ev), objState{name: ev.Name, rv: rv, total: count, last: lastSeen(ev),
			cluster: ev.Cluster.Name, slots: map[string]int64{slot: count}})
		return created, nil
	case !apierrors.IsAlreadyExists(err):
		return created, w.classify(err, "create", ev)
	}
	o, err := w.read(ctx, ev, ev.Name)
	if err != nil {
		return patchedAfter409, err
	}
	return w.updateShared(ctx, ev, key, slot, count, o, patchedAfter409)
}

// read GETs the object name for ev's series; errNotOurs when it is not the
// record's own (the rename path), a classified error when it cannot.
func (w *writer) read(ctx context.Context, ev *k8sevent.Event, name string) (objState, error) {
	got, err := w.cs.CoreV1().Events(ev.ObjectNamespace()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return objState{}, w.classify(err, "read", ev)
	}
	stored := k8sevent.FromCoreV1(got)
	if !w.ownerOf(&stored).matches(w.ownerOf(ev)) {
		return objState{}, errNotOurs
	}
	return stateOf(&got.ObjectMeta, &stored), nil
}

// updateShared moves the series' slot on o to count; a 409 (another writer
// wrote the object since o was read) reads it and tries again. out is the
// outcome of a write that succeeds. An object with no room for a new slot
// (adopt_max_series; another writer may have taken the last since it was
// picked) is left alone: the series creates its own.
func (w *writer) updateShared(ctx context.Context, ev *k8sevent.Event, key, slot string, count int64, o objState, out outcome) (outcome, error) {
	own := o.name == ev.Name
	for try := 0; ; try++ {
		if o.full(slot, own, w.shared.maxSeries) {
			w.shared.forget(key)
			return w.createShared(ctx, ev, key, slot, count)
		}
		p, ok := plan(o, slot, own, count, lastSeen(ev))
		if !ok {
			w.shared.remember(key, w.ownerOf(ev), o)
			if count < o.mine(slot, own) {
				return stale, nil
			}
			return unchanged, nil
		}
		got, err := w.sink.patchShared(ctx, ev, p)
		switch {
		case err == nil:
			w.shared.remember(key, w.ownerOf(ev), got)
			return out, nil
		case apierrors.IsConflict(err) && try < maxConflicts:
			if o, err = w.read(ctx, ev, o.name); err != nil {
				w.shared.forget(key) // gone (expired) or no longer its own: the retry locates again
				return out, fmt.Errorf("after a conflict: %w", err)
			}
			continue
		case apierrors.IsNotFound(err):
			w.shared.forget(key) // the object expired: the retry locates again, then creates
		}
		return out, w.classify(err, "patch", ev)
	}
}
