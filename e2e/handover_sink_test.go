package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// The hand-over tests send the processor's output to a file exporter too:
// what a log sink (debug, file, Loki) sees, where a record emitted twice is
// a line twice, unlike the API server where a repeated patch changes
// nothing. sinkTally reads every file a test's collectors wrote and counts,
// per series (k8s.event.name, the Event object the record writes), the
// records that carry a count no higher than one already emitted for that
// series (reemitted: they state occurrences a sink already has), and per
// (object, reason) the sum over its series of the highest count (what the
// sink's last lines say happened).

// sinkFile is the file exporter's path for one collector run.
func sinkFile(dir string, run int) string {
	return filepath.Join(dir, fmt.Sprintf("sink-%d.jsonl", run))
}

// sinkOverlay adds a file exporter writing to path to the logs pipeline,
// next to the exporters named.
func sinkOverlay(path string, exporters ...string) string {
	list := ""
	for _, e := range exporters {
		list += e + ", "
	}
	return fmt.Sprintf("exporters:\n  file/sink: {path: %q}\nservice:\n  pipelines:\n    logs:\n      exporters: [%sfile/sink]\n", path, list)
}

// sinkResult is what the file exporters of a test received.
type sinkResult struct {
	records   int
	reemitted int                 // records whose count did not advance their series
	pairs     map[eventPair]int64 // per (object, reason): sum of the highest count of each series
	series    int
	files     []string            // read, in order
	trail     map[string][]string // per series: each record's file (index in files) and count, in order
	pairOf    map[string]eventPair
}

// readSink tallies the files in the order given (the runs' order).
func readSink(t *testing.T, files ...string) sinkResult {
	t.Helper()
	r := sinkResult{pairs: map[eventPair]int64{}, files: files, trail: map[string][]string{}, pairOf: map[string]eventPair{}}
	high := map[string]int64{} // series name -> highest count emitted so far
	for i, f := range files {
		fh, err := os.Open(f)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		var un plog.JSONUnmarshaler
		for sc.Scan() {
			ld, err := un.UnmarshalLogs(sc.Bytes())
			if err != nil { // a line cut by a SIGKILL: not a record the sink has
				t.Logf("%s: a line that is not OTLP JSON (%d bytes): %v", filepath.Base(f), len(sc.Bytes()), err)
				continue
			}
			forEachRecord(ld, func(res, rec pcommon.Map) {
				name, count := sinkStr(res, rec, "k8s.event.name"), sinkCount(res, rec)
				r.records++
				r.trail[name] = append(r.trail[name], fmt.Sprintf("file %d: %d", i, count))
				if count <= high[name] {
					r.reemitted++
					return
				}
				high[name] = count
				r.pairOf[name] = eventPair{Kind: sinkStr(res, rec, "k8s.object.kind"), Namespace: sinkStr(res, rec, "k8s.namespace.name"),
					Name: sinkStr(res, rec, "k8s.object.name"), UID: sinkStr(res, rec, "k8s.object.uid"), Reason: sinkStr(res, rec, "k8s.event.reason")}
			})
		}
		require.NoError(t, sc.Err())
		require.NoError(t, fh.Close())
	}
	for name, n := range high {
		r.pairs[r.pairOf[name]] += n
	}
	r.series = len(high)
	return r
}

// recounted is the sink's occurrences beyond the source's, per pair summed
// (an occurrence counted by two series), and the pairs whose totals differ.
// Only the truth's namespaces count: the mirror also copies what the API
// server itself reports elsewhere (a ClusterIPNotAllocated in default, at
// a moment of its own), which the storm's truth does not hold.
func (r sinkResult) recounted(truth map[eventPair]int64) (extra, missing int64, diffs []string) {
	namespaces := map[string]bool{}
	for p := range truth {
		namespaces[p.Namespace] = true
	}
	for p, want := range truth {
		got := r.pairs[p]
		switch {
		case got > want:
			extra += got - want
		case got < want:
			missing += want - got
		}
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%v: source %d, sink %d", p, want, got))
		}
	}
	for p, got := range r.pairs {
		if _, ok := truth[p]; !ok && namespaces[p.Namespace] {
			extra += got
			diffs = append(diffs, fmt.Sprintf("%v: not in the source, sink %d", p, got))
		}
	}
	sort.Strings(diffs)
	return extra, missing, diffs
}

func forEachRecord(ld plog.Logs, f func(res, rec pcommon.Map)) {
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		rl := ld.ResourceLogs().At(i)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			recs := rl.ScopeLogs().At(j).LogRecords()
			for k := 0; k < recs.Len(); k++ {
				f(rl.Resource().Attributes(), recs.At(k).Attributes())
			}
		}
	}
}

// sinkStr reads a contract key from the record, then the resource.
func sinkStr(res, rec pcommon.Map, key string) string {
	if v, ok := rec.Get(key); ok {
		return v.AsString()
	}
	if v, ok := res.Get(key); ok {
		return v.AsString()
	}
	return ""
}

// sinkCount is the occurrences a processor record states: the series count,
// else the legacy count, else 1 (a singleton).
func sinkCount(res, rec pcommon.Map) int64 {
	for _, key := range []string{"k8s.event.series.count", "k8s.event.count"} {
		for _, m := range []pcommon.Map{rec, res} {
			if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeInt {
				return v.Int()
			}
		}
	}
	return 1
}
