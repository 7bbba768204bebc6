package k8sevent

import "go.opentelemetry.io/collector/pdata/plog"

// The reference writer the tests compare EncodeEmitted with: what the
// processor wrote before its one-pass writer, step by step. Test-only: no
// shipped code calls it.

// EncodeRepairs writes back onto lr, a copy of the record ev was decoded
// from, what decoding and Sanitize found and repaired in ev (problems), and
// ev's own namespace where it is not the regarding object's; the copy the
// codec read of every other key stays as it is. The source host is written
// as k8s.event.source.host: on an emitted record's resource, the
// k8s.node.name where contrib's receiver put it is replaced by the
// regarding object's identity (PutIdentity).
func EncodeRepairs(lr plog.LogRecord, ev *Event, problems Problem) {
	attrs := lr.Attributes()
	putSourceHost(attrs, ev)
	if problems&ProblemDuplicateKey != 0 { // rare: a pass over every attribute
		DropDuplicateKeys(attrs)
	}
	encodeRepairedFields(lr, ev, problems)
	if ev.Namespace == ev.Regarding.Namespace {
		attrs.Remove(AttrEventNamespace)
	} else {
		putOrRemove(attrs, AttrEventNamespace, ev.Namespace)
	}
}
