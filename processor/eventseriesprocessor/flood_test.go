package eventseriesprocessor

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// TestExactGoodRecordsAmidAHostileFlood: a sender floods the processor
// (small max_keys, so that it forgets) with records it refuses as invalid
// and with valid Events of their own, stamped at the same instant as the
// good records or ahead of them; between them come good records, each
// occurrence an Event uid of its own with no count, as an app sends them.
// After shutdown the final counts of the objects written for each good
// (object, reason) add up to the occurrences sent, in both modes.
func TestExactGoodRecordsAmidAHostileFlood(t *testing.T) {
	for _, mode := range []string{modeSeries, modeLegacy} {
		t.Run(mode, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(8, 25))
			h := newHarness(t, func(cfg *Config) { eventTime(cfg); cfg.Mode, cfg.MaxKeys = mode, 16 })
			sent := map[string]int64{}
			for round := range 300 {
				at := t0.Add(time.Duration(round/30) * time.Second) // coarse stamps: many records share one
				var batch []k8sevent.Event
				for i := range 40 {
					ev := podEvent(fmt.Sprint("flood-", rng.IntN(500)), "Flood", "x")
					ev.Namespace = "flood"
					ev.UID, ev.Time = fmt.Sprintf("flood-%d-%d", round, i), at.Add(time.Duration(rng.IntN(2))*30*time.Second)
					if i%4 == 0 {
						ev.Reason = "" // refused as invalid
					}
					batch = append(batch, ev)
				}
				if round%3 == 0 {
					pod, reason := fmt.Sprint("good-", rng.IntN(20)), []string{"BackOff", "Unhealthy"}[rng.IntN(2)]
					ev := podEvent(pod, reason, "x")
					ev.UID, ev.Time = fmt.Sprint("good-uid-", round), at
					batch = append(batch, ev)
					sent[pod+"/"+reason]++
				}
				h.consume(logsOf(batch...))
			}
			h.shutdown()
			final, pairOf := map[string]int64{}, map[string]string{}
			for _, r := range h.records() {
				ev := r.event(t)
				if ev.Reason == "Flood" {
					continue
				}
				final[ev.Name], pairOf[ev.Name] = ev.Occurrences(), ev.Regarding.Name+"/"+ev.Reason
			}
			got := map[string]int64{}
			for name, n := range final {
				got[pairOf[name]] += n
			}
			require.Equal(t, sent, got, "final counts per good (object, reason)")
		})
	}
}
