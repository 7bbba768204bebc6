package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// watched is the record of a watched core/v1 Event object: its uid, its
// cumulative count, first and last timestamps.
func watched(pod string, count int64, first, last time.Duration) k8sevent.Event {
	ev := podEvent(pod, "BackOff", "x")
	ev.UID, ev.Count = "event-uid-"+pod, count
	ev.FirstTimestamp, ev.LastTimestamp = t0.Add(first), t0.Add(last)
	return ev
}

// finalCounts is the latest count each Event object (name) was written with.
func finalCounts(ems ...[]Emission) map[string]int64 {
	out := map[string]int64{}
	for _, list := range ems {
		for _, em := range list {
			out[em.Name] = em.Count
		}
	}
	return out
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

// TestStateForgottenUIDNeverOvercounts: uid A patched to
// 1, 2, 3 with two other uids in between, with max_keys 2, is 5
// occurrences, not 7; and the objects' final counts add up to them.
func TestStateForgottenUIDNeverOvercounts(t *testing.T) {
	cfg := defaults()
	cfg.MaxKeys = 2
	r := newTester(t, cfg)
	var ems [][]Emission
	ems = append(ems, r.at(0, watched("a", 1, 0, 0)))
	ems = append(ems, r.at(time.Second, watched("a", 2, 0, time.Second)))
	ems = append(ems, r.at(2*time.Second, watched("b", 1, 2*time.Second, 2*time.Second)))
	ems = append(ems, r.at(3*time.Second, watched("c", 1, 3*time.Second, 3*time.Second)))
	ems = append(ems, r.at(4*time.Second, watched("a", 3, 0, 4*time.Second)))
	ems = append(ems, r.e.Flush(t0.Add(5*time.Second).UnixNano()))
	assert.Equal(t, int64(5), r.e.Stats.Occurrences, "a: 3, b: 1, c: 1")
	assert.Equal(t, int64(5), sum(finalCounts(ems...)), "the objects' final counts")
}

// TestStateForgottenUIDsRandomStreams, on random streams of watched
// Events patched (or resent) in random order through small caches: the
// engine counts exactly the occurrences when the objects fit in what the
// totals remember (totalsPerKey × max_keys); otherwise each record of an
// object they no longer remember and cannot prove new counts one, so the
// count is off by at most one per such record (Stats.Unproven) above, and
// by what they stated beyond one (Stats.UnprovenOccurrences) below.
func TestStateForgottenUIDsRandomStreams(t *testing.T) {
	forgetting := 0
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 11))
		objects := 3 + rng.IntN(30)
		cfg := defaults()
		cfg.MaxKeys = 1 + rng.IntN(objects/totalsPerKey+1) // 1 too: the smallest Validate accepts
		r := newTester(t, cfg)
		type object struct {
			count       int64
			first, last time.Duration
		}
		live := map[int]*object{}
		var truth int64
		made, now := 0, time.Duration(0)
		for range 400 {
			now += time.Duration(1+rng.IntN(5)) * time.Second
			i := rng.IntN(made + 1)
			if i == made && made < objects {
				live[i], made = &object{first: now}, made+1
			} else if i >= made {
				continue
			}
			o := live[i]
			grow := int64(rng.IntN(3)) // 0: a relist or resend
			if o.count == 0 {
				grow = 1 + grow
			}
			if grow > 0 {
				o.count, o.last = o.count+grow, now
			}
			truth += grow
			ev := watched(fmt.Sprint("p", i), o.count, o.first, o.last)
			r.at(now, ev)
			s := r.e.Stats
			require.LessOrEqual(t, s.Occurrences, truth+s.Unproven, "seed %d: at most one too many per unproven record", seed)
			require.GreaterOrEqual(t, s.Occurrences+s.UnprovenOccurrences, truth, "seed %d: the shortfall is bounded", seed)
		}
		if totalsPerKey*cfg.MaxKeys >= made {
			require.Equal(t, truth, r.e.Stats.Occurrences, "seed %d: %d objects fit in max_keys %d", seed, made, cfg.MaxKeys)
			require.Zero(t, r.e.Stats.Unproven, "seed %d", seed)
		} else if r.e.Stats.Unproven > 0 {
			forgetting++
		}
	}
	require.Positive(t, forgetting, "some streams forget objects")
}

