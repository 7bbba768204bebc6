package k8sevent

import (
	"math"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// MicroTimeFormat is RFC 3339 with microseconds, the precision of
// events.k8s.io MicroTime fields.
const MicroTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// DecodeOptions select what Decode parses.
type DecodeOptions struct {
	// SkipTimes leaves the timestamp attributes (first/last, event time,
	// series last observed) unparsed; the record timestamp is always read,
	// and so are the times of an Event object in the body (DecodeRecord).
	// The processor tracks its own times and reads them only where a
	// record has no timestamp.
	SkipTimes bool
}

// DecodeAttributes reads the contract keys present in attrs into dst,
// overwriting what dst holds for them, and reports whether any was present.
// Call it with the resource's attributes first and the record's last.
//
// OTLP lets a map hold one key twice. The first copy wins, as it does for
// pcommon.Map.Get and so for every collector component (filter, transform,
// routing): a later copy is ignored and reported as ProblemDuplicateKey,
// and writers of records drop it (DropDuplicateKeys), so that no reader can
// be shown another value than the processor decided on.
func DecodeAttributes(attrs pcommon.Map, dst *Event, opts DecodeOptions) (problems Problem, found bool) {
	var seen KeySet
	var nodeName, startTime pcommon.Value
	for k, v := range attrs.All() {
		i := keyIndex(k)
		switch {
		case i < 0:
			continue
		case seen.has(i):
			problems |= ProblemDuplicateKey
			continue
		}
		seen.add(i)
		switch k {
		case AttrNodeName: // read after the pass: they depend on other keys
			nodeName = v
		case AttrStartTime:
			startTime = v
		default:
			problems |= decodeValue(k, v, dst, opts)
		}
		// These keys also sit on every log from a pod or node: alone they
		// do not make a record an Event.
		found = found || k != AttrNamespace && k != AttrNodeName && k != AttrClusterName && k != AttrClusterUID
	}
	// contrib's receiver puts the source host in k8s.node.name: it is read
	// where the map has no k8s.event.source.host.
	if seen.Has(AttrNodeName) && !seen.Has(AttrSourceHost) {
		dst.SourceHost = nodeName.AsString()
	}
	// contrib's creation time is the first occurrence when nothing better
	// is present, from this map or an earlier one.
	if seen.Has(AttrStartTime) && dst.FirstTimestamp.IsZero() {
		problems |= decodeTime(startTime, &dst.FirstTimestamp, opts, 0)
	}
	return problems, found
}

// decodeValue reads v, the value of contract key k (neither the node name
// nor the start time), into its field of dst. A value of another type
// than a string is read as its text where the field is a string.
func decodeValue(k string, v pcommon.Value, dst *Event, opts DecodeOptions) (p Problem) {
	switch k {
	case AttrEventName:
		dst.Name = v.AsString()
	case AttrEventUID:
		dst.UID = v.AsString()
	case AttrEventNamespace:
		dst.Namespace = v.AsString()
	case AttrReason:
		dst.Reason = v.AsString()
	case AttrAction:
		dst.Action = v.AsString()
	case AttrNamespace:
		dst.Regarding.Namespace = v.AsString()
	case AttrObjectKind:
		dst.Regarding.Kind = v.AsString()
	case AttrObjectName:
		dst.Regarding.Name = v.AsString()
	case AttrObjectUID:
		dst.Regarding.UID = v.AsString()
	case AttrObjectAPIVersion:
		dst.Regarding.APIVersion = v.AsString()
	case AttrObjectFieldPath:
		dst.Regarding.FieldPath = v.AsString()
	case AttrObjectResourceVer:
		dst.Regarding.ResourceVersion = v.AsString()
	case AttrSourceComponent:
		dst.SourceComponent = v.AsString()
	case AttrSourceHost:
		dst.SourceHost = v.AsString()
	case AttrReportingController:
		dst.ReportingController = v.AsString()
	case AttrReportingInstance:
		dst.ReportingInstance = v.AsString()
	case AttrRelatedKind:
		dst.Related.Kind = v.AsString()
	case AttrRelatedName:
		dst.Related.Name = v.AsString()
	case AttrRelatedNamespace:
		dst.Related.Namespace = v.AsString()
	case AttrRelatedUID:
		dst.Related.UID = v.AsString()
	case AttrRelatedAPIVersion:
		dst.Related.APIVersion = v.AsString()
	case AttrRelatedFieldPath:
		dst.Related.FieldPath = v.AsString()
	case AttrRelatedResourceVer:
		dst.Related.ResourceVersion = v.AsString()
	case AttrSeriesState:
		dst.SeriesState = v.AsString()
	case AttrClusterName:
		dst.Cluster.Name = v.AsString()
	case AttrClusterUID:
		dst.Cluster.UID = v.AsString()
	case AttrCount:
		dst.Count, p = integer(v)
	case AttrSeriesCount:
		dst.SeriesCount, p = integer(v)
	case AttrNewOccurrences:
		dst.NewOccurrences, p = integer(v)
	case AttrAggregated:
		dst.Aggregated = v.Type() == pcommon.ValueTypeBool && v.Bool()
	case AttrFirstTimestamp:
		p = decodeTime(v, &dst.FirstTimestamp, opts, 0)
	case AttrLastTimestamp:
		p = decodeTime(v, &dst.LastTimestamp, opts, 0)
	case AttrEventTime:
		p = decodeTime(v, &dst.EventTime, opts, time.Microsecond)
	case AttrSeriesLastObserved:
		p = decodeTime(v, &dst.SeriesLastObservedTime, opts, time.Microsecond)
	}
	return p
}

// DecodeRecord reads the record's own fields (body, severity, timestamp) and
// attributes into dst, which holds what the resource's attributes gave.
//
// A body that is an Event object (contrib's k8sobjects receiver: the object,
// or an ADDED or MODIFIED watch event of it) gives every field but the
// cluster, whatever the attributes say, and its times are read whatever
// opts says: they are the occurrence's. A body that is another Kubernetes
// object, or a watch event that is no occurrence (DELETED), carries no
// Event: found is false.
func DecodeRecord(lr plog.LogRecord, dst *Event, opts DecodeOptions) (problems Problem, found bool) {
	problems, found = DecodeAttributes(lr.Attributes(), dst, opts)
	switch obj, kind := objectBody(lr.Body()); kind {
	case bodyNoOccurrence:
		return problems, false
	case bodyCoreV1, bodyEventsV1:
		problems |= decodeObject(obj, kind, dst)
		found, opts.SkipTimes = true, false
	default:
		decodeNoteAndType(lr, dst)
	}
	if ts := lr.Timestamp(); ts > maxTimestamp {
		problems |= ProblemBadValue // past 2262: int64 nanoseconds cannot hold it
	} else if ts != 0 {
		dst.Time = ts.AsTime()
	} else if !opts.SkipTimes {
		dst.Time = dst.LatestTime()
	}
	return problems, found
}

// decodeNoteAndType reads the body as the note and the severity as the type.
func decodeNoteAndType(lr plog.LogRecord, dst *Event) {
	if body := lr.Body(); body.Type() != pcommon.ValueTypeEmpty {
		dst.Note = body.AsString()
	}
	if t := lr.SeverityText(); t != "" {
		dst.Type = t
	} else if n := lr.SeverityNumber(); n != plog.SeverityNumberUnspecified {
		switch {
		case n >= plog.SeverityNumberFatal:
			dst.Type = TypeCritical
		case n >= plog.SeverityNumberError:
			dst.Type = TypeError
		case n >= plog.SeverityNumberWarn:
			dst.Type = TypeWarning
		default:
			dst.Type = TypeNormal
		}
	}
}

// Decode reads the Event a record carries, resource attributes first.
func Decode(res pcommon.Resource, lr plog.LogRecord, opts DecodeOptions) (ev Event, problems Problem, found bool) {
	problems, found = DecodeAttributes(res.Attributes(), &ev, opts)
	p, f := DecodeRecord(lr, &ev, opts)
	return ev, problems | p, found || f
}

// Encode writes ev into lr per the contract: every set field as a record
// attribute, the note as body, the type as severity, Time as timestamp.
func Encode(ev *Event, lr plog.LogRecord) {
	attrs := lr.Attributes()
	attrs.EnsureCapacity(24)
	putStr(attrs, AttrEventName, ev.Name)
	putStr(attrs, AttrEventUID, ev.UID)
	if ev.Namespace != "" && ev.Namespace != ev.Regarding.Namespace {
		putStr(attrs, AttrEventNamespace, ev.Namespace)
	}
	putStr(attrs, AttrReason, ev.Reason)
	putStr(attrs, AttrAction, ev.Action)
	putStr(attrs, AttrNamespace, ev.Regarding.Namespace)
	putStr(attrs, AttrObjectKind, ev.Regarding.Kind)
	putStr(attrs, AttrObjectName, ev.Regarding.Name)
	putStr(attrs, AttrObjectUID, ev.Regarding.UID)
	putStr(attrs, AttrObjectAPIVersion, ev.Regarding.APIVersion)
	putStr(attrs, AttrObjectFieldPath, ev.Regarding.FieldPath)
	putStr(attrs, AttrObjectResourceVer, ev.Regarding.ResourceVersion)
	putStr(attrs, AttrSourceComponent, ev.SourceComponent)
	if putsHost(ev) {
		attrs.PutStr(AttrSourceHost, ev.SourceHost)
	}
	putStr(attrs, AttrReportingController, ev.ReportingController)
	putStr(attrs, AttrReportingInstance, ev.ReportingInstance)
	putStr(attrs, AttrRelatedKind, ev.Related.Kind)
	putStr(attrs, AttrRelatedName, ev.Related.Name)
	putStr(attrs, AttrRelatedNamespace, ev.Related.Namespace)
	putStr(attrs, AttrRelatedUID, ev.Related.UID)
	putStr(attrs, AttrRelatedAPIVersion, ev.Related.APIVersion)
	putStr(attrs, AttrRelatedFieldPath, ev.Related.FieldPath)
	putStr(attrs, AttrRelatedResourceVer, ev.Related.ResourceVersion)
	putStr(attrs, AttrClusterName, ev.Cluster.Name)
	putStr(attrs, AttrClusterUID, ev.Cluster.UID)
	if ev.Count > 0 {
		attrs.PutInt(AttrCount, ev.Count)
	}
	putTime(attrs, AttrFirstTimestamp, ev.FirstTimestamp, time.RFC3339Nano)
	putTime(attrs, AttrLastTimestamp, ev.LastTimestamp, time.RFC3339Nano)
	putTime(attrs, AttrEventTime, ev.EventTime, MicroTimeFormat)
	if ev.SeriesCount > 0 {
		attrs.PutInt(AttrSeriesCount, ev.SeriesCount)
	}
	putTime(attrs, AttrSeriesLastObserved, ev.SeriesLastObservedTime, MicroTimeFormat)
	putStr(attrs, AttrSeriesState, ev.SeriesState)
	if ev.Aggregated {
		attrs.PutBool(AttrAggregated, true)
	}
	if ev.NewOccurrences > 0 {
		attrs.PutInt(AttrNewOccurrences, ev.NewOccurrences)
	}
	lr.SetEventName(EventName)
	lr.Body().SetStr(ev.Note)
	SetType(lr, ev.Type)
	if !ev.Time.IsZero() {
		lr.SetTimestamp(pcommon.NewTimestampFromTime(ev.Time))
	}
}

// SetType writes an Event type as severity text and number, as contrib's
// k8s_events receiver does: Normal INFO, Warning WARN, Error ERROR,
// Critical FATAL.
func SetType(lr plog.LogRecord, typ string) {
	lr.SetSeverityText(typ)
	switch typ {
	case TypeWarning:
		lr.SetSeverityNumber(plog.SeverityNumberWarn)
	case TypeNormal:
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
	case TypeError:
		lr.SetSeverityNumber(plog.SeverityNumberError)
	case TypeCritical:
		lr.SetSeverityNumber(plog.SeverityNumberFatal)
	}
}

func putStr(attrs pcommon.Map, k, v string) {
	if v != "" {
		attrs.PutStr(k, v)
	}
}

func putTime(attrs pcommon.Map, k string, t time.Time, layout string) {
	if !t.IsZero() {
		attrs.PutStr(k, t.UTC().Format(layout))
	}
}

func integer(v pcommon.Value) (int64, Problem) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), 0
	case pcommon.ValueTypeDouble:
		// float64(math.MaxInt64) is 2^63, itself out of range: compare with <.
		if f := v.Double(); f >= math.MinInt64 && f < math.MaxInt64 {
			return int64(f), 0
		}
	case pcommon.ValueTypeStr:
		if n, err := strconv.ParseInt(v.Str(), 10, 64); err == nil {
			return n, 0
		}
	}
	return 0, ProblemBadValue
}

