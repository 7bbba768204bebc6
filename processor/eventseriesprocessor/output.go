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
//
// The processor declares MutatesData: input records, and the resource of
// each input ResourceLogs the first time one of its records goes out, are
// moved into the output, not copied (a copy allocates every value
// again). Every input record goes out at most
// once (the engine makes at most one emission of the record it observes),
// so a record is never needed after it moved. A resource may be needed
// again (records of one ResourceLogs split by timer records, or some
// passed and some emitted): later output scopes copy it from where it
// moved, which holds it as it came but for the identity keys of emitted
// records, which it held none of and which are removed again.
//
// The only record of an input ResourceLogs (the k8s_events receivers send
// one record per ResourceLogs) goes out with its ResourceLogs: resource,
// scope and record, no copy, whatever keys the resource held. While every
// record out is such a one, the ResourceLogs stay where they are and the
// output is made of the input's own slice at the end (deferFrom, finish):
// no new ResourceLogs per record.
//
// The resource of emitted records carries their regarding object's identity
// (k8sevent.PutIdentity, as contrib's k8s_events receiver places it), so a
// run of emitted records shares an output resource only while they are
// about one object.
type output struct {
	logs    plog.Logs
	records plog.LogRecordSlice
	src     source
	obj     k8sevent.ObjectRef // regarding object of the current scope's emitted records
	started bool
	// movedRL is the input ResourceLogs whose resource moved to moved;
	// -1 when none did. movedIdentity: moved was given an object's identity.
	movedRL       int
	moved         pcommon.Resource
	movedIdentity bool
	// deferring: every record out so far is the only record of its input
	// ResourceLogs, which stays in place in in, marked in whole (wholes of
	// them); finish makes the output of in's own slice, its pointers moved
	// (no new ResourceLogs per record). The first record that needs an
	// output ResourceLogs of its own ends it: the marked ones move out
	// first, in order (start).
	deferring bool
	in        plog.ResourceLogsSlice
	whole     []bool
	wholes    int
}

// newOutput makes an empty output.
func newOutput() output {
	return output{movedRL: -1}
}

// source identifies where the current output scope's records come from.
type source struct {
	rl, sl  int  // input ResourceLogs and ScopeLogs index; -1 for timer records
	emitted bool // records the processor wrote, not passed unchanged
	dupKeys bool // the resource holds a contract key twice (decoding found it)
}

var timerSource = source{rl: -1, sl: -1, emitted: true}

// deferFrom makes the output keep the only records of input ResourceLogs
// in in, where they are, until it needs a ResourceLogs of its own (start)
// or finish. whole, as long as in and all false, marks them.
func (o *output) deferFrom(in plog.ResourceLogsSlice, whole []bool) {
	o.deferring, o.in, o.whole = true, in, whole
}

// start makes the output's Logs, if not made yet: the input ResourceLogs
// kept in place so far move into it first, in order.
func (o *output) start() {
	if o.started {
		return
	}
	o.logs, o.started = plog.NewLogs(), true
	if !o.deferring {
		return
	}
	o.deferring = false
	rls := o.logs.ResourceLogs()
	rls.EnsureCapacity(o.wholes)
	for i, w := range o.whole {
		if w {
			o.in.At(i).MoveTo(rls.AppendEmpty())
		}
	}
}

// finish ends the output: when every record out is the only record of an
// input ResourceLogs kept in place, the output is made of the input's
// slice, without the ResourceLogs none of whose records went out, in the
// input's order, which is the order decided.
func (o *output) finish() {
	if !o.deferring || o.wholes == 0 {
		return
	}
	o.deferring = false
	if o.wholes < o.in.Len() {
		i := 0
		o.in.RemoveIf(func(plog.ResourceLogs) bool {
			i++
			return !o.whole[i-1]
		})
	}
	o.logs, o.started = plog.NewLogs(), true
	o.in.MoveAndAppendTo(o.logs.ResourceLogs())
}

func (o *output) len() int {
	if !o.started {
		return 0
	}
	return o.logs.LogRecordCount()
}

// scope is the output record slice for a record of src; obj is the
// regarding object of an emitted record (zero for a passed one).
func (o *output) scope(src source, obj *k8sevent.ObjectRef, rl plog.ResourceLogs, sl plog.ScopeLogs) plog.LogRecordSlice {
	if o.started && o.src == src && o.obj == *obj {
		return o.records
	}
	o.start()
	outRL := o.logs.ResourceLogs().AppendEmpty()
	outSL := outRL.ScopeLogs().AppendEmpty()
	if src == timerSource {
		outSL.Scope().SetName(metadata.ScopeName)
		k8sevent.PutIdentity(outRL.Resource().Attributes(), *obj)
	} else {
		o.resource(src, obj, rl.Resource(), outRL.Resource())
		outRL.SetSchemaUrl(rl.SchemaUrl())
		sl.Scope().CopyTo(outSL.Scope())
		outSL.SetSchemaUrl(sl.SchemaUrl())
	}
	o.src, o.obj, o.records = src, *obj, outSL.LogRecords()
	return o.records
}

