package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// flushed is calls followed by a shutdown flush.
func flushed(calls []call) []call {
	return append(calls, call{kind: "flush", now: calls[len(calls)-1].now})
}

// twoEngines makes two engines of cfg, to run side by side.
func twoEngines(t *testing.T, cfg Config) (*Engine, *Engine) {
	a, err := New(cfg)
	require.NoError(t, err)
	b, err := New(cfg)
	require.NoError(t, err)
	return a, b
}

// TestAggregatesKeepNoteOfTheInput: the Event an Observe reads is the
// caller's only during the call (the processor's records are reused), so
// an engine whose input strings are overwritten after every call must
// aggregate exactly as one whose inputs stay: a group that kept the
// input's note instead of its own would see the overwritten bytes.
func TestAggregatesKeepNoteOfTheInput(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 15))
		cfg := randomConfig(rng)
		cfg.Legacy, cfg.Aggregation = true, true
		calls := flushed(randomStream(rng, 200))
		steady, reused := twoEngines(t, cfg)
		buf := make([]byte, 0, 64)
		for i, c := range calls {
			want := play(steady, []call{c})
			buf = append(buf[:0], c.ev.Note...)
			c.ev.Note = unsafe.String(unsafe.SliceData(buf), len(buf))
			got := play(reused, []call{c})
			for j := range buf {
				buf[j] = '#'
			}
			require.Equal(t, want, got, "seed %d call %d", seed, i)
		}
	}
}

// TestNewStateNamesFromItsKey: a new state's name is GenerateName of its
// regarding name, its first occurrence and its key (less an empty cluster
// name) followed by the count of states made, for every layout (series,
// legacy events and aggregates) and with and without a cluster; the
// state's Event is the record that made it, less what each record states
// of its own.
func TestNewStateNamesFromItsKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 25))
	for _, legacy := range []bool{false, true} {
		cfg := defaults()
		cfg.Legacy, cfg.SpamFilter, cfg.AggregateMaxEvents = legacy, false, 3
		e, err := New(cfg)
		require.NoError(t, err)
		for i := range 300 {
			ev := randomEvent(rng)
			if i%2 == 0 {
				ev.Cluster = k8sevent.Cluster{}
			}
			ev.Time = t0.Add(time.Duration(i) * time.Second)
			made := e.statesMade
			e.Observe(&ev, ev.Time.UnixNano())
			if e.statesMade == made {
				continue
			}
			sts := e.states.values()
			st := sts[len(sts)-1]
			key := string(st.l.appendKey(nil, &ev))
			want := k8sevent.GenerateName(ev.Regarding.Name, time.Unix(0, st.first), nameKey(key)+fmt.Sprint(e.statesMade))
			require.Equal(t, want, st.name, "legacy=%t record %d", legacy, i)
			require.Equal(t, nameKey(key), e.states.keyOf(st), "legacy=%t record %d", legacy, i)
			require.Equal(t, ownless(&ev), st.ev.Event(), "legacy=%t record %d", legacy, i)
		}
	}
}
