package k8seventexporter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// The client-side cap, lifted for the exporter and the raw clientset alike.
const (
	benchQPS   = 100000
	benchBurst = 100000
	// benchPatchTargets objects are patched round-robin by the patch benchmarks.
	benchPatchTargets = 64
	benchNamespace    = "shop" // the namespace of record()'s regarding object
)

// startBenchExporter builds the exporter through its factory, with the QPS
// cap lifted, no sending queue (ConsumeLogs writes synchronously, one write
// in flight) and no retries (an error fails the benchmark instead).
func startBenchExporter(tb testing.TB, kubeconfig string) exporter.Logs {
	tb.Helper()
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: kubeconfig}
	cfg.API = k8sevent.APIEventsV1
	cfg.QPS, cfg.Burst = benchQPS, benchBurst
	cfg.ReportingController = "k8sevents.io/exporter"
	cfg.BackOff.Enabled = false
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	set := exportertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

func encodeLogs(evs ...k8sevent.Event) plog.Logs {
	ld := plog.NewLogs()
	for i := range evs {
		k8sevent.Encode(&evs[i], ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	}
	return ld
}

func consume(b *testing.B, exp exporter.Logs, ld plog.Logs) {
	if err := exp.ConsumeLogs(context.Background(), ld); err != nil {
		b.Fatal(err)
	}
}

// benchEventsV1 is the events.k8s.io/v1 object the exporter creates for
// record(name, singleton): the raw client-go benchmarks write the same body.
func benchEventsV1(b *testing.B, name string) *eventsv1.Event {
	ev := record(name, k8sevent.StateSingleton, 1, t0)
	cfg := createDefaultConfig()
	cfg.ReportingController = "k8sevents.io/exporter"
	if err := newWriter(nil, k8sevent.APIEventsV1, cfg, "bench").prepare(&ev); err != nil {
		b.Fatal(err)
	}
	out := ev.ToEventsV1()
	out.DeprecatedSource, out.DeprecatedCount = corev1.EventSource{}, 0
	out.DeprecatedFirstTimestamp, out.DeprecatedLastTimestamp = metav1.Time{}, metav1.Time{}
	return out
}

func reportRate(b *testing.B, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, unit)
	}
}

