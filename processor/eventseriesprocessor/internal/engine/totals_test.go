package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/stretchr/testify/require"
)

// The totals remember at least the totalsPerKey × max_keys objects seen
// most recently, with their counts: whatever an LRU of that size holds,
// under random sightings of objects old and new, they hold too, and they
// never hold more than twice that.
func TestTotalsRememberTheMostRecentObjects(t *testing.T) {
	for _, maxKeys := range []int{1, 3, 16} {
		rng := rand.New(rand.NewPCG(5, uint64(maxKeys)))
		m := newTotals(maxKeys)
		want, _ := simplelru.NewLRU[uint64, int64](totalsPerKey*maxKeys, nil)
		for i := range 20_000 {
			key := rng.Uint64N(uint64(12 * maxKeys))
			count, held := want.Get(key)
			got, recent, older := m.get(key)
			if held {
				require.True(t, recent || older, "max_keys %d step %d: object %d forgotten", maxKeys, i, key)
				require.Equal(t, count, got.count)
			}
			want.Add(key, int64(i))
			m.set(key, total{count: int64(i)}, recent, older, 0)
			require.LessOrEqual(t, m.Len(), 2*totalsPerKey*maxKeys)
		}
		require.True(t, m.forgot, "max_keys %d: objects were forgotten", maxKeys)
	}
}