// TestStateNewObjectsAfterForgottenOnesAreExact: a
// cluster whose Events come and go (each patched a few times, then never
// again) through a small cache counts every occurrence: forgetting old
// objects never touches the counts of newer ones.
func TestStateNewObjectsAfterForgottenOnesAreExact(t *testing.T) {
	cfg := defaults()
	cfg.MaxKeys = 4
	r := newTester(t, cfg)
	var truth int64
	at := time.Duration(0)
	for i := range 50 {
		pod, first := fmt.Sprint("p", i), at
		for c := int64(1); c <= 3; c++ {
			at += time.Second
			r.at(at, watched(pod, c, first, at))
			truth++
		}
		r.at(at, watched(pod, 3, first, at)) // a resend: no growth
	}
	assert.Equal(t, truth, r.e.Stats.Occurrences)
}

// TestStateRestoreFollowsShorterTimers: restored with a
// shorter finish_after or heartbeat_interval, deadlines follow from the
// times kept and the configuration now, not from the stored deadlines.
func TestStateRestoreFollowsShorterTimers(t *testing.T) {
	restart := func(before, after Config) *tester {
		r := newTester(t, before)
		ev := podEvent("web-1", "BackOff", "x")
		r.at(0, ev)
		require.Equal(t, []string{"started:2"}, kinds(r.at(time.Second, ev)))
		require.Empty(t, r.advance(5*time.Minute))
		restored := newTester(t, after)
		require.NoError(t, restored.e.Restore(r.e.Snapshot()))
		return restored
	}
	long := defaults()
	long.FinishAfter, long.HeartbeatInterval = time.Hour, 30*time.Minute

	t.Run("finish_after 1h to 1m", func(t *testing.T) {
		short := long
		short.FinishAfter = time.Minute
		short.FinishMarker = true // the finish changes nothing: only the marker shows when it ends
		r := restart(long, short)
		d, ok := r.e.NextDeadline()
		require.True(t, ok)
		assert.LessOrEqual(t, d, t0.Add(time.Minute+time.Second).UnixNano(), "idle 5 minutes, finish_after 1m: due")
		fin := r.advance(5 * time.Minute)
		require.Equal(t, []string{"finished:2"}, kinds(fin))
		assert.Equal(t, t0.Add(time.Minute+time.Second).UnixNano(), fin[0].At, "at its last occurrence + finish_after")
	})
	t.Run("heartbeat_interval 30m to 2m", func(t *testing.T) {
		short := long
		short.HeartbeatInterval = 2 * time.Minute
		r := restart(long, short)
		beat := r.advance(5 * time.Minute)
		require.Equal(t, []string{"ongoing:2"}, kinds(beat), "the heartbeat due at 2m1s, once, not once per interval missed")
		assert.Equal(t, t0.Add(5*time.Minute).UnixNano(), beat[0].At)
		assert.Empty(t, r.advance(7*time.Minute-time.Nanosecond))
		assert.Equal(t, []string{"ongoing:2"}, kinds(r.advance(7*time.Minute)), "then every 2 minutes")
	})
	t.Run("heartbeat_interval 30m to 50m", func(t *testing.T) {
		longer := long
		longer.HeartbeatInterval = 50 * time.Minute
		r := restart(long, longer)
		assert.Empty(t, r.advance(50*time.Minute), "no heartbeat at the old 30m1s")
		assert.Equal(t, []string{"ongoing:2"}, kinds(r.advance(50*time.Minute+time.Second)), "50 minutes after the start")
	})
}

