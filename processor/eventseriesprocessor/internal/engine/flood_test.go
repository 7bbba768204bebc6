package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// floodRecord is one record of a hostile or careless sender: a valid Event
// object of its own or a resend of an earlier one, any cumulative count,
// times at, before or ahead of the clock, a first time stated or not.
func floodRecord(rng *rand.Rand, i int, now time.Duration) k8sevent.Event {
	ev := podEvent(fmt.Sprint("flood-", rng.IntN(50)), "Flood", "x")
	ev.UID = fmt.Sprint("flood-uid-", i)
	if rng.IntN(4) == 0 && i > 0 {
		ev.UID = fmt.Sprint("flood-uid-", rng.IntN(i)) // a resend
	}
	if rng.IntN(2) == 0 {
		ev.Count = int64(1 + rng.IntN(1000))
	}
	at := now + []time.Duration{0, 0, time.Nanosecond, 30 * time.Second, time.Hour, -time.Minute}[rng.IntN(6)]
	ev.Time = t0.Add(at)
	if rng.IntN(2) == 0 {
		ev.EventTime = ev.Time
	}
	ev.SeriesLastObservedTime = ev.Time
	return ev
}

// TestExactNewUIDsUnderAnyFlood: under random floods of distinct Event
// objects (far more than the engine remembers), resends, counts, times
// ahead of the clock or tied with it, a record of an Event uid never seen
// before counts as at least one occurrence, and exactly one when it states
// no count (a uid per occurrence: events.k8s.io, an app sending OTLP): a
// uid never seen is never taken for a repeat with no growth. Checked for
// every good record of every flood; the good records are interleaved with
// the flood as an app's are with a storm.
func TestExactNewUIDsUnderAnyFlood(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 25))
		cfg := defaults()
		cfg.Legacy = rng.IntN(2) == 0
		cfg.MaxKeys = []int{1, 4, 16, 64}[rng.IntN(4)]
		e := newTester(t, cfg).e
		var now time.Duration
		for i := range 4000 + rng.IntN(4000) {
			now += []time.Duration{0, 0, time.Millisecond, time.Second}[rng.IntN(4)]
			if rng.IntN(5) != 0 {
				ev := floodRecord(rng, i, now)
				e.Observe(&ev, t0.Add(now).UnixNano())
				continue
			}
			ev := podEvent(fmt.Sprint("good-", rng.IntN(8)), "BackOff", "x")
			ev.UID, ev.Time = fmt.Sprint("good-uid-", i), t0.Add(now)
			if rng.IntN(2) == 0 {
				ev.EventTime = ev.Time
			}
			var states int64 = 1
			if rng.IntN(4) == 0 {
				states = int64(2 + rng.IntN(5))
				ev.Count = states
			}
			before := e.Stats.Occurrences
			e.Observe(&ev, t0.Add(now).UnixNano())
			got := e.Stats.Occurrences - before
			what := fmt.Sprintf("seed %d max_keys %d legacy=%t record %d (count %d)", seed, cfg.MaxKeys, cfg.Legacy, i, ev.Count)
			require.GreaterOrEqual(t, got, int64(1), "%s: a uid never seen counted as a repeat", what)
			require.LessOrEqual(t, got, states, "%s: more than it states", what)
			if states == 1 {
				require.Equal(t, int64(1), got, what)
			}
		}
	}
}
