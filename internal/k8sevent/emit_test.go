package k8sevent_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// randomEmitCase is a record and its resource as a sender may make them
// (random contract keys and others, repeated keys among them, values that
// hold what the processor writes or not) and an Event decoded from them.
type randomEmitCase struct {
	res, rec [][2]string
	ev       k8sevent.Event
	problems k8sevent.Problem
	st       k8sevent.State
}

func newRandomEmitCase(t *testing.T, rng *rand.Rand) randomEmitCase {
	values := []string{"node-1", "web-0", "shop", "", "x"}
	other := []string{"service.name", "k8s.pod.name", "k8s.pod.uid", "k8s.container.name", "k8s.deployment.name"}
	// Keys outside the contract appear once: a removal of a repaired
	// field moves the last attribute into its place (pcommon.Map.Remove).
	pick := func(n int) [][2]string {
		var kvs [][2]string
		used := map[string]bool{}
		for range n {
			k := other[rng.IntN(len(other))]
			if rng.IntN(3) > 0 {
				k = k8sevent.ContractKeys[rng.IntN(len(k8sevent.ContractKeys))]
			} else if used[k] {
				continue
			}
			used[k] = true
			kvs = append(kvs, [2]string{k, values[rng.IntN(len(values))]})
		}
		return kvs
	}
	c := randomEmitCase{res: pick(rng.IntN(12)), rec: pick(rng.IntN(16))}
	resAttrs, lr := resourceWith(t, c.res...), recordWith(t, c.rec...)
	_, _ = k8sevent.DecodeAttributes(resAttrs, &c.ev, k8sevent.DecodeOptions{})
	c.problems, _ = k8sevent.DecodeRecord(lr, &c.ev, k8sevent.DecodeOptions{})
	kinds := []string{"Pod", "Node", "ConfigMap"}
	c.ev.Regarding.Kind = kinds[rng.IntN(len(kinds))]
	if rng.IntN(4) == 0 {
		c.ev.Namespace = values[rng.IntN(len(values))]
	}
	repairs := []k8sevent.Problem{0, k8sevent.ProblemLongNote, k8sevent.ProblemBadType, k8sevent.ProblemZeroTime,
		k8sevent.ProblemLongField, k8sevent.ProblemBadController}
	c.problems |= repairs[rng.IntN(len(repairs))]
	states := []string{"", k8sevent.StateSingleton, k8sevent.StateStarted, k8sevent.StateFinished}
	c.st = k8sevent.State{Name: values[rng.IntN(len(values))], SeriesState: states[rng.IntN(len(states))],
		Count: int64(rng.IntN(5)), First: 1_772_000_000_000_000_000, Last: 1_772_000_001_000_000_000,
		Aggregated: rng.IntN(2) == 0, NewOccurrences: int64(rng.IntN(3))}
	return c
}

// recordWith is a log record holding kvs in order, repeated keys included.
func recordWith(t *testing.T, kvs ...[2]string) plog.LogRecord {
	lr := plog.NewLogRecord()
	resourceWith(t, kvs...).MoveTo(lr.Attributes())
	return lr
}

// TestEmittedResourceIsOwnedKeysRemovedThenIdentity: OwnResource's one
// pass leaves a resource exactly as its three steps do one after the other
// (the owned keys removed, with dupKeys every later copy of a contract key,
// then PutIdentity): the same keys, values and order, on random resources.
func TestEmittedResourceIsOwnedKeysRemovedThenIdentity(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 3000 {
		c := newRandomEmitCase(t, rng)
		dupKeys := c.problems&k8sevent.ProblemDuplicateKey != 0
		steps, one := resourceWith(t, c.res...), resourceWith(t, c.res...)
		k8sevent.OwnedKeySet.Remove(steps)
		if dupKeys {
			k8sevent.DropDuplicateKeys(steps)
		}
		k8sevent.PutIdentity(steps, c.ev.Regarding)
		k8sevent.OwnResource(one, c.ev.Regarding, k8sevent.OwnedKeySet, dupKeys)
		require.Equal(t, inOrder(steps), inOrder(one), "case %d: %+v", i, c)
	}
}

