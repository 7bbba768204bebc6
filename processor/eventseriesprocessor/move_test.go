package eventseriesprocessor

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/metadata"
)

// The processor moves input records and resources into its output
// (MutatesData). These tests check that what it moved is delivered intact,
// also when the next consumer refuses it and it is sent again, and that
// every output scope of one input ResourceLogs gets its resource.

// contribScript is faultScript's storm (its kinds of records and calls to
// the next consumer) shaped as the contrib receiver sends it: the
// regarding object and a service name on the resource.
func contribScript() []plog.Logs {
	var out []plog.Logs
	for _, ld := range faultScript() {
		rl := ld.ResourceLogs().At(0)
		ev, _, _ := k8sevent.Decode(rl.Resource(), rl.ScopeLogs().At(0).LogRecords().At(0), k8sevent.DecodeOptions{})
		ev.FirstTimestamp = ev.Time
		in := contribRecord(ev)
		in.ResourceLogs().At(0).Resource().Attributes().PutStr("service.name", "app")
		out = append(out, in)
	}
	return out
}

// recordKeys marshals every record the sinks took, with its resource and
// scope, in order.
func recordKeys(t *testing.T, sinks ...*faultSink) []string {
	var keys []string
	for _, s := range sinks {
		for _, ld := range s.AllLogs() {
			fuzzEachRecord(ld, func(rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) {
				keys = append(keys, fuzzRecordKey(t, rl.Resource(), sl.Scope(), lr))
			})
		}
	}
	return keys
}

// scribble changes everything a sender could still reach of a batch it
// handed over, as a receiver reusing its buffers would.
func scribble(ld plog.Logs) {
	fuzzEachRecord(ld, func(rl plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) {
		rl.Resource().Attributes().PutStr(k8sevent.AttrObjectName, "scribbled")
		lr.Attributes().PutStr(k8sevent.AttrReason, "Scribbled")
		lr.Body().SetStr("scribbled")
	})
}

// TestFaultRefusedMovedRecordIsIntact: the next consumer refuses once, for
// a while, or until the restart, from each of its calls in turn (the last
// record of a series and the shutdown flush included), and the sender
// scribbles over each batch once it was taken. Every record delivered is
// byte for byte the one delivered when nothing is refused: a moved record
// waits in the outbox whole, owned by the processor, and a batch refused
// before it was counted is still whole when its sender sends it again.
func TestFaultRefusedMovedRecordIsIntact(t *testing.T) {
	ref := unrefusedRun(t, contribScript())
	want := recordKeys(t, ref.sink)
	require.Len(t, want, 7, "a: singleton, started, finished; b: singleton, started, flush; c: singleton")

	for _, refuseFor := range []int{1, 3, -1} {
		for from := 1; from <= 6; from++ {
			t.Run(fmt.Sprintf("from call %d for %d", from, refuseFor), func(t *testing.T) {
				first, second := refuseThenRestart(t, contribScript(), from, refuseFor, scribble)
				assert.Equal(t, want, recordKeys(t, first.sink, second.sink))
			})
		}
	}
}

// unrefusedRun is script sent, in event time with storage, to a processor
// whose next consumer takes everything: what refuseThenRestart's runs
// must deliver.
func unrefusedRun(t *testing.T, script []plog.Logs) *run {
	t.Helper()
	clock := func() time.Time { return t0.Add(time.Hour) }
	h, stop := fileStorage(t, t.TempDir())
	defer stop()
	ref := newRunAt(t, eventTime, clock)
	require.NoError(t, ref.p.Start(context.Background(), h))
	for _, ld := range script {
		require.NoError(t, ref.p.ConsumeLogs(context.Background(), ld))
		settle(t, ref.p)
	}
	require.NoError(t, ref.p.Shutdown(context.Background()))
	return ref
}