// TestStateSpamClockNeverStepsBack: deadlines come due
// out of order within one Advance (x's stale idle deadline comes first, its
// heartbeat at 13m; y's heartbeat at 12m30s after it). The shared spam
// bucket must hold exactly burst + qps × elapsed − tokens taken: no refill
// that did not happen.
func TestStateSpamClockNeverStepsBack(t *testing.T) {
	cfg := defaults()
	cfg.FinishAfter, cfg.HeartbeatInterval = 10*time.Minute, 12*time.Minute
	cfg.FinishMarker = true // the finish after the heartbeats changes nothing
	r := newTester(t, cfg)
	x, y := podEvent("web-1", "BackOff", "x"), podEvent("web-1", "Unhealthy", "y")
	var taken int
	for _, o := range []struct {
		at time.Duration
		ev k8sevent.Event
	}{{0, x}, {10 * time.Second, y}, {30 * time.Second, y}, {time.Minute, x}, {3 * time.Minute, y}, {5 * time.Minute, x}} {
		taken += len(r.at(o.at, o.ev))
	}
	ems := r.advance(14 * time.Minute)
	require.Equal(t, []string{"ongoing:3", "ongoing:3", "finished:3"}, kinds(ems))
	require.Equal(t, []int64{t0.Add(13 * time.Minute).UnixNano(), t0.Add(12*time.Minute + 30*time.Second).UnixNano()},
		[]int64{ems[0].At, ems[1].At}, "the heartbeats fire out of time order")
	taken += 2 // the finish takes none

	require.Equal(t, 1, r.e.spam.Len(), "one bucket: same source, object and type")
	b := r.e.spam.values()[0]
	elapsed := (13 * time.Minute).Seconds()
	want := float64(cfg.SpamBurst) + elapsed*cfg.SpamQPS - float64(taken) // never full again after the first token
	assert.InDelta(t, want, b.lim.TokensAt(t0.Add(13*time.Minute)), 1e-9)
}

// TestStateRestoreKeepsWhatFits: a snapshot with more
// entries than a lowered max_keys keeps the most recent ones; the series
// that do not fit end with their counts, as evictions do; a forgotten
// object seen again is not counted again.
func TestStateRestoreKeepsWhatFits(t *testing.T) {
	cfg := defaults()
	r := newTester(t, cfg)
	var names []string
	for i := range 5 {
		pod := fmt.Sprint("p", i)
		at := time.Duration(i) * time.Second
		names = append(names, r.at(at, watched(pod, 1, at, at))[0].Name)
		r.at(at+10*time.Second, watched(pod, 2, at, at+10*time.Second))
	}
	require.Equal(t, int64(10), r.e.Stats.Occurrences)

	small := cfg
	small.MaxKeys = 3
	small.FinishMarker = true // the dropped series' ends change nothing: the marker shows them
	restored := newTester(t, small)
	require.NoError(t, restored.e.Restore(r.e.Snapshot()))
	require.Equal(t, 3, restored.e.Len())
	for _, name := range names[2:] {
		found := false
		for _, st := range restored.e.states.values() {
			found = found || st.name == name
		}
		assert.True(t, found, "the most recent series %s is kept", name)
	}
	d, ok := restored.e.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, restored.e.Now(), d, "the dropped series' records are due")
	ended := restored.advance(15 * time.Second)
	require.Equal(t, []string{"finished:2", "finished:2"}, kinds(ended))
	assert.Equal(t, names[:2], []string{ended[0].Name, ended[1].Name}, "the least recent two")

	again := restored.at(20*time.Second, watched("p0", 3, 0, 20*time.Second))
	assert.Equal(t, int64(1), restored.e.Stats.Occurrences, "p0 grew from 2 to 3: one occurrence, not three")
	require.Equal(t, []string{"finished:2", "singleton:1"}, kinds(again), "p2's series makes room for a new one of p0")
	assert.Equal(t, names[2], again[0].Name)
	assert.NotEqual(t, names[0], again[1].Name, "p0's old series ended")
}

