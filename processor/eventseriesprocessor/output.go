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
			k8sevent.RemoveKeys(attrs, k8sevent.OwnedKeys)
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
	em *engine.Emission, ev *k8sevent.Event, problems k8sevent.Problem,
) {
	src.emitted = true
	dst := o.scope(src, rl, sl).AppendEmpty()
	lr.CopyTo(dst)
	k8sevent.EncodeRepairs(dst, ev, problems)
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
	if em.Note != "" {
		dst.Body().SetStr(k8sevent.Truncate(em.Note, k8sevent.MaxNoteBytes))
	}
	st := k8sevent.State{Name: em.Name, Count: em.Count, First: em.First, Last: em.Last, Aggregated: em.Aggregated,
		NewOccurrences: em.New}
	if !o.legacy {
		st.SeriesState = engine.KindNames[em.Kind]
	}
	k8sevent.EncodeState(dst, &st)
}