// TestEncodeEmittedWritesTheRepairsAndTheState: on random records, an
// emitted record reads as the input did but for what the processor
// decided: its name and state (in the fields of its mode only), the
// repaired fields, the source host and the Event's own namespace. Every
// key outside the contract stays (in order, unless a repaired field was
// removed), and with a duplicate key reported every contract key is there
// once.
func TestEncodeEmittedWritesTheRepairsAndTheState(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 26))
	for i := range 4000 {
		c := newRandomEmitCase(t, rng)
		c.ev.Time = time.Unix(0, c.st.Last)
		in, out := recordWith(t, c.rec...), recordWith(t, c.rec...)
		k8sevent.EncodeEmitted(out, &c.ev, c.problems, &c.st)

		var want, got k8sevent.Event
		_, _ = k8sevent.DecodeAttributes(in.Attributes(), &want, k8sevent.DecodeOptions{})
		problems, _ := k8sevent.DecodeAttributes(out.Attributes(), &got, k8sevent.DecodeOptions{})
		applyDecided(&want, &c)
		require.Equal(t, want, got, "case %d: %+v", i, c)
		kept, wantKept := notContract(out.Attributes()), notContract(in.Attributes())
		if c.problems&(k8sevent.ProblemLongField|k8sevent.ProblemBadController) != 0 {
			slices.Sort(kept) // removing a dropped field moves the last key into its place
			slices.Sort(wantKept)
		}
		require.Equal(t, wantKept, kept, "case %d", i)
		if c.problems&k8sevent.ProblemDuplicateKey != 0 {
			require.Zero(t, problems&k8sevent.ProblemDuplicateKey, "case %d: %v", i, inOrder(out.Attributes()))
		}
		require.Equal(t, k8sevent.EventName, out.EventName())
		wantNote, wantType, wantTime := "", "", pcommon.Timestamp(0)
		if c.problems&k8sevent.ProblemLongNote != 0 {
			wantNote = c.ev.Note
		}
		if c.problems&k8sevent.ProblemBadType != 0 {
			wantType = c.ev.Type
		}
		if c.problems&k8sevent.ProblemZeroTime != 0 {
			wantTime = pcommon.NewTimestampFromTime(c.ev.Time)
		}
		require.Equal(t, wantNote, out.Body().Str())
		require.Equal(t, wantType, out.SeverityText())
		require.Equal(t, wantTime, out.Timestamp())
	}
}

// applyDecided is what EncodeEmitted changes in the Event an input
// record's attributes decode to.
func applyDecided(ev *k8sevent.Event, c *randomEmitCase) {
	ev.Name, ev.UID, ev.SourceHost, ev.Namespace = c.st.Name, "", c.ev.SourceHost, ""
	if c.ev.Namespace != c.ev.Regarding.Namespace {
		ev.Namespace = c.ev.Namespace
	}
	if c.problems&(k8sevent.ProblemLongField|k8sevent.ProblemBadController) != 0 {
		ev.Reason, ev.Action = c.ev.Reason, c.ev.Action
		ev.ReportingController, ev.ReportingInstance = c.ev.ReportingController, c.ev.ReportingInstance
	}
	ev.Count, ev.SeriesCount, ev.SeriesState, ev.Aggregated = 0, 0, "", false
	ev.FirstTimestamp, ev.LastTimestamp, ev.EventTime, ev.SeriesLastObservedTime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	ev.NewOccurrences = c.st.NewOccurrences
	first, last := time.Unix(0, c.st.First).UTC(), time.Unix(0, c.st.Last).UTC()
	switch c.st.SeriesState {
	case "":
		ev.Count, ev.FirstTimestamp, ev.LastTimestamp, ev.Aggregated = c.st.Count, first, last, c.st.Aggregated
	case k8sevent.StateSingleton:
		ev.SeriesState, ev.EventTime = c.st.SeriesState, first.Truncate(time.Microsecond)
	default:
		ev.SeriesState, ev.EventTime = c.st.SeriesState, first.Truncate(time.Microsecond)
		ev.SeriesCount, ev.SeriesLastObservedTime = c.st.Count, last.Truncate(time.Microsecond)
	}
}

// notContract is m's keys outside the contract, with their values, in order.
func notContract(m pcommon.Map) []string {
	var out []string
	for _, kv := range inOrder(m) {
		if !slices.Contains(k8sevent.ContractKeys[:], strings.SplitN(kv, "=", 2)[0]) {
			out = append(out, kv)
		}
	}
	return out
}

// firstCopies is what a reader of m sees (pcommon.Map.Get): the first
// copy of each key (AsRaw keeps the last).
func firstCopies(m pcommon.Map) map[string]any {
	out := map[string]any{}
	for k, v := range m.All() {
		if _, ok := out[k]; !ok {
			out[k] = v.AsRaw()
		}
	}
	return out
}

// TestIsIdentityKeyIsIdentityKeys: every key PutIdentity may write is an
// identity key, and a key one byte off is not.
func TestIsIdentityKeyIsIdentityKeys(t *testing.T) {
	for _, k := range k8sevent.IdentityKeys {
		require.True(t, k8sevent.IsIdentityKey(k), k)
		require.False(t, k8sevent.IsIdentityKey(k+"x"), k+"x")
		require.False(t, k8sevent.IsIdentityKey(k[:len(k)-1]), k[:len(k)-1])
	}
	require.False(t, k8sevent.IsIdentityKey("service.name"))
}

// inOrder is m's keys, types and values in order, repeats included.
func inOrder(m pcommon.Map) []string {
	var out []string
	for k, v := range m.All() {
		out = append(out, k+"="+v.Type().String()+":"+v.AsString())
	}
	return out
}
