package k8sevent

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Records of contrib's k8sobjects receiver carry the Event object itself as
// their body: a map of the object's JSON (strings, int64 counts, RFC 3339
// times, null for unset times). In pull mode the body is the object; in
// watch mode the watch event {"type": "ADDED" | "MODIFIED" | "DELETED",
// "object": {...}}. The resource says only k8s.namespace.name (the Event
// object's namespace, not the regarding object's); the record has
// k8s.resource.name, in watch mode event.domain and event.name, no
// timestamp and no severity. The body is read whole and the contract keys
// are not (but the cluster's, which an Event object does not state).

// bodyKind is what a record's body holds.
type bodyKind uint8

const (
	// bodyNote: no Kubernetes object; the body is the note.
	bodyNote bodyKind = iota
	// bodyNoOccurrence: a Kubernetes object that is not an Event of an
	// API version read here, or a watch event that is not an occurrence
	// (DELETED: the object is gone, its occurrences were counted as it was
	// added and modified; ERROR, BOOKMARK). The record carries no Event.
	bodyNoOccurrence
	bodyCoreV1   // a core/v1 Event
	bodyEventsV1 // an events.k8s.io Event (v1, or v1beta1 with the same field names)
)

// objectBody finds the Event object a record's body holds, and which.
func objectBody(body pcommon.Value) (pcommon.Map, bodyKind) {
	if body.Type() != pcommon.ValueTypeMap {
		return pcommon.Map{}, bodyNote
	}
	m := body.Map()
	if kind := objectKind(m); kind != bodyNote {
		return m, kind // pull mode
	}
	typ, ok := m.Get("type")
	obj, isWatch := m.Get("object")
	if !ok || !isWatch || obj.Type() != pcommon.ValueTypeMap {
		return pcommon.Map{}, bodyNote
	}
	kind := objectKind(obj.Map())
	switch {
	case kind == bodyNote:
		return pcommon.Map{}, bodyNote
	case typ.Type() != pcommon.ValueTypeStr || typ.Str() != "ADDED" && typ.Str() != "MODIFIED":
		return pcommon.Map{}, bodyNoOccurrence
	}
	return obj.Map(), kind
}

// objectKind tells an Event object of a known API version from another
// Kubernetes object (any map with a string apiVersion and kind) and from
// a map that is no Kubernetes object.
func objectKind(m pcommon.Map) bodyKind {
	apiVersion, ok := m.Get("apiVersion")
	kind, isObject := m.Get("kind")
	if !ok || !isObject || apiVersion.Type() != pcommon.ValueTypeStr || kind.Type() != pcommon.ValueTypeStr {
		return bodyNote
	}
	if kind.Str() != "Event" {
		return bodyNoOccurrence
	}
	switch apiVersion.Str() {
	case APICoreV1:
		return bodyCoreV1
	case APIEventsV1, "events.k8s.io/v1beta1":
		return bodyEventsV1
	}
	return bodyNoOccurrence
}

// eventFields are the JSON names of the fields the two API groups name
// differently; the others (reason, action, type, reportingInstance,
// related, eventTime, series, metadata) are spelled alike.
type eventFields struct {
	regarding, note, source, first, last, count, controller string
}

var (
	coreV1Fields = eventFields{"involvedObject", "message", "source", "firstTimestamp",
		"lastTimestamp", "count", "reportingComponent"}
	eventsV1Fields = eventFields{"regarding", "note", "deprecatedSource", "deprecatedFirstTimestamp",
		"deprecatedLastTimestamp", "deprecatedCount", "reportingController"}
)