// TestMovedResourceReachesEveryScope: one input ResourceLogs whose records
// go out in several output scopes (split by a timer record, and by records
// without an Event passed between them): each emitted record's scope has
// the input resource without the keys the processor owns and with its
// regarding object's identity instead of any the input had, each timer
// record's scope that identity only, each passed record's scope the input
// resource unchanged; whether the resource moved (no owned or identity key
// on it) or was copied (an identity key on it, as an app's resource has;
// an owned key, which makes every record of the resource an Event record:
// the log lines are dropped).
func TestMovedResourceReachesEveryScope(t *testing.T) {
	for _, tc := range []struct{ identity, owned bool }{{false, false}, {true, false}, {true, true}} {
		owned := tc.owned
		t.Run(fmt.Sprintf("identity key %v, owned key %v", tc.identity, tc.owned), func(t *testing.T) {
			in := plog.NewLogs()
			rl := in.ResourceLogs().AppendEmpty()
			res := rl.Resource().Attributes()
			res.PutStr("service.name", "app")
			if tc.identity {
				res.PutStr(k8sevent.AttrNodeName, "node-1")
				res.PutStr("k8s.pod.name", "the-sender")
			}
			if owned {
				res.PutStr(k8sevent.AttrSeriesState, "started")
			}
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("test")
			for i, d := range []time.Duration{0, time.Second, 2 * time.Second, -1, 10 * time.Minute, -1} {
				lr := sl.LogRecords().AppendEmpty()
				if d < 0 { // no Event: passed
					lr.Body().SetStr(fmt.Sprintf("log line %d", i))
					continue
				}
				ev := podEvent("a", "BackOff", "x")
				if d > time.Minute {
					ev = podEvent("b", "Unhealthy", "x")
				}
				ev.Time = t0.Add(d)
				k8sevent.Encode(&ev, lr)
			}
			original := pcommon.NewResource()
			rl.Resource().CopyTo(original)
			stripped := pcommon.NewResource()
			original.CopyTo(stripped)
			k8sevent.RemoveKeys(stripped.Attributes(), k8sevent.OwnedKeys)
			// identified is what an emitted record about ref has as resource.
			identified := func(base pcommon.Resource, ref k8sevent.ObjectRef) map[string]any {
				r := pcommon.NewResource()
				base.CopyTo(r)
				k8sevent.PutIdentity(r.Attributes(), ref)
				return r.Attributes().AsRaw()
			}

			h := newHarnessWith(t, eventTime, func() time.Time { return t0.Add(time.Hour) }, &faultSink{})
			h.consume(in)
			var scopes []string
			for _, ld := range h.sink.AllLogs() {
				for i := range ld.ResourceLogs().Len() {
					out := ld.ResourceLogs().At(i)
					osl := out.ScopeLogs().At(0)
					lr := osl.LogRecords().At(0)
					var ev k8sevent.Event
					k8sevent.DecodeAttributes(lr.Attributes(), &ev, k8sevent.DecodeOptions{})
					switch {
					case osl.Scope().Name() == metadata.ScopeName:
						scopes = append(scopes, "timer")
						assert.Equal(t, identified(pcommon.NewResource(), ev.Regarding), out.Resource().Attributes().AsRaw(),
							"a timer record's resource: its regarding object's identity only")
					case lr.Attributes().Len() == 0:
						scopes = append(scopes, "passed")
						assert.Equal(t, original.Attributes().AsRaw(), out.Resource().Attributes().AsRaw())
					default:
						scopes = append(scopes, "emitted")
						assert.Equal(t, identified(stripped, ev.Regarding), out.Resource().Attributes().AsRaw())
						v, ok := out.Resource().Attributes().Get("k8s.pod.name")
						require.True(t, ok)
						assert.Equal(t, ev.Regarding.Name, v.Str(), "the regarding Pod, not the sender")
					}
				}
			}
			want := []string{"emitted", "passed", "timer", "emitted", "passed"}
			if owned {
				want = []string{"emitted", "timer", "emitted"}
			}
			assert.True(t, slices.Equal(want, scopes), "the output scopes: %v", scopes)
		})
	}
}

