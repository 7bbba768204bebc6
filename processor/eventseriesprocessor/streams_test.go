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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/harness/recordermodel"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
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

// streamReplay is one stream file read and replayed once: the replay is
// deterministic, and TestStreamsGolden and TestWriteCountReport read the
// same one.
type streamReplay struct {
	once sync.Once
	occs []storm.Occurrence
	out  []written
	err  error
}

var streamReplays sync.Map // path → *streamReplay

// replayFile reads the stream at path and replays it, once per test run.
func replayFile(t testing.TB, path string) ([]storm.Occurrence, []written) {
	t.Helper()
	v, _ := streamReplays.LoadOrStore(path, &streamReplay{})
	r := v.(*streamReplay)
	r.once.Do(func() {
		if r.occs, r.err = storm.ReadFile(path); r.err == nil {
			r.out = replay(t, r.occs)
		}
	})
	require.NoError(t, r.err)
	return r.occs, r.out
}

// replay runs a stream through the processor in series mode and event time,
// 100 records a batch, and shuts it down.
func replay(t testing.TB, occs []storm.Occurrence) []written {
	h := newHarness(t, eventTime)
	h.feedStorm(occs)
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
	t.Parallel()
	for name, path := range streamFiles(t) {
		t.Run(name, func(t *testing.T) {
			_, out := replayFile(t, path)
			var got bytes.Buffer
			enc := json.NewEncoder(&got)
			for _, w := range out {
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

// TestWriteCountReport compares, per stream, the API writes the processor's
// records make in series mode with the writes client-go's legacy and series
// recorders make on the same stream, and the final counts each leaves.
// Goal: no more writes than the better recorder, every pair visible, exact counts.
func TestWriteCountReport(t *testing.T) {
	t.Parallel()
	names := make([]string, 0)
	files := streamFiles(t)
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var report strings.Builder
	fmt.Fprintf(&report, "| stream | occurrences | pairs | eventseries writes | client-go legacy writes | client-go series writes | count error (ours / legacy / series) | invisible pairs (ours / legacy / series) |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		occs, out := replayFile(t, files[name])
		truth := recordermodel.Truth(occs)
		ours := recordermodel.NewTally()
		for _, w := range out {
			if last, ok := ours.Last[w.Name]; ok && w.Count <= last {
				continue // the k8sevents exporter sends nothing for a count already written
			}
			ours.Write(w.Name, recordermodel.Pair{Object: w.Object, Reason: w.Reason}, w.Count)
		}
		legacy, series := recordermodel.Legacy(occs), recordermodel.Series(occs)
		oErr, oInv := recordermodel.CountError(truth, ours.Counts())
		lErr, lInv := recordermodel.CountError(truth, legacy.Counts())
		sErr, sInv := recordermodel.CountError(truth, series.Counts())
		fmt.Fprintf(&report, "| %s | %d | %d | %d | %d | %d | %d / %d / %d | %d / %d / %d |\n", name, len(occs), len(truth),
			ours.Writes, legacy.Writes, series.Writes, oErr, lErr, sErr, oInv, lInv, sInv)

		assert.LessOrEqual(t, ours.Writes, min(legacy.Writes, series.Writes), "%s: writes", name)
		assert.Zero(t, oInv, "%s: every (object, reason) visible", name)
		assert.Zero(t, oErr, "%s: exact final counts", name)
	}
	t.Log("\n" + report.String())
}

// feedStorm sends the occurrences in batches of batchSize records, one
// ResourceLogs each, in stream order.
func (h *harness) feedStorm(occs []storm.Occurrence) {
	for start := 0; start < len(occs); start += batchSize {
		ld := plog.NewLogs()
		for i := start; i < min(start+batchSize, len(occs)); i++ {
			ev := occs[i].Event()
			k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		}
		h.consume(ld)
	}
}
