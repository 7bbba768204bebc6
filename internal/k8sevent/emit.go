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
//
// res, when not nil, is the record's own resource (no other record shares
// it): a source host read from its k8s.node.name is moved from there onto
// the record, with no new value made; the emptied key must then be
// removed from res (OwnResource does, as for every k8s.node.name that is
// not a Node's identity).
func (e *StateEncoder) EncodeEmitted(lr plog.LogRecord, ev *Event, problems Problem, st *State, res *pcommon.Map) {
	lr.SetEventName(EventName)
	attrs := lr.Attributes()
	dupKeys := problems&ProblemDuplicateKey != 0
	ownNamespace := ev.Namespace != "" && ev.Namespace != ev.Regarding.Namespace
	var seen uint64 // contract keys the record keeps
	attrs.RemoveIf(func(k string, v pcommon.Value) bool {
		i := keyIndex(k)
		if i < 0 {
			return false
		}
		if seen&(1<<i) != 0 && dupKeys {
			return true // a second copy: the first is the one decoded
		}
		if stateKeySet&(1<<i) != 0 || i == keyEventNamespace && !ownNamespace {
			return true
		}
		if i == keyEventName && seen&(1<<i) == 0 {
			keepValue(v, st.Name) // the first copy, where keepStr would write
		}
		seen |= 1 << i
		return false
	})
	putHost := ev.SourceHost != "" || writesNodeName(ev.Regarding)
	adds := st.adds()
	for _, add := range [...]bool{
		putHost && seen&(1<<keySourceHost) == 0,
		ownNamespace && seen&(1<<keyEventNamespace) == 0,
		seen&(1<<keyEventName) == 0,
	} {
		if add {
			adds++
		}
	}
	attrs.EnsureCapacity(attrs.Len() + adds)
	if putHost {
		putHostOf(attrs, ev, seen&(1<<keySourceHost) != 0, res)
	}
	if ownNamespace {
		keepStr(attrs, AttrEventNamespace, ev.Namespace)
	}
	encodeRepairedFields(lr, ev, problems)
	if seen&(1<<keyEventName) == 0 {
		attrs.PutStr(AttrEventName, st.Name)
	}
	e.putState(attrs, st)
}

// putHostOf writes ev's source host on a record's attributes; held: the
// record has a k8s.event.source.host. From res's k8s.node.name when it
// holds that host and is not the regarding Node's identity, the value is
// moved, not made.
func putHostOf(attrs pcommon.Map, ev *Event, held bool, res *pcommon.Map) {
	if held {
		keepStr(attrs, AttrSourceHost, ev.SourceHost)
		return
	}
	if res != nil && ev.SourceHost != "" && !writesNodeName(ev.Regarding) {
		if v, ok := res.Get(AttrNodeName); ok && v.Type() == pcommon.ValueTypeStr && v.Str() == ev.SourceHost {
			v.MoveTo(attrs.PutEmpty(AttrSourceHost))
			return
		}
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
