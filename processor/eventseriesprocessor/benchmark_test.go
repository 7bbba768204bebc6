package eventseriesprocessor

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

const batchSize = 100

// benchBatch is a 100-record batch shaped like the contrib k8s_events
// receiver's output (one ResourceLogs per record), with the count attribute
// of each record at hand so every round can bump it, as a watch stream of
// a patched Event does.
type benchBatch struct {
	ld     plog.Logs
	counts []pcommon.Value
	times  []plog.LogRecord
	events []corev1.Event // the same occurrences for client-go
}

// newBenchBatch makes records for keyOf(i), i over the batch; keys with the
// same index are the same Event object.
func newBenchBatch(keyOf func(i int) int) *benchBatch {
	b := &benchBatch{ld: plog.NewLogs()}
	for i := range batchSize {
		k := keyOf(i)
		ev := podEvent(fmt.Sprintf("pod-%d", k), "BackOff", "Back-off restarting failed container app in pod")
		ev.Regarding.FieldPath = "spec.containers{app}"
		ev.Name, ev.UID, ev.Count = fmt.Sprintf("pod-%d.17f0a2b3c4d5e6f7", k), fmt.Sprintf("event-uid-%d", k), 1
		ev.FirstTimestamp, ev.Time = t0, t0
		contribRecord(ev).ResourceLogs().MoveAndAppendTo(b.ld.ResourceLogs())
		lr := b.ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords().At(0)
		v, _ := lr.Attributes().Get(k8sevent.AttrCount)
		b.counts = append(b.counts, v)
		b.times = append(b.times, lr)
		b.events = append(b.events, *ev.ToCoreV1())
	}
	return b
}

// round advances every record by one occurrence one second later.
func (b *benchBatch) round(n int) {
	at := pcommon.NewTimestampFromTime(t0.Add(time.Duration(n) * time.Second))
	for i := range b.counts {
		b.counts[i].SetInt(b.counts[i].Int() + 1)
		b.times[i].SetTimestamp(at)
	}
}

var benchStreams = []struct {
	name  string
	keyOf func(round, i int) int
}{
	// 4 crashlooping pods, every record a repeat.
	{"duplicate-heavy", func(_, i int) int { return i % 4 }},
	// 1,000 objects, 100 of them per batch in turn.
	{"1000-key-mix", func(round, i int) int { return (round*batchSize + i) % 1000 }},
}

// BenchmarkConsumeLogs measures the factory-built processor on 100-record
// batches, next to client-go's EventCorrelator on the same occurrences.
// Read ns/record and allocs/record.
func BenchmarkConsumeLogs(b *testing.B) {
	for _, s := range benchStreams {
		for _, mode := range []string{modeSeries, modeLegacy} {
			b.Run(s.name+"/eventseries-"+mode, func(b *testing.B) {
				cfg := createDefaultConfig()
				cfg.Mode = mode
				p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(NewFactory().Type()), cfg, consumertest.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				batches := rotatingBatches(s.keyOf)
				b.ReportAllocs()
				b.ResetTimer()
				for n := range b.N {
					batch := batches[n%len(batches)]
					if n%len(batches) == 0 {
						// pdata's SetInt allocates, and pausing the timer costs a
						// stop-the-world: prepare the next len(batches) rounds at once.
						b.StopTimer()
						for j, next := range batches {
							next.round(n + j)
						}
						b.StartTimer()
					}
					if err := p.ConsumeLogs(context.Background(), batch.ld); err != nil {
						b.Fatal(err)
					}
				}
				perRecord(b)
				_ = p.Shutdown(context.Background())
			})
		}
		b.Run(s.name+"/client-go-EventCorrelator", func(b *testing.B) {
			clock := clocktesting.NewFakeClock(t0)
			correlator := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clock})
			batches := rotatingBatches(s.keyOf)
			b.ReportAllocs()
			b.ResetTimer()
			for n := range b.N {
				clock.SetTime(t0.Add(time.Duration(n) * time.Second))
				for i := range batches[n%len(batches)].events {
					if _, err := correlator.EventCorrelate(&batches[n%len(batches)].events[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			perRecord(b)
		})
	}
}

// rotatingBatches prepares the distinct batches a stream cycles through.
func rotatingBatches(keyOf func(round, i int) int) []*benchBatch {
	var out []*benchBatch
	for round := range 10 {
		out = append(out, newBenchBatch(func(i int) int { return keyOf(round, i) }))
	}
	return out
}

// BenchmarkChurn is all-unique churn: every record a new object, far more
// objects than max_keys, so every record creates a state and evicts one.
func BenchmarkChurn(b *testing.B) {
	for _, mode := range []string{modeSeries, modeLegacy} {
		b.Run("eventseries-"+mode, func(b *testing.B) {
			cfg := createDefaultConfig()
			cfg.Mode = mode
			p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(NewFactory().Type()), cfg, consumertest.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			batch := newBenchBatch(func(i int) int { return i })
			b.ReportAllocs()
			b.ResetTimer()
			for n := range b.N {
				for i, lr := range batch.times {
					lr.Attributes().PutStr(k8sevent.AttrEventUID, fmt.Sprintf("u-%d-%d", n, i))
					lr.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(n) * time.Second)))
				}
				if err := p.ConsumeLogs(context.Background(), batch.ld); err != nil {
					b.Fatal(err)
				}
			}
			perRecord(b)
			_ = p.Shutdown(context.Background())
		})
	}
	b.Run("client-go-EventCorrelator", func(b *testing.B) {
		clock := clocktesting.NewFakeClock(t0)
		correlator := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clock})
		batch := newBenchBatch(func(i int) int { return i })
		b.ReportAllocs()
		b.ResetTimer()
		for n := range b.N {
			for i := range batch.events {
				ev := batch.events[i]
				ev.InvolvedObject.Name = fmt.Sprintf("pod-%d-%d", n, i)
				if _, err := correlator.EventCorrelate(&ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		perRecord(b)
	})
}

func perRecord(b *testing.B) {
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSize), "ns/record")
}

// BenchmarkRetainedHeapPerSeries opens 20,000 series (two occurrences each)
// in a processor with room for all of them and reports the live heap they
// hold, per series.
func BenchmarkRetainedHeapPerSeries(b *testing.B) {
	const series = 20_000
	for range b.N {
		cfg := createDefaultConfig()
		cfg.MaxKeys = series
		cfg.TimeSource = timeEvent
		cfg.SpamFilter.Enabled = false
		p, err := newProcessor(processortest.NewNopSettings(NewFactory().Type()), cfg, consumertest.NewNop(), time.Now)
		if err != nil {
			b.Fatal(err)
		}
		before := liveHeap()
		for round := range 2 {
			for start := 0; start < series; start += batchSize {
				bb := newBenchBatch(func(i int) int { return start + i })
				bb.round(round)
				if err := p.ConsumeLogs(context.Background(), bb.ld); err != nil {
					b.Fatal(err)
				}
			}
		}
		after := liveHeap()
		if p.engine.Len() != series {
			b.Fatalf("%d open series, want %d", p.engine.Len(), series)
		}
		b.ReportMetric(float64(after-before)/series, "B/series")
		runtime.KeepAlive(p)
	}
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
