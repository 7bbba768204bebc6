package engine

// Time passing: advance fires the deadlines of the heap (deadlines.go) in
// order; what a state does when its deadline comes is fire's (state.go).

func (e *Engine) advance(now int64) {
	e.now = max(e.now, now)
	for st := e.due.peek(); st != nil && st.deadline <= e.now; st = e.due.peek() {
		e.fire(st)
	}
}

// Postpone moves the end of each series that was not yet due at from on by
// the time between from and to, when no occurrence could come in, then
// fires what is still due by to: a next consumer that took nothing holds
// the processor's input, so the occurrences of that time arrive only after
// it, and counting the stall as idle time would end every open series and
// open a second object for each at its next occurrence. Heartbeats stay
// where they are: they fell due and are written now.
func (e *Engine) Postpone(from, to int64) []Emission {
	e.begin()
	finish := int64(e.cfg.FinishAfter)
	for _, st := range e.due {
		if st.seenAt+finish <= from || st.seenAt >= to {
			continue // it was due before the stall, or was seen after it
		}
		st.seenAt += to - max(from, st.seenAt) // fire reschedules it
	}
	e.advance(to)
	return e.out
}