// TestStateTimerRecordsCarryTheLatestNote: heartbeats,
// finishes and legacy aggregated flushes write the latest note seen, also
// after a restore.
func TestStateTimerRecordsCarryTheLatestNote(t *testing.T) {
	cfg := defaults()
	cfg.HeartbeatInterval = 3 * time.Minute
	cfg.FinishMarker = true // the finish after the heartbeats changes nothing
	r := newTester(t, cfg)
	for i, note := range []string{"probe failed: 500", "probe failed: 503"} {
		r.at(time.Duration(i)*time.Minute, podEvent("web-1", "Unhealthy", note))
	}
	beat := r.advance(4 * time.Minute)
	require.Equal(t, []string{"ongoing:2"}, kinds(beat))
	assert.Equal(t, "probe failed: 503", beat[0].Event.Note)
	r.at(5*time.Minute, podEvent("web-1", "Unhealthy", "probe failed: timeout"))
	restored := newTester(t, cfg)
	require.NoError(t, restored.e.Restore(r.e.Snapshot()))
	fin := restored.advance(time.Hour)
	require.Equal(t, []string{"ongoing:3", "ongoing:3", "finished:3"}, kinds(fin), "heartbeats at 7m and 10m, idle at 11m")
	for _, em := range fin {
		assert.Equal(t, "probe failed: timeout", em.Event.Note)
	}

	legacy := defaults()
	legacy.Legacy, legacy.AggregateMaxEvents, legacy.SpamBurst, legacy.SpamQPS = true, 2, 3, 1e-9
	r = newTester(t, legacy)
	for i := range 4 {
		r.at(time.Duration(i)*time.Second, podEvent("rs", "SuccessfulCreate", fmt.Sprint("Created pod: rs-", i)))
	}
	flushed := r.advance(time.Hour)
	require.Len(t, flushed, 1, "the held-back aggregated count")
	assert.Equal(t, int64(3), flushed[0].Count)
	assert.Equal(t, AggregatePrefix+"Created pod: rs-3", flushed[0].Note)
}

// TestHostileHugeCountsSaturateStats: counts claimed by
// records (any int64) saturate in every counter, never wrap negative.
func TestHostileHugeCountsSaturateStats(t *testing.T) {
	cfg := defaults()
	cfg.FinishMarker = true // the count saturates at started: its finish changes nothing
	r := newTester(t, cfg)
	for i := range 4 {
		ev := podEvent("web-1", "BackOff", "x")
		ev.UID, ev.Count = fmt.Sprint("hostile-", i), math.MaxInt64
		r.at(time.Duration(i)*time.Second, ev)
	}
	s := r.e.Stats
	assert.Equal(t, int64(math.MaxInt64), s.Occurrences)
	assert.Equal(t, int64(math.MaxInt64), s.Compressed)
	fin := r.advance(time.Hour)
	require.Len(t, fin, 1)
	assert.Equal(t, int64(math.MaxInt64), fin[0].Count)
}

// TestStateInitialListOverMaxKeysIsExact: first sightings
// after the series cache overflowed count in full: an `initial: all` list
// of more stored Events than max_keys, in name order (not time order), is
// exact while they fit in the totals (totalsPerKey × max_keys).
func TestStateInitialListOverMaxKeysIsExact(t *testing.T) {
	cfg := defaults()
	cfg.MaxKeys = 64
	r := newTester(t, cfg)
	rng := rand.New(rand.NewPCG(3, 3))
	var truth int64
	for _, i := range rng.Perm(totalsPerKey * 64) {
		c := int64(1 + rng.IntN(50))
		first := time.Duration(i) * time.Second
		truth += c
		r.at(time.Hour, watched(fmt.Sprint("p", i), c, first, first+time.Duration(c)*time.Second))
	}
	assert.Equal(t, truth, r.e.Stats.Occurrences)
	assert.Zero(t, r.e.Stats.Unproven)
}
