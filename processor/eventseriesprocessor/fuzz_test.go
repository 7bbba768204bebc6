package eventseriesprocessor

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/k8sevents/otel-k8sevents/internal/harness/fuzzbytes"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
)

// FuzzConsumeLogs drives the processor with a configuration and a sequence
// of batches that the fuzz input describes (see fuzzCase for the layout),
// then checks what reaches the sink:
//   - ConsumeLogs and Shutdown never fail;
//   - every record the processor writes decodes to an Event that passes the
//     API server's validation for both Event APIs once a writer fills what it
//     adds, with a valid name, the state and count the processor wrote (and
//     nothing else: resource attributes must not change what it decodes to),
//     series counts >= 2 and counts >= 1;
//   - every other record is an input record, byte for byte, that carries no
//     Event, and in pass mode every such input record comes out once; an
//     Event record that cannot be made valid never comes out;
//   - the counts written for one Event name never go down, and in series mode
//     without spam filter and evictions the last count of every name adds up
//     to what the engine counted;
//   - in event time, two runs give the same output.
func FuzzConsumeLogs(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newFuzzCase(data)
		first := c.run(t)
		if !c.processing {
			require.Equal(t, first, newFuzzCase(data).run(t), "event time replay is deterministic")
		}
	})
}

// fuzzNow is the processing clock of the fuzzed processors, fixed: in
// event time it bounds the watermark, and the far-future times the fuzzer
// makes are clamped alike in each run.
func fuzzNow() time.Time { return t0.AddDate(2, 0, 0) }

// fuzzSeqKey tags every input record with its index, so that each output
// record can be traced to the input record it was made of; the processor
// treats it as any other non-contract attribute.
const fuzzSeqKey = "fuzz.seq"

// fuzzContractKeys is the codec's one list, shared with FuzzDecode.
var fuzzContractKeys = k8sevent.ContractKeys[:]

var fuzzJunkKeys = []string{"", "k8s.pod.name", "K8S.EVENT.REASON", "k8s.event", "k8s.event.reason ", "log.file.path", "http.status"}

// fuzzStrings are string values for attributes: plausible, borderline and bad.
var fuzzStrings = []string{
	"", "Pod", "ns", "kube-system", "default", "web-0", "BackOff", "Bad NS", "a/b", "!!",
	"2026-03-01T12:00:00Z", "2026-03-01T11:59:59.123456Z", "5", "-3", "started", "finished",
	"true", "\xff\xfe", strings.Repeat("r", 200), strings.Repeat("é", 700), "9223372036854775808", "kubelet",
	"x.y/z", "v1", "2026-03-01 12:00:00 +0000 UTC", "singleton", "ongoing", "0", "1e3", " 7", "uid-a", "node-1",
}

type fuzzObject struct{ kind, ns, name, uid, apiVersion string }

var fuzzObjects = []fuzzObject{
	{"Pod", "ns", "web-0", "pod-uid-0", "v1"},
	{"Pod", "ns", "web-1", "pod-uid-1", "v1"},
	{"Node", "", "node-1", "node-uid-1", "v1"}, // cluster scoped: events in "default"
	{"Deployment", "kube-system", "coredns", "deploy-uid", "apps/v1"},
}

var (
	fuzzReasons   = []string{"BackOff", "Unhealthy", "FailedScheduling", "Pulled"}
	fuzzScopes    = []string{"", "test", "k8s_events", "otlp"}
	fuzzUIDs      = []string{"ev-uid-a", "ev-uid-b", "ev-uid-c"}
	fuzzEventName = "web-0.17f2a3b4c5d6e7f8"
	fuzzQPS       = []float64{1.0 / 300, 1.0 / 60, 1, 10}
	fuzzSpamKeys  = [][]string{
		{"source", "object", "type"}, {"source", "object", "type", "reason"}, {"object"}, {"reason"}, {"type", "source"},
	}
	fuzzIntervals  = []time.Duration{30 * time.Second, 10 * time.Minute, time.Hour, time.Minute}
	fuzzFinishes   = []time.Duration{30 * time.Second, time.Minute, 6 * time.Minute, time.Hour}
	fuzzHeartbeats = []time.Duration{30 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}
)

