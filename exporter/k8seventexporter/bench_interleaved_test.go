package k8seventexporter

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// interleaveBlock is how many writes one side makes before the other takes
// its turn: short enough that both meet the same machine load and the same
// etcd size, long enough that switching costs nothing.
const interleaveBlock = 50

// BenchmarkWritesInterleaved is BenchmarkWrites (N distinct
// Events through the factory-built exporter with qps lifted, next to the
// same N written by a client-go clientset with its rate limit lifted;
// creates, then patches) with the two sides taking turns in blocks of
// interleaveBlock writes. Run one after the other, the second side meets
// a bigger etcd and whatever else the machine did meanwhile, which on a
// shared 2-core machine moved the ratio by ±40%. Reported: each side's
// writes per second and exporter/client-go.
//
//	go test -run XXX -bench BenchmarkWritesInterleaved -benchtime 2000x ./exporter/k8seventexporter/
func BenchmarkWritesInterleaved(b *testing.B) {
	kubeconfig, events := benchServer(b)
	ctx := context.Background()
	exp := startBenchExporter(b, kubeconfig)
	run := 0

	b.Run("creates", func(b *testing.B) {
		run++
		var expTime, cgTime time.Duration
		for start := 0; start < b.N; start += interleaveBlock {
			n := min(interleaveBlock, b.N-start)
			lds := make([]plog.Logs, n)
			for i := range n {
				lds[i] = encodeLogs(record(fmt.Sprintf("web-1.il-exp-%d-%d", run, start+i), k8sevent.StateSingleton, 1, t0))
			}
			objs := make([]*eventsv1.Event, n)
			for i := range n {
				objs[i] = benchEventsV1(b, fmt.Sprintf("web-1.il-cg-%d-%d", run, start+i))
			}
			expTime += timed(func() {
				for _, ld := range lds {
					consume(b, exp, ld)
				}
			})
			cgTime += timed(func() {
				for _, o := range objs {
					if _, err := createBounded(ctx, events, o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		verifyBenchWrites(b, events, map[string]int{fmt.Sprintf("web-1.il-exp-%d-", run): b.N, fmt.Sprintf("web-1.il-cg-%d-", run): b.N}, nil)
		reportPair(b, expTime, cgTime, "creates/s")
	})

	b.Run("patches", func(b *testing.B) {
		run++
		expNames, cgNames := make([]string, benchPatchTargets), make([]string, benchPatchTargets)
		for j := range benchPatchTargets {
			expNames[j], cgNames[j] = fmt.Sprintf("web-1.il-exp-patch-%d-%d", run, j), fmt.Sprintf("web-1.il-cg-patch-%d-%d", run, j)
			consume(b, exp, encodeLogs(record(expNames[j], k8sevent.StateSingleton, 1, t0)))
			if _, err := createBounded(ctx, events, benchEventsV1(b, cgNames[j])); err != nil {
				b.Fatal(err)
			}
		}
		counts := make([]int64, benchPatchTargets)
		for j := range counts {
			counts[j] = 1
		}
		var expTime, cgTime time.Duration
		for start := 0; start < b.N; start += interleaveBlock {
			n := min(interleaveBlock, b.N-start)
			lds, bodies, targets := make([]plog.Logs, n), make([][]byte, n), make([]int, n)
			for i := range n {
				j := (start + i) % benchPatchTargets
				counts[j]++
				c := counts[j]
				at := t0.Add(time.Duration(c) * time.Second)
				lds[i], targets[i] = encodeLogs(record(expNames[j], k8sevent.StateOngoing, c, at)), j
				body, err := json.Marshal(map[string]any{"series": map[string]any{"count": c, "lastObservedTime": metav1.NewMicroTime(at)}})
				if err != nil {
					b.Fatal(err)
				}
				bodies[i] = body
			}
			expTime += timed(func() {
				for _, ld := range lds {
					consume(b, exp, ld)
				}
			})
			cgTime += timed(func() {
				for i, body := range bodies {
					pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					_, err := events.Patch(pctx, cgNames[targets[i]], types.MergePatchType, body, metav1.PatchOptions{})
					cancel()
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		// Every patch landed: the exporter swallows permanent failures.
		for j, want := range counts {
			for _, name := range []string{expNames[j], cgNames[j]} {
				got, err := events.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if have := k8sevent.FromEventsV1(got); have.Occurrences() != want {
					b.Fatalf("%s: %d occurrences, want %d", name, have.Occurrences(), want)
				}
			}
		}
		reportPair(b, expTime, cgTime, "patches/s")
	})
}

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

func reportPair(b *testing.B, expTime, cgTime time.Duration, unit string) {
	b.ReportMetric(float64(b.N)/expTime.Seconds(), "exporter-"+unit)
	b.ReportMetric(float64(b.N)/cgTime.Seconds(), "client-go-"+unit)
	b.ReportMetric(cgTime.Seconds()/expTime.Seconds(), "exporter/client-go")
}
