package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
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

// TestTotalsKeepObjectsStampedAhead: a watched Event whose node's clock
// runs ahead of the collector's by more than clockSkew states a first time
// later than any forgotten object's can be raised to. The totals keep it
// across rotations while its first time is ahead, so its next record
// counts only its growth, never its whole count again; once the clock
// passed it, it is forgotten as any other object and proven not new.
func TestTotalsKeepObjectsStampedAhead(t *testing.T) {
	const maxKeys = 2
	now := int64(1_000_000_000_000)
	ahead := now + 5*int64(60e9) // five minutes ahead
	m := newTotals(maxKeys)
	skewed := uint64(1 << 40)
	m.set(skewed, total{count: 7, first: ahead}, false, false, now)
	for key := range uint64(4 * totalsPerKey * maxKeys) { // enough to rotate it out twice
		_, recent, older := m.get(key)
		m.set(key, total{count: 1, first: now + int64(key)}, recent, older, now)
	}
	require.True(t, m.forgot, "objects were forgotten")
	got, recent, older := m.get(skewed)
	require.True(t, recent || older, "the object stamped ahead is still known")
	require.Equal(t, int64(7), got.count)

	later := ahead + 2*clockSkew
	for key := range uint64(4 * totalsPerKey * maxKeys) {
		k := key + 1000
		_, recent, older := m.get(k)
		m.set(k, total{count: 1, first: later}, recent, older, later)
	}
	_, recent, older = m.get(skewed)
	require.False(t, recent || older, "forgotten once the clock passed its first time")
	require.False(t, m.isNew(ahead), "and proven not new: its first time is no later than a forgotten one's")
}

// TestObjectHashIsFixed: the totals' keys are kept in snapshots, so an
// object's hash is the same in every build: FNV-1a 64 of its key, as
// pinned here, and a record that names no object has none.
func TestObjectHashIsFixed(t *testing.T) {
	e, err := New(defaults())
	require.NoError(t, err)
	const uid = "0b7c9a2e-51f4-4d3a-9a57-6f1c2d8e4b10"
	for _, c := range []struct {
		ev   k8sevent.Event
		want uint64
	}{
		{k8sevent.Event{UID: uid}, 0xbdac139016726307},
		{k8sevent.Event{UID: uid, Cluster: k8sevent.Cluster{Name: "prod-eu"}}, 0xd9a4bd2b2f738f9d},
		{k8sevent.Event{Name: "web-1.17a2b3c4d5e6f708", Namespace: "shop", Count: 3}, 0x317ac0a5cec83b74},
		{k8sevent.Event{Name: "web-1.17a2b3c4d5e6f708", Namespace: "shop", SeriesCount: 2, Cluster: k8sevent.Cluster{Name: "prod-eu"}}, 0x5f71dd0f6d05ce1a},
	} {
		got, ok := e.objectHash(&c.ev)
		require.True(t, ok, "%+v", c.ev)
		require.Equal(t, c.want, got, "%+v", c.ev)
	}
	_, ok := e.objectHash(&k8sevent.Event{Name: "web-1", Namespace: "shop"})
	require.False(t, ok, "no uid and no cumulative count: no object")
	ev := k8sevent.Event{UID: uid, Cluster: k8sevent.Cluster{Name: "prod-eu"}}
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = e.objectHash(&ev) }),
		"hashing reuses the engine's buffer and hash")
}