// TestFaultRefusedRecordKeepsMovedSourceHost: a contrib-shaped record
// (the sender's node as k8s.node.name on a resource of its own) goes out
// with that host moved onto the record as k8s.event.source.host, and no
// k8s.node.name left on its resource, also when the next consumer refuses
// it, the last record of a series or the shutdown flush, once, for a
// while or until the restart, and the sender scribbles over the batch it
// handed over: every record delivered states the host, and the counts
// delivered add up to the occurrences sent (requireExact).
func TestFaultRefusedRecordKeepsMovedSourceHost(t *testing.T) {
	for _, refuseFor := range []int{1, 3, -1} {
		for from := 1; from <= 6; from++ {
			t.Run(fmt.Sprintf("from call %d for %d", from, refuseFor), func(t *testing.T) {
				first, second := refuseThenRestart(t, contribScript(), from, refuseFor, scribble)
				var fromInput int
				for _, s := range []*faultSink{first.sink, second.sink} {
					for _, ld := range s.AllLogs() {
						fuzzEachRecord(ld, func(rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) {
							_, onResource := rl.Resource().Attributes().Get(k8sevent.AttrNodeName)
							assert.False(t, onResource, "no k8s.node.name on the resource of a Pod's Event")
							if sl.Scope().Name() == metadata.ScopeName {
								return // a timer record: no input, no host
							}
							fromInput++
							host, ok := lr.Attributes().Get(k8sevent.AttrSourceHost)
							if assert.True(t, ok, "k8s.event.source.host on the record") {
								assert.Equal(t, "node-1", host.Str())
							}
						})
					}
				}
				assert.Positive(t, fromInput)
				collect(t, first.sink, second.sink).requireExact(t, faultScriptOccurrences)
			})
		}
	}
}

// TestFaultRefusedBatchKeptInPlaceThenTimer: contribScript's records in
// batches of several ResourceLogs of one record each, so that a batch's
// output starts as the input's own ResourceLogs kept in place and then
// meets a timer record (a's finish, decided while b is observed), which
// moves them out into an output of its own. The next consumer refuses
// once, for a while, or until the restart, from each of its calls in turn
// (the last record of a series and the shutdown flush included), the
// sender scribbling over each batch once taken: every record delivered is
// byte for byte the one delivered when nothing is refused, and the final
// counts add up to the occurrences.
func TestFaultRefusedBatchKeptInPlaceThenTimer(t *testing.T) {
	script := func() []plog.Logs {
		s := contribScript()
		merged := []plog.Logs{s[0], plog.NewLogs(), plog.NewLogs()}
		for i, ld := range s[1:] {
			ld.ResourceLogs().MoveAndAppendTo(merged[1+min(i/3, 1)].ResourceLogs())
		}
		return merged // a; a, a, b; b, b, c
	}
	ref := unrefusedRun(t, script())
	want := recordKeys(t, ref.sink)
	require.Len(t, want, 7, "a: singleton, started, finished; b: singleton, started, flush; c: singleton")
	inputThenTimer := false
	for _, ld := range ref.sink.AllLogs() {
		recs := flatten(ld)
		for i := 1; i < len(recs); i++ {
			inputThenTimer = inputThenTimer || !recs[i-1].fromTimer() && recs[i].fromTimer()
		}
	}
	require.True(t, inputThenTimer, "a batch's output has an input record before a timer record")
	calls := len(ref.sink.AllLogs())

	for _, refuseFor := range []int{1, 3, -1} {
		for from := 1; from <= calls; from++ {
			t.Run(fmt.Sprintf("from call %d for %d", from, refuseFor), func(t *testing.T) {
				first, second := refuseThenRestart(t, script(), from, refuseFor, scribble)
				assert.Equal(t, want, recordKeys(t, first.sink, second.sink))
				collect(t, first.sink, second.sink).requireExact(t, faultScriptOccurrences)
			})
		}
	}
}
