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
	// series last observed) unparsed; the record timestamp is always read.
	// The processor tracks its own times and skips this cost on its hot path.
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
	var seen uint64
	var nodeName pcommon.Value
	for k, v := range attrs.All() {
		i := keyIndex(k)
		if i < 0 {
			continue
		}
		if seen&(1<<i) != 0 {
			problems |= ProblemDuplicateKey
			continue
		}
		seen |= 1 << i
		if i == keyNodeName {
			nodeName = v // the source host only if the map has no k8s.event.source.host
			continue
		}
		problems |= decodeKey(i, v, dst, opts)
		// The namespace, node and cluster keys also sit on every log from a
		// pod or node; alone they do not make a record an Event.
		found = found || (i != keyNamespace && i != keyClusterName && i != keyClusterUID)
	}
	if seen&(1<<keyNodeName) != 0 && seen&(1<<keySourceHost) == 0 {
		dst.SourceHost = str(nodeName)
	}
	return problems, found
}

// decodeKey reads the value of contract key i into dst.
func decodeKey(i contractKey, v pcommon.Value, dst *Event, opts DecodeOptions) (p Problem) {
	switch i {
	case keyEventName:
		dst.Name = str(v)
	case keyEventUID:
		dst.UID = str(v)
	case keyEventNamespace:
		dst.Namespace = str(v)
	case keyReason:
		dst.Reason = str(v)
	case keyAction:
		dst.Action = str(v)
	case keyNamespace:
		dst.Regarding.Namespace = str(v)
	case keyObjectKind:
		dst.Regarding.Kind = str(v)
	case keyObjectName:
		dst.Regarding.Name = str(v)
	case keyObjectUID:
		dst.Regarding.UID = str(v)
	case keyObjectAPIVersion:
		dst.Regarding.APIVersion = str(v)
	case keyObjectFieldPath:
		dst.Regarding.FieldPath = str(v)
	case keyObjectResourceVer:
		dst.Regarding.ResourceVersion = str(v)
	case keySourceComponent:
		dst.SourceComponent = str(v)
	case keySourceHost:
		dst.SourceHost = str(v)
	case keyReportingController:
		dst.ReportingController = str(v)
	case keyReportingInstance:
		dst.ReportingInstance = str(v)
	case keyRelatedKind:
		dst.Related.Kind = str(v)
	case keyRelatedName:
		dst.Related.Name = str(v)
	case keyRelatedNamespace:
		dst.Related.Namespace = str(v)
	case keyRelatedUID:
		dst.Related.UID = str(v)
	case keyRelatedAPIVersion:
		dst.Related.APIVersion = str(v)
	case keyRelatedFieldPath:
		dst.Related.FieldPath = str(v)
	case keyRelatedResourceVer:
		dst.Related.ResourceVersion = str(v)
	case keyCount:
		dst.Count, p = integer(v)
	case keySeriesCount:
		dst.SeriesCount, p = integer(v)
	case keySeriesState:
		dst.SeriesState = str(v)
	case keyAggregated:
		dst.Aggregated = v.Type() == pcommon.ValueTypeBool && v.Bool()
	case keyNewOccurrences:
		dst.NewOccurrences, p = integer(v)
	case keyClusterName:
		dst.Cluster.Name = str(v)
	case keyClusterUID:
		dst.Cluster.UID = str(v)
	case keyFirstTimestamp:
		p = decodeTime(v, &dst.FirstTimestamp, opts, 0)
	case keyLastTimestamp:
		p = decodeTime(v, &dst.LastTimestamp, opts, 0)
	case keyEventTime:
		p = decodeTime(v, &dst.EventTime, opts, time.Microsecond)
	case keySeriesLastObserved:
		p = decodeTime(v, &dst.SeriesLastObservedTime, opts, time.Microsecond)
	case keyStartTime:
		if dst.FirstTimestamp.IsZero() {
			p = decodeTime(v, &dst.FirstTimestamp, opts, 0)
		}
	}
	return p
}

// DecodeRecord reads the record's own fields (body, severity, timestamp) and
// attributes into dst, which holds what the resource's attributes gave.
func DecodeRecord(lr plog.LogRecord, dst *Event, opts DecodeOptions) (problems Problem, found bool) {
	problems, found = DecodeAttributes(lr.Attributes(), dst, opts)
	if body := lr.Body(); body.Type() != pcommon.ValueTypeEmpty {
		dst.Note = str(body)
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
	if ts := lr.Timestamp(); ts > maxTimestamp {
		problems |= ProblemBadValue // past 2262: int64 nanoseconds cannot hold it
	} else if ts != 0 {
		dst.Time = ts.AsTime()
	} else if !opts.SkipTimes {
		dst.Time = dst.LatestTime()
	}
	return problems, found
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
	putSourceHost(attrs, ev)
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

// str reads any value as a string; only non-string values allocate.
func str(v pcommon.Value) string {
	if s := v.Str(); s != "" || v.Type() == pcommon.ValueTypeStr {
		return s
	}
	return v.AsString()
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

// timeLayouts are what time attributes may hold: RFC 3339, or
// time.Time.String's layout, which the contrib receiver's
// k8s.event.start_time uses (zones without a name print the offset twice).
var timeLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02 15:04:05.999999999 -0700 -0700",
}

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
	for _, layout := range timeLayouts {
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
