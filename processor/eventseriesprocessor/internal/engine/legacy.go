package engine

import "github.com/k8sevents/otel-k8sevents/internal/k8sevent"

// AggregatePrefix starts the note of an aggregated event, as in client-go.
const AggregatePrefix = "(combined from similar events): "

// aggregate is one group of similar events (legacy aggregation).
type aggregate struct {
	notes []string // distinct notes, least recently seen first
	last  int64
}

func (e *Engine) observeLegacy(ev *k8sevent.Event, delta, t int64) {
	l := &identicalLayout
	aggregated := e.cfg.Aggregation && e.aggregate(ev)
	if aggregated {
		l = &aggregateLayout
	}
	e.buf = l.appendKey(e.buf[:0], ev)
	st, h, ok := e.states.getHash(borrow(e.buf))
	if !ok {
		st = e.newState(l, ev, t, h)
		st.aggregated = aggregated
	} else {
		e.touch(st, ev, t)
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
// least recently seen one, so the outcome is the same on every run.
func (e *Engine) aggregate(ev *k8sevent.Event) bool {
	e.buf = aggregateLayout.appendKey(e.buf[:0], ev)
	a, h, ok := e.aggs.getHash(borrow(e.buf))
	if !ok {
		a = e.aggPool.get()
		if cap(a.notes) < e.cfg.AggregateMaxEvents {
			a.notes = make([]string, 0, e.cfg.AggregateMaxEvents)
		}
		e.aggs.insert(string(e.buf), h, a)
	}
	if !ok || e.now-a.last > int64(e.cfg.AggregateMaxInterval) {
		a.notes = a.notes[:0]
	}
	a.last = e.now
	a.see(ev.Note)
	if len(a.notes) < e.cfg.AggregateMaxEvents {
		return false
	}
	a.notes = a.notes[:copy(a.notes, a.notes[1:])]
	return true
}

func (a *aggregate) see(note string) {
	for i, n := range a.notes {
		if n == note {
			copy(a.notes[i:], a.notes[i+1:])
			a.notes[len(a.notes)-1] = n
			return
		}
	}
	a.notes = append(a.notes, string([]byte(note)))
}
