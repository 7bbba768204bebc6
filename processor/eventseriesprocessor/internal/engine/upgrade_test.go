package engine

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// watchedV5 is a record of a watched Event object whose cumulative count is
// count: by uid ("a", "e"), by uid in a named cluster ("b"), or by
// namespace/name ("c"), as testdata/v5-totals-*.snapshot saw them.
func watchedV5(obj string, count int64) k8sevent.Event {
	ev := podEvent("pod-"+obj, "BackOff", "Back-off restarting failed container")
	switch obj {
	case "c":
		ev.Name = "pod-c.17a"
	case "b":
		ev.UID, ev.Cluster = "uid-"+obj, k8sevent.Cluster{Name: "east", UID: "cluster-uid-1"}
	default:
		ev.UID = "uid-" + obj
	}
	ev.Count = count
	return ev
}

// An upgrade is a rollout: a snapshot of version 5, written by the build
// before snapshot version 6 changed the totals' hash (main at 65c4a10,
// max_keys 64, records a 1→3→5, b 1→3, c 1→4, e 1→2, one a second from
// t0), restored by this build, keeps counting each watched Event from
// where it was, exactly; through a second snapshot of this build too (a
// total not seen again keeps its old hash); and a restored total pushed
// out before its object comes back makes that object count at most one,
// never its whole count again.
func TestUpgradeFromVersion5KeepsExactCounts(t *testing.T) {
	for _, mode := range []string{"series", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			snap, err := os.ReadFile("testdata/v5-totals-" + mode + ".snapshot")
			require.NoError(t, err)
			cfg := defaults()
			cfg.Legacy, cfg.MaxKeys = mode == "legacy", 64
			at := 10 * time.Second
			step := func(e *Engine, obj string, count, want int64) {
				t.Helper()
				at += time.Second
				ev := watchedV5(obj, count)
				ev.Time = t0.Add(at)
				before := e.Stats.Occurrences
				e.Observe(&ev, ev.Time.UnixNano())
				require.Equal(t, want, e.Stats.Occurrences-before, "%s at count %d", obj, count)
			}
			e := newTester(t, cfg).e
			require.NoError(t, e.Restore(snap))
			require.Equal(t, 4, e.oldTotals)
			step(e, "a", 8, 3)
			step(e, "a", 8, 0)
			step(e, "b", 4, 1)
			step(e, "c", 6, 2)
			step(e, "d", 3, 3) // new
			require.Equal(t, 1, e.oldTotals, "e is still under its old hash")

			again := newTester(t, cfg).e
			require.NoError(t, again.Restore(e.Snapshot()))
			require.Equal(t, 1, again.oldTotals)
			step(again, "e", 5, 3)
			step(again, "a", 9, 1)
			require.Zero(t, again.oldTotals)

			pushed := newTester(t, cfg).e
			require.NoError(t, pushed.Restore(snap))
			for i := range cfg.MaxKeys {
				step(pushed, "new-"+strconv.Itoa(i), 1, 1)
			}
			require.Zero(t, pushed.oldTotals, "every restored total was pushed out")
			unproven := pushed.Stats.Unproven
			at += time.Second
			ev := watchedV5("a", 7)
			ev.Time = t0.Add(at)
			before := pushed.Stats.Occurrences
			pushed.Observe(&ev, ev.Time.UnixNano())
			require.LessOrEqual(t, pushed.Stats.Occurrences-before, int64(1), "a forgotten object counts at most one")
			require.Equal(t, unproven+1, pushed.Stats.Unproven)
		})
	}
}
