package engine

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStateStalenessIsBounded states, with the default timers, how stale
// the count an Event object shows can be, over random streams driven by an
// exact clock (every deadline fired at its time): an occurrence at s is
// shown by some record decided no later than s + heartbeat_interval (a
// series' later occurrences wait for its next heartbeat or its finish), and
// the final count of a run of occurrences is shown no later than its last
// occurrence + finish_after. The pipeline's own delay on top of a decision
// is measured end to end by the e2e BenchmarkFreshness. Scope: streams the
// spam filter does not hold back (asserted): the spam filter's tests cover the rest.
func TestStateStalenessIsBounded(t *testing.T) {
	cfg := defaults()
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			occs := stalenessStream(rng, 20, 2*time.Hour)
			e, err := New(cfg)
			require.NoError(t, err)
			shown := map[string][]shownCount{} // pod -> what its objects showed, in order
			// record files emissions by pod: an input's own emission carries
			// no rebuilt Event, so its pod is the input's.
			record := func(inputPod string, ems []Emission) {
				for _, em := range ems {
					pod := inputPod
					if !em.FromInput {
						pod = strings.Clone(em.Event.Regarding.Name)
					}
					shown[pod] = append(shown[pod], shownCount{strings.Clone(em.Name), em.Count, em.At})
				}
			}
			fireUntil := func(t int64) {
				for d, ok := e.NextDeadline(); ok && d <= t; d, ok = e.NextDeadline() {
					record("", e.Advance(d))
				}
			}
			seen := map[string]int64{}
			for _, o := range occs {
				fireUntil(o.at)
				ev := podEvent(o.pod, "BackOff", "Back-off restarting failed container")
				ev.Time = time.Unix(0, o.at)
				record(o.pod, e.Observe(&ev, o.at))
				seen[o.pod]++
			}
			fireUntil(occs[len(occs)-1].at + int64(24*time.Hour))
			require.Zero(t, e.Stats.SpamDropped, "the stream stays within the spam filter")

			counted := map[string]int64{}
			for i, o := range occs {
				counted[o.pod]++
				at, ok := firstShowing(shown[o.pod], counted[o.pod])
				require.True(t, ok, "occurrence %d (%s #%d) never shown", i, o.pod, counted[o.pod])
				require.LessOrEqual(t, at-o.at, int64(cfg.HeartbeatInterval), "occurrence %d (%s #%d) shown %v late",
					i, o.pod, counted[o.pod], time.Duration(at-o.at))
				if o.lastOfRun {
					require.LessOrEqual(t, at-o.at, int64(cfg.FinishAfter), "final count of a run of %s", o.pod)
				}
			}
			for pod, n := range seen {
				require.Equal(t, n, shownTotal(shown[pod], int64(1)<<62), "%s: final counts sum to its occurrences", pod)
			}
		})
	}
}

type shownCount struct {
	name  string
	count int64
	at    int64
}

// shownTotal is what a pod's objects show at time at: each object's latest count, summed.
func shownTotal(shown []shownCount, at int64) int64 {
	latest := map[string]int64{}
	for _, s := range shown {
		if s.at <= at {
			latest[s.name] = max(latest[s.name], s.count)
		}
	}
	var sum int64
	for _, c := range latest {
		sum += c
	}
	return sum
}

// firstShowing is the first decision time at which a pod's objects show n occurrences.
func firstShowing(shown []shownCount, n int64) (int64, bool) {
	for _, s := range shown {
		if shownTotal(shown, s.at) >= n {
			return s.at, true
		}
	}
	return 0, false
}

type stalenessOcc struct {
	pod       string
	at        int64
	lastOfRun bool // the next occurrence of the pod comes after finish_after, or never
}

// stalenessStream makes runs of occurrences per pod: gaps inside a run from
// seconds to just under finish_after, runs apart by more than finish_after,
// sorted by time.
func stalenessStream(rng *rand.Rand, pods int, span time.Duration) []stalenessOcc {
	var occs []stalenessOcc
	for p := range pods {
		pod := fmt.Sprintf("pod-%d", p)
		at := t0.Add(time.Duration(rng.Int64N(int64(10 * time.Minute))))
		end := t0.Add(span)
		for at.Before(end) {
			for n := 1 + rng.IntN(40); n > 0 && at.Before(end); n-- {
				occs = append(occs, stalenessOcc{pod: pod, at: at.UnixNano()})
				at = at.Add(time.Second + time.Duration(rng.Int64N(int64(5*time.Minute))))
			}
			occs[len(occs)-1].lastOfRun = true
			at = at.Add(7*time.Minute + time.Duration(rng.Int64N(int64(20*time.Minute))))
		}
	}
	slices.SortStableFunc(occs, func(a, b stalenessOcc) int { return cmp.Compare(a.at, b.at) })
	return occs
}
