package eventseriesprocessor

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/internal/storm"
)

var update = flag.Bool("update", false, "rewrite the golden outputs of testdata/streams")

const streamsDir = "../../testdata/streams"

func streamFiles(t testing.TB) map[string]string {
	paths, err := filepath.Glob(filepath.Join(streamsDir, "*.jsonl*"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range paths {
		out[strings.SplitN(filepath.Base(p), ".", 2)[0]] = p
	}
	require.NotEmpty(t, out)
	return out
}

// written is one record the processor emitted, as the golden files list it.
type written struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Count  int64  `json:"count"`
	Object string `json:"object"`
	Reason string `json:"reason"`
	Last   string `json:"last"`
}

// replay runs a stream through the processor in series mode and event time,
// 100 records a batch, and shuts it down.
func replay(t testing.TB, occs []storm.Occurrence) []written {
	h := newHarness(t, eventTime)
	for start := 0; start < len(occs); start += batchSize {
		ld := plog.NewLogs()
		for i := start; i < min(start+batchSize, len(occs)); i++ {
			ev := occs[i].Event()
			k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		}
		h.consume(ld)
	}
	h.shutdown()
	var out []written
	for _, r := range h.records() {
		ev := r.event(t)
		count := ev.SeriesCount
		if ev.SeriesState == k8sevent.StateSingleton {
			count = 1
		}
		out = append(out, written{Name: ev.Name, State: ev.SeriesState, Count: count,
			Object: ev.Regarding.Kind + "/" + ev.Regarding.Name, Reason: ev.Reason,
			Last: ev.Time.UTC().Format(time.RFC3339Nano)})
	}
	return out
}

// TestStreamsGolden replays every recorded storm and compares the records
// with the golden output (go test -run TestStreamsGolden -update rewrites it).
func TestStreamsGolden(t *testing.T) {
	for name, path := range streamFiles(t) {
		t.Run(name, func(t *testing.T) {
			occs, err := storm.ReadFile(path)
			require.NoError(t, err)
			var got bytes.Buffer
			enc := json.NewEncoder(&got)
			for _, w := range replay(t, occs) {
				require.NoError(t, enc.Encode(w))
			}
			golden := filepath.Join(streamsDir, "golden", name+".series.jsonl.gz")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				var gz bytes.Buffer
				zw := gzip.NewWriter(&gz)
				_, _ = zw.Write(got.Bytes())
				require.NoError(t, zw.Close())
				require.NoError(t, os.WriteFile(golden, gz.Bytes(), 0o644))
			}
			f, err := os.Open(golden)
			require.NoError(t, err, "run the test with -update to create it")
			defer f.Close()
			zr, err := gzip.NewReader(f)
			require.NoError(t, err)
			want, err := io.ReadAll(zr)
			require.NoError(t, err)
			require.Equal(t, string(want), got.String())
		})
	}
}

// pair is what a person looks for in kubectl get events: an object and a reason.
type pair struct{ object, reason string }

// tally is what a recorder wrote for a stream: its API writes, and the last
// count it wrote for each object, by pair.
type tally struct {
	writes int
	last   map[string]int64 // object name -> last count written
	pairOf map[string]pair
}

func newTally() *tally { return &tally{last: map[string]int64{}, pairOf: map[string]pair{}} }

func (t *tally) write(name string, p pair, count int64) {
	t.writes++
	t.last[name] = count
	t.pairOf[name] = p
}

// counts sums, per pair, the final counts of the objects written for it.
func (t *tally) counts() map[pair]int64 {
	out := map[pair]int64{}
	for name, c := range t.last {
		out[t.pairOf[name]] += c
	}
	return out
}

func pairOfOcc(o *storm.Occurrence) pair {
	return pair{o.Regarding.Kind + "/" + o.Regarding.Name, o.Reason}
}

// legacyRecorder runs client-go's EventCorrelator (tools/record) over the
// stream with a fake clock: every result it does not skip is a create or a patch.
func legacyRecorder(occs []storm.Occurrence) *tally {
	clock := clocktesting.NewFakeClock(storm.Start)
	correlator := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clock})
	out := newTally()
	for i := range occs {
		clock.SetTime(occs[i].Time)
		ev := occs[i].Event()
		ev.Name = fmt.Sprintf("%s.%x", ev.Regarding.Name, occs[i].Time.UnixNano()+int64(i))
		ev.Count, ev.FirstTimestamp, ev.LastTimestamp = 1, occs[i].Time, occs[i].Time
		res, _ := correlator.EventCorrelate(ev.ToCoreV1())
		if !res.Skip {
			out.write(res.Event.Name, pairOfOcc(&occs[i]), int64(res.Event.Count))
		}
	}
	return out
}

