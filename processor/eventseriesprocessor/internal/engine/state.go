package engine

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// A state's life, in the order it happens: made on its first occurrence
// (newState), counted (observeSeries; legacy.go's observeLegacy), due at
// the one time dueAt says, when fire writes a heartbeat or ends it, closed
// out with its last record or folded into a summary (closeOut, fold), and
// pushed out of a full cache (evicted) or taken out on purpose (retire).

// state is one series (legacy: one event, or an aggregate's summary) in
// the cache.
type state struct {
	// ev is what its records without an input (heartbeats, ends, flushes)
	// show: the Event of its first occurrence, less what each record states
	// of its own (see k8sevent.Description), with the latest occurrence's note.
	ev k8sevent.Description
	// l is the layout of its cache key: the series' (legacy: the identical
	// event's), or aggregateLayout for a summary (legacy: an aggregate).
	l        *layout
	name     string
	count    int64 // occurrences
	emitted  int64 // count of the last emitted record
	first    int64 // first and latest occurrence (record time), unix ns
	last     int64
	seenAt   int64 // engine time of the latest occurrence: idle timers run from it
	nextBeat int64

	deadline int64
	heapIdx  int

	visible    bool // a record of it went out
	started    bool // a series record (count >= 2) went out
	aggregated bool
	leaving    bool // removed on purpose: no eviction record
	inBucket   bool // legacy: counted in its spam bucket's events
}

// observeSeries counts delta occurrences of ev, at time t, in its series,
// made if new: a singleton's record, or the record that starts the series
// (each occurrence tries it while the spam filter holds it back); once
// started, nothing until a heartbeat or its end.
func (e *Engine) observeSeries(ev *k8sevent.Event, delta, t int64) {
	st, ok := e.states.get(e.stateKey(&e.series, ev))
	if !ok {
		st = e.newState(&e.series, ev, t)
		e.scheduleDue(st)
	} else {
		e.touch(st, ev, t)
	}
	before := st.count
	st.count = addCount(st.count, delta)
	if before < 2 && st.count >= 2 {
		e.Stats.SeriesStarted++
	}
	if st.started {
		e.Stats.Compressed = addCount(e.Stats.Compressed, delta)
		return
	}
	if st.count < 2 {
		e.emit(st, KindSingleton, ev, true)
		return
	}
	if e.emit(st, KindStarted, ev, true) {
		st.started = true
		st.nextBeat = e.now + int64(e.cfg.HeartbeatInterval)
		e.scheduleDue(st) // a heartbeat_interval under finish_after comes first
	}
}

// stateKey builds in e.buf the key of ev's state in layout l: the layout's
// key less an empty cluster name's (nameKey), as names are made of it.
// Distinct keys stay distinct: a key parses field by field, so one cut
// short by the empty cluster name's byte is no other's.
func (e *Engine) stateKey(l *layout, ev *k8sevent.Event) []byte {
	e.buf = bytes.TrimSuffix(l.appendKey(e.buf[:0], ev), []byte{0})
	return e.buf
}

// newState adds a state for ev, whose key in layout l e.buf holds
// (stateKey). Its Event objects are named after the key and the count of
// states made, so that a name is never reused and the same stream names
// the same objects on every run.
func (e *Engine) newState(l *layout, ev *k8sevent.Event, t int64) *state {
	keyLen := len(e.buf)
	e.statesMade++
	e.buf = strconv.AppendUint(e.buf, e.statesMade, 10)
	named := len(e.buf)
	e.buf = k8sevent.AppendName(e.buf, ev.Regarding.Name, time.Unix(0, t), e.buf)
	own := &e.own
	*own = ownless(ev)
	for _, f := range l.key {
		*f.of(own) = "" // copied in the key
	}
	s := ownStrings(e.buf, e.ownStrs) // the key, the count, the name, then own's other strings
	if !l.readKey(s[:keyLen], own) {
		for _, f := range l.key {
			*f.of(own) = strings.Clone(*f.of(ev))
		}
	}
	st := &state{ev: own.Description(), l: l, heapIdx: -1, first: t, last: t, seenAt: e.now}
	st.name = s[named:len(e.buf)]
	e.states.add(s[:keyLen], st) // may push a state out: ev and e.buf are not read after
	return st
}

func (e *Engine) touch(st *state, ev *k8sevent.Event, t int64) {
	st.last = max(st.last, t)
	st.seenAt = e.now
	if ev.Note != st.ev.Note {
		st.ev.Note = strings.Clone(ev.Note) // only when it changes: the hot path repeats one note
	}
}

// scheduleDue puts st in the deadline heap at dueAt, or moves it there if
// that is earlier.
func (e *Engine) scheduleDue(st *state) {
	at, _ := e.dueAt(st)
	e.due.schedule(st, at)
}

