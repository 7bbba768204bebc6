package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Emission.New, summed over everything emitted,
// is the occurrences observed, whatever was compressed, held back by the
// spam filter, folded into summaries, evicted, restored or flushed.

// tally sums Emission.New per (namespace, reason) and checks, per Event
// object, that New is what its count grew by since its previous record.
type tally struct {
	t      *testing.T
	what   string
	sums   map[[2]string]int64
	counts map[string]int64 // per Event object: the count of its latest record
}

func newTally(t *testing.T, what string) *tally {
	return &tally{t: t, what: what, sums: map[[2]string]int64{}, counts: map[string]int64{}}
}

func (y *tally) add(ems []Emission, input *k8sevent.Event) {
	y.t.Helper()
	for i := range ems {
		em := &ems[i]
		ev := &em.Event
		if em.FromInput {
			ev = input
		}
		require.Equal(y.t, em.Count-y.counts[em.Name], em.New, "%s: %s %s: New is the growth of its count", y.what, KindNames[em.Kind], em.Name)
		require.GreaterOrEqual(y.t, em.New, int64(0), "%s: %s", y.what, em.Name)
		y.counts[em.Name] = em.Count
		y.sums[[2]string{ev.Regarding.Namespace, ev.Reason}] += em.New
	}
}

// nsStorm is randomStorm over two namespaces: each record one occurrence.
func nsStorm(rng *rand.Rand, n int) ([]occurrence, map[[2]string]int64) {
	occs := randomStorm(rng, n)
	truth := map[[2]string]int64{}
	for i := range occs {
		occs[i].ev.Regarding.Namespace = []string{"team-a", "team-b"}[rng.IntN(2)]
		truth[[2]string{occs[i].ev.Regarding.Namespace, occs[i].ev.Reason}]++
	}
	return occs, truth
}

// TestNewOccurrencesSumToOccurrences: over random storms and random
// configurations (either mode, small caches that evict, a tight spam
// filter or none, aggregation), with the engine snapshotted and restored
// into a new one at random points, after a shutdown flush or not, the sum
// of New per (namespace, reason) over every emission equals the
// occurrences observed.
//
// Below max_keys objects the engine's own count is exact; past it, a
// record of a uid the totals cache may have forgotten counts at most one
// and Stats.UnprovenOccurrences bounds the shortfall (see totals.go): then
// the sums equal what the engine counted, never more than the truth.
func TestNewOccurrencesSumToOccurrences(t *testing.T) {
	exact := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 17))
		cfg := randomConfig(rng)
		if rng.IntN(2) == 0 {
			cfg.MaxKeys = 4096
		}
		occs, truth := nsStorm(rng, 50+rng.IntN(400))
		restarts := map[int]bool{}
		for range rng.IntN(4) {
			restarts[rng.IntN(len(occs))] = true
		}
		what := fmt.Sprintf("seed %d legacy=%t spam=%t keys=%d restarts=%d", seed, cfg.Legacy, cfg.SpamFilter, cfg.MaxKeys, len(restarts))
		y := newTally(t, what)
		e := newTester(t, cfg).e
		var stats Stats // of the engines before a restart
		var last time.Time
		for i, o := range occs {
			if restarts[i] {
				if rng.IntN(2) == 0 {
					y.add(e.Flush(last.UnixNano()), nil)
				}
				snap := e.Snapshot()
				stats = addStats(stats, e.Stats)
				e = newTester(t, cfg).e
				require.NoError(t, e.Restore(snap), what)
			}
			ev := o.ev
			ev.Time = t0.Add(o.at)
			last = ev.Time
			y.add(e.Observe(&ev, ev.Time.UnixNano()), &ev)
		}
		end := last.Add(24 * time.Hour).UnixNano()
		y.add(e.Advance(end), nil)
		y.add(e.Flush(end), nil)
		stats = addStats(stats, e.Stats)
		if stats.Unproven == 0 {
			exact++
			require.Equal(t, truth, y.sums, "%s: sum of New per (namespace, reason)", what)
			continue
		}
		var sum, want int64
		for p, n := range truth {
			require.LessOrEqual(t, y.sums[p], n, "%s: %v counted beyond its occurrences", what, p)
			sum, want = sum+y.sums[p], want+n
		}
		require.Equal(t, stats.Occurrences, sum, "%s: the sum of New is what the engine counted", what)
		require.LessOrEqual(t, want-sum, stats.UnprovenOccurrences, what)
	}
	require.Greater(t, exact, 150, "most runs are in the exact regime")
}

func addStats(a, b Stats) Stats {
	a.Occurrences += b.Occurrences
	a.Unproven += b.Unproven
	a.UnprovenOccurrences += b.UnprovenOccurrences
	return a
}

// TestNewOccurrencesOfWatchedCounts: records of watched Events carry
// cumulative counts, and a record stands for the growth of its Event's
// count (or for nothing, when it did not grow); over random streams of them
// the sum of New is what the engine counted as occurrences, and a record
// that only repeats a count carries 0.
func TestNewOccurrencesOfWatchedCounts(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 71))
		cfg := randomConfig(rng)
		what := fmt.Sprintf("seed %d legacy=%t", seed, cfg.Legacy)
		y := newTally(t, what)
		e := newTester(t, cfg).e
		var end int64
		for _, c := range randomStream(rng, 50+rng.IntN(300)) {
			now := t0.Add(c.now).UnixNano()
			end = now
			switch c.kind {
			case "observe":
				ev := c.ev
				y.add(e.Observe(&ev, now), &ev)
			default:
				y.add(e.Advance(now), nil)
			}
		}
		y.add(e.Advance(end+int64(24*time.Hour)), nil)
		y.add(e.Flush(end+int64(24*time.Hour)), nil)
		var sum int64
		for _, n := range y.sums {
			sum += n
		}
		require.Equal(t, e.Stats.Occurrences, sum, what)
	}

	cfg := defaults()
	cfg.FinishMarker = true
	r := newTester(t, cfg)
	ev := podEvent("web-1", "BackOff", "x")
	r.at(0, ev)
	ems := r.at(time.Second, ev)
	require.Equal(t, []int64{2, 1}, []int64{ems[0].Count, ems[0].New}, "the started record adds one")
	ems = r.advance(time.Hour)
	require.Equal(t, []string{"finished:2"}, kinds(ems))
	require.Zero(t, ems[0].New, "an end-of-series marker repeats the count: it adds nothing")
}
