package eventseriesprocessor

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/processor/eventseriesprocessor/internal/engine"
)

const batchSize = 100

// recordShape is how the records of one Event's occurrences look.
type recordShape struct {
	name string
	// sharedUID: one Event object per pod, its cumulative count growing (a
	// watched core/v1 Event being patched). Otherwise every occurrence is an
	// Event object of its own, with its own k8s.event.name and
	// k8s.event.uid and no count, and the reporting controller and
	// instance events.k8s.io/v1 requires (a raw storm, an app sending OTLP,
	// the receiver watching events.k8s.io/v1).
	sharedUID bool
}

var benchShapes = []recordShape{
	{name: "shared-uid", sharedUID: true},
	{name: "uid-per-occurrence"},
}

// benchBatch is a 100-record batch shaped like the k8s_events receivers'
// output (one ResourceLogs per record), with the attributes a round
// changes at hand.
type benchBatch struct {
	shape   recordShape
	ld      plog.Logs // the template a round changes
	in      plog.Logs // a copy of it, for one ConsumeLogs (the processor moves input records)
	keys    []int
	counts  []pcommon.Value // shared uid: the cumulative count
	names   []pcommon.Value // k8s.event.name
	uids    []pcommon.Value // k8s.event.uid
	objects []pcommon.Value // the regarding pod's name, on the resource
	times   []plog.LogRecord
	events  []corev1.Event   // the same occurrences for client-go
	decoded []k8sevent.Event // and for the engine alone, decoded as the processor decodes them
}

// newBenchBatch makes records for keyOf(i), i over the batch; keys with the
// same index are the same pod (and, shared uid, the same Event object).
func newBenchBatch(shape recordShape, keyOf func(i int) int) *benchBatch {
	b := &benchBatch{shape: shape, ld: plog.NewLogs()}
	for i := range batchSize {
		k := keyOf(i)
		ev := podEvent(fmt.Sprintf("pod-%d", k), "BackOff", "Back-off restarting failed container app in pod")
		ev.Regarding.FieldPath = "spec.containers{app}"
		ev.Name, ev.UID = fmt.Sprintf("pod-%d.17f0a2b3c4d5e6f7", k), fmt.Sprintf("event-uid-%d", k)
		if shape.sharedUID {
			ev.Count = 1
		}
		ev.FirstTimestamp, ev.Time = t0, t0
		contribRecord(ev).ResourceLogs().MoveAndAppendTo(b.ld.ResourceLogs())
		rl := b.ld.ResourceLogs().At(i)
		lr := rl.ScopeLogs().At(0).LogRecords().At(0)
		if !shape.sharedUID {
			lr.Attributes().PutStr(k8sevent.AttrReportingController, ev.ReportingController)
			lr.Attributes().PutStr(k8sevent.AttrReportingInstance, ev.ReportingInstance)
		}
		get := func(m pcommon.Map, key string) pcommon.Value { v, _ := m.Get(key); return v }
		b.keys = append(b.keys, k)
		b.counts = append(b.counts, get(lr.Attributes(), k8sevent.AttrCount))
		b.names = append(b.names, get(lr.Attributes(), k8sevent.AttrEventName))
		b.uids = append(b.uids, get(lr.Attributes(), k8sevent.AttrEventUID))
		b.objects = append(b.objects, get(rl.Resource().Attributes(), k8sevent.AttrObjectName))
		b.times = append(b.times, lr)
		core := *ev.ToCoreV1()
		core.Count = 1 // as client-go's recorder makes every occurrence
		b.events = append(b.events, core)
	}
	b.decoded = make([]k8sevent.Event, batchSize)
	return b
}

