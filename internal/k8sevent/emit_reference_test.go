package k8sevent

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// The writer of an emitted record and its own resource as it was before
// EncodeEmittedOwn (main at d21be03): EncodeEmitted, the source host read
// from the resource by a lookup of its own, then OwnResource's pass. The
// tests hold EncodeEmittedOwn to it, order of keys included. Test-only.

// ReferenceEncodeEmitted is EncodeEmitted as it was, res the record's own
// resource or nil; with res, OwnResource(*res, ...) must follow.
func ReferenceEncodeEmitted(lr plog.LogRecord, ev *Event, problems Problem, st *State, res *pcommon.Map) {
	var e StateEncoder
	lr.SetEventName(EventName)
	attrs := lr.Attributes()
	dupKeys := problems&ProblemDuplicateKey != 0
	ownNamespace := ev.Namespace != "" && ev.Namespace != ev.Regarding.Namespace
	var seen uint64
	attrs.RemoveIf(func(k string, v pcommon.Value) bool {
		i := keyIndex(k)
		if i < 0 {
			return false
		}
		if seen&(1<<i) != 0 && dupKeys {
			return true
		}
		if stateKeySet&(1<<i) != 0 || i == keyEventNamespace && !ownNamespace {
			return true
		}
		if i == keyEventName && seen&(1<<i) == 0 {
			keepValue(v, st.Name)
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
		referencePutHostOf(attrs, ev, seen&(1<<keySourceHost) != 0, res)
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

func referencePutHostOf(attrs pcommon.Map, ev *Event, held bool, res *pcommon.Map) {
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

// ReferenceOwnResource is OwnResource as it was (referencePutIdentity).
func ReferenceOwnResource(attrs pcommon.Map, ref ObjectRef, owned KeySet, dupKeys bool) {
	referencePutIdentity(attrs, ref, owned, dupKeys)
}