// fuzzReader reads the fuzz input; the methods below build from it.
type fuzzReader struct{ *fuzzbytes.Reader }

// fuzzCase is one decoded fuzz input. Layout:
//
//	config  6 bytes: flags (legacy, drop, small max_keys, spam off, aggregation off,
//	        key with resourceVersion), max_keys, burst, qps|spam key, max_events|interval,
//	        finish|heartbeat|processing time
//	batches 1 byte (1..6), each: ResourceLogs count (1..3), each: header (resource
//	        attrs, contrib-style object on the resource, ScopeLogs count), resource
//	        attrs, then per ScopeLogs: header (record count 0..4, scope name), records
//	record  object|reason|type|omissions, note|huge|counts|junk count, time op|severity,
//	        then the optional parts: time argument, body size, count, junk attrs
type fuzzCase struct {
	mutate     func(*Config)
	legacy     bool
	drop       bool
	noEvict    bool
	noSpam     bool
	processing bool
	batches    []plog.Logs
}

func newFuzzCase(data []byte) *fuzzCase {
	r := &fuzzReader{fuzzbytes.New(data)}
	c := &fuzzCase{}
	flags, keys, burst, spam, agg, timers := r.Byte(), r.Byte(), r.Byte(), r.Byte(), r.Byte(), r.Byte()
	c.legacy, c.drop = flags&1 != 0, flags&2 != 0
	c.noEvict, c.noSpam = flags&4 == 0, flags&8 != 0
	c.processing = (timers>>4)&7 == 7
	c.mutate = func(cfg *Config) {
		cfg.TimeSource = timeEvent
		if c.processing {
			// Wall clock: timers must not fire during the run.
			cfg.TimeSource = timeProcessing
		}
		if c.legacy {
			cfg.Mode = modeLegacy
		}
		if c.drop {
			cfg.NonEventRecords = recordsDrop
		}
		if !c.noEvict {
			cfg.MaxKeys = 1 + int(keys%8)
		}
		cfg.SpamFilter.Enabled = !c.noSpam
		cfg.SpamFilter.Burst = 1 + int(burst%30)
		cfg.SpamFilter.QPS = fuzzQPS[spam&3]
		cfg.SpamFilter.Key = fuzzSpamKeys[int(spam>>2)%len(fuzzSpamKeys)]
		cfg.Aggregation.Enabled = flags&16 == 0
		cfg.Aggregation.MaxEvents = 2 + int(agg%11)
		cfg.Aggregation.MaxInterval = fuzzIntervals[(agg>>4)&3]
		cfg.Series.KeyIgnoresResourceVersion = flags&32 == 0
		cfg.Series.FinishAfter = fuzzFinishes[timers&3]
		// At least the least Validate accepts (finish_after / 100), which it is then.
		cfg.Series.HeartbeatInterval = max(fuzzHeartbeats[(timers>>2)&3], cfg.Series.FinishAfter/100)
		if c.processing {
			cfg.Series.FinishAfter, cfg.Series.HeartbeatInterval = 24*time.Hour, 48*time.Hour
		}
	}
	g := &fuzzGen{r: r, cursor: t0, counts: map[string]int64{}}
	for range 1 + int(r.Byte()%6) {
		c.batches = append(c.batches, g.batch())
	}
	return c
}

// fuzzGen builds batches; it remembers the time cursor and each uid's last count.
type fuzzGen struct {
	r      *fuzzReader
	cursor time.Time
	prevTS pcommon.Timestamp
	counts map[string]int64
	seq    int64
	huge   int
}

