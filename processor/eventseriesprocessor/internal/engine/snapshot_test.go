package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// call is one engine call of a random stream: an occurrence, an Advance or
// (at a restart) a Flush, at engine time now.
type call struct {
	kind string // "observe", "advance", "flush"
	now  time.Duration
	ev   k8sevent.Event
}

// randomConfig varies what the state holds: small caches (evictions), short
// timers (many finishes and heartbeats), a tight spam filter, aggregation.
func randomConfig(rng *rand.Rand) Config {
	cfg := defaults()
	cfg.Legacy = rng.IntN(2) == 0
	cfg.MaxKeys = 1 + rng.IntN(11)
	cfg.FinishAfter = []time.Duration{30 * time.Second, 2 * time.Minute, 6 * time.Minute}[rng.IntN(3)]
	cfg.HeartbeatInterval = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}[rng.IntN(3)]
	cfg.KeyIncludesResourceVersion = rng.IntN(2) == 0
	cfg.AggregateMaxEvents = 2 + rng.IntN(4)
	cfg.AggregateMaxInterval = []time.Duration{time.Minute, 10 * time.Minute}[rng.IntN(2)]
	cfg.SpamFilter = rng.IntN(5) != 0
	cfg.SpamQPS = []float64{1.0 / 300, 1.0 / 30, 1, 1.0 / 7}[rng.IntN(4)]
	cfg.SpamBurst = 1 + rng.IntN(5)
	cfg.SpamKey = [][]string{{"source", "object", "type"}, {"object", "reason"}, {"type"}}[rng.IntN(3)]
	if rng.IntN(4) == 0 {
		edgeConfig(rng, &cfg)
	}
	return cfg
}

// edgeConfig sets some keys to the ends of what the processor's Validate
// accepts: timers of 1 ns, the most heartbeats per finish_after, the
// fewest aggregated events, the thinnest and the widest spam buckets.
func edgeConfig(rng *rand.Rand, cfg *Config) {
	switch rng.IntN(3) {
	case 0:
		cfg.FinishAfter, cfg.HeartbeatInterval = time.Nanosecond, time.Nanosecond
	case 1:
		cfg.HeartbeatInterval = cfg.FinishAfter / 100
	}
	if rng.IntN(2) == 0 {
		cfg.AggregateMaxEvents, cfg.AggregateMaxInterval = 2, time.Nanosecond
	}
	switch rng.IntN(4) {
	case 0:
		cfg.SpamQPS, cfg.SpamBurst = math.SmallestNonzeroFloat64, 1
	case 1:
		cfg.SpamQPS, cfg.SpamBurst = math.MaxFloat64, math.MaxInt
	case 2:
		cfg.SpamQPS = math.Inf(1)
	}
}

// randomStream is n calls over a few objects, reasons and notes, with ties
// (equal times), gaps that let timers fire, late occurrences, and watched
// Events whose cumulative counts grow (or not).
func randomStream(rng *rand.Rand, n int) []call {
	var out []call
	var cursor time.Duration
	counts := map[string]int64{}
	for range n {
		cursor += []time.Duration{0, 0, time.Millisecond, time.Second, 10 * time.Second, time.Minute,
			5 * time.Minute, 40 * time.Minute}[rng.IntN(8)]
		if rng.IntN(10) == 0 {
			out = append(out, call{kind: "advance", now: cursor})
			continue
		}
		ev := podEvent([]string{"a", "b", "c", "d"}[rng.IntN(4)], []string{"BackOff", "Unhealthy", "Pulled"}[rng.IntN(3)],
			fmt.Sprintf("note %d", rng.IntN(6)))
		if rng.IntN(3) == 0 {
			ev.Type = k8sevent.TypeNormal
		}
		ev.Regarding.ResourceVersion = fmt.Sprint(rng.IntN(2))
		ev.Time = t0.Add(cursor - time.Duration(rng.IntN(3))*time.Minute)
		if rng.IntN(3) == 0 {
			ev.UID = fmt.Sprintf("event-%d", rng.IntN(5))
			counts[ev.UID] += int64(rng.IntN(3))
			ev.Count = counts[ev.UID]
		}
		out = append(out, call{kind: "observe", now: cursor, ev: ev})
	}
	return out
}

// play runs calls on e and returns every emission, formatted at once (the
// strings of timer records are only valid until the next call).
func play(e *Engine, calls []call) []string {
	var out []string
	for _, c := range calls {
		for _, em := range step(e, c) {
			out = append(out, fmt.Sprintf("%s %+v", c.kind, em))
		}
	}
	return out
}

