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
		dupKeys := c.problems&k8sevent.ProblemDuplicateKey != 0
		if i%2 == 0 {
			if movesHost(newRes, &c.ev) {
				moved++
			}
			enc.EncodeEmittedOwn(newRec, &c.ev, c.problems, &c.st, newRes, dupKeys)
		} else {
			enc.EncodeEmitted(newRec, &c.ev, c.problems, &c.st)
			k8sevent.OwnResource(newRes, c.ev.Regarding, k8sevent.OwnedKeySet, dupKeys)
		}

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

// movesHost reports whether EncodeEmittedOwn moves ev's source host from
// res: the record's host, not a Node's, in res's first k8s.node.name.
func movesHost(res pcommon.Map, ev *k8sevent.Event) bool {
	v, ok := res.Get(k8sevent.AttrNodeName)
	return ok && ev.SourceHost != "" && v.Str() == ev.SourceHost && ev.Regarding.Kind != "Node"
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

// TestEncodeEmittedOwnIsTheReference: on random records and resources
// (newRandomEmitCase) the writers leave the record and the resource
// exactly as the previous code did (ReferenceEncodeEmitted with the
// resource, then OwnResource as it was): every key, value and copy, in
// order, and the record's own fields.
func TestEncodeEmittedOwnIsTheReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 26))
	var moved, own int
	for i := range 4000 {
		c := newRandomEmitCase(t, rng)
		if rng.IntN(2) == 0 { // copies of k8s.node.name, the host in one of them or none
			hosts := []string{"node-1", "node-2", ""}
			for range 1 + rng.IntN(3) {
				at := rng.IntN(len(c.res) + 1)
				kv := [2]string{k8sevent.AttrNodeName, hosts[rng.IntN(len(hosts))]}
				c.res = append(c.res[:at], append([][2]string{kv}, c.res[at:]...)...)
			}
			c.ev.SourceHost = hosts[rng.IntN(len(hosts))]
		}
		dupKeys := rng.IntN(2) == 0 // as the processor says it, or not: OwnResource takes either
		oldRes, oldRec := resourceWith(t, c.res...), recordWith(t, c.rec...)
		newRes, newRec := resourceWith(t, c.res...), recordWith(t, c.rec...)
		var enc k8sevent.StateEncoder
		if i%4 == 0 {
			k8sevent.ReferenceEncodeEmitted(oldRec, &c.ev, c.problems, &c.st, nil)
			enc.EncodeEmitted(newRec, &c.ev, c.problems, &c.st)
		} else {
			own++
			if movesHost(oldRes, &c.ev) {
				moved++
			}
			k8sevent.ReferenceEncodeEmitted(oldRec, &c.ev, c.problems, &c.st, &oldRes)
			k8sevent.ReferenceOwnResource(oldRes, c.ev.Regarding, k8sevent.OwnedKeySet, dupKeys)
			enc.EncodeEmittedOwn(newRec, &c.ev, c.problems, &c.st, newRes, dupKeys)
		}
		require.Equal(t, inOrder(oldRec.Attributes()), inOrder(newRec.Attributes()), "record, case %d: %+v", i, c)
		require.Equal(t, inOrder(oldRes), inOrder(newRes), "resource, case %d: %+v", i, c)
		require.Equal(t, oldRec.Body().AsRaw(), newRec.Body().AsRaw())
		require.Equal(t, oldRec.SeverityText(), newRec.SeverityText())
		require.Equal(t, oldRec.SeverityNumber(), newRec.SeverityNumber())
		require.Equal(t, oldRec.Timestamp(), newRec.Timestamp())
		require.Equal(t, oldRec.EventName(), newRec.EventName())
	}
	require.Greater(t, moved, 50, "enough of the %d cases with a resource moved the source host from it", own)
}

// inOrder is m's keys, types and values in order, repeats included.
func inOrder(m pcommon.Map) []string {
	var out []string
	for k, v := range m.All() {
		out = append(out, k+"="+v.Type().String()+":"+v.AsString())
	}
	return out
}
