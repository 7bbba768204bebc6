package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func defaults() Config {
	return Config{
		MaxKeys: 4096, FinishAfter: 6 * time.Minute, HeartbeatInterval: 30 * time.Minute,
		Aggregation: true, AggregateMaxEvents: 10, AggregateMaxInterval: 10 * time.Minute,
		SpamFilter: true, SpamQPS: 1.0 / 300, SpamBurst: 25, SpamKey: []string{"source", "object", "type"},
	}
}

func podEvent(pod, reason, note string) k8sevent.Event {
	return k8sevent.Event{
		Type: k8sevent.TypeWarning, Reason: reason, Action: "Sync", Note: note,
		Regarding:           k8sevent.ObjectRef{Kind: "Pod", Namespace: "ns", Name: pod, UID: "uid-" + pod, APIVersion: "v1"},
		ReportingController: "kubelet", ReportingInstance: "node-1", SourceComponent: "kubelet", SourceHost: "node-1",
	}
}

// tester drives an engine with times relative to t0 and keeps copies of what it emitted.
type tester struct {
	t *testing.T
	e *Engine
}

func newTester(t *testing.T, cfg Config) *tester {
	e, err := New(cfg)
	require.NoError(t, err)
	return &tester{t: t, e: e}
}

func (r *tester) at(d time.Duration, ev k8sevent.Event) []Emission {
	ev.Time = t0.Add(d)
	return append([]Emission(nil), r.e.Observe(&ev, t0.Add(d).UnixNano())...)
}

func (r *tester) advance(d time.Duration) []Emission {
	return append([]Emission(nil), r.e.Advance(t0.Add(d).UnixNano())...)
}

func kinds(ems []Emission) []string {
	out := make([]string, len(ems))
	for i, em := range ems {
		out[i] = fmt.Sprintf("%s:%d", KindNames[em.Kind], em.Count)
	}
	return out
}

func TestSeriesLifecycle(t *testing.T) {
	r := newTester(t, defaults())
	ev := podEvent("web-1", "BackOff", "Back-off restarting failed container")

	first := r.at(0, ev)
	require.Equal(t, []string{"singleton:1"}, kinds(first))
	assert.True(t, first[0].FromInput)
	name := first[0].Name
	assert.True(t, strings.HasPrefix(name, "web-1."), name)

	second := r.at(time.Minute, ev)
	require.Equal(t, []string{"started:2"}, kinds(second))
	assert.Equal(t, name, second[0].Name, "a series writes the object its first occurrence created")

	for i := 2; i < 10; i++ {
		assert.Empty(t, r.at(time.Duration(i)*time.Minute, ev), "occurrence %d of an open series", i+1)
	}
	assert.Equal(t, int64(8), r.e.Stats.Compressed)

	// Idle for exactly finish_after after the last occurrence (minute 9).
	assert.Empty(t, r.advance(15*time.Minute-time.Nanosecond))
	fin := r.advance(15 * time.Minute)
	require.Equal(t, []string{"finished:10"}, kinds(fin))
	assert.Equal(t, t0.Add(15*time.Minute).UnixNano(), fin[0].At, "finished at its exact deadline")
	assert.Equal(t, name, fin[0].Name)
	assert.Equal(t, "BackOff", fin[0].Event.Reason, "timer records rebuild the Event")
	assert.Equal(t, "Back-off restarting failed container", fin[0].Event.Note)
	assert.Equal(t, t0.Add(9*time.Minute).UnixNano(), fin[0].Last)
	assert.Equal(t, 0, r.e.Len())

	again := r.at(20*time.Minute, ev)
	require.Equal(t, []string{"singleton:1"}, kinds(again))
	assert.NotEqual(t, name, again[0].Name, "a new series is a new object")
	assert.Equal(t, int64(1), r.e.Stats.SeriesStarted)
	assert.Equal(t, int64(1), r.e.Stats.SeriesFinished)
}

func TestSingletonIsForgottenSilently(t *testing.T) {
	r := newTester(t, defaults())
	ev := podEvent("web-1", "Scheduled", "assigned")
	r.at(0, ev)
	assert.Empty(t, r.advance(6*time.Minute), "a singleton ends with no record")
	assert.Equal(t, 0, r.e.Len())
	assert.Equal(t, []string{"singleton:1"}, kinds(r.at(7*time.Minute, ev)))
}