// step makes call c on e and returns its emissions (valid until the next
// call; an input emission's Event is c.ev).
func step(e *Engine, c call) []Emission {
	now := t0.Add(c.now).UnixNano()
	switch c.kind {
	case "observe":
		ev := c.ev
		return e.Observe(&ev, now)
	case "advance":
		return e.Advance(now)
	case "flush":
		return e.Flush(now)
	}
	return nil
}

// TestRestoreContinuesExactly: for random streams and configurations, an
// engine snapshotted and restored into a new one at random points (with a
// shutdown flush or not) emits exactly what one that never stopped emits,
// names included, and ends in the same state.
func TestRestoreContinuesExactly(t *testing.T) {
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := randomConfig(rng)
		calls := randomStream(rng, 50+rng.IntN(400))
		// Restart points, each after a shutdown flush or not; both engines get the flushes.
		var ks []int
		for range 1 + rng.IntN(3) {
			ks = append(ks, rng.IntN(len(calls)+1))
		}
		var all []call
		var cuts []int
		prev := 0
		for _, k := range slices.Compact(slices.Sorted(slices.Values(ks))) {
			all = append(all, calls[prev:k]...)
			if rng.IntN(2) == 0 && k > 0 {
				all = append(all, call{kind: "flush", now: calls[k-1].now})
			}
			cuts, prev = append(cuts, len(all)), k
		}
		end := calls[len(calls)-1].now
		calls = append(append(all, calls[prev:]...), call{kind: "flush", now: end + time.Minute},
			call{kind: "advance", now: end + 24*time.Hour})

		whole := newTester(t, cfg).e
		want := play(whole, calls)

		var got []string
		e, from := newTester(t, cfg).e, 0
		for _, k := range cuts {
			got = append(got, play(e, calls[from:k])...)
			snap := e.Snapshot()
			e = newTester(t, cfg).e
			require.NoError(t, e.Restore(snap), "seed %d", seed)
			require.Equal(t, snap, e.Snapshot(), "seed %d: a restored engine snapshots the same", seed)
			from = k
		}
		got = append(got, play(e, calls[from:])...)
		require.Equal(t, want, got, "seed %d (%+v), restarts after calls %v", seed, cfg, cuts)
		require.Equal(t, whole.Snapshot(), e.Snapshot(), "seed %d: the same state at the end", seed)
	}
}

// snapshotOf runs a random stream on a new engine and returns its snapshot.
func snapshotOf(t testing.TB, cfg Config, seed uint64) []byte {
	e, err := New(cfg)
	require.NoError(t, err)
	play(e, randomStream(rand.New(rand.NewPCG(seed, 1)), 300))
	return e.Snapshot()
}

func TestRestoreRefusesWhatItCannotContinue(t *testing.T) {
	cfg := defaults()
	cfg.MaxKeys = 8
	snap := snapshotOf(t, cfg, 1)
	w := &writer{}
	w.str(snapshotMagic)
	version := len(w.b)
	newer := append([]byte(nil), snap...)
	newer[version] = snapshotVersion + 1

	legacy, rv := cfg, cfg
	legacy.Legacy = true
	rv.KeyIncludesResourceVersion = true
	for _, c := range []struct {
		name, err string
		cfg       Config
		data      []byte
	}{
		{"empty", "not an eventseries engine snapshot", cfg, nil},
		{"garbage", "not an eventseries engine snapshot", cfg, []byte("{\"version\": 1}")},
		{"another version", fmt.Sprintf("snapshot of another version: version %d, this build reads version %d",
			snapshotVersion+1, snapshotVersion), cfg, newer},
		{"other mode", "snapshot made under other settings: mode series, configured legacy", legacy, snap},
		{"other series key", "key_ignores_resource_version true, configured false", rv, snap},
		{"trailing bytes", "bytes after the end", cfg, append(append([]byte(nil), snap...), 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTester(t, c.cfg).e
			err := e.Restore(c.data)
			assert.ErrorContains(t, err, c.err)
			assert.Equal(t, c.name == "another version", errors.Is(err, ErrSnapshotVersion), "told apart from a corrupt one")
			assert.Equal(t, strings.HasPrefix(c.name, "other "), errors.Is(err, ErrSnapshotSettings), "for Carry")
			assertFresh(t, e)
		})
	}
}

// assertFresh checks that e is empty and works as a new engine.
func assertFresh(t *testing.T, e *Engine) {
	t.Helper()
	require.Equal(t, 0, e.Len())
	require.Equal(t, 0, e.aggs.Len()+e.spam.Len()+e.totals.Len()+len(e.due))
	require.False(t, e.totals.forgot)
	require.Zero(t, e.Now())
	ev := podEvent("web-1", "BackOff", "x")
	ev.Time = t0
	ems := e.Observe(&ev, t0.UnixNano())
	require.Len(t, ems, 1)
	require.Equal(t, int64(1), ems[0].Count)
}

