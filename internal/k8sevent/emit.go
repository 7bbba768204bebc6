package k8sevent

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// EncodeEmitted writes onto lr, an input record moved into the eventseries
// processor's output, the repairs of ev (decoded from lr with problems)
// and the state st, with one pass over the record's attributes and at
// most one growth of them: every key to remove goes in that pass, and a
// key that holds its value already is left as it is.
func (e *StateEncoder) EncodeEmitted(lr plog.LogRecord, ev *Event, problems Problem, st *State) {
	attrs, seen := clearEmitted(lr, ev, problems, st)
	if putsHost(ev) {
		putHostOf(attrs, ev, seen&(1<<keySourceHost) != 0)
	}
	e.finishEmitted(lr, attrs, ev, problems, st, seen)
}

// EncodeEmittedOwn is EncodeEmitted of a record whose resource, res, is
// its own (no other record shares it), then OwnResource(res, ev.Regarding,
// OwnedKeySet, dupKeys), with one pass over each map: a source host held
// by res's k8s.node.name (not the regarding Node's identity) is moved onto
// the record as k8s.event.source.host in the resource's pass, with no new
// value made, and the key removed.
func (e *StateEncoder) EncodeEmittedOwn(lr plog.LogRecord, ev *Event, problems Problem, st *State,
	res pcommon.Map, dupKeys bool,
) {
	attrs, seen := clearEmitted(lr, ev, problems, st)
	held := seen&(1<<keySourceHost) != 0
	putHost := putsHost(ev)
	var mv *hostMove
	if putHost && !held && ev.SourceHost != "" && !writesNodeName(ev.Regarding) {
		mv = &hostMove{to: attrs, host: ev.SourceHost}
	}
	putIdentity(res, ev.Regarding, OwnedKeySet, dupKeys, mv)
	if putHost && (mv == nil || !mv.moved) {
		putHostOf(attrs, ev, held)
	}
	e.finishEmitted(lr, attrs, ev, problems, st, seen)
}

// clearEmitted is the first part of writing an emitted record: its event
// name set, the pass over its attributes (every key to remove, the first
// k8s.event.name set to st's name) and their one growth for everything
// appended after. seen: the contract keys the record keeps.
func clearEmitted(lr plog.LogRecord, ev *Event, problems Problem, st *State) (attrs pcommon.Map, seen uint64) {
	lr.SetEventName(EventName)
	attrs = lr.Attributes()
	dupKeys := problems&ProblemDuplicateKey != 0
	ownNamespace := ev.Namespace != "" && ev.Namespace != ev.Regarding.Namespace
	attrs.RemoveIf(func(k string, v pcommon.Value) bool {
		if len(k) < minKeyLen { // keyIndex by hand: a call per attribute was a fifth of the pass
			return false
		}
		e := &keyTable[keySlot(k)]
		if int(e.n) != len(k) || e.name != k {
			return false
		}
		bit := uint64(1) << (uint(e.key) & 63)
		if seen&bit != 0 && dupKeys {
			return true // a second copy: the first is the one decoded
		}
		if uint64(stateKeySet)&bit != 0 || e.key == keyEventNamespace && !ownNamespace {
			return true
		}
		if e.key == keyEventName && seen&bit == 0 {
			keepValue(v, st.Name) // the first copy, where keepStr would write
		}
		seen |= bit
		return false
	})
	adds := st.adds()
	for _, add := range [...]bool{
		putsHost(ev) && seen&(1<<keySourceHost) == 0,
		ownNamespace && seen&(1<<keyEventNamespace) == 0,
		seen&(1<<keyEventName) == 0,
	} {
		if add {
			adds++
		}
	}
	attrs.EnsureCapacity(attrs.Len() + adds)
	return attrs, seen
}

// finishEmitted is the rest of writing an emitted record, after its
// source host: its own namespace, the repaired fields, the name if the
// record had none, the state.
func (e *StateEncoder) finishEmitted(lr plog.LogRecord, attrs pcommon.Map, ev *Event, problems Problem, st *State,
	seen uint64,
) {
	if ev.Namespace != "" && ev.Namespace != ev.Regarding.Namespace {
		keepStr(attrs, AttrEventNamespace, ev.Namespace)
	}
	encodeRepairedFields(lr, ev, problems)
	if seen&(1<<keyEventName) == 0 {
		attrs.PutStr(AttrEventName, st.Name)
	}
	e.putState(attrs, st)
}

// putsHost reports whether an emitted record of ev states its source
// host (putSourceHost).
func putsHost(ev *Event) bool {
	return ev.SourceHost != "" || writesNodeName(ev.Regarding)
}

// putHostOf writes ev's source host on a record's attributes; held: the
// record has a k8s.event.source.host.
func putHostOf(attrs pcommon.Map, ev *Event, held bool) {
	if held {
		keepStr(attrs, AttrSourceHost, ev.SourceHost)
		return
	}
	attrs.PutStr(AttrSourceHost, ev.SourceHost)
}

// encodeRepairedFields writes what Sanitize repaired (problems) in the
// record's own fields and in the fields it cut or dropped (rare).
func encodeRepairedFields(lr plog.LogRecord, ev *Event, problems Problem) {
	if problems&ProblemLongNote != 0 {
		lr.Body().SetStr(ev.Note)
	}
	if problems&ProblemBadType != 0 {
		SetType(lr, ev.Type)
	}
	if problems&ProblemZeroTime != 0 {
		lr.SetTimestamp(pcommon.NewTimestampFromTime(ev.Time))
	}
	if problems&(ProblemLongField|ProblemBadController) != 0 {
		attrs := lr.Attributes()
		attrs.PutStr(AttrReason, ev.Reason)
		putOrRemove(attrs, AttrAction, ev.Action)
		putOrRemove(attrs, AttrReportingInstance, ev.ReportingInstance)
		putOrRemove(attrs, AttrReportingController, ev.ReportingController)
	}
}

// putState appends st's keys (the fields of its mode only) to attrs, which
// holds none of StateKeys.
func (e *StateEncoder) putState(attrs pcommon.Map, st *State) {
	attrs.PutInt(AttrNewOccurrences, st.NewOccurrences)
	if st.SeriesState == "" {
		attrs.PutInt(AttrCount, st.Count)
		attrs.PutStr(AttrFirstTimestamp, e.format(firstNano, st.First, time.RFC3339Nano))
		attrs.PutStr(AttrLastTimestamp, e.format(lastNano, st.Last, time.RFC3339Nano))
		if st.Aggregated {
			attrs.PutBool(AttrAggregated, true)
		}
		return
	}
	attrs.PutStr(AttrSeriesState, st.SeriesState)
	attrs.PutStr(AttrEventTime, e.format(firstMicro, st.First, MicroTimeFormat))
	if st.SeriesState != StateSingleton {
		attrs.PutInt(AttrSeriesCount, st.Count)
		attrs.PutStr(AttrSeriesLastObserved, e.format(lastMicro, st.Last, MicroTimeFormat))
	}
}
