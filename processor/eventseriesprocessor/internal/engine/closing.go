package engine

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
