package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// playTally plays calls on e and adds what each emission's Count grew by
// to the (object, reason) it counts.
func playTally(into map[pair]int64, e *Engine, calls []call) {
	for _, c := range calls {
		for _, em := range step(e, c) {
			ev := &em.Event
			if em.FromInput {
				ev = &c.ev
			}
			into[pair{ev.Regarding.Name, ev.Reason}] += em.New
		}
	}
}

func addNew(into map[pair]int64, ems []Emission) {
	for _, em := range ems {
		into[pair{em.Event.Regarding.Name, em.Event.Reason}] += em.New
	}
}

// TestCarryKeepsEveryCount: for random streams and configurations, a
// restart whose configuration changed the mode or the series key counts,
// per (object, reason), exactly the occurrences an engine that never
// stopped counts: the state made under the old settings is flushed, not
// dropped, and the watched Events' totals go on, so that their next
// records count only their growth. Restore alone refuses such a snapshot;
// what was logged after it replays under its settings before the carry.
func TestCarryKeepsEveryCount(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 11))
		cfg := randomConfig(rng)
		calls := randomStream(rng, 50+rng.IntN(400))
		end := calls[len(calls)-1].now
		calls = append(calls, call{kind: "flush", now: end + time.Minute}, call{kind: "advance", now: end + 24*time.Hour})
		k := rng.IntN(len(calls) - 1)

		want := map[pair]int64{}
		playTally(want, newTester(t, cfg).e, calls)

		next := cfg
		if cfg.Legacy || rng.IntN(2) == 0 {
			next.Legacy = !cfg.Legacy
		} else {
			next.KeyIncludesResourceVersion = !cfg.KeyIncludesResourceVersion
		}
		got := map[pair]int64{}
		before := newTester(t, cfg).e
		playTally(got, before, calls[:k])
		snap := before.Snapshot()
		after := newTester(t, next).e
		require.ErrorIs(t, after.Restore(snap), ErrSnapshotSettings, "seed %d", seed)
		saved, err := after.Saved(snap)
		require.NoError(t, err, "seed %d", seed)
		j := k + rng.IntN(len(calls)-k) // what was logged after the snapshot replays under its settings
		playTally(got, saved, calls[k:j])
		ems, err := after.Carry(saved)
		require.NoError(t, err, "seed %d", seed)
		addNew(got, ems)
		playTally(got, after, calls[j:])
		require.Equal(t, want, got, "seed %d (%+v to legacy %t, key with resource version %t), cut after %d and %d calls",
			seed, cfg, next.Legacy, next.KeyIncludesResourceVersion, k, j)
	}
}