// decodeObject reads the Event object obj (of kind) into dst, replacing
// everything but the cluster, which the attributes gave. A field of the
// wrong shape is ignored and reported (ProblemBadValue), as an attribute's
// is; a missing reason or regarding object is left for Sanitize to find.
func decodeObject(obj pcommon.Map, kind bodyKind, dst *Event) Problem {
	*dst = Event{Cluster: dst.Cluster}
	f := &coreV1Fields
	if kind == bodyEventsV1 {
		f = &eventsV1Fields
	}
	r := objectReader{m: obj}
	var created time.Time
	if meta, ok := r.sub("metadata"); ok {
		meta.str("name", &dst.Name)
		meta.str("namespace", &dst.Namespace)
		meta.str("uid", &dst.UID)
		meta.time("creationTimestamp", &created, 0)
		r.p |= meta.p
	}
	r.str("reason", &dst.Reason)
	r.str("action", &dst.Action)
	r.str("type", &dst.Type)
	r.str(f.note, &dst.Note)
	r.str(f.controller, &dst.ReportingController)
	r.str("reportingInstance", &dst.ReportingInstance)
	r.ref(f.regarding, &dst.Regarding)
	r.ref("related", &dst.Related)
	if src, ok := r.sub(f.source); ok {
		src.str("component", &dst.SourceComponent)
		src.str("host", &dst.SourceHost)
		r.p |= src.p
	}
	r.time("eventTime", &dst.EventTime, time.Microsecond)
	r.time(f.first, &dst.FirstTimestamp, 0)
	r.time(f.last, &dst.LastTimestamp, 0)
	r.int(f.count, &dst.Count)
	if s, ok := r.sub("series"); ok {
		s.int("count", &dst.SeriesCount)
		s.time("lastObservedTime", &dst.SeriesLastObservedTime, time.Microsecond)
		r.p |= s.p
	}
	// The creation time is the first occurrence when nothing better is
	// there, as contrib's k8s.event.start_time is.
	if dst.FirstTimestamp.IsZero() && dst.EventTime.IsZero() {
		dst.FirstTimestamp = created
	}
	return r.p
}

// objectReader reads the fields of one map of an object, collecting the
// problems. An absent or null field leaves its destination as it is.
type objectReader struct {
	m pcommon.Map
	p Problem
}

func (r *objectReader) get(key string) (pcommon.Value, bool) {
	v, ok := r.m.Get(key)
	return v, ok && v.Type() != pcommon.ValueTypeEmpty
}

// str reads a text field; a value of another type is read as its text, as
// a contract attribute's is.
func (r *objectReader) str(key string, dst *string) {
	if v, ok := r.get(key); ok {
		*dst = v.AsString()
	}
}

func (r *objectReader) int(key string, dst *int64) {
	if v, ok := r.get(key); ok {
		var p Problem
		*dst, p = integer(v)
		r.p |= p
	}
}

// time reads a time field, cut to precision (µs for MicroTime fields).
func (r *objectReader) time(key string, dst *time.Time, precision time.Duration) {
	if v, ok := r.get(key); ok {
		r.p |= decodeTime(v, dst, DecodeOptions{}, precision)
	}
}

// sub is the nested map under key; a value that is no map is a bad value.
func (r *objectReader) sub(key string) (objectReader, bool) {
	v, ok := r.get(key)
	switch {
	case !ok:
		return objectReader{}, false
	case v.Type() != pcommon.ValueTypeMap:
		r.p |= ProblemBadValue
		return objectReader{}, false
	}
	return objectReader{m: v.Map()}, true
}

// ref reads an object reference (core/v1 ObjectReference).
func (r *objectReader) ref(key string, dst *ObjectRef) {
	o, ok := r.sub(key)
	if !ok {
		return
	}
	o.str("kind", &dst.Kind)
	o.str("namespace", &dst.Namespace)
	o.str("name", &dst.Name)
	o.str("uid", &dst.UID)
	o.str("apiVersion", &dst.APIVersion)
	o.str("fieldPath", &dst.FieldPath)
	o.str("resourceVersion", &dst.ResourceVersion)
	r.p |= o.p
}

// encodeObjectRecord turns lr, whose body is the Event object ev was
// decoded from, into a record of the contract: every field of ev as an
// attribute (the contract keys it held before gone, but the cluster's,
// which ev took from them), its note as the body, its type as the
// severity, its time as the timestamp. A reader then reads what the
// processor writes onto it, not the object's own name and counts.
func encodeObjectRecord(lr plog.LogRecord, ev *Event) {
	if _, kind := objectBody(lr.Body()); kind != bodyCoreV1 && kind != bodyEventsV1 {
		return
	}
	lr.Attributes().RemoveIf(func(k string, _ pcommon.Value) bool {
		return keyIndex(k) >= 0 && !clusterKeys.Has(k)
	})
	Encode(ev, lr)
}
