package engine

import (
	"slices"
	"strings"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// AggregatePrefix starts the note of an aggregated event, as in client-go.
const AggregatePrefix = "(combined from similar events): "

// aggregate is one group of similar events (legacy aggregation).
type aggregate struct {
	notes []string // distinct notes, least recently seen first
	last  int64
}

// observeLegacy counts ev's occurrences in its event, or in its aggregate
// when aggregation combines it. With aggregation on, the event's state is
// looked up first without making it the most recently used: only the
// event that takes the record is.
func (e *Engine) observeLegacy(ev *k8sevent.Event, delta, t int64) {
	l := &identicalLayout
	st, ok := e.states.peek(e.stateKey(l, ev))
	if e.cfg.Aggregation && e.aggregate(ev) {
		l = &aggregateLayout
		st, ok = e.states.peek(e.stateKey(l, ev))
	}
	if !ok {
		st = e.newState(l, ev, t)
		st.aggregated = l == &aggregateLayout
	} else {
		e.states.touch(st)
		e.touch(st, ev, t)
	}
	st.count = addCount(st.count, delta)
	if !e.emit(st, KindLegacy, ev, true) {
		// Held back: flush the count once the event goes idle.
		e.scheduleDue(st)
	}
}

// aggregate records ev's note among the similar events' and reports
// whether ev is to be combined: max_events distinct notes within a sliding
// max_interval. client-go then forgets a random note; this forgets the
// least recently seen one, so the outcome is the same on every run.
func (e *Engine) aggregate(ev *k8sevent.Event) bool {
	e.aggBuf = aggregateLayout.appendKey(e.aggBuf[:0], ev)
	a, ok := e.aggs.get(e.aggBuf)
	if !ok {
		a = &aggregate{}
		e.aggs.add(string(e.aggBuf), a)
	}
	if !ok || e.now-a.last > int64(e.cfg.AggregateMaxInterval) {
		a.notes = a.notes[:0]
	}
	a.last = e.now
	if i := slices.Index(a.notes, ev.Note); i >= 0 {
		note := a.notes[i]
		a.notes = append(slices.Delete(a.notes, i, i+1), note)
	} else {
		a.notes = append(a.notes, strings.Clone(ev.Note))
	}
	if len(a.notes) < e.cfg.AggregateMaxEvents {
		return false
	}
	a.notes = slices.Delete(a.notes, 0, 1)
	return true
}