func (g *fuzzGen) batch() plog.Logs {
	r := g.r
	ld := plog.NewLogs()
	for range 1 + int(r.Byte()%3) {
		rl := ld.ResourceLogs().AppendEmpty()
		h := r.Byte()
		res := rl.Resource().Attributes()
		if h&4 != 0 { // contrib style: the regarding object on the resource
			o := fuzzObjects[(h>>3)&3]
			res.PutStr(k8sevent.AttrObjectKind, o.kind)
			res.PutStr(k8sevent.AttrObjectName, o.name)
			res.PutStr(k8sevent.AttrObjectUID, o.uid)
			res.PutStr(k8sevent.AttrObjectAPIVersion, o.apiVersion)
			res.PutStr(k8sevent.AttrNodeName, "node-1")
		}
		for range h & 3 {
			g.attr(res)
		}
		for range 1 + int(h>>5&1) {
			s := r.Byte()
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName(fuzzScopes[(s>>3)&3])
			for range int(s&7) % 5 {
				g.record(sl.LogRecords().AppendEmpty(), h&4 != 0)
			}
		}
	}
	return ld
}

func (g *fuzzGen) record(lr plog.LogRecord, objectOnResource bool) {
	r := g.r
	r0, r1, r2 := r.Byte(), r.Byte(), r.Byte()
	o := fuzzObjects[r0&3]
	ev := k8sevent.Event{
		Type: k8sevent.TypeNormal, Reason: fuzzReasons[(r0>>2)&3], Action: "Sync",
		Note:                "note " + strconv.Itoa(int(r1&15)),
		Regarding:           k8sevent.ObjectRef{Kind: o.kind, Namespace: o.ns, Name: o.name, UID: o.uid, APIVersion: o.apiVersion},
		ReportingController: "kubelet", ReportingInstance: "node-1", SourceComponent: "kubelet", SourceHost: "node-1",
	}
	if r0&16 != 0 {
		ev.Type = k8sevent.TypeWarning
	}
	if r0&32 != 0 {
		ev.Reason = ""
	}
	if r0&64 != 0 {
		if r0&128 != 0 {
			ev.Regarding.Kind = ""
		} else {
			ev.Regarding.Name = ""
		}
	}
	if objectOnResource {
		ev.Regarding.Kind, ev.Regarding.Name, ev.Regarding.UID, ev.Regarding.APIVersion = "", "", "", ""
		ev.SourceHost = ""
	}
	k8sevent.Encode(&ev, lr)
	switch r1 & 15 { // bodies that are no string
	case 12:
		pcommon.NewValueEmpty().CopyTo(lr.Body())
	case 13:
		lr.Body().SetEmptyMap().PutStr("msg", ev.Note)
	case 14:
		lr.Body().SetInt(14)
	case 15:
		lr.Body().SetEmptyBytes().FromRaw([]byte(ev.Note))
	}

	// Severity as different senders write it.
	switch (r2 >> 3) & 3 {
	case 1:
		lr.SetSeverityText("")
	case 2:
		lr.SetSeverityText("")
		lr.SetSeverityNumber(plog.SeverityNumberUnspecified)
	case 3:
		lr.SetSeverityText([]string{"warning", "Error", "INFO", "nOrMaL"}[r2>>6])
	}

	// Time.
	var ts pcommon.Timestamp
	switch r2 & 7 {
	case 0: // unset
	case 1:
		ts = g.prevTS
	case 2:
		g.cursor = g.cursor.Add(time.Duration(1+int(r.Byte())) * time.Second)
	case 3:
		g.cursor = g.cursor.Add(time.Duration(1+int(r.Byte()%8)) * time.Hour)
	case 4: // out of order
		g.cursor = g.cursor.Add(-time.Duration(1+int(r.Byte())) * time.Second)
	case 5:
		g.cursor = g.cursor.Add(-time.Duration(1+int(r.Byte()%4)) * time.Hour)
	case 6:
		g.cursor = g.cursor.Add(time.Duration(r.Byte()) * time.Millisecond)
	case 7:
		if a := r.Byte(); a == 255 {
			ts = pcommon.Timestamp(r.U64()) // anything, even past 2262
		} else {
			g.cursor = g.cursor.Add(time.Duration(a) * 24 * time.Hour)
		}
	}
	if r2&7 >= 2 && ts == 0 {
		ts = pcommon.NewTimestampFromTime(g.cursor)
	}
	lr.SetTimestamp(ts)
	if ts != 0 {
		g.prevTS = ts
	}

	if r1&16 != 0 && g.huge < 4 { // huge body, up to ~200 KB; a few per input to stay fast
		g.huge++
		n := (int(r.Byte()) + 1) * 800
		piece := "x"
		if n%1600 == 0 {
			piece = "é"
		}
		lr.Body().SetStr(strings.Repeat(piece, n/len(piece)))
	}
	attrs := lr.Attributes()
	if r1&32 != 0 {
		g.putCount(attrs)
	}
	for range r1 >> 6 {
		g.attr(attrs)
	}
	attrs.PutInt(fuzzSeqKey, g.seq)
	g.seq++
}