func TestHeartbeatsAtExactIntervals(t *testing.T) {
	r := newTester(t, defaults())
	ev := podEvent("web-1", "BackOff", "x")
	var got []string
	var at []time.Duration
	for m := 0; m <= 70; m += 5 {
		for _, em := range r.at(time.Duration(m)*time.Minute, ev) {
			got = append(got, kinds([]Emission{em})[0])
			at = append(at, time.Duration(em.At-t0.UnixNano()))
		}
	}
	for _, em := range r.advance(2 * time.Hour) {
		got = append(got, kinds([]Emission{em})[0])
		at = append(at, time.Duration(em.At-t0.UnixNano()))
	}
	// started at minute 5; heartbeats 30 and 60 minutes later; finished 6 minutes after minute 70.
	assert.Equal(t, []string{"singleton:1", "started:2", "ongoing:7", "ongoing:13", "finished:15"}, got)
	assert.Equal(t, []time.Duration{0, 5 * time.Minute, 35 * time.Minute, 65 * time.Minute, 76 * time.Minute}, at)
	assert.Equal(t, int64(2), r.e.Stats.Heartbeats)
}

func TestCumulativeCountsCountTheDifference(t *testing.T) {
	r := newTester(t, defaults())
	ev := podEvent("web-1", "BackOff", "x")
	ev.UID = "event-uid-1"
	var counts []string
	for i, c := range []int64{1, 3, 3, 6} {
		ev.Count = c
		counts = append(counts, kinds(r.at(time.Duration(i)*time.Second, ev))...)
	}
	assert.Equal(t, []string{"singleton:1", "started:3"}, counts)
	assert.Equal(t, int64(6), r.e.Stats.Occurrences)
	assert.Equal(t, []string{"ongoing:6"}, kinds(r.e.Flush(t0.Add(time.Minute).UnixNano())))

	// First sight of an Event that already has a count: all its occurrences.
	other := podEvent("web-2", "BackOff", "x")
	other.UID, other.SeriesCount = "event-uid-2", 4
	assert.Equal(t, []string{"started:4"}, kinds(r.at(time.Minute, other)))
}

func TestEvictionEmitsTheOpenSeries(t *testing.T) {
	cfg := defaults()
	cfg.MaxKeys = 2
	r := newTester(t, cfg)
	a, b, c := podEvent("a", "BackOff", "x"), podEvent("b", "BackOff", "x"), podEvent("c", "BackOff", "x")
	r.at(0, a)
	r.at(time.Second, a)
	r.at(2*time.Second, a)
	r.at(3*time.Second, b)
	got := r.at(4*time.Second, c)
	require.Equal(t, []string{"finished:3", "singleton:1"}, kinds(got), "evicting a's series first emits its count")
	assert.Equal(t, "a", got[0].Event.Regarding.Name)
	assert.Equal(t, int64(1), r.e.Stats.Evictions)
	assert.Equal(t, 2, r.e.Len())
	assert.Len(t, r.e.due, 2, "the deadline heap holds no evicted state")
}

func TestSpamFilterKeyAndExactCounts(t *testing.T) {
	cfg := defaults()
	cfg.SpamBurst = 2
	r := newTester(t, cfg)
	var out []string
	for i, reason := range []string{"SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete"} {
		out = append(out, kinds(r.at(time.Duration(i)*time.Second, podEvent("job", reason, "x")))...)
	}
	assert.Equal(t, []string{"singleton:1", "singleton:1"}, out, "burst 2 on source+object+type")
	assert.Equal(t, int64(1), r.e.Stats.SpamDropped)

	cfg.SpamKey = append(cfg.SpamKey, "reason")
	r = newTester(t, cfg)
	out = nil
	for i, reason := range []string{"SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete"} {
		out = append(out, kinds(r.at(time.Duration(i)*time.Second, podEvent("job", reason, "x")))...)
	}
	assert.Len(t, out, 3, "with reason in the key no reason starves the others")
}

// Two reporters never share a bucket, whatever the key: behind the OTLP
// receiver the reporting instance is the client and its namespace, and one
// client must not spend the tokens of another's records on the same object.
func TestSpamBucketsNeverSpanReporters(t *testing.T) {
	for _, key := range [][]string{{"object"}, {"object", "type", "reason"}, {"source", "object"}} {
		cfg := defaults()
		cfg.SpamBurst, cfg.SpamQPS, cfg.SpamKey = 1, 1e-9, key
		r := newTester(t, cfg)
		var out []string
		for i, client := range []string{"system:serviceaccount:a:app@default", "system:serviceaccount:b:app@default"} {
			ev := podEvent("web", "BackOff", "x")
			ev.ReportingController, ev.ReportingInstance = "", client
			out = append(out, kinds(r.at(time.Duration(i)*time.Second, ev))...)
		}
		assert.Equal(t, []string{"singleton:1", "singleton:1"}, out, "key %v: one bucket per reporter", key)
	}
}

func TestSpamFilteredSeriesStillEndsWithItsExactCount(t *testing.T) {
	cfg := defaults()
	cfg.SpamBurst = 1
	cfg.SpamQPS = 1e-9
	r := newTester(t, cfg)
	ev := podEvent("web-1", "BackOff", "x")
	assert.Equal(t, []string{"singleton:1"}, kinds(r.at(0, ev)))
	for i := 1; i < 5; i++ {
		assert.Empty(t, r.at(time.Duration(i)*time.Second, ev), "started is held back: no token")
	}
	assert.Equal(t, []string{"finished:5"}, kinds(r.advance(time.Hour)), "the end of a visible series is never held back")
}