// TestRestoreNeverPanics: every prefix of a snapshot and every one-byte
// change of it is refused or restores an engine that works.
func TestRestoreNeverPanics(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		cfg := defaults()
		cfg.Legacy, cfg.MaxKeys, cfg.AggregateMaxEvents = legacy, 8, 3
		snap := snapshotOf(t, cfg, 2)
		for n := range len(snap) {
			e := newTester(t, cfg).e
			require.Error(t, e.Restore(snap[:n]), "prefix of %d bytes", n)
			assertFresh(t, e)
		}
		for i := range snap {
			data := append([]byte(nil), snap...)
			data[i] ^= []byte{0x01, 0x80, 0xff}[i%3] // a length or value off by one, a varint cut or extended, anything
			exercise(t, cfg, data)
		}
	}
}

// exercise restores data; when that works, the snapshot round-trips and the
// engine runs a stream, times out every state and flushes.
func exercise(t testing.TB, cfg Config, data []byte) {
	e, err := New(cfg)
	require.NoError(t, err)
	if e.Restore(data) != nil {
		require.Equal(t, 0, e.Len())
		return
	}
	snap := e.Snapshot()
	again, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, again.Restore(snap))
	require.Equal(t, snap, again.Snapshot())
	calls := randomStream(rand.New(rand.NewPCG(3, 3)), 30)
	for i := range calls {
		calls[i].now += time.Duration(e.Now() - t0.UnixNano())
	}
	play(e, calls)
	e.Advance(e.Now() + int64(365*24*time.Hour))
	e.Flush(e.Now())
}

func FuzzRestore(f *testing.F) {
	for _, cfg := range fuzzConfigs() {
		for seed := range uint64(3) {
			f.Add(snapshotOf(f, cfg, seed))
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\x12eventseries.engine\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range fuzzConfigs() {
			exercise(t, cfg, data)
		}
	})
}

func fuzzConfigs() []Config {
	series, legacy := defaults(), defaults()
	series.MaxKeys, series.SpamBurst = 8, 2
	legacy.Legacy, legacy.MaxKeys, legacy.AggregateMaxEvents = true, 8, 3
	return []Config{series, legacy}
}

// TestSpamBucketsRestoreExactly: a drained bucket goes on refilling from
// where it was, to the bit, so the filter lets the same records through.
func TestSpamBucketsRestoreExactly(t *testing.T) {
	cfg := defaults()
	cfg.SpamBurst, cfg.SpamQPS = 3, 1.0/7
	r := newTester(t, cfg)
	for i := range 5 {
		r.at(time.Duration(i)*1500*time.Millisecond, podEvent("web-1", fmt.Sprint("R", i), "x"))
	}
	require.Equal(t, 1, r.e.spam.Len())
	restored := newTester(t, cfg)
	require.NoError(t, restored.e.Restore(r.e.Snapshot()))
	before := r.e.spam.values()[0]
	after, ok := restored.e.spam.peek([]byte(r.e.spam.keyOf(before)))
	require.True(t, ok)
	assert.Equal(t, before.tokens(), after.tokens())
	assert.Equal(t, before.last, after.last)
	for _, at := range []time.Time{t0, t0.Add(7 * time.Second), t0.Add(time.Minute), t0.Add(time.Hour)} {
		assert.Equal(t, before.lim.TokensAt(at), after.lim.TokensAt(at), "at %v", at)
	}
}

// TestVersion8SnapshotsMigrate: the version 8 state the processor's tests
// keep restores, snapshots as this version and restores again to the same;
// every prefix of it is refused and every one-byte change of it is refused
// or restores an engine that works.
func TestVersion8SnapshotsMigrate(t *testing.T) {
	v8, err := os.ReadFile(filepath.Join("..", "..", "testdata", "saved", "v8", "engine"))
	require.NoError(t, err)
	cfg := defaults()
	e := newTester(t, cfg).e
	require.NoError(t, e.Restore(v8))
	require.Positive(t, e.Len())
	exercise(t, cfg, v8)
	for n := range len(v8) {
		require.Error(t, newTester(t, cfg).e.Restore(v8[:n]), "prefix of %d bytes", n)
	}
	for i := range v8 {
		data := append([]byte(nil), v8...)
		data[i] ^= []byte{0x01, 0x80, 0xff}[i%3]
		exercise(t, cfg, data)
	}
}