// putCount writes a cumulative count for an Event object named by uid or name.
func (g *fuzzGen) putCount(attrs pcommon.Map) {
	r := g.r
	c, a := r.Byte(), int64(r.Byte())
	id := fuzzEventName
	if c&3 < 3 {
		id = fuzzUIDs[c&3]
		attrs.PutStr(k8sevent.AttrEventUID, id)
	} else {
		attrs.PutStr(k8sevent.AttrEventName, id)
	}
	prev := g.counts[id]
	var n int64
	switch (c >> 2) & 7 {
	case 0:
		n = prev + 1
	case 1:
		n = prev + a
	case 2:
		n = prev - a
	case 3:
		n = prev
	case 4:
		n = -a
	case 5:
		n = 0
	case 6:
		n = math.MaxInt64 - a
	case 7:
		n = 1<<40 + a
	}
	g.counts[id] = n
	switch c >> 5 & 3 {
	case 0:
		attrs.PutInt(k8sevent.AttrCount, n)
	case 1:
		attrs.PutInt(k8sevent.AttrSeriesCount, n)
	case 2:
		attrs.PutInt(k8sevent.AttrCount, n)
		attrs.PutInt(k8sevent.AttrSeriesCount, n)
	case 3:
		attrs.PutStr(k8sevent.AttrCount, strconv.FormatInt(n, 10))
	}
}

// attr puts one attribute: mostly a contract key, a value of any type.
func (g *fuzzGen) attr(m pcommon.Map) {
	r := g.r
	kb, vb := int(r.Byte()), r.Byte()
	key := fuzzContractKeys[kb%len(fuzzContractKeys)]
	if kb >= 192 {
		key = fuzzJunkKeys[kb%len(fuzzJunkKeys)]
	}
	v := m.PutEmpty(key)
	sel := int(vb >> 3)
	switch vb & 7 {
	case 0, 1:
		v.SetStr(fuzzStrings[sel%len(fuzzStrings)])
	case 2:
		v.SetStr(string(r.Bytes(int(r.Byte()))))
	case 3:
		if sel%8 == 7 {
			v.SetInt(int64(r.Byte()))
		} else {
			v.SetInt([]int64{0, 1, 2, -1, math.MaxInt64, math.MinInt64, 1 << 40}[sel%8])
		}
	case 4:
		v.SetDouble([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30, 2.5, math.Copysign(0, -1), 1e19, 3}[sel%8])
	case 5:
		if sel%2 == 0 {
			v.SetBool(sel%4 == 0)
		} else {
			v.SetEmptyBytes().FromRaw(r.Bytes(int(r.Byte() % 16)))
		}
	case 6:
		mm := v.SetEmptyMap()
		mm.PutStr(fuzzContractKeys[sel%len(fuzzContractKeys)], "x")
		mm.PutInt("n", int64(sel))
	case 7:
		if sel%2 == 0 {
			s := v.SetEmptySlice()
			s.AppendEmpty().SetStr("a")
			s.AppendEmpty().SetInt(1)
		}
		// else: left empty
	}
}

