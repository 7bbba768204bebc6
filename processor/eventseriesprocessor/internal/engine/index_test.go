package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/stretchr/testify/require"
)

// TestIndexKeepsAFreePosition: a probe ends at a free position, so an
// index must have one more position than the slots it holds, whatever
// their number. With max_keys 1 the totals index had one position for
// one object, and the lookup of any other object never ended: a config
// Validate accepts hung the pipeline.
func TestIndexKeepsAFreePosition(t *testing.T) {
	for slots := 1; slots <= 100; slots++ {
		x := newIndex(slots)
		require.Greater(t, len(x.at), slots, "slots %d", slots)
	}
}

// TestSmallTotalTablesAreLRUs: the totals tables of the smallest max_keys
// forget as an LRU does, and find what they hold.
func TestSmallTotalTablesAreLRUs(t *testing.T) {
	for capacity := 1; capacity <= 4; capacity++ {
		rng := rand.New(rand.NewPCG(5, uint64(capacity)))
		var gotEvicted, wantEvicted []uint64
		table := newTotalTable(capacity, func(h uint64, _ *total) { gotEvicted = append(gotEvicted, h) })
		want, _ := simplelru.NewLRU(capacity, func(h uint64, _ int64) { wantEvicted = append(wantEvicted, h) })
		for i := range 20_000 {
			h := rng.Uint64N(8)
			got, ok := table.get(h)
			count, wantOK := want.Get(h)
			require.Equal(t, wantOK, ok, "capacity %d step %d", capacity, i)
			if ok {
				require.Equal(t, count, got.count)
				continue
			}
			require.True(t, table.add(h, total{count: int64(i)}))
			want.Add(h, int64(i))
			require.Equal(t, wantEvicted, gotEvicted, "capacity %d step %d", capacity, i)
			gotEvicted, wantEvicted = gotEvicted[:0], wantEvicted[:0]
		}
	}
}