// dueAt is when st next has something to do, and whether that is a
// heartbeat (else its end, or the flush of a held-back count).
func (e *Engine) dueAt(st *state) (at int64, beat bool) {
	idle := st.seenAt + int64(e.cfg.FinishAfter)
	if !e.cfg.Legacy && st.started && st.nextBeat < idle {
		return st.nextBeat, true
	}
	return idle, false
}

// fire handles st's deadline: a heartbeat, the end of a series, or the
// flush of held-back counts; or, when occurrences moved it later, nothing
// but rescheduling.
func (e *Engine) fire(st *state) {
	next, beat := e.dueAt(st)
	if next > e.now {
		e.due.reschedule(st, next)
		return
	}
	now := e.now
	e.now = next // records carry their exact deadline
	defer func() { e.now = now }()
	switch {
	case beat:
		// What the API needs to keep the series from expiring. With
		// finish_after <= heartbeat_interval (the defaults) it always carries
		// occurrences newer than the series' last record.
		if e.emit(st, KindOngoing, nil, true) {
			e.Stats.Heartbeats++
		}
		st.nextBeat = next + int64(e.cfg.HeartbeatInterval)
		at, _ := e.dueAt(st)
		e.due.reschedule(st, at)
	case e.cfg.Legacy:
		e.due.remove(st)
		e.closeOut(st, false)
	default:
		e.retire(st) // first: a summary made by closeOut must not push it out
		e.closeOut(st, false)
	}
}

// What happens when an event or series ends (goes idle, is pushed out of
// the cache, or the engine flushes at shutdown), so that no occurrence is
// lost and no record is sent that changes nothing.
//
// An event none of whose records passed the spam filter is invisible: no
// Event object shows it. At its end it is folded into the summary of its
// aggregate key (source, object, type, reason, reporting controller and
// instance: client-go's EventAggregatorByReasonFunc key), an aggregated
// Event "(combined from similar events): <latest note>" whose count is the
// sum of the occurrences folded into it. A summary is written when it goes
// idle (finish_after after the last fold), exempt from the filter as
// `finished` is: at most one record per aggregate key per idle period. In
// legacy mode the summary is the aggregate of that key, the same Event
// client-go's aggregation writes. Every (object, reason) pair thus stays
// visible with its exact total count.

// isSummary reports whether st is a summary (series mode) or an aggregate
// (legacy mode): the end of the line, written even if the filter never let
// one of its records through.
func isSummary(st *state) bool { return st.l == &aggregateLayout }

// closeOut emits the last record of a state that ends (evicting: is pushed
// out of the cache), or folds it into its summary. A record goes out only
// if it changes what the object shows: a count not yet written.
func (e *Engine) closeOut(st *state, evicting bool) {
	if !e.cfg.Legacy && st.count >= 2 {
		e.Stats.SeriesFinished++
	}
	switch {
	case st.count == 0:
	case !st.visible && !isSummary(st) && !evicting:
		if !st.leaving {
			e.retire(st)
		}
		e.fold(st)
	case st.count <= st.emitted:
		if !e.cfg.Legacy && e.cfg.FinishMarker && st.count >= 2 {
			e.emit(st, KindFinished, nil, false)
		}
	case e.cfg.Legacy:
		// A held-back count takes a token when one is free (the one the
		// bucket kept for it, see allow); else it goes out anyway.
		if !e.emit(st, KindLegacy, nil, true) {
			e.emit(st, KindLegacy, nil, false)
		}
	case st.count >= 2:
		e.emit(st, KindFinished, nil, false)
	default: // a summary of one occurrence, or an invisible singleton pushed out
		e.emit(st, KindSingleton, nil, false)
	}
}

// retire removes st from the cache on purpose (no eviction record) and
// from the deadlines; its bucket no longer keeps a token for it.
func (e *Engine) retire(st *state) {
	st.leaving = true
	e.states.remove(st) // calls evicted, which unschedules it
	if st.inBucket {
		e.release(st)
	}
}

// fold adds the occurrences of st, an invisible event that ended, to the
// summary of its aggregate key, made if needed, and (re)starts the
// summary's idle timer.
func (e *Engine) fold(st *state) {
	ev := st.ev.Event()
	sum, ok := e.states.get(e.stateKey(&aggregateLayout, &ev))
	if !ok {
		sum = e.newState(&aggregateLayout, &ev, st.first)
		sum.aggregated = true
	}
	sum.first, sum.last = min(sum.first, st.first), max(sum.last, st.last)
	sum.ev.Note = st.ev.Note
	sum.count = addCount(sum.count, st.count)
	sum.seenAt = e.now
	e.Stats.Folded = addCount(e.Stats.Folded, st.count)
	e.scheduleDue(sum)
}

func (e *Engine) evicted(_ string, st *state) {
	e.due.remove(st)
	if st.leaving {
		return
	}
	e.Stats.Evictions++
	e.closeOut(st, true)
	if st.inBucket {
		e.release(st)
	}
}