// Time attributes hold RFC 3339 (a T after the date), or time.Time.String's
// layout (a space after the date), which the contrib receiver's
// k8s.event.start_time uses (zones without a name print the offset twice).
var (
	rfc3339Layouts = []string{time.RFC3339Nano}
	stringLayouts  = []string{
		"2006-01-02 15:04:05.999999999 -0700 MST",
		"2006-01-02 15:04:05.999999999 -0700 -0700",
	}
)

// Times outside what int64 nanoseconds hold (1677-09-21 to 2262-04-11)
// cannot become record timestamps, nor always be formatted back as RFC 3339:
// a whole year of margin keeps µs truncation inside too.
var (
	minTime      = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime      = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTimestamp = pcommon.NewTimestampFromTime(maxTime)
)

// decodeTime parses a time attribute; precision truncates it to what the
// API field holds (µs for MicroTime), so that decode and encode agree.
func decodeTime(v pcommon.Value, dst *time.Time, opts DecodeOptions, precision time.Duration) Problem {
	if opts.SkipTimes {
		return 0
	}
	if v.Type() != pcommon.ValueTypeStr {
		return ProblemBadValue
	}
	s := v.Str()
	if s == "" {
		return 0
	}
	// Only the layouts the string's shape allows are tried: a failed parse
	// allocates its error.
	layouts := rfc3339Layouts
	if len(s) > 10 && s[10] == ' ' {
		layouts = stringLayouts
	}
	for _, layout := range layouts {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Before(minTime) || t.After(maxTime) {
				return ProblemBadValue
			}
			*dst = t.Truncate(precision)
			return 0
		}
	}
	return ProblemBadValue
}
