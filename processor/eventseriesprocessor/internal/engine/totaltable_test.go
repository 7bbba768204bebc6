package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/stretchr/testify/require"
)

// The totals table behaves as the LRU it replaced: the same objects held,
// the same forgotten in the same order, under random gets and adds of
// hashes that crowd into few positions (long probe runs, deletions in
// their middle) and a resize.
func TestTotalTableIsAnLRU(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var gotEvicted, wantEvicted []uint64
	table := newTotalTable(50, func(h uint64, _ *total) { gotEvicted = append(gotEvicted, h) })
	want, _ := simplelru.NewLRU(50, func(h uint64, _ int64) { wantEvicted = append(wantEvicted, h) })
	for i := range 200_000 {
		h := rng.Uint64N(150)
		if rng.IntN(4) == 0 {
			h <<= 40 // same low bits as others: the mix must spread them
		}
		if i == 100_000 {
			var dropped int
			table, dropped = table.resized(30)
			require.Equal(t, want.Resize(30), dropped)
			require.Equal(t, wantEvicted, gotEvicted)
		}
		got, ok := table.get(h)
		count, wantOK := want.Get(h)
		require.Equal(t, wantOK, ok, "step %d", i)
		if ok {
			require.Equal(t, count, got.count)
			continue
		}
		require.True(t, table.add(h, total{count: int64(i)}))
		want.Add(h, int64(i))
		require.Equal(t, wantEvicted, gotEvicted)
		gotEvicted, wantEvicted = gotEvicted[:0], wantEvicted[:0]
		require.Equal(t, want.Len(), table.Len())
	}
	var order []uint64
	table.each(func(h uint64, _ *total) { order = append(order, h) })
	require.Equal(t, want.Keys(), order, "least recently seen first")
	require.False(t, table.add(order[0], total{}), "a held hash is not added twice")
}
