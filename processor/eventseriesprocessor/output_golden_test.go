package eventseriesprocessor

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/k8sevents/otel-k8sevents/internal/harness/fuzzbytes"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// updateOutputGolden rewrites testdata/output_golden.txt from the code under
// test. It was written by main at 8d66867, before the output kept input
// ResourceLogs in place and before identity slots: regenerate it only for
// a change that means to change what the processor writes.
var updateOutputGolden = flag.Bool("update-output-golden", false, "rewrite testdata/output_golden.txt")

const outputGoldenFile = "testdata/output_golden.txt"

// goldenCases is how many random cases TestOutputIsAsBefore runs.
const goldenCases = 300

// TestOutputIsAsBefore: random batches (the fuzz generator's ResourceLogs,
// of one or several scopes and records, invalid and non-Event records among
// them, interleaved with contrib-shaped ResourceLogs of one record each,
// up to ~30 per batch; random configurations in series and legacy mode,
// event time, so timer records fall between input records) go through the
// processor; every Logs it delivers, resource, scope and record
// attributes in order, as JSON, must be byte for byte what the processor
// delivered before (digests in testdata/output_golden.txt).
func TestOutputIsAsBefore(t *testing.T) {
	var got []string
	for seed := range goldenCases {
		got = append(got, fmt.Sprintf("%d %s", seed, goldenDigest(t, uint64(seed))))
	}
	if *updateOutputGolden {
		require.NoError(t, os.WriteFile(outputGoldenFile, []byte(strings.Join(got, "\n")+"\n"), 0o600))
		return
	}
	f, err := os.Open(filepath.Clean(outputGoldenFile))
	require.NoError(t, err)
	defer f.Close()
	var want []string
	for s := bufio.NewScanner(f); s.Scan(); {
		want = append(want, s.Text())
	}
	require.Len(t, want, goldenCases)
	for i := range want {
		require.Equal(t, want[i], got[i], "case %d delivers other records than before (seed, digest)", i)
	}
}

// goldenDigest runs the case of seed and digests what was delivered.
func goldenDigest(t *testing.T, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 0x14))
	data := make([]byte, 600)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	c := newFuzzCase(data[:6]) // the configuration only
	c.processing = false
	g := &fuzzGen{r: &fuzzReader{fuzzbytes.New(data[6:])}, cursor: t0, counts: map[string]int64{}}
	var batches []plog.Logs
	for range 1 + rng.IntN(4) {
		ld := plog.NewLogs()
		for range 1 + rng.IntN(12) {
			if rng.IntN(3) == 0 {
				g.batch().ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
				continue
			}
			goldenContrib(rng, g).ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
		}
		batches = append(batches, ld)
	}
	h := newHarnessWith(t, func(cfg *Config) {
		c.mutate(cfg)
		cfg.TimeSource = timeEvent
		cfg.MaxKeys = max(cfg.MaxKeys, 2)                                                            // max_keys 1 hung the engine before 433763e
		cfg.Series.HeartbeatInterval = max(cfg.Series.HeartbeatInterval, cfg.Series.FinishAfter/100) // Validate's floor
		if rng.IntN(2) == 0 {
			cfg.NonEventRecords = recordsPass
		}
	}, fuzzNow, &faultSink{})
	for _, ld := range batches {
		h.consume(ld)
	}
	h.shutdown()
	sum := sha256.New()
	for _, ld := range h.sink.AllLogs() {
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		require.NoError(t, err)
		_, _ = fmt.Fprintf(sum, "%d\n", len(b))
		_, _ = sum.Write(b)
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// goldenContrib is a ResourceLogs of one record as contrib's receiver
// sends it, of one of a few pods and reasons, its time g's cursor moved
// on by up to 90 s (or back a little).
func goldenContrib(rng *rand.Rand, g *fuzzGen) plog.Logs {
	ev := podEvent(fmt.Sprintf("pod-%d", rng.IntN(6)), fuzzReasons[rng.IntN(len(fuzzReasons))], "note")
	ev.Regarding.FieldPath = []string{"", "spec.containers{app}"}[rng.IntN(2)]
	ev.Name, ev.UID = fmt.Sprintf("%s.%x", ev.Regarding.Name, rng.IntN(4)), fmt.Sprintf("ev-%d", rng.IntN(8))
	if rng.IntN(2) == 0 {
		ev.Count = int64(1 + rng.IntN(5))
	}
	g.cursor = g.cursor.Add(time.Duration(rng.IntN(100)-10) * time.Second)
	ev.FirstTimestamp, ev.Time = g.cursor.Add(-time.Minute), g.cursor
	ld := contribRecord(ev)
	lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	if rng.IntN(2) == 0 {
		lr.Attributes().PutStr(k8sevent.AttrReportingController, ev.ReportingController)
	}
	lr.Attributes().PutInt(fuzzSeqKey, g.seq)
	g.seq++
	return ld
}