func TestLegacyCompressionAndFlush(t *testing.T) {
	cfg := defaults()
	cfg.Legacy = true
	r := newTester(t, cfg)
	ev := podEvent("web-1", "BackOff", "Back-off restarting")
	var names []string
	for i := 0; i < 30; i++ {
		for _, em := range r.at(time.Duration(i)*time.Second, ev) {
			assert.Equal(t, int64(i+1), em.Count)
			assert.Equal(t, t0.UnixNano(), em.First)
			names = append(names, em.Name)
		}
	}
	// Burst 25: count updates leave the bucket's last token to the write of
	// the held-back count (client-go writes 25 too, the last with count 25).
	require.Len(t, names, 24, "burst 25 less the token kept, then the spam filter holds records back")
	for _, n := range names {
		assert.Equal(t, names[0], n, "one object for identical events")
	}
	flushed := r.advance(time.Hour)
	require.Equal(t, []string{":30"}, kinds(flushed), "held-back occurrences are flushed once idle")
	assert.Equal(t, int64(25), r.e.Stats.Out[KindLegacy], "no more writes than the burst")
	assert.Equal(t, names[0], flushed[0].Name)
}

func TestLegacyAggregationIsDeterministic(t *testing.T) {
	cfg := defaults()
	cfg.Legacy = true
	r := newTester(t, cfg)
	var aggregated []Emission
	for i := 0; i < 12; i++ {
		for _, em := range r.at(time.Duration(i)*time.Second, podEvent("rs", "SuccessfulCreate", fmt.Sprintf("Created pod: rs-%d", i))) {
			if em.Aggregated {
				aggregated = append(aggregated, em)
			}
		}
	}
	require.Len(t, aggregated, 3, "the 10th distinct note and every later one are combined")
	assert.Equal(t, AggregatePrefix+"Created pod: rs-9", aggregated[0].Note)
	assert.Equal(t, []int64{1, 2, 3}, []int64{aggregated[0].Count, aggregated[1].Count, aggregated[2].Count})
	assert.Equal(t, aggregated[0].Name, aggregated[2].Name)

	// rs-0..rs-2 were forgotten (least recently seen); rs-11 is still in the set.
	old := r.at(13*time.Second, podEvent("rs", "SuccessfulCreate", "Created pod: rs-0"))
	require.Len(t, old, 1)
	assert.True(t, old[0].Aggregated)
	recent := r.at(14*time.Second, podEvent("rs", "SuccessfulCreate", "Created pod: rs-11"))
	require.Len(t, recent, 1)
	assert.False(t, recent[0].Aggregated, "a note still in the set is its own event")
	assert.Equal(t, int64(1), recent[0].Count, "its earlier occurrence went into the aggregate")
}

func TestResourceVersionInKeyIsOptional(t *testing.T) {
	a, b := podEvent("web-1", "BackOff", "x"), podEvent("web-1", "BackOff", "x")
	a.Regarding.ResourceVersion, b.Regarding.ResourceVersion = "100", "101"

	r := newTester(t, defaults())
	r.at(0, a)
	assert.Equal(t, []string{"started:2"}, kinds(r.at(time.Second, b)))

	cfg := defaults()
	cfg.KeyIncludesResourceVersion = true
	r = newTester(t, cfg)
	r.at(0, a)
	assert.Equal(t, []string{"singleton:1"}, kinds(r.at(time.Second, b)))
}

func TestKeyFieldsCannotRunTogether(t *testing.T) {
	// client-go joins key fields with "": these two would share its key.
	a, b := podEvent("web-1", "Back", "x"), podEvent("web-1", "Back", "x")
	a.Action, a.Reason = "ab", "c"
	b.Action, b.Reason = "a", "bc"
	r := newTester(t, defaults())
	r.at(0, a)
	assert.Equal(t, []string{"singleton:1"}, kinds(r.at(time.Second, b)))
}

func TestNamesAreDeterministicAndValid(t *testing.T) {
	names := func() []string {
		r := newTester(t, defaults())
		var out []string
		for i, reason := range []string{"Pulled", "Created", "Started"} {
			_ = i
			for _, em := range r.at(0, podEvent("web-1", reason, "x")) { // same second: distinct names
				out = append(out, em.Name)
			}
		}
		return out
	}
	first := names()
	assert.Equal(t, first, names())
	assert.Len(t, map[string]bool{first[0]: true, first[1]: true, first[2]: true}, 3)
	for _, n := range first {
		ev := podEvent("web-1", "x", "y")
		ev.Name = n
		ev.Time = t0
		assert.NoError(t, k8sevent.Validate(&ev, k8sevent.APICoreV1))
	}
}