// round makes every record the next occurrence, one second later: shared
// uid, the count grows; else each is a new Event object. churn: each
// record is also of a new pod.
func (b *benchBatch) round(n int, churn bool) {
	at := t0.Add(time.Duration(n) * time.Second)
	for i, k := range b.keys {
		b.times[i].SetTimestamp(pcommon.NewTimestampFromTime(at))
		b.events[i].LastTimestamp.Time = at
		if churn {
			pod := fmt.Sprintf("pod-%d-%d", n, i)
			b.objects[i].SetStr(pod)
			b.events[i].InvolvedObject.Name = pod
		}
		switch {
		case b.shape.sharedUID && churn:
			b.uids[i].SetStr(fmt.Sprintf("event-uid-%d-%d", n, i))
		case b.shape.sharedUID:
			b.counts[i].SetInt(b.counts[i].Int() + 1)
		default:
			name := fmt.Sprintf("pod-%d.%x", k, t0.UnixNano()+int64(n*batchSize+i))
			uid := fmt.Sprintf("event-uid-%d-%d-%d", k, n, i)
			b.names[i].SetStr(name)
			b.uids[i].SetStr(uid)
			b.events[i].Name, b.events[i].UID = name, types.UID(uid)
		}
		rl := b.ld.ResourceLogs().At(i)
		b.decoded[i], _, _ = k8sevent.Decode(rl.Resource(), b.times[i], k8sevent.DecodeOptions{})
	}
}

// feed is how a benchmark hands the batches over.
type feed struct {
	churn bool // every record of a round is of a new pod (round)
	// collect: the harness's garbage is collected with the timer stopped
	// (nextRounds), on a stream where the processor allocates next to
	// nothing.
	collect bool
}

var benchStreams = []struct {
	name  string
	keyOf func(round, i int) int
	feed  feed
}{
	// 4 crashlooping pods, every record a repeat.
	{"duplicate-heavy", func(_, i int) int { return i % 4 }, feed{collect: true}},
	// 1,000 pods, 100 of them per batch in turn.
	{"1000-key-mix", func(round, i int) int { return (round*batchSize + i) % 1000 }, feed{}},
}

// BenchmarkConsumeLogs measures the factory-built processor (defaults,
// time_source: event) on 100-record batches of both record shapes, next to
// client-go's EventCorrelator on the same occurrences. Read ns/record;
// allocs/op is per batch of 100 records.
func BenchmarkConsumeLogs(b *testing.B) {
	for _, shape := range benchShapes {
		for _, s := range benchStreams {
			name := shape.name + "/" + s.name
			keyOf := func(round int) func(int) int { return func(i int) int { return s.keyOf(round, i) } }
			for _, mode := range []string{modeSeries, modeLegacy} {
				b.Run(name+"/eventseries-"+mode, func(b *testing.B) {
					benchProcessor(b, mode, rotatingBatches(shape, keyOf), s.feed)
				})
			}
			b.Run(name+"/client-go-EventCorrelator", func(b *testing.B) {
				benchCorrelator(b, rotatingBatches(shape, keyOf), s.feed)
			})
			b.Run(name+"/harness-only", func(b *testing.B) {
				benchProcessor(b, "", rotatingBatches(shape, keyOf), s.feed)
			})
		}
	}
}

// BenchmarkChurn is all-unique churn: every record a new pod and a new
// Event object, far more than max_keys, so every record creates a state
// and evicts one.
func BenchmarkChurn(b *testing.B) {
	churn := feed{churn: true} // the processor's own garbage: collected in its time
	for _, shape := range benchShapes {
		keyOf := func(int) func(int) int { return func(i int) int { return i } }
		for _, mode := range []string{modeSeries, modeLegacy} {
			b.Run(shape.name+"/eventseries-"+mode, func(b *testing.B) {
				benchProcessor(b, mode, rotatingBatches(shape, keyOf), churn)
			})
		}
		b.Run(shape.name+"/client-go-EventCorrelator", func(b *testing.B) {
			benchCorrelator(b, rotatingBatches(shape, keyOf), churn)
		})
		b.Run(shape.name+"/harness-only", func(b *testing.B) {
			benchProcessor(b, "", rotatingBatches(shape, keyOf), churn)
		})
	}
}