// place moves input record lr, of src, into the output and returns it
// there. The only record of its ResourceLogs moves with its ResourceLogs:
// no other record needs that resource or scope. Then, for an emitted
// record, the resource is returned as it came, with whole true (the
// caller makes it the record's: ownResource).
func (o *output) place(src source, obj *k8sevent.ObjectRef, rl plog.ResourceLogs, sl plog.ScopeLogs,
	lr plog.LogRecord,
) (dst plog.LogRecord, res pcommon.Map, whole bool) {
	if rl.ScopeLogs().Len() != 1 || sl.LogRecords().Len() != 1 {
		dst = o.scope(src, obj, rl, sl).AppendEmpty()
		lr.MoveTo(dst)
		return dst, res, false
	}
	if o.deferring {
		o.whole[src.rl] = true
		o.wholes++
		o.src, o.obj, o.records = src, *obj, sl.LogRecords()
		return lr, rl.Resource().Attributes(), src.emitted
	}
	o.start()
	outRL := o.logs.ResourceLogs().AppendEmpty()
	rl.MoveTo(outRL)
	o.src, o.obj, o.records = src, *obj, outRL.ScopeLogs().At(0).LogRecords()
	return o.records.At(0), outRL.Resource().Attributes(), src.emitted
}

// resource fills dst with the resource of input ResourceLogs src.rl, in,
// for records of src: for emitted records, without the keys the processor
// owns and with obj's identity. It moves in the first time, unless that
// would lose keys a later scope of the same ResourceLogs may need (a
// resource holding processor-owned or identity keys is copied); after that
// it copies what moved.
func (o *output) resource(src source, obj *k8sevent.ObjectRef, in, dst pcommon.Resource) {
	switch {
	case o.movedRL == src.rl:
		o.moved.CopyTo(dst)
		if o.movedIdentity { // in held no identity key: this restores it
			k8sevent.RemoveIdentityKeys(dst.Attributes())
		}
	case src.emitted && (src.dupKeys || stripsKeys(in.Attributes())):
		in.CopyTo(dst)
	default:
		in.MoveTo(dst)
		o.movedRL, o.moved, o.movedIdentity = src.rl, dst, src.emitted
		if src.emitted { // holds no key to strip
			k8sevent.PutIdentity(dst.Attributes(), *obj)
		}
		return
	}
	if src.emitted {
		ownResource(dst.Attributes(), src, obj)
	}
}

// ownResource makes the resource attributes of src's emitted records
// theirs: without the keys the processor owns or a second copy of a
// contract key, with obj's identity.
func ownResource(attrs pcommon.Map, src source, obj *k8sevent.ObjectRef) {
	k8sevent.OwnResource(attrs, *obj, k8sevent.OwnedKeySet, src.dupKeys)
}

// stripsKeys reports whether a resource holds a processor-owned or an
// identity key.
func stripsKeys(attrs pcommon.Map) bool {
	for k := range attrs.All() {
		if k8sevent.OwnedKeySet.Has(k) || k8sevent.IsIdentityKey(k) {
			return true
		}
	}
	return false
}

// noObject is the regarding object of passed records: their resource is
// the input's.
var noObject k8sevent.ObjectRef

// pass moves an input record out unchanged.
func (o *output) pass(src source, rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) {
	o.place(src, &noObject, rl, sl, lr)
}

// emitInput writes an emission made of the input record lr, whose decoded
// and repaired Event is ev: the repairs and the state on the record, and,
// for a record that moved with its resource, the resource made its own.
func (o *output) emitInput(src source, rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord,
	em *engine.Emission, ev *k8sevent.Event, problems k8sevent.Problem,
) {
	src.emitted = true
	dst, res, whole := o.place(src, &ev.Regarding, rl, sl, lr)
	st := o.state(em)
	k8sevent.EncodeEmitted(dst, ev, problems, &st)
	if whole {
		ownResource(res, src, &ev.Regarding)
	}
	o.note(dst, em)
}

// emitTimer writes an emission no input carries (heartbeat, finish, flush).
func (o *output) emitTimer(em *engine.Emission) {
	dst := o.scope(timerSource, &em.Event.Regarding, plog.ResourceLogs{}, plog.ScopeLogs{}).AppendEmpty()
	em.Event.Time = time.Unix(0, em.Last)
	k8sevent.Encode(&em.Event, dst)
	dst.SetObservedTimestamp(pcommon.Timestamp(em.At))
	st := o.state(em)
	k8sevent.EncodeState(dst, &st)
	o.note(dst, em)
}

// state is what the processor decided about the Event object em writes:
// its name and count, in the fields of the mode that made it (a legacy
// emission has no series state).
func (o *output) state(em *engine.Emission) k8sevent.State {
	return k8sevent.State{Name: em.Name, Count: em.Count, First: em.First, Last: em.Last, Aggregated: em.Aggregated,
		NewOccurrences: em.New, SeriesState: engine.KindNames[em.Kind]}
}

// note writes the note the engine decided (an aggregate's), if any.
func (o *output) note(dst plog.LogRecord, em *engine.Emission) {
	if em.Note != "" {
		dst.Body().SetStr(k8sevent.Truncate(em.Note, k8sevent.MaxNoteBytes))
	}
}
