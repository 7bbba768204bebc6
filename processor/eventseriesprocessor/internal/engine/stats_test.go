package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostileRepeatedUIDIsCounted: a record repeating an
// Event object with no growth of its count is counted in Stats.Unchanged,
// not absorbed silently; every record shows in a counter.
func TestHostileRepeatedUIDIsCounted(t *testing.T) {
	r := newTester(t, defaults())
	counts := []int64{1, 1, 2, 2, 2, 1, 3}
	for i, c := range counts {
		r.at(time.Duration(i)*time.Second, watched("web-1", c, 0, time.Duration(i)*time.Second))
	}
	s := r.e.Stats
	assert.Equal(t, int64(3), s.Occurrences)
	assert.Equal(t, int64(4), s.Unchanged, "1 again, 2 twice again, 1 (a count going down)")
	assert.Equal(t, int64(len(counts)), s.Unchanged+s.Out[KindSingleton]+s.Out[KindStarted]+s.Compressed,
		"every record shows in a counter")
}

// TestStateUnprovenBoundsTheError: on random streams of
// watched Events through small totals, the occurrences counted plus what
// Stats.UnprovenOccurrences says may be missing cover every occurrence, and
// they exceed the occurrences by at most one per unproven record.
func TestStateUnprovenBoundsTheError(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 13))
		cfg := defaults()
		cfg.MaxKeys = 1 + rng.IntN(4)
		r := newTester(t, cfg)
		counts, firsts := map[int]int64{}, map[int]time.Duration{}
		var truth int64
		now := time.Duration(0)
		for range 300 {
			now += time.Second
			i := rng.IntN(20)
			if _, ok := firsts[i]; !ok {
				firsts[i] = now
			}
			grow := int64(rng.IntN(4))
			if counts[i] == 0 {
				grow++
			}
			counts[i] += grow
			truth += grow
			r.at(now, watched(fmt.Sprint("p", i), counts[i], firsts[i], now))
		}
		s := r.e.Stats
		require.LessOrEqual(t, s.Occurrences, truth+s.Unproven, "seed %d", seed)
		require.GreaterOrEqual(t, s.Occurrences+s.UnprovenOccurrences, truth, "seed %d: the bound holds", seed)
		require.Positive(t, s.Unproven, "seed %d: 20 objects through totals of at most 16 forget some", seed)
	}
}