// BenchmarkWrites compares the exporter's per-write path with raw client-go
// writes of the same objects (the ceiling), sequentially (one write in
// flight), against one local kube-apiserver with the client QPS cap lifted.
func BenchmarkWrites(b *testing.B) {
	kubeconfig, events := benchServer(b)
	ctx := context.Background()

	// Each sub-benchmark body runs more than once (b.N = 1 first): the
	// sequence numbers live out here so names never repeat.
	var seq, expCreated, cgCreated int
	next := func(prefix string) string { seq++; return fmt.Sprintf("%s-%d", prefix, seq) }

	// Started here, not in the bodies: a body runs more than once, and the
	// patching exporter's writer must know its targets so every record patches.
	expCreate := startBenchExporter(b, kubeconfig)
	expPatch := startBenchExporter(b, kubeconfig)

	b.Run("exporter-creates", func(b *testing.B) {
		exp := expCreate
		lds := make([]plog.Logs, b.N)
		for i := range lds {
			lds[i] = encodeLogs(record(next("web-1.exp-create"), k8sevent.StateSingleton, 1, t0))
		}
		b.ResetTimer()
		for i := range b.N {
			consume(b, exp, lds[i])
		}
		b.StopTimer()
		expCreated += b.N
		reportRate(b, "creates/s")
	})

	expCounts := make([]int64, benchPatchTargets)
	b.Run("exporter-patches", func(b *testing.B) {
		if expCounts[0] == 0 {
			for j := range benchPatchTargets {
				consume(b, expPatch, encodeLogs(record(fmt.Sprintf("web-1.exp-patch-%d", j), k8sevent.StateSingleton, 1, t0)))
				expCounts[j] = 1
			}
		}
		lds := make([]plog.Logs, b.N)
		for i := range lds {
			j := i % benchPatchTargets
			expCounts[j]++
			c := expCounts[j]
			lds[i] = encodeLogs(record(fmt.Sprintf("web-1.exp-patch-%d", j), k8sevent.StateOngoing, c, t0.Add(time.Duration(c)*time.Second)))
		}
		b.ResetTimer()
		for i := range b.N {
			consume(b, expPatch, lds[i])
		}
		b.StopTimer()
		reportRate(b, "patches/s")
	})

	b.Run("client-go-creates", func(b *testing.B) {
		objs := make([]*eventsv1.Event, b.N)
		for i := range objs {
			objs[i] = benchEventsV1(b, next("web-1.cg-create"))
		}
		b.ResetTimer()
		for i := range b.N {
			if _, err := createBounded(ctx, events, objs[i]); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cgCreated += b.N
		reportRate(b, "creates/s")
	})

	cgCounts := make([]int64, benchPatchTargets)
	b.Run("client-go-patches", func(b *testing.B) {
		if cgCounts[0] == 0 {
			for j := range benchPatchTargets {
				if _, err := createBounded(ctx, events, benchEventsV1(b, fmt.Sprintf("web-1.cg-patch-%d", j))); err != nil {
					b.Fatal(err)
				}
				cgCounts[j] = 1
			}
		}
		names := make([]string, b.N)
		bodies := make([][]byte, b.N)
		for i := range bodies {
			j := i % benchPatchTargets
			cgCounts[j]++
			c := cgCounts[j]
			names[i] = fmt.Sprintf("web-1.cg-patch-%d", j)
			body, err := json.Marshal(map[string]any{"series": map[string]any{
				"count": c, "lastObservedTime": metav1.NewMicroTime(t0.Add(time.Duration(c) * time.Second)),
			}})
			if err != nil {
				b.Fatal(err)
			}
			bodies[i] = body
		}
		b.ResetTimer()
		for i := range b.N {
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := events.Patch(pctx, names[i], types.MergePatchType, bodies[i], metav1.PatchOptions{})
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		reportRate(b, "patches/s")
	})

	// Every timed write did reach the API server: the exporter swallows a
	// permanent failure, so a fast but empty run would otherwise pass.
	verifyBenchWrites(b, events, map[string]int{"web-1.exp-create-": expCreated, "web-1.cg-create-": cgCreated},
		map[string][]int64{"web-1.exp-patch-": expCounts, "web-1.cg-patch-": cgCounts})
}

func verifyBenchWrites(b *testing.B, events eventsv1client.EventInterface, created map[string]int, patched map[string][]int64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	got := map[string]int{}
	series := map[string]int32{}
	for _, ev := range list.Items {
		for prefix := range created {
			if strings.HasPrefix(ev.Name, prefix) {
				got[prefix]++
			}
		}
		if ev.Series != nil {
			series[ev.Name] = ev.Series.Count
		}
	}
	for prefix, want := range created {
		if got[prefix] != want {
			b.Errorf("%s*: %d objects, want %d", prefix, got[prefix], want)
		}
	}
	for prefix, counts := range patched {
		for j, want := range counts {
			if name := fmt.Sprintf("%s%d", prefix, j); want > 1 && int64(series[name]) != want {
				b.Errorf("%s: series count %d, want %d", name, series[name], want)
			}
		}
	}
}

func createBounded(ctx context.Context, events eventsv1client.EventInterface, obj *eventsv1.Event) (*eventsv1.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return events.Create(ctx, obj, metav1.CreateOptions{})
}

// benchServer starts a kube-apiserver with the benchmark's namespace and
// returns its kubeconfig and a client-go Events client built as the
// exporter builds its own (kubeconfig, QPS, burst).
func benchServer(b *testing.B) (string, eventsv1client.EventInterface) {
	srv := kubetest.Start(b)
	kubeconfig := srv.Kubeconfig(b)
	if _, err := srv.Clientset().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cs, err := k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: kubeconfig}.Clientset(benchQPS, benchBurst)
	if err != nil {
		b.Fatal(err)
	}
	return kubeconfig, cs.EventsV1().Events(benchNamespace)
}
