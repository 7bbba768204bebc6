package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// The spam filter's exactness: no occurrence lost under the filter, no record
// that changes nothing, legacy mode within client-go's writes.

// pair is what a person looks for in kubectl get events.
type pair struct{ object, reason string }

// written is one emission as the API would see it.
type written struct {
	name       string
	pair       pair
	kind       int
	count      int64
	aggregated bool
	fromInput  bool
	spamKey    string // source, object, type and reason: the finest spam key
}

// occurrence is one record of a recorder: one occurrence, at engine time at.
type occurrence struct {
	at time.Duration
	ev k8sevent.Event
}

// runAll observes every occurrence, then lets every timer fire and flushes,
// and returns every emission in order.
func runAll(t *testing.T, cfg Config, occs []occurrence) []written {
	e, err := New(cfg)
	require.NoError(t, err)
	var out []written
	collect := func(ems []Emission, input *k8sevent.Event) {
		for _, em := range ems {
			ev := &em.Event
			if em.FromInput {
				ev = input
			}
			out = append(out, written{name: em.Name, pair: pair{ev.Regarding.Name, ev.Reason}, kind: em.Kind,
				count: em.Count, aggregated: em.Aggregated, fromInput: em.FromInput,
				spamKey: ev.SourceComponent + "/" + ev.Regarding.Name + "/" + ev.Type + "/" + ev.Reason})
		}
	}
	var last time.Duration
	for _, o := range occs {
		ev := o.ev
		ev.Time = t0.Add(o.at)
		collect(e.Observe(&ev, ev.Time.UnixNano()), &ev)
		last = max(last, o.at)
	}
	collect(e.Advance(t0.Add(last+24*time.Hour).UnixNano()), nil)
	collect(e.Flush(t0.Add(last+24*time.Hour).UnixNano()), nil)
	return out
}

// checkExact asserts the properties every stream must have: the final
// counts of the objects written for each (object, reason) add up to its
// occurrences, and no object's count ever goes down.
func checkExact(t *testing.T, occs []occurrence, out []written, what string) {
	t.Helper()
	truth := map[pair]int64{}
	for _, o := range occs {
		truth[pair{o.ev.Regarding.Name, o.ev.Reason}]++
	}
	final, pairOf := map[string]int64{}, map[string]pair{}
	for _, w := range out {
		if prev, ok := final[w.name]; ok {
			require.GreaterOrEqual(t, w.count, prev, "%s: %s's count went down", what, w.name)
		}
		final[w.name], pairOf[w.name] = w.count, w.pair
	}
	got := map[pair]int64{}
	for name, c := range final {
		got[pairOf[name]] += c
	}
	require.Equal(t, truth, got, "%s: final counts per (object, reason), every pair visible", what)
}

// spamConfigs are the four settings of the spam filter's tests: each mode, with and
// without reason in the spam key.
func spamConfigs() map[string]Config {
	out := map[string]Config{}
	for _, legacy := range []bool{false, true} {
		for _, reason := range []bool{false, true} {
			cfg := defaults()
			cfg.Legacy = legacy
			if reason {
				cfg.SpamKey = append(cfg.SpamKey, "reason")
			}
			out[fmt.Sprintf("legacy=%t reason=%t", legacy, reason)] = cfg
		}
	}
	return out
}

// TestSpamInvisibleEventsAreFolded: a bucket left with 3
// tokens meets 10 distinct messages of one reason before aggregation
// starts: 7 events get no token. Their occurrences must still be counted,
// in the summary of their aggregate key.
func TestSpamInvisibleEventsAreFolded(t *testing.T) {
	var occs []occurrence
	for i := range 22 { // 22 tokens spent on other reasons of the same object
		occs = append(occs, occurrence{time.Duration(i) * time.Millisecond, podEvent("rs", fmt.Sprint("Other", i), "x")})
	}
	for i := range 10 {
		occs = append(occs, occurrence{time.Second + time.Duration(i)*time.Millisecond,
			podEvent("rs", "SuccessfulCreate", fmt.Sprint("Created pod: rs-", i))})
	}
	for name, cfg := range spamConfigs() {
		out := runAll(t, cfg, occs)
		checkExact(t, occs, out, name)
		var summaries int
		for _, w := range out {
			if w.pair.reason == "SuccessfulCreate" && w.aggregated && w.count > 1 {
				summaries++
			}
		}
		if cfg.Legacy && cfg.SpamKey[len(cfg.SpamKey)-1] != "reason" {
			// (A series key has no note: series mode makes one series of them.)
			assert.Equal(t, 1, summaries, "%s: one summary holds the events no token let through", name)
		}
	}
}

// TestSpamRandomStreamsAreExact: over random storms (a
// new uid per occurrence or none, repeats, distinct messages, quiet
// spells) in every mode and spam-key setting, tight filters included, every
// occurrence ends up in a final count, every pair is visible, no count goes
// down; and the filter still bounds each key: records without a token are
// at most one per series or event ending, plus one summary per aggregate
// key per idle period.
func TestSpamRandomStreamsAreExact(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 13))
		occs := randomStorm(rng, 50+rng.IntN(400))
		cfg := defaults()
		cfg.Legacy = rng.IntN(2) == 0
		cfg.SpamBurst = 1 + rng.IntN(6)
		cfg.SpamQPS = []float64{1.0 / 300, 1.0 / 60, 1.0 / 5}[rng.IntN(3)]
		cfg.FinishAfter = []time.Duration{time.Minute, 6 * time.Minute}[rng.IntN(2)]
		cfg.MaxKeys = []int{4096, 8 + rng.IntN(20)}[rng.IntN(2)]
		if rng.IntN(2) == 0 {
			cfg.SpamKey = append(cfg.SpamKey, "reason")
		}
		what := fmt.Sprintf("seed %d legacy=%t key=%v burst=%d", seed, cfg.Legacy, cfg.SpamKey, cfg.SpamBurst)
		out := runAll(t, cfg, occs)
		checkExact(t, occs, out, what)
		checkBound(t, cfg, occs, out, what)
		if !cfg.Legacy {
			// Series mode aggregates nothing: an aggregated record is a summary.
			span := occs[len(occs)-1].at - occs[0].at
			perKey := map[pair]int{}
			for _, w := range out {
				if w.aggregated {
					perKey[w.pair]++
				}
			}
			for p, n := range perKey {
				// +1: the shutdown flush; +1: the first period.
				assert.LessOrEqual(t, n, 2+int(span/cfg.FinishAfter), "%s: summaries of %v", what, p)
			}
		}
	}
}

