package engine

import "github.com/k8sevents/otel-k8sevents/internal/k8sevent"

// AggregatePrefix starts the note of an aggregated event, as in client-go.
const AggregatePrefix = "(combined from similar events): "

// aggregate is one group of similar events (legacy aggregation).
type aggregate struct {
	notes []string // distinct notes, least recently seen first
	// borrowed: the last note is the observed Event's, until observeLegacy
	// replaces it with its state's copy (see see).
	borrowed bool
	last     int64
	key      []byte // holds its key in the cache, reused with the group (see keyOf)
	slot     int32  // its slot in the cache, while it is in it
	gen      uint32 // incremented when it is pushed out (see aggregateOf)
}

// observeLegacy counts ev's occurrences in its event, or in its aggregate
// when aggregation combines it. With aggregation on, the event's state is
// looked up first, without making it the most recently used (only the
// event that takes the record is): an event keeps its group (the group's
// key is part of its own), and finds it without building the group's key.
func (e *Engine) observeLegacy(ev *k8sevent.Event, delta, t int64) {
	var st *state
	var h uint64
	var ok bool
	l := &identicalLayout
	e.buf = l.appendKey(e.buf[:0], ev)
	var a *aggregate
	switch {
	case !e.cfg.Aggregation:
		st, h, ok = e.states.getHash(borrow(e.buf))
	default:
		var s int32
		st, h, s = e.states.peekHash(borrow(e.buf))
		var aggregated bool
		if a, aggregated = e.aggregate(ev, st); aggregated {
			l = &aggregateLayout
			e.buf = l.appendKey(e.buf[:0], ev)
			st, h, ok = e.states.getHash(borrow(e.buf))
		} else if ok = s >= 0; ok {
			e.states.order.touch(s)
		}
	}
	if !ok {
		st = e.newState(l, ev, t, h)
		st.aggregated = l == &aggregateLayout
		if a != nil && !st.aggregated {
			st.agg, st.aggGen = a, a.gen
		}
	} else {
		e.touch(st, ev, t)
	}
	if a != nil && a.borrowed {
		// The note the group took from ev is st's now (newState and touch
		// leave st.note an owned copy of ev's): the group shares it.
		a.notes[len(a.notes)-1], a.borrowed = st.note, false
	}
	st.count = addCount(st.count, delta)
	if !e.emit(st, KindLegacy, ev, true) {
		// Held back: flush the count once the event goes idle.
		e.due.schedule(st, e.now+int64(e.cfg.FinishAfter))
	}
}

// aggregate records ev's note among the similar events' and reports
// whether ev is to be combined: max_events distinct notes within a sliding
// max_interval. client-go then forgets a random note; this forgets the
// least recently seen one, so the outcome is the same on every run. st is
// ev's event, nil if it has none yet.
func (e *Engine) aggregate(ev *k8sevent.Event, st *state) (*aggregate, bool) {
	a, fresh := e.aggregateOf(ev, st)
	if fresh || e.now-a.last > int64(e.cfg.AggregateMaxInterval) {
		a.notes = a.notes[:0]
	}
	a.last = e.now
	a.see(ev.Note)
	if len(a.notes) < e.cfg.AggregateMaxEvents {
		return a, false
	}
	a.notes = a.notes[:copy(a.notes, a.notes[1:])]
	return a, true
}

// aggregateOf is the group of ev, made if needed (fresh), as the most
// recently used: the one st keeps while it is in the cache, else found by
// its key.
func (e *Engine) aggregateOf(ev *k8sevent.Event, st *state) (a *aggregate, fresh bool) {
	if st != nil && st.agg != nil && st.agg.gen == st.aggGen {
		e.aggs.order.touch(st.agg.slot)
		return st.agg, false
	}
	e.aggBuf = aggregateLayout.appendKey(e.aggBuf[:0], ev)
	a, h, ok := e.aggs.getHash(borrow(e.aggBuf))
	if !ok {
		a = e.aggPool.get()
		if cap(a.notes) < e.cfg.AggregateMaxEvents {
			a.notes = make([]string, 0, e.cfg.AggregateMaxEvents)
		}
		e.aggs.insert(e.keyOf(&a.key, e.aggBuf), h, a)
	}
	a.slot = e.aggs.lastSlot
	if st != nil {
		st.agg, st.aggGen = a, a.gen
	}
	return a, !ok
}

func (a *aggregate) see(note string) {
	for i, n := range a.notes {
		if n == note {
			copy(a.notes[i:], a.notes[i+1:])
			a.notes[len(a.notes)-1] = n
			return
		}
	}
	// Not copied: observeLegacy gives the group its state's copy of the
	// note before the call returns (one allocation less per new event).
	a.notes, a.borrowed = append(a.notes, note), true
}
