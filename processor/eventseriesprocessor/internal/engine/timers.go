package engine

// The timers: heartbeats of open series, their ends, and the writes of
// counts held back, each due at a deadline of the heap (deadlines.go).

func (e *Engine) advance(now int64) {
	e.now = max(e.now, now)
	for st := e.due.peek(); st != nil && st.deadline <= e.now; st = e.due.peek() {
		e.fire(st)
	}
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
