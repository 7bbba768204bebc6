package eventseriesprocessor

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// walScript is the input of the write-ahead log tests: batches of one
// occurrence per record (no counts), pods a and b in every batch and c in
// every other one, a second apart, except one gap longer than finish_after
// (the series end and start again as new objects). at is each batch's
// time: its records' occurrence time and the processing clock it arrives at.
type walScript struct {
	batches []plog.Logs
	at      []time.Time
	records int64
}

func newWALScript(n, gapAt int) walScript {
	var s walScript
	at := t0
	for i := range n {
		if i == gapAt {
			at = at.Add(createDefaultConfig().Series.FinishAfter + time.Minute)
		}
		var evs []k8sevent.Event
		for j, pod := range []string{"a", "b", "c"} {
			if j == 2 && i%2 == 1 {
				continue
			}
			ev := podEvent(pod, "BackOff", "Back-off restarting failed container")
			ev.Time = at
			evs = append(evs, ev)
		}
		s.batches, s.at, s.records = append(s.batches, logsOf(evs...)), append(s.at, at), s.records+int64(len(evs))
		at = at.Add(time.Second)
	}
	return s
}

// feed sends batches from..to-1 to r, the clock set to each one's time.
func (s walScript) feed(t *testing.T, r *run, clock *clocktesting.FakeClock, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		clock.SetTime(s.at[i])
		ld := plog.NewLogs()
		s.batches[i].CopyTo(ld) // the processor moves its input; the script is fed again
		require.NoError(t, r.p.ConsumeLogs(context.Background(), ld), "batch %d", i)
		settle(t, r.p)
	}
}

// finalCounts is the last count written for each Event object.
func finalCounts(d delivered) map[string]int64 {
	last := map[string]int64{}
	for name, counts := range d.counts {
		last[name] = counts[len(counts)-1]
	}
	return last
}

// countsStated is the set of counts stated for each Event object.
func countsStated(d delivered) map[string]map[int64]bool {
	stated := map[string]map[int64]bool{}
	for name, counts := range d.counts {
		stated[name] = map[int64]bool{}
		for _, c := range counts {
			stated[name][c] = true
		}
	}
	return stated
}

func records(sinks ...*faultSink) (n int) {
	for _, s := range sinks {
		n += s.LogRecordCount()
	}
	return n
}

// TestCrashReplaysTheLog: a collector killed after any batch (no
// shutdown: no flush, no final save) loses nothing: the next one, on the
// same storage, restores the last save and counts the batches logged after
// it again, each at the clock it arrived at, and the Event objects end
// with exactly the counts of a run without the crash (the same objects,
// the same final counts: in processing time too, where a replay at the
// restart's clock would not end the series the gap ended). The records
// again repeat ones emitted before (a sink may see a count once more after
// a higher one; the API exporter never lowers a count), at most those the
// killed collector emitted after its last save. With max_bytes below one batch, every batch saves the state first:
// the log never holds more than one entry.
func TestCrashReplaysTheLog(t *testing.T) {
	const n, gapAt, saveAfter = 12, 6, 4
	script := newWALScript(n, gapAt)
	for _, timeSource := range []string{timeProcessing, timeEvent} {
		for _, maxBytes := range []int64{64 << 20, 1} {
			setup := func(cfg *Config) {
				cfg.TimeSource, cfg.WriteAheadLog.MaxBytes = timeSource, maxBytes
			}
			clock := clocktesting.NewFakeClock(t0)
			h, stop := fileStorage(t, t.TempDir())
			ref := startRunAt(t, h, setup, clock.Now)
			script.feed(t, ref, clock, 0, n)
			require.NoError(t, ref.p.Shutdown(context.Background()))
			stop()
			want := finalCounts(collect(t, ref.sink))
			require.Equal(t, script.records, sum(want), "the run without a crash is exact")

			for _, crashAt := range []int{3, saveAfter, 5, gapAt + 1, n} {
				t.Run(fmt.Sprintf("%s/max_bytes=%d/crash after %d", timeSource, maxBytes, crashAt), func(t *testing.T) {
					dir := t.TempDir()
					clock := clocktesting.NewFakeClock(t0)
					h, stop := fileStorage(t, dir)
					first := newRunAt(t, setup, clock.Now)
					first.p.saveEvery = time.Hour // the test saves
					require.NoError(t, first.p.Start(context.Background(), h))
					saved := 0 // records emitted before the save
					script.feed(t, first, clock, 0, min(saveAfter, crashAt))
					if crashAt >= saveAfter {
						require.NoError(t, first.p.save(context.Background()))
						saved = records(first.sink)
					}
					script.feed(t, first, clock, min(saveAfter, crashAt), crashAt)
					first.p.mu.Lock()
					entries := first.p.wal.next - first.p.wal.from
					first.p.mu.Unlock()
					crash(t, first.p)
					stop()

					h, stop = fileStorage(t, dir)
					defer stop()
					second := startRunAt(t, h, setup, clock.Now)
					script.feed(t, second, clock, crashAt, n)
					require.NoError(t, second.p.Shutdown(context.Background()))

					got := collect(t, first.sink, second.sink)
					assert.Equal(t, want, finalCounts(got), "the objects and final counts of the run without a crash")
					assert.Equal(t, countsStated(collect(t, ref.sink)), countsStated(got),
						"the records again repeat what was emitted: no count the run without a crash did not state")
					for name, counts := range got.counts {
						assert.Equal(t, slices.Max(counts), counts[len(counts)-1], "%s ends with its highest count: %v", name, counts)
					}
					again := records(first.sink, second.sink) - records(ref.sink)
					assert.GreaterOrEqual(t, again, 0)
					assert.LessOrEqual(t, again, records(first.sink)-saved, "records again: at most those emitted after the last save")
					if maxBytes == 1 {
						assert.LessOrEqual(t, entries, uint64(1), "the log holds at most one batch")
					} else {
						wantEntries := crashAt
						if crashAt >= saveAfter {
							wantEntries -= saveAfter
						}
						assert.Equal(t, uint64(wantEntries), entries, "the log holds the batches after the save")
					}
				})
			}
		}
	}
}