// seriesRecorder models client-go's tools/events broadcaster
// (event_broadcaster.go, v0.36) on the stream: create at the first
// occurrence of an isomorphic key, a patch with series count 2 at the
// second, nothing after (these three are what
// TestSeriesModeAgreesWithEventsBroadcaster checks against the real one);
// every 30 minutes a refresh patches every open series, every 6 minutes a
// sweep patches and forgets series idle for 6 minutes and forgets
// singletons older than 6 minutes; both sweeps run first when recording
// starts. Its clock is wall time, so it cannot replay a stream itself.
func seriesRecorder(occs []storm.Occurrence) *tally {
	type entry struct {
		name            string
		p               pair
		count           int64
		first, lastSeen time.Time
		series          bool
	}
	cache := map[string]*entry{}
	out := newTally()
	refreshAt, finishAt := storm.Start, storm.Start
	sweep := func(until time.Time) {
		for !finishAt.After(until) || !refreshAt.After(until) {
			if !refreshAt.After(finishAt) {
				for _, e := range cache {
					if e.series {
						out.write(e.name, e.p, e.count)
					}
				}
				refreshAt = refreshAt.Add(30 * time.Minute)
				continue
			}
			for k, e := range cache {
				switch {
				case e.series && e.lastSeen.Before(finishAt.Add(-6*time.Minute)):
					out.write(e.name, e.p, e.count)
					delete(cache, k)
				case !e.series && e.first.Before(finishAt.Add(-6*time.Minute)):
					delete(cache, k)
				}
			}
			finishAt = finishAt.Add(6 * time.Minute)
		}
	}
	for i := range occs {
		o := &occs[i]
		sweep(o.Time)
		rel := ""
		if o.Related != nil {
			rel = fmt.Sprint(*o.Related)
		}
		key := fmt.Sprint(o.Type, "\x00", o.Action, "\x00", o.Reason, "\x00", o.Controller, "\x00", o.Instance, "\x00", o.Regarding, "\x00", rel)
		e, ok := cache[key]
		switch {
		case !ok:
			e = &entry{name: fmt.Sprintf("%s.%x", o.Regarding.Name, o.Time.UnixNano()+int64(i)), p: pairOfOcc(o), count: 1, first: o.Time, lastSeen: o.Time}
			cache[key] = e
			out.write(e.name, e.p, 1)
		case !e.series:
			e.series, e.count, e.lastSeen = true, 2, o.Time
			out.write(e.name, e.p, 2)
		default:
			e.count++
			e.lastSeen = o.Time
		}
	}
	// Recording goes on after the storm: let every series finish.
	for len(cache) > 0 {
		sweep(finishAt)
	}
	return out
}

// countError is the total, over pairs, of how far the final counts written
// are from the true number of occurrences; and the pairs nothing was written for.
func countError(truth, written map[pair]int64) (abs int64, invisible int) {
	for p, n := range truth {
		w, ok := written[p]
		if !ok {
			invisible++
		}
		abs += max(n-w, w-n)
	}
	return abs, invisible
}

// TestWriteCountReport compares, per stream, the API writes the processor's
// records make in series mode with the writes client-go's legacy and series
// recorders make on the same stream, and the final counts each leaves.
// Goal: no more writes than the better recorder, every pair visible, exact counts.
func TestWriteCountReport(t *testing.T) {
	names := make([]string, 0)
	files := streamFiles(t)
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var report strings.Builder
	fmt.Fprintf(&report, "| stream | occurrences | pairs | eventseries writes | client-go legacy writes | client-go series writes | count error (ours / legacy / series) | invisible pairs (ours / legacy / series) |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		occs, err := storm.ReadFile(files[name])
		require.NoError(t, err)
		truth := map[pair]int64{}
		for i := range occs {
			truth[pairOfOcc(&occs[i])]++
		}
		ours := newTally()
		for _, w := range replay(t, occs) {
			ours.write(w.Name, pair{w.Object, w.Reason}, w.Count)
		}
		legacy, series := legacyRecorder(occs), seriesRecorder(occs)
		oErr, oInv := countError(truth, ours.counts())
		lErr, lInv := countError(truth, legacy.counts())
		sErr, sInv := countError(truth, series.counts())
		fmt.Fprintf(&report, "| %s | %d | %d | %d | %d | %d | %d / %d / %d | %d / %d / %d |\n", name, len(occs), len(truth),
			ours.writes, legacy.writes, series.writes, oErr, lErr, sErr, oInv, lInv, sInv)

		assert.LessOrEqual(t, ours.writes, min(legacy.writes, series.writes), "%s: writes", name)
		assert.Zero(t, oInv, "%s: every (object, reason) visible", name)
		assert.Zero(t, oErr, "%s: exact final counts", name)
	}
	t.Log("\n" + report.String())
}
