package k8sevent

import (
	"math"
	"math/bits"
	"strconv"
	"time"
	"unsafe"

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
	// One pass: a table lookup and a compare find each contract key, a
	// string is stored at its field's offset, other values are kept and
	// read after the pass in key order. The loop body stays small enough
	// to be inlined into the map's iterator: a call and a switch per
	// attribute were most of the cost of decoding.
	var seen uint64
	var others [numOtherKeys]pcommon.Value
	for k, v := range attrs.All() {
		// keyIndex, by hand (it is past the budget of a call the compiler
		// inlines), and matches without a loop or a branch: five words, the
		// last ones the same for a short key.
		if len(k) < minKeyLen {
			continue
		}
		// The entry holds where its words start (a key of its length only).
		e := &keyTable[keySlot(k)]
		if int(e.n) != len(k) || (keyWord(k, 0)^e.words[0])|(keyWord(k, int(e.at[0]))^e.words[1])|
			(keyWord(k, int(e.at[1]))^e.words[2])|(keyWord(k, int(e.at[2]))^e.words[3])|
			(keyWord(k, len(k)-8)^e.words[4]) != 0 {
			continue
		}
		i := e.key
		bit := uint64(1) << (uint(i) & 63) // i < 64: no shift past the word to check
		if seen&bit != 0 {
			problems |= ProblemDuplicateKey
			continue
		}
		seen |= bit
		if e.other >= 0 {
			others[e.other] = v
			continue
		}
		s := v.Str() // str, by hand: the call was a fifth of the cost
		if s == "" {
			s = strOther(v)
		}
		*(*string)(unsafe.Add(unsafe.Pointer(dst), e.field)) = s // the key's string field
	}
	if seen&^stringKeys == 0 {
		// The namespace and cluster keys also sit on every log from a pod
		// or node; alone they do not make a record an Event.
		return problems, seen&^(1<<keyNamespace|1<<keyClusterName|1<<keyClusterUID) != 0
	}
	found = seen&^(1<<keyNamespace|1<<keyClusterName|1<<keyClusterUID|1<<keyNodeName) != 0
	if seen&(1<<keyNodeName) != 0 && seen&(1<<keySourceHost) == 0 {
		// the node name is the source host only if the map has no k8s.event.source.host
		dst.SourceHost = str(others[otherSlot[keyNodeName]])
	}
	rest := seen &^ stringKeys &^ (1 << keyNodeName)
	if opts.SkipTimes {
		rest &^= timeKeys // decodeTime would read none of them
	}
	for ; rest != 0; rest &= rest - 1 {
		i := contractKey(bits.TrailingZeros64(rest))
		problems |= decodeKey(i, others[otherSlot[i]], dst, opts)
	}
	return problems, found
}

// timeKeys are the contract keys decodeKey reads with decodeTime, which
// DecodeOptions.SkipTimes leaves unread.
const timeKeys = 1<<keyFirstTimestamp | 1<<keyLastTimestamp | 1<<keyEventTime | 1<<keySeriesLastObserved | 1<<keyStartTime

// numOtherKeys is the number of contract keys not in stringKeys, each of
// which has a place in a decoder's others (otherSlot).
const numOtherKeys = numContractKeys - 26

var otherSlot = func() (s [numContractKeys]int8) {
	n := 0
	for i := range numContractKeys {
		s[i] = -1
		if stringKeys&(uint64(1)<<i) == 0 {
			s[i] = int8(n)
			n++
		}
	}
	if n != int(numOtherKeys) {
		panic("k8sevent: numOtherKeys is not the number of keys outside stringKeys")
	}
	return s
}()

// stringKeys are the contract keys whose value is one string field of an
// Event (stringFields), read without a switch per key.
const stringKeys = 1<<keyEventName | 1<<keyEventUID | 1<<keyEventNamespace | 1<<keyReason | 1<<keyAction |
	1<<keyNamespace | 1<<keyObjectKind | 1<<keyObjectName | 1<<keyObjectUID | 1<<keyObjectAPIVersion |
	1<<keyObjectFieldPath | 1<<keyObjectResourceVer | 1<<keySourceComponent | 1<<keySourceHost |
	1<<keyReportingController | 1<<keyReportingInstance | 1<<keyRelatedKind | 1<<keyRelatedName |
	1<<keyRelatedNamespace | 1<<keyRelatedUID | 1<<keyRelatedAPIVersion | 1<<keyRelatedFieldPath |
	1<<keyRelatedResourceVer | 1<<keySeriesState | 1<<keyClusterName | 1<<keyClusterUID

// stringOffsets are where in an Event the string field of each of
// stringKeys sits: keyTable holds them, and the decoder stores a value
// there with no switch per key and no table of pointers made per call.
var stringOffsets = func() (o [numContractKeys]uintptr) {
	var ev Event
	base := uintptr(unsafe.Pointer(&ev))
	at := func(f *string) uintptr { return uintptr(unsafe.Pointer(f)) - base }
	o[keyEventName], o[keyEventUID], o[keyEventNamespace] = at(&ev.Name), at(&ev.UID), at(&ev.Namespace)
	o[keyReason], o[keyAction] = at(&ev.Reason), at(&ev.Action)
	o[keyNamespace], o[keyObjectKind], o[keyObjectName] = at(&ev.Regarding.Namespace), at(&ev.Regarding.Kind), at(&ev.Regarding.Name)
	o[keyObjectUID], o[keyObjectAPIVersion] = at(&ev.Regarding.UID), at(&ev.Regarding.APIVersion)
	o[keyObjectFieldPath], o[keyObjectResourceVer] = at(&ev.Regarding.FieldPath), at(&ev.Regarding.ResourceVersion)
	o[keySourceComponent], o[keySourceHost] = at(&ev.SourceComponent), at(&ev.SourceHost)
	o[keyReportingController], o[keyReportingInstance] = at(&ev.ReportingController), at(&ev.ReportingInstance)
	o[keyRelatedKind], o[keyRelatedName], o[keyRelatedNamespace] = at(&ev.Related.Kind), at(&ev.Related.Name), at(&ev.Related.Namespace)
	o[keyRelatedUID], o[keyRelatedAPIVersion] = at(&ev.Related.UID), at(&ev.Related.APIVersion)
	o[keyRelatedFieldPath], o[keyRelatedResourceVer] = at(&ev.Related.FieldPath), at(&ev.Related.ResourceVersion)
	o[keySeriesState], o[keyClusterName], o[keyClusterUID] = at(&ev.SeriesState), at(&ev.Cluster.Name), at(&ev.Cluster.UID)
	return o
}()

// decodeKey reads the value of contract key i, not one of stringKeys, into dst.
func decodeKey(i contractKey, v pcommon.Value, dst *Event, opts DecodeOptions) (p Problem) {
	switch i {
	case keyCount:
		dst.Count, p = integer(v)
	case keySeriesCount:
		dst.SeriesCount, p = integer(v)
	case keyAggregated:
		dst.Aggregated = v.Type() == pcommon.ValueTypeBool && v.Bool()
	case keyNewOccurrences:
		dst.NewOccurrences, p = integer(v)
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
	// str, by hand: a string body is read with no type switch and no call.
	body := lr.Body()
	if s := body.Str(); s != "" {
		dst.Note = s
	} else if body.Type() != pcommon.ValueTypeEmpty {
		dst.Note = strOther(body)
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
	if s := v.Str(); s != "" {
		return s
	}
	return strOther(v)
}

// strOther is str of an empty string or a value of another type.
func strOther(v pcommon.Value) string {
	if v.Type() == pcommon.ValueTypeStr {
		return ""
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
