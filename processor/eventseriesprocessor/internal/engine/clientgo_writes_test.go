package engine

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// clientGoLegacyWrites is what client-go's EventCorrelator (tools/record,
// fake clock) writes for the occurrences: every result it does not skip.
func clientGoLegacyWrites(t *testing.T, occs []occurrence) int {
	clock := clocktesting.NewFakeClock(t0)
	correlator := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clock})
	var writes int
	for i, o := range occs {
		clock.SetTime(t0.Add(o.at))
		ev := o.ev
		ev.Time, ev.FirstTimestamp, ev.LastTimestamp, ev.Count = t0.Add(o.at), t0.Add(o.at), t0.Add(o.at), 1
		ev.Name = fmt.Sprintf("%s.%x", ev.Regarding.Name, i)
		res, err := correlator.EventCorrelate(ev.ToCoreV1())
		require.NoError(t, err)
		if !res.Skip {
			writes++
		}
	}
	return writes
}

// repeatStorm is a repeat-heavy storm: pods whose few events (fixed
// messages, as a crash loop's or an image pull's) repeat for hours, each at
// its own period, some in bursts.
func repeatStorm(rng *rand.Rand) []occurrence {
	var occs []occurrence
	for p := range 1 + rng.IntN(4) {
		pod := fmt.Sprint("pod-", p)
		for _, reason := range []string{"BackOff", "Pulled", "Created", "Started", "Failed"}[:1+rng.IntN(5)] {
			period := []time.Duration{2 * time.Second, 10 * time.Second, time.Minute, 5 * time.Minute}[rng.IntN(4)]
			start := time.Duration(rng.IntN(600)) * time.Second
			end := start + time.Duration(10+rng.IntN(170))*time.Minute
			for at := start; at < end; at += period + time.Duration(rng.IntN(3000))*time.Millisecond {
				ev := podEvent(pod, reason, reason+" on "+pod)
				if reason != "BackOff" && reason != "Failed" {
					ev.Type = "Normal"
				}
				occs = append(occs, occurrence{at, ev})
			}
		}
	}
	sortOccurrences(occs)
	return occs
}

// sortOccurrences sorts by time, stably: equal times keep their order.
func sortOccurrences(occs []occurrence) {
	slices.SortStableFunc(occs, func(a, b occurrence) int { return cmp.Compare(a.at, b.at) })
}

// TestSpamLegacyWritesNoMoreThanClientGo: on repeat-heavy storms, legacy
// mode with the default spam key writes no more than client-go's legacy
// recorder, with exact counts where client-go loses the counts its filter
// held back.
func TestSpamLegacyWritesNoMoreThanClientGo(t *testing.T) {
	cfg := defaults()
	cfg.Legacy = true
	cfg.SpamQPS = float64(float32(1.0 / 300)) // client-go's float32 rate
	var ours, theirs int
	for seed := range uint64(40) {
		occs := repeatStorm(rand.New(rand.NewPCG(seed, 3)))
		out := runAll(t, cfg, occs)
		cg := clientGoLegacyWrites(t, occs)
		assert.LessOrEqual(t, len(out), cg, "seed %d: %d occurrences", seed, len(occs))
		checkExact(t, occs, out, fmt.Sprint("seed ", seed))
		ours, theirs = ours+len(out), theirs+cg
	}
	t.Logf("40 storms: %d writes, client-go %d", ours, theirs)
}
