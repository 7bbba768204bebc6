package k8sevent

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// EncodeEmitted writes onto lr, an input record moved into the eventseries
// processor's output, the repairs of ev (decoded from lr with problems)
// and the state st. The keys the record keeps stay where they are, so that
// an emitted record reads as the input did but for what the processor
// decided: a second copy of a contract key goes (the first is the one
// decoded), as do every StateKeys and an Event namespace that is the
// regarding object's.
//
// A record whose body was the Event object (contrib's k8sobjects receiver)
// first becomes a record of the contract, its fields attributes and its
// note the body (encodeObjectRecord): its own name and counts, in the body,
// would otherwise be read in place of the state.
func EncodeEmitted(lr plog.LogRecord, ev *Event, problems Problem, st *State) {
	encodeObjectRecord(lr, ev)
	lr.SetEventName(EventName)
	attrs := lr.Attributes()
	dupKeys := problems&ProblemDuplicateKey != 0
	ownNamespace := ev.Namespace != "" && ev.Namespace != ev.Regarding.Namespace
	var seen KeySet
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool {
		i := keyIndex(k)
		switch {
		case i < 0:
			return false
		case seen.has(i) && dupKeys, stateKeySet.has(i), k == AttrEventNamespace && !ownNamespace:
			return true
		}
		seen.add(i)
		return false
	})
	// Grown once, not per key: the source host, the namespace, the name
	// and the state's keys may be appended.
	attrs.EnsureCapacity(attrs.Len() + 3 + st.keys())
	if putsHost(ev) {
		keepStr(attrs, AttrSourceHost, ev.SourceHost)
	}
	if ownNamespace {
		keepStr(attrs, AttrEventNamespace, ev.Namespace)
	}
	encodeRepairedFields(lr, ev, problems)
	keepStr(attrs, AttrEventName, st.Name)
	putState(attrs, st)
}

// encodeRepairedFields writes what Sanitize repaired (problems) in the
// record's own fields and in the fields it cut or dropped.
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
		if problems&ProblemBadController != 0 {
			// Put even when dropped (""): a record's key is read over its
			// resource's, which may hold the controller that was refused.
			attrs.PutStr(AttrReportingController, ev.ReportingController)
		} else {
			putOrRemove(attrs, AttrReportingController, ev.ReportingController)
		}
	}
}

func putOrRemove(attrs pcommon.Map, k, v string) {
	if v == "" {
		attrs.Remove(k)
		return
	}
	attrs.PutStr(k, v)
}

// keepStr puts v under k, but leaves a first copy that holds it already
// as it is.
func keepStr(attrs pcommon.Map, k, v string) {
	if old, ok := attrs.Get(k); ok {
		if old.Type() != pcommon.ValueTypeStr || old.Str() != v {
			old.SetStr(v)
		}
		return
	}
	attrs.PutStr(k, v)
}