// checkBound asserts the bound per key of docs/processor.md: records made from
// an input each take a token (at most burst + qps × span per bucket; here
// per finest key, with reason, which the coarser buckets only tighten);
// every other record of an Event object is an end of it or a heartbeat: at
// most one per finish_after of its activity and heartbeat_interval, plus
// the shutdown flush.
func checkBound(t *testing.T, cfg Config, occs []occurrence, out []written, what string) {
	t.Helper()
	span := occs[len(occs)-1].at - occs[0].at
	fromInput, timer := map[string]int{}, map[string]int{}
	for _, w := range out {
		if w.fromInput {
			fromInput[w.spamKey]++
		} else {
			timer[w.name]++
		}
	}
	tokens := cfg.SpamBurst + int(cfg.SpamQPS*span.Seconds()) + 1
	for key, n := range fromInput {
		assert.LessOrEqual(t, n, tokens, "%s: records of inputs of %s", what, key)
	}
	ends := 2 + int(span/cfg.FinishAfter) + int(span/cfg.HeartbeatInterval)
	for name, n := range timer {
		assert.LessOrEqual(t, n, ends, "%s: timer records of %s", what, name)
	}
}

// randomStorm is a storm over a few objects: repeats of fixed messages,
// runs of distinct messages (a ReplicaSet creating pods), quiet spells; a
// third of the records carry a new event uid each (a count of one).
func randomStorm(rng *rand.Rand, n int) []occurrence {
	var out []occurrence
	var at time.Duration
	for i := range n {
		at += []time.Duration{0, time.Millisecond, time.Second, 10 * time.Second, time.Minute, 7 * time.Minute}[rng.IntN(6)]
		obj := []string{"web-1", "web-2", "rs"}[rng.IntN(3)]
		reason := []string{"BackOff", "Unhealthy", "SuccessfulCreate", "Pulled"}[rng.IntN(4)]
		note := fmt.Sprintf("%s on %s", reason, obj)
		if reason == "SuccessfulCreate" {
			note = fmt.Sprint("Created pod: ", i)
		}
		ev := podEvent(obj, reason, note)
		if rng.IntN(3) == 0 {
			ev.Type = k8sevent.TypeNormal
		}
		if rng.IntN(3) == 0 {
			ev.UID = fmt.Sprint("uid-", i)
		}
		out = append(out, occurrence{at, ev})
	}
	return out
}

// TestStateFinishedOnlyWhenChanged: a series whose last
// record already shows its count ends without a record; one that grew
// since ends with its count; FinishMarker restores the marker.
func TestStateFinishedOnlyWhenChanged(t *testing.T) {
	ev := podEvent("web-1", "BackOff", "x")
	r := newTester(t, defaults())
	r.at(0, ev)
	require.Equal(t, []string{"started:2"}, kinds(r.at(time.Second, ev)))
	assert.Empty(t, r.advance(time.Hour), "the end changes nothing the started record did not show")
	assert.Equal(t, int64(1), r.e.Stats.SeriesFinished, "the series ended all the same")
	assert.Zero(t, r.e.Len())

	r = newTester(t, defaults())
	for i := range 3 {
		r.at(time.Duration(i)*time.Second, ev)
	}
	assert.Equal(t, []string{"finished:3"}, kinds(r.advance(time.Hour)), "a count the started record did not show")

	marker := defaults()
	marker.FinishMarker = true
	r = newTester(t, marker)
	r.at(0, ev)
	r.at(time.Second, ev)
	assert.Equal(t, []string{"finished:2"}, kinds(r.advance(time.Hour)), "the explicit end-of-series marker")

	r = newTester(t, defaults())
	r.at(0, ev)
	r.at(time.Second, ev)
	assert.Empty(t, r.e.Flush(t0.Add(2*time.Second).UnixNano()), "a shutdown flush of a count already written")
}

// TestStateNoRecordRepeatsACount: over random storms, no
// finished record (series mode) and no record at all (legacy mode) repeats
// the count of its object's previous record.
func TestStateNoRecordRepeatsACount(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 2))
		occs := randomStorm(rng, 50+rng.IntN(300))
		cfg := defaults()
		cfg.Legacy = rng.IntN(2) == 0
		cfg.SpamBurst = 1 + rng.IntN(6)
		cfg.FinishAfter = []time.Duration{time.Minute, 6 * time.Minute}[rng.IntN(2)]
		prev := map[string]int64{}
		for _, w := range runAll(t, cfg, occs) {
			if p, ok := prev[w.name]; ok && (cfg.Legacy || w.kind == KindFinished) {
				require.Greater(t, w.count, p, "seed %d legacy=%t: %s %s repeats count %d", seed, cfg.Legacy, KindNames[w.kind], w.name, p)
			}
			prev[w.name] = w.count
		}
	}
}