// benchProcessor measures the processor in mode on batches. Mode "" is
// the harness alone: the same batches made and handed over, to a consumer
// that drops them (what the harness itself costs, the collection of the
// input batches included, is part of every processor's number: subtract
// it to see the processor's own).
func benchProcessor(b *testing.B, mode string, batches []*benchBatch, f feed) {
	if mode == "" {
		benchConsumer(b, consumertest.NewNop(), batches, f)
		return
	}
	cfg := createDefaultConfig()
	cfg.Mode = mode
	cfg.TimeSource = timeEvent
	p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(NewFactory().Type()), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	benchConsumer(b, p, batches, f)
	_ = p.Shutdown(context.Background())
}

// startTimers starts the benchmark timer and cpu's counts, from zero.
func startTimers(b *testing.B) {
	b.ReportAllocs()
	b.StopTimer()
	cpu = cpuClock{}
	cpu.startAllocs()
	b.ResetTimer()
	b.StartTimer()
	cpu.start()
}

// benchConsumer hands c the batches in turn, a fresh copy of each.
func benchConsumer(b *testing.B, c consumer.Logs, batches []*benchBatch, f feed) {
	startTimers(b)
	for n := range b.N {
		nextRounds(b, batches, n, f)
		if err := c.ConsumeLogs(context.Background(), batches[n%len(batches)].in); err != nil {
			b.Fatal(err)
		}
	}
	perRecord(b)
}