// fuzzInput is what the checks know of one input record.
type fuzzInput struct {
	key     string // the record with its resource and scope, marshaled
	noEvent bool   // carries no Event: passed or dropped unchanged
	invalid bool   // an Event that cannot be made valid: dropped
	seen    bool
}

func fuzzRecordKey(t *testing.T, res pcommon.Resource, scope pcommon.InstrumentationScope, lr plog.LogRecord) string {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	res.CopyTo(rl.Resource())
	sl := rl.ScopeLogs().AppendEmpty()
	scope.CopyTo(sl.Scope())
	lr.CopyTo(sl.LogRecords().AppendEmpty())
	b, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	return string(b)
}

func fuzzEachRecord(ld plog.Logs, f func(rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord)) {
	for i := range ld.ResourceLogs().Len() {
		rl := ld.ResourceLogs().At(i)
		for j := range rl.ScopeLogs().Len() {
			sl := rl.ScopeLogs().At(j)
			for k := range sl.LogRecords().Len() {
				f(rl, sl, sl.LogRecords().At(k))
			}
		}
	}
}

// run feeds the batches to a new processor, checks the output and returns
// it marshaled.
func (c *fuzzCase) run(t *testing.T) []string {
	var inputs []*fuzzInput
	for _, ld := range c.batches {
		fuzzEachRecord(ld, func(rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) {
			in := &fuzzInput{key: fuzzRecordKey(t, rl.Resource(), sl.Scope(), lr)}
			ev, _, found := k8sevent.Decode(rl.Resource(), lr, k8sevent.DecodeOptions{SkipTimes: true})
			_, fatal := k8sevent.Sanitize(&ev, t0)
			in.noEvent, in.invalid = !found, found && fatal != 0
			inputs = append(inputs, in)
		})
	}

	h := newHarnessWith(t, c.mutate, fuzzNow, &faultSink{})
	for _, ld := range c.batches {
		// The processor mutates its input (it moves records out), so the
		// collector hands it a copy of a batch other consumers share.
		in := plog.NewLogs()
		ld.CopyTo(in)
		require.NoError(t, h.p.ConsumeLogs(context.Background(), in))
		settle(t, h.p)
	}
	require.NoError(t, h.p.Shutdown(context.Background()))

	counts := map[string][]int64{}
	var names []string
	var out []string
	for _, ld := range h.sink.AllLogs() {
		fuzzEachRecord(ld, func(rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) {
			if sl.Scope().Name() != metadata.ScopeName {
				v, ok := lr.Attributes().Get(fuzzSeqKey)
				require.True(t, ok, "an output record in an input scope is made of an input record")
				seq := v.Int()
				require.True(t, seq >= 0 && seq < int64(len(inputs)))
				in := inputs[seq]
				require.False(t, in.seen, "input record %d came out twice", seq)
				in.seen = true
				require.False(t, in.invalid, "record %d with an Event that cannot be made valid came out", seq)
				if in.noEvent {
					require.False(t, c.drop, "record %d without Event passed in drop mode", seq)
					require.Equal(t, in.key, fuzzRecordKey(t, rl.Resource(), sl.Scope(), lr),
						"record %d without Event is passed unchanged", seq)
					return
				}
			}
			name, n := c.checkEventRecord(t, rl.Resource(), lr)
			if counts[name] == nil {
				names = append(names, name)
			} else {
				last := counts[name][len(counts[name])-1]
				require.GreaterOrEqual(t, n, last, "counts of %s go down: %v then %d", name, counts[name], n)
			}
			counts[name] = append(counts[name], n)
		})
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	if !c.drop {
		for seq, in := range inputs {
			require.True(t, !in.noEvent || in.seen, "record %d without Event was not passed", seq)
		}
	}

	if !c.legacy && c.noSpam && c.noEvict {
		var sum int64 // saturates at MaxInt64, as the engine's counts do
		for _, name := range names {
			if n := counts[name][len(counts[name])-1]; sum > math.MaxInt64-n {
				sum = math.MaxInt64
			} else {
				sum += n
			}
		}
		require.Equal(t, h.p.engine.Stats.Occurrences, sum,
			"the last counts of the Event names add up to the occurrences counted: %v", counts)
	}
	return out
}

// checkEventRecord checks a record the processor wrote and returns the name
// of the Event object it writes and its count.
func (c *fuzzCase) checkEventRecord(t *testing.T, res pcommon.Resource, lr plog.LogRecord) (string, int64) {
	attrs := lr.Attributes()
	nameV, ok := attrs.Get(k8sevent.AttrEventName)
	require.True(t, ok, "an Event record names its object")
	name := nameV.Str()
	require.Empty(t, validation.IsDNS1123Subdomain(name), "name %q", name)
	intAttr := func(k string) (int64, bool) {
		v, ok := attrs.Get(k)
		if !ok {
			return 0, false
		}
		require.Equal(t, pcommon.ValueTypeInt, v.Type(), "%s is an int", k)
		return v.Int(), true
	}
	stateV, hasState := attrs.Get(k8sevent.AttrSeriesState)

	ev, _, found := k8sevent.Decode(res, lr, k8sevent.DecodeOptions{})
	require.True(t, found)
	require.Equal(t, name, ev.Name)

	require.Empty(t, ev.UID, "the source object's uid is not the written object's")
	_, aggregated := attrs.Get(k8sevent.AttrAggregated)
	require.Equal(t, aggregated, ev.Aggregated, "the decoded aggregation mark is the one written")
	var n int64
	if c.legacy {
		require.False(t, hasState, "legacy records carry no series state")
		var ok bool
		n, ok = intAttr(k8sevent.AttrCount)
		require.True(t, ok, "legacy records carry a count")
		_, ok = intAttr(k8sevent.AttrSeriesCount)
		require.False(t, ok, "legacy records carry no series count")
		require.Equal(t, n, ev.Count, "the decoded count is the one written")
		require.Zero(t, ev.SeriesCount, "a legacy record decodes without series count")
		require.Empty(t, ev.SeriesState, "a legacy record decodes without series state")
	} else {
		require.True(t, hasState, "series records carry a state")
		state := stateV.Str()
		require.Contains(t, []string{k8sevent.StateSingleton, k8sevent.StateStarted, k8sevent.StateOngoing, k8sevent.StateFinished}, state)
		require.Equal(t, state, ev.SeriesState, "the decoded state is the one written")
		_, ok := intAttr(k8sevent.AttrCount)
		require.False(t, ok, "series records carry no legacy count")
		require.Zero(t, ev.Count, "a series record decodes without legacy count")
		sc, hasCount := intAttr(k8sevent.AttrSeriesCount)
		if state == k8sevent.StateSingleton {
			require.False(t, hasCount, "a singleton carries no series count")
			require.Zero(t, ev.SeriesCount, "a singleton decodes without series count")
			n = 1
		} else {
			require.True(t, hasCount, "state %s carries a series count", state)
			require.GreaterOrEqual(t, sc, int64(2), "state %s carries a series count >= 2", state)
			require.Equal(t, sc, ev.SeriesCount, "the decoded series count is the one written")
			n = sc
		}
	}
	require.GreaterOrEqual(t, n, int64(1))

	w := writable(ev)
	require.NoError(t, k8sevent.Validate(&w, k8sevent.APICoreV1))
	require.NoError(t, k8sevent.Validate(&w, k8sevent.APIEventsV1))
	return name, n
}
