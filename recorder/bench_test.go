package recorder

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// The benchmarks measure what a call costs the caller: our recorder and
// client-go's two recorders on the same events (20 pods, 4 reasons, as the
// crashloop storm), each with a sink that takes everything at once, so
// that only the recorder itself is measured.

type discardExporter struct{}

func (discardExporter) Export(context.Context, []sdklog.Record) error { return nil }
func (discardExporter) Shutdown(context.Context) error                { return nil }
func (discardExporter) ForceFlush(context.Context) error              { return nil }

type discardLegacySink struct{}

func (discardLegacySink) Create(e *corev1.Event) (*corev1.Event, error)          { return e, nil }
func (discardLegacySink) Update(e *corev1.Event) (*corev1.Event, error)          { return e, nil }
func (discardLegacySink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return e, nil }

type discardEventsSink struct{}

func (discardEventsSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, nil
}
func (discardEventsSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, nil
}
func (discardEventsSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return e, nil
}

var (
	benchPods    = makeBenchPods()
	benchReasons = [4]string{"Pulled", "Created", "Started", "BackOff"}
)

func makeBenchPods() []*corev1.ObjectReference {
	out := make([]*corev1.ObjectReference, 20)
	for i := range out {
		p := testPod(fmt.Sprintf("checkout-7d9f8-%05d", i))
		out[i] = &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID, FieldPath: "spec.containers{checkout}"}
	}
	return out
}

// lastOurs is the last Recorder the benchmarks built, for its counters.
var lastOurs any

// benchEventf is the i-th event of the benchmark storm.
type benchEventf func(i int)

// recorders builds each recorder under test; stop releases it.
func recorders(b *testing.B) map[string]func() (benchEventf, func()) {
	return map[string]func() (benchEventf, func()){
		"ours-events": func() (benchEventf, func()) {
			r, err := New(context.Background(), Options{ReportingController: "bench", Exporter: discardExporter{}})
			if err != nil {
				b.Fatal(err)
			}
			lastOurs = r
			rec := r.EventsRecorder(nil, "")
			return func(i int) {
				rec.Eventf(benchPods[i%20], nil, corev1.EventTypeNormal, benchReasons[i%4], benchReasons[i%4], "occurrence %d", i)
			}, func() { _ = r.Shutdown(context.Background()) }
		},
		"ours-events-q100k": func() (benchEventf, func()) {
			r, err := New(context.Background(), Options{ReportingController: "bench", Exporter: discardExporter{}, QueueSize: 100000})
			if err != nil {
				b.Fatal(err)
			}
			lastOurs = r
			rec := r.EventsRecorder(nil, "")
			return func(i int) {
				rec.Eventf(benchPods[i%20], nil, corev1.EventTypeNormal, benchReasons[i%4], benchReasons[i%4], "occurrence %d", i)
			}, func() { _ = r.Shutdown(context.Background()) }
		},
		"clientgo-record": func() (benchEventf, func()) {
			bc := record.NewBroadcaster()
			bc.StartRecordingToSink(discardLegacySink{})
			rec := bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "bench"})
			return func(i int) {
				rec.Eventf(benchPods[i%20], corev1.EventTypeNormal, benchReasons[i%4], "occurrence %d", i)
			}, bc.Shutdown
		},
		"clientgo-events": func() (benchEventf, func()) {
			bc := events.NewBroadcaster(discardEventsSink{})
			ctx, cancel := context.WithCancel(context.Background())
			if err := bc.StartRecordingToSinkWithContext(ctx); err != nil {
				b.Fatal(err)
			}
			rec := bc.NewRecorder(scheme.Scheme, "bench")
			return func(i int) {
				rec.Eventf(benchPods[i%20], nil, corev1.EventTypeNormal, benchReasons[i%4], benchReasons[i%4], "occurrence %d", i)
			}, func() { drainGoroutines(); cancel(); bc.Shutdown() }
		},
	}
}

// klogDrops counts client-go's log lines about dropped events.
var klogDrops atomic.Int64

// quietKlog silences client-go's log line per dropped event, counting it.
func quietKlog() {
	klog.SetLogger(logr.New(dropCounter{}))
}

// dropCounter is a log sink that formats nothing and counts client-go's
// "dropped event" messages.
type dropCounter struct{}

func (dropCounter) Init(logr.RuntimeInfo)            {}
func (dropCounter) Enabled(int) bool                 { return true }
func (dropCounter) Info(int, string, ...any)         {}
func (d dropCounter) WithValues(...any) logr.LogSink { return d }
func (d dropCounter) WithName(string) logr.LogSink   { return d }
func (dropCounter) Error(_ error, msg string, _ ...any) {
	if strings.Contains(msg, "dropped event") {
		klogDrops.Add(1)
	}
}

// BenchmarkEventf is the caller's cost of one call.
func BenchmarkEventf(b *testing.B) {
	quietKlog()
	for _, name := range []string{"ours-events", "clientgo-record", "clientgo-events"} {
		b.Run(name, func(b *testing.B) {
			eventf, stop := recorders(b)[name]()
			defer stop()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				eventf(i)
				i++
			}
		})
	}
}

// BenchmarkStorm100k: 100,000 calls as fast as the caller makes them; it
// reports the goroutines alive at the peak (sampled every 1,000 calls)
// beyond those before the storm, and the caller's time per call.
func BenchmarkStorm100k(b *testing.B) {
	const storm = 100000
	quietKlog()
	for _, name := range []string{"ours-events", "ours-events-q100k", "clientgo-record", "clientgo-events"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				eventf, stop := recorders(b)[name]()
				klogDrops.Store(0)
				base, peak := runtime.NumGoroutine(), 0
				start := time.Now()
				for i := range storm {
					eventf(i)
					if i%1000 == 0 {
						peak = max(peak, runtime.NumGoroutine()-base)
					}
				}
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/storm, "caller-ns/event")
				b.ReportMetric(float64(peak), "peak-extra-goroutines")
				stop()
				dropped := klogDrops.Load()
				if r, ok := lastOurs.(*Recorder); ok && strings.HasPrefix(name, "ours") {
					dropped = r.Stats().Dropped
				}
				b.ReportMetric(float64(dropped), "dropped")
			}
		})
	}
}

// drainGoroutines waits (at most a minute) until tools/events' per-event
// goroutines have handed their events over, so that its broadcaster shuts
// down with none pending.
func drainGoroutines() {
	deadline := time.Now().Add(time.Minute)
	last := -1
	for time.Now().Before(deadline) {
		n := runtime.NumGoroutine()
		if n == last {
			return
		}
		last = n
		time.Sleep(50 * time.Millisecond)
	}
}