func benchCorrelator(b *testing.B, batches []*benchBatch, f feed) {
	clock := clocktesting.NewFakeClock(t0)
	correlator := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clock})
	startTimers(b)
	for n := range b.N {
		nextRounds(b, batches, n, f)
		clock.SetTime(t0.Add(time.Duration(n) * time.Second))
		events := batches[n%len(batches)].events
		for i := range events {
			ev := events[i] // the correlator may change what it is given
			if _, err := correlator.EventCorrelate(&ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	perRecord(b)
}

// benchEngine measures the processor's engine alone, with the default
// configuration and time_source: event, on the batches' records decoded
// outside the timer: the decisions without pdata's reading and writing.
func benchEngine(b *testing.B, batches []*benchBatch, f feed) {
	cfg := createDefaultConfig()
	cfg.TimeSource = timeEvent
	e, err := engine.New(cfg.engineConfig())
	if err != nil {
		b.Fatal(err)
	}
	startTimers(b)
	for n := range b.N {
		nextRounds(b, batches, n, f)
		for _, ev := range batches[n%len(batches)].decoded {
			e.Observe(&ev, ev.Time.UnixNano()) // ev is a copy: Observe may keep nothing of it
		}
	}
	perRecord(b)
}

// nextRounds prepares, at the start of each cycle through the batches, the
// next len(batches) rounds at once: pdata's setters allocate, and pausing
// the timer costs a stop-the-world. Each batch is handed over as a fresh
// copy, as a receiver makes it: the processor moves its input records.
//
// With f.collect the harness's garbage is then collected with the timer
// stopped: a duplicate-heavy stream's processor allocates next to nothing (0.02–0.06
// objects per record), so a collection running while the timer runs is of
// what the harness made (the previous rounds' ~25 objects per record, the
// receiver's garbage in a collector), and it landed on whatever ran then.
// Under churn the processor makes garbage of its own (~14 objects per
// record): its collection stays in its time.
func nextRounds(b *testing.B, batches []*benchBatch, n int, f feed) {
	if n%len(batches) != 0 {
		return
	}
	cpu.stop()
	b.StopTimer()
	cpu.stopAllocs()
	for j, next := range batches {
		next.round(n+j, f.churn)
		next.in = plog.NewLogs()
		next.ld.CopyTo(next.in)
	}
	if f.collect && gcOn {
		runtime.GC()
	}
	cpu.startAllocs()
	b.StartTimer()
	cpu.start()
}

// gcOn: the collector runs (not GOGC=off, under which a forced collection
// would only add the harness's work to instruction counts).
var gcOn = func() bool {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p >= 0
}()

// rotatingBatches prepares the distinct batches a stream cycles through.
func rotatingBatches(shape recordShape, keyOf func(round int) func(int) int) []*benchBatch {
	var out []*benchBatch
	for round := range 10 {
		out = append(out, newBenchBatch(shape, keyOf(round)))
	}
	return out
}

// perRecord reports the wall time per record and the process's CPU time
// per record: on a shared machine the wall time counts the time other work
// held the cores, the CPU time does not. Both count the garbage collection
// that runs while the timer runs: on the duplicate-heavy streams none of
// the harness's (see nextRounds); elsewhere some of the input batches a
// receiver would allocate, next to the processor's own. (The
// runtime's own estimate of its GC CPU time, runtime/metrics, counts wall
// time of its workers and exceeded the process's CPU time on a loaded
// machine: not reported.)
func perRecord(b *testing.B) {
	cpu.stop()
	b.StopTimer()
	cpu.stopAllocs()
	records := float64(b.N * batchSize)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
	b.ReportMetric(float64(cpu.total.Nanoseconds())/records, "cpu-ns/record")
	lastMeasure = measure{cpuNs: float64(cpu.total.Nanoseconds()) / records, allocs: float64(cpu.allocs) / records}
}

// measure is what the last benchmark run measured per record: the
// process's CPU time and the objects allocated while its timer ran.
type measure struct{ cpuNs, allocs float64 }

var lastMeasure measure

// cpuClock measures, while the benchmark timer runs, the process's CPU
// time (start and stop inside the timed window) and the objects it
// allocates (startAllocs and stopAllocs outside it: reading the exact count
// stops the world).
type cpuClock struct {
	total, from        time.Duration
	allocs, allocsFrom uint64
	running            bool
}

var cpu cpuClock

func (c *cpuClock) start() { c.from, c.running = processCPU(), true }

func (c *cpuClock) stop() {
	if c.running {
		c.total += processCPU() - c.from
		c.running = false
	}
}

func (c *cpuClock) startAllocs() { c.allocsFrom = mallocs() }

func (c *cpuClock) stopAllocs() { c.allocs += mallocs() - c.allocsFrom }

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// BenchmarkRetainedHeapPerSeries opens retainedSeries series (two
// occurrences each) in a processor with room for all of them and reports
// the live heap it holds, per series: everything it allocates counts, the
// tables made at start included.
func BenchmarkRetainedHeapPerSeries(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape.name, func(b *testing.B) {
			for range b.N {
				b.ReportMetric(retainedPerSeries(b, shape), "B/series")
			}
		})
	}
}

const retainedSeries = 20_000

func retainedPerSeries(b *testing.B, shape recordShape) float64 {
	cfg := createDefaultConfig()
	cfg.MaxKeys = retainedSeries
	cfg.TimeSource = timeEvent
	cfg.SpamFilter.Enabled = false
	var batches []*benchBatch
	for start := 0; start < retainedSeries; start += batchSize {
		batches = append(batches, newBenchBatch(shape, func(i int) int { return start + i }))
	}
	before := liveHeap()
	p, err := newProcessor(processortest.NewNopSettings(NewFactory().Type()), cfg, consumertest.NewNop(), time.Now)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	for round := range 2 {
		for _, bb := range batches {
			bb.round(round, false)
			in := plog.NewLogs()
			bb.ld.CopyTo(in)
			if err := p.ConsumeLogs(context.Background(), in); err != nil {
				b.Fatal(err)
			}
		}
	}
	after := liveHeap()
	if p.engine.Len() != retainedSeries {
		b.Fatalf("%d open series, want %d", p.engine.Len(), retainedSeries)
	}
	runtime.KeepAlive(p)
	runtime.KeepAlive(batches)
	return float64(after-before) / retainedSeries
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
