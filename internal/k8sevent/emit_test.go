package k8sevent_test

import (
	"math/rand/v2"
	"testing"

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
	// Keys outside the contract appear once: EncodeRepairs' removal of
	// the Event namespace moves the last attribute into its place, which
	// may put a later copy of such a key first (the one a reader sees);
	// EncodeEmitted keeps the input's order.
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

// TestEncodeEmittedWritesAsRepairsThenState: the one-pass writer of an
// emitted record leaves the record as EncodeRepairs then Encode do, and the
// resource, after OwnResource, as the owned keys' removal, DropDuplicateKeys
// and PutIdentity do, on random records and resources: the same keys and
// values, each key once, also when the source host moved from the
// resource's k8s.node.name.
func TestEncodeEmittedWritesAsRepairsThenState(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	moved := 0
	for i := range 3000 {
		c := newRandomEmitCase(t, rng)
		oldRes, oldRec := resourceWith(t, c.res...), recordWith(t, c.rec...)
		k8sevent.EncodeRepairs(oldRec, &c.ev, c.problems)
		k8sevent.EncodeState(oldRec, &c.st)
		k8sevent.OwnedKeySet.Remove(oldRes)
		if c.problems&k8sevent.ProblemDuplicateKey != 0 {
			k8sevent.DropDuplicateKeys(oldRes)
		}
		k8sevent.PutIdentity(oldRes, c.ev.Regarding)

		newRes, newRec := resourceWith(t, c.res...), recordWith(t, c.rec...)
		var enc k8sevent.StateEncoder
		var res *pcommon.Map
		if i%2 == 0 {
			res = &newRes
		}
		enc.EncodeEmitted(newRec, &c.ev, c.problems, &c.st, res)
		if v, ok := newRes.Get(k8sevent.AttrNodeName); ok && v.Type() == pcommon.ValueTypeEmpty {
			moved++
		}
		k8sevent.OwnResource(newRes, c.ev.Regarding, k8sevent.OwnedKeySet, c.problems&k8sevent.ProblemDuplicateKey != 0)

		require.Equal(t, firstCopies(oldRec.Attributes()), firstCopies(newRec.Attributes()), "record, case %d: %+v", i, c)
		require.Equal(t, oldRec.Attributes().Len(), newRec.Attributes().Len(), "record keys once, case %d", i)
		require.Equal(t, oldRec.Body().AsRaw(), newRec.Body().AsRaw())
		require.Equal(t, oldRec.SeverityText(), newRec.SeverityText())
		require.Equal(t, oldRec.Timestamp(), newRec.Timestamp())
		require.Equal(t, oldRec.EventName(), newRec.EventName())
		require.Equal(t, firstCopies(oldRes), firstCopies(newRes), "resource, case %d: %+v", i, c)
		require.Equal(t, oldRes.Len(), newRes.Len(), "resource keys once, case %d", i)
	}
	require.Positive(t, moved, "some cases moved the source host from the resource")
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
