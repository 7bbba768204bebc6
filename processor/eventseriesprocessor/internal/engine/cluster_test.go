package engine

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestClustersStayApart: two clusters record identical
// Events (same objects, reasons, notes, even the same Event names with
// cumulative counts). In every mode and spam-key setting each cluster's
// occurrences go to Event objects of their own, every record (timer
// records rebuilt from the state included) names its cluster, and the
// final counts per (cluster, object, reason) are each cluster's
// occurrences.
func TestClustersStayApart(t *testing.T) {
	clusters := []k8sevent.Cluster{{Name: "east", UID: "uid-east"}, {Name: "west", UID: "uid-west"}}
	for name, cfg := range spamConfigs() {
		rng := rand.New(rand.NewPCG(3, 17))
		e := newTester(t, cfg).e
		type key struct{ cluster, object, reason string }
		truth, final := map[key]int64{}, map[string]int64{}
		owner := map[string]key{}
		collect := func(ems []Emission, input *k8sevent.Event) {
			for i := range ems {
				ev := &ems[i].Event
				if ems[i].FromInput {
					ev = input
				}
				k := key{ev.Cluster.String(), ev.Regarding.Name, ev.Reason}
				require.NotEmpty(t, k.cluster, "%s: %s names its cluster", name, ems[i].Name)
				if prev, ok := owner[ems[i].Name]; ok {
					require.Equal(t, prev, k, "%s: %s holds one cluster's occurrences", name, ems[i].Name)
				}
				owner[ems[i].Name], final[ems[i].Name] = k, ems[i].Count
			}
		}
		var at time.Duration
		counts := map[string]int64{}
		for i := range 400 {
			at += []time.Duration{0, time.Second, time.Minute}[rng.IntN(3)]
			c := clusters[rng.IntN(2)]
			ev := podEvent([]string{"web-1", "web-2"}[rng.IntN(2)], []string{"BackOff", "Pulled"}[rng.IntN(2)], "same note")
			ev.Cluster, ev.Time = c, t0.Add(at)
			if i%3 == 0 { // a watched Event: the same name in both clusters, each its own count
				ev.Name = "shared-name"
				counts[c.Name]++
				ev.Count = counts[c.Name]
			}
			truth[key{c.Name, ev.Regarding.Name, ev.Reason}]++
			collect(e.Observe(&ev, ev.Time.UnixNano()), &ev)
		}
		end := t0.Add(at + 24*time.Hour).UnixNano()
		collect(e.Advance(end), nil)
		collect(e.Flush(end), nil)
		got := map[key]int64{}
		for n, c := range final {
			got[owner[n]] += c
		}
		assert.Equal(t, truth, got, "%s: final counts per (cluster, object, reason)", name)
	}
}

// TestExactClusterUIDAppearingMidRun: the receiver writes k8s.cluster.uid
// only once it could read it (a timeout, a 429 or missing RBAC at first:
// records go without it). Over random streams (watched Events with
// cumulative counts among them) and configurations, with or without a
// cluster name, an engine whose records gain the uid at a random point
// writes the same Event objects with the same counts, in the same records,
// as one whose records never state it: the uid is not what a record counts
// as, nor which series it belongs to.
func TestExactClusterUIDAppearingMidRun(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 3))
		cfg := randomConfig(rng)
		calls := flushed(randomStream(rng, 50+rng.IntN(300)))
		name := []string{"", "east"}[rng.IntN(2)]
		from := rng.IntN(len(calls))
		without, with := twoEngines(t, cfg)
		for i, c := range calls {
			c.ev.Cluster.Name = name
			want := play(without, []call{c})
			if i >= from {
				c.ev.Cluster.UID = "cluster-uid"
			}
			got := play(with, []call{c})
			require.Equal(t, len(want), len(got), "seed %d call %d (uid from %d): records", seed, i, from)
			for j := range want {
				require.Equal(t, withoutClusterUID(want[j]), withoutClusterUID(got[j]),
					"seed %d call %d (uid from %d): the same object, count and kind", seed, i, from)
			}
		}
		require.Equal(t, without.Stats, with.Stats, "seed %d", seed)
	}
}

// withoutClusterUID is a played emission with its cluster uid blanked: the
// uid a record carries is its own, what it writes must not depend on it.
// (A rebuilt Event prints its cluster as Cluster.String: the name, else the uid.)
func withoutClusterUID(s string) string {
	return strings.ReplaceAll(s, "Cluster:cluster-uid ", "Cluster: ")
}
