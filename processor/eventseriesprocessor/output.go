package eventseriesprocessor // import "github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
)

// output builds the outgoing Logs in the order records were decided, so that
// every record of one Event object reaches the exporter in order (a flush
// decided after a count update must not overtake it). A run of records from
// one input scope shares one output scope; timer records get a scope of
// their own between them.
type output struct {
	legacy  bool
	logs    plog.Logs
	records plog.LogRecordSlice
	src     source
	started bool
}

// source identifies where the current output scope's records come from.
type source struct {
	rl, sl  int  // input ResourceLogs and ScopeLogs index; -1 for timer records
	emitted bool // records the processor wrote, not passed unchanged
}

var timerSource = source{rl: -1, sl: -1, emitted: true}

// ownedKeys describe the one Event object a record writes: the processor
// sets them on the records it emits, and they must not reach those records
// from a resource the input shared (the codec reads the resource when the
// record lacks a key).
var ownedKeys = append([]string{k8sevent.AttrEventName, k8sevent.AttrEventNamespace}, stateKeys...)

// stateKeys are the source object's uid and cumulative fields: they do not
// describe the object an emitted record writes.
var stateKeys = []string{
	k8sevent.AttrEventUID, k8sevent.AttrSeriesState, k8sevent.AttrAggregated, k8sevent.AttrCount,
	k8sevent.AttrFirstTimestamp, k8sevent.AttrLastTimestamp, k8sevent.AttrStartTime,
	k8sevent.AttrSeriesCount, k8sevent.AttrSeriesLastObserved, k8sevent.AttrEventTime,
}

func (o *output) len() int {
	if !o.started {
		return 0
	}
	return o.logs.LogRecordCount()
}

func (o *output) scope(src source, rl plog.ResourceLogs, sl plog.ScopeLogs) plog.LogRecordSlice {
	if o.started && o.src == src {
		return o.records
	}
	if !o.started {
		o.logs, o.started = plog.NewLogs(), true
	}
	outRL := o.logs.ResourceLogs().AppendEmpty()
	outSL := outRL.ScopeLogs().AppendEmpty()
	if src == timerSource {
		outSL.Scope().SetName(metadata.ScopeName)
	} else {
		rl.Resource().CopyTo(outRL.Resource())
		if src.emitted {
			attrs := outRL.Resource().Attributes()
			k8sevent.RemoveKeys(attrs, ownedKeys)
			k8sevent.DropDuplicateKeys(attrs)
		}
		outRL.SetSchemaUrl(rl.SchemaUrl())
		sl.Scope().CopyTo(outSL.Scope())
		outSL.SetSchemaUrl(sl.SchemaUrl())
	}
	o.src, o.records = src, outSL.LogRecords()
	return o.records
}

// pass copies an input record unchanged.
func (o *output) pass(src source, rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) {
	lr.CopyTo(o.scope(src, rl, sl).AppendEmpty())
}

// emitInput writes an emission made of the input record lr, whose decoded
// and repaired Event is ev.
func (o *output) emitInput(src source, rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord,
	em *engine.Emission, ev *k8sevent.Event, repaired k8sevent.Problem,
) {
	src.emitted = true
	dst := o.scope(src, rl, sl).AppendEmpty()
	lr.CopyTo(dst)
	attrs := dst.Attributes()
	k8sevent.DropDuplicateKeys(attrs) // the copy the processor read is the one it leaves
	// Write back what Sanitize changed, over the record or its resource.
	if repaired&k8sevent.ProblemLongNote != 0 {
		dst.Body().SetStr(ev.Note)
	}
	if repaired&k8sevent.ProblemBadType != 0 {
		k8sevent.SetType(dst, ev.Type)
	}
	if repaired&k8sevent.ProblemZeroTime != 0 {
		dst.SetTimestamp(pcommon.NewTimestampFromTime(ev.Time))
	}
	if repaired&(k8sevent.ProblemLongField|k8sevent.ProblemBadController) != 0 {
		attrs.PutStr(k8sevent.AttrReason, ev.Reason)
		putOrRemove(attrs, k8sevent.AttrAction, ev.Action)
		putOrRemove(attrs, k8sevent.AttrReportingInstance, ev.ReportingInstance)
		putOrRemove(attrs, k8sevent.AttrReportingController, ev.ReportingController)
	}
	if ev.Namespace == ev.Regarding.Namespace {
		attrs.Remove(k8sevent.AttrEventNamespace)
	} else {
		putOrRemove(attrs, k8sevent.AttrEventNamespace, ev.Namespace)
	}
	o.annotate(dst, em)
}

// emitTimer writes an emission no input carries (heartbeat, finish, flush).
func (o *output) emitTimer(em *engine.Emission) {
	dst := o.scope(timerSource, plog.ResourceLogs{}, plog.ScopeLogs{}).AppendEmpty()
	em.Event.Time = time.Unix(0, em.Last)
	k8sevent.Encode(&em.Event, dst)
	dst.SetObservedTimestamp(pcommon.Timestamp(em.At))
	o.annotate(dst, em)
}

// annotate writes what the processor decided: the Event object the record
// writes and its count, in the fields of the chosen mode only.
func (o *output) annotate(dst plog.LogRecord, em *engine.Emission) {
	dst.SetEventName(k8sevent.EventName)
	attrs := dst.Attributes()
	attrs.PutStr(k8sevent.AttrEventName, em.Name)
	k8sevent.RemoveKeys(attrs, stateKeys)
	if em.Note != "" {
		dst.Body().SetStr(k8sevent.Truncate(em.Note, k8sevent.MaxNoteBytes))
	}
	if o.legacy {
		attrs.PutInt(k8sevent.AttrCount, em.Count)
		attrs.PutStr(k8sevent.AttrFirstTimestamp, formatTime(em.First, time.RFC3339Nano))
		attrs.PutStr(k8sevent.AttrLastTimestamp, formatTime(em.Last, time.RFC3339Nano))
		if em.Aggregated {
			attrs.PutBool(k8sevent.AttrAggregated, true)
		}
		return
	}
	attrs.PutStr(k8sevent.AttrSeriesState, engine.KindNames[em.Kind])
	attrs.PutStr(k8sevent.AttrEventTime, formatTime(em.First, k8sevent.MicroTimeFormat))
	if em.Kind != engine.KindSingleton {
		attrs.PutInt(k8sevent.AttrSeriesCount, em.Count)
		attrs.PutStr(k8sevent.AttrSeriesLastObserved, formatTime(em.Last, k8sevent.MicroTimeFormat))
	}
}

func putOrRemove(attrs pcommon.Map, k, v string) {
	if v == "" {
		attrs.Remove(k)
		return
	}
	attrs.PutStr(k, v)
}

func formatTime(ns int64, layout string) string {
	return time.Unix(0, ns).UTC().Format(layout)
}
