package engine

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/stretchr/testify/require"
)

// The engine's LRU behaves as simplelru, which it replaced: the same
// values found, the same entries pushed out or removed in the same order
// (also by a removal made from inside the eviction callback, as the
// engine's retire makes), the same order of keys and values, under random
// gets, peeks, adds of new and held keys, removals and resizes.
func TestLRUIsSimpleLRU(t *testing.T) {
	t.Run("hash", func(t *testing.T) { testLRUIsSimpleLRU(t, nil) })
	// Keys sharing hashes: long chains, removals in their middle.
	t.Run("colliding", func(t *testing.T) {
		testLRUIsSimpleLRU(t, func(k string) uint64 { return uint64(len(k) + int(k[len(k)-1])%3) })
	})
}

func testLRUIsSimpleLRU(t *testing.T, hash func(string) uint64) {
	rng := rand.New(rand.NewPCG(5, 6))
	var gotEvicted, wantEvicted []string
	var got *lru[int]
	var want *simplelru.LRU[string, int]
	got, _ = newLRU(40, func(k string, v int) {
		gotEvicted = append(gotEvicted, k+"="+strconv.Itoa(v))
		if v%7 == 0 {
			got.Remove("k" + strconv.Itoa(v%100)) // a cache used from its own callback
		}
	})
	if hash != nil {
		got.hash = hash
	}
	want, _ = simplelru.NewLRU(40, func(k string, v int) {
		wantEvicted = append(wantEvicted, k+"="+strconv.Itoa(v))
		if v%7 == 0 {
			want.Remove("k" + strconv.Itoa(v%100))
		}
	})
	evictions := 0
	for i := range 100_000 {
		key := "k" + strconv.Itoa(rng.IntN(100))
		switch op := rng.IntN(20); {
		case op < 8:
			v, ok := got.Get(key)
			wv, wok := want.Get(key)
			require.Equal(t, wok, ok, "step %d", i)
			require.Equal(t, wv, v)
		case op < 10:
			v, ok := got.Peek(key)
			wv, wok := want.Peek(key)
			require.Equal(t, wok, ok, "step %d", i)
			require.Equal(t, wv, v)
		case op < 17:
			require.Equal(t, want.Add(key, i), got.Add(key, i), "step %d", i)
		case op < 19:
			require.Equal(t, want.Remove(key), got.Remove(key), "step %d", i)
		case i%100 == 0:
			size := 10 + rng.IntN(60)
			require.Equal(t, want.Resize(size), got.Resize(size), "step %d", i)
		}
		require.Equal(t, wantEvicted, gotEvicted, "step %d", i)
		evictions += len(gotEvicted)
		gotEvicted, wantEvicted = gotEvicted[:0], wantEvicted[:0]
		require.Equal(t, want.Len(), got.Len())
		if i%1000 == 0 {
			require.Equal(t, want.Keys(), got.Keys(), "least recently used first")
			require.Equal(t, want.Values(), got.Values())
		}
	}
	require.Positive(t, evictions)
	_, err := newLRU[int](0, nil)
	require.Error(t, err)
}

// Adding to a full cache reuses the place of the entry it pushes out.
func TestLRUAddsWithoutAllocating(t *testing.T) {
	c, _ := newLRU[*state](100, nil)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	st := &state{}
	for _, k := range keys[:200] {
		c.Add(k, st)
	}
	i := 200
	allocs := testing.AllocsPerRun(100, func() {
		c.Add(keys[i%len(keys)], st)
		i++
	})
	require.Zero(t, allocs)
	require.Equal(t, 100, c.Len())
}

// A state pushed out is reused only from the next call on (until then a
// caller may still hold it, as Flush holds its list), and emptied first.
func TestPoolReusesOnlyAfterTheCall(t *testing.T) {
	p := pool[state]{empty: emptyState}
	out := &state{name: "pushed-out", count: 3}
	p.put(out)
	fresh := p.get()
	require.NotSame(t, out, fresh, "not within the call that pushed it out")
	require.Equal(t, "pushed-out", out.name, "untouched while the call may use it")
	p.settle()
	require.Same(t, out, p.get(), "reused once the call is over")
	require.Equal(t, state{}, *out, "emptied")
	for range 2 * poolMax {
		p.put(&state{})
	}
	p.settle()
	require.Len(t, p.free, poolMax, "what a pool keeps is bounded")
}

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
			got, ok := m.get(key)
			if held {
				require.True(t, ok, "max_keys %d step %d: object %d forgotten", maxKeys, i, key)
				require.Equal(t, count, got.count)
			}
			want.Add(key, int64(i))
			m.set(key, total{count: int64(i)}, 0)
			require.LessOrEqual(t, m.Len(), 2*totalsPerKey*maxKeys)
		}
		require.True(t, m.forgot, "max_keys %d: objects were forgotten", maxKeys)
	}
}
