package k8seventsreceiver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/receiver/k8seventsreceiver/internal/metadata"
)

const (
	memStoredNS = "mem-stored" // the Events stored before the receiver starts
	memLoadNS   = "mem-load"   // the Events written while it runs

	memFillWorkers  = 16
	memFillTimeout  = 10 * time.Minute
	memLoadRate     = 200 // writes per second
	memLoadDuration = 20 * time.Second
	memLoadOps      = memLoadRate * int(memLoadDuration/time.Second)
	memLoadWorkers  = 8
	memPatchEvery   = 4 // one write in 4 patches an Event of the load: MODIFIED
	memSampleEvery  = time.Second
	memDrainTimeout = 30 * time.Second
	// memInFlight is how many writes may lack their record once the drain
	// wait ends: the last few may still be on their way.
	memInFlight = 10

	// Flatness: the receiver's heap delta with 50k stored Events may exceed
	// the one with 1k by 10%, plus memSlackMB. The deltas are a few MB, so
	// a GC cycle that happens to keep a little more garbage, or a couple of
	// HTTP/2 frame buffers more in flight, already moves them by more than
	// 10%; 2 MB is far below what caching the stored Events would cost
	// (~50k objects, tens of MB).
	memFlatRatio = 1.10
	memSlackMB   = 2.0
)

// memResult is what one sub-benchmark measured.
type memResult struct {
	heapMB, heapMaxMB, heapDeltaMB float64
	rssMB, rssMaxMB, rssDeltaMB    float64
}

// BenchmarkReceiverMemoryVsStoredEvents shows that the receiver's memory does
// not grow with the number of Events stored in the cluster (it keeps no
// informer cache): it stores 1k, then 50k core/v1 Events, and for each starts
// one receiver (api v1, initial none, all namespaces) into a sink that counts
// and drops, writes about 200 Events/s to it for 20 s (creates, and patches
// that give MODIFIED), and samples the Go heap (live bytes after a GC) and the
// process RSS during the load. It fails if the 50k heap delta exceeds the 1k
// one by more than 10% plus memSlackMB.
//
// One run is one measurement, whatever b.N: run it with -benchtime 1x.
// The figures are of the whole test process (client-go, the load generator);
// heap-delta-MB and rss-delta-MB are against a baseline taken just before the
// receiver starts, so they are the receiver plus the load generator's
// in-flight requests, which are the same in both runs.
func BenchmarkReceiverMemoryVsStoredEvents(b *testing.B) {
	srv := kubetest.Start(b)
	rc := srv.RESTConfig()
	rc.QPS, rc.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig := srv.Kubeconfig(b)
	for _, ns := range []string{memStoredNS, memLoadNS} {
		_, err := cs.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}

	stored := 0 // Events in memStoredNS so far: the 50k run adds to the 1k one
	results := map[int]memResult{}
	for _, n := range []int{1000, 50000} {
		b.Run(fmt.Sprintf("stored=%d", n), func(b *testing.B) {
			if stored < n {
				start := time.Now()
				if err := memFill(cs, stored, n); err != nil {
					b.Fatalf("storing Events %d..%d: %v", stored, n, err)
				}
				took := time.Since(start)
				b.Logf("stored Events %d..%d in %s (%.0f/s)", stored, n, took.Round(time.Millisecond), float64(n-stored)/took.Seconds())
				b.ReportMetric(took.Seconds(), "create-s")
				stored = n
			}
			res := memMeasure(b, cs, kubeconfig, fmt.Sprintf("s%d", n))
			if b.Failed() {
				return
			}
			results[n] = res
			b.ReportMetric(res.heapMB, "heap-MB")
			b.ReportMetric(res.heapMaxMB, "heap-max-MB")
			b.ReportMetric(res.heapDeltaMB, "heap-delta-MB")
			b.ReportMetric(res.rssMB, "rss-MB")
			b.ReportMetric(res.rssMaxMB, "rss-max-MB")
			b.ReportMetric(res.rssDeltaMB, "rss-delta-MB")
		})
	}

	small, okSmall := results[1000]
	large, okLarge := results[50000]
	if !okSmall || !okLarge {
		return // a run failed or was filtered out by -bench: nothing to compare
	}
	b.Logf("heap delta: 1k %.2f MB, 50k %.2f MB; RSS delta: 1k %.2f MB, 50k %.2f MB",
		small.heapDeltaMB, large.heapDeltaMB, small.rssDeltaMB, large.rssDeltaMB)
	if limit := max(small.heapDeltaMB, 0)*memFlatRatio + memSlackMB; large.heapDeltaMB > limit {
		b.Errorf("the receiver's heap grows with the stored Events: delta %.2f MB with 50k, %.2f MB with 1k (limit %.2f MB)",
			large.heapDeltaMB, small.heapDeltaMB, limit)
	}
}

// memFill creates the stored Events from..to-1 in parallel, bounded in time.
func memFill(cs kubernetes.Interface, from, to int) error {
	ctx, cancel := context.WithTimeout(context.Background(), memFillTimeout)
	defer cancel()
	var next atomic.Int64
	next.Store(int64(from))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range memFillWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				_, err := cs.CoreV1().Events(memStoredNS).Create(ctx, memEvent(memStoredNS, fmt.Sprintf("stored-%d", i)), metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// memEvent is a kube-scheduler-like core/v1 Event of usual size.
func memEvent(ns, name string) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: ns, Name: "pod-" + name, APIVersion: "v1",
			UID: types.UID("uid-" + ns + "-" + name), ResourceVersion: "12345",
		},
		Reason:              "Scheduled",
		Message:             fmt.Sprintf("Successfully assigned %s/pod-%s to node-%d.example.internal", ns, name, len(name)%7),
		Type:                corev1.EventTypeNormal,
		Count:               1,
		Source:              corev1.EventSource{Component: "default-scheduler"},
		ReportingController: "default-scheduler",
		ReportingInstance:   "default-scheduler-node-0",
		FirstTimestamp:      now, LastTimestamp: now,
	}
}

// memMeasure runs one receiver under the load and samples the memory.
func memMeasure(b *testing.B, cs kubernetes.Interface, kubeconfig, run string) memResult {
	// Baseline: just before the receiver exists, with what the fill left
	// behind collected and handed back to the OS.
	debug.FreeOSMemory()
	base := memSample(b)
	b.Logf("baseline: heap %.2f MB, RSS %.2f MB", base.heapMB, base.rssMB)

	var emitted atomic.Int64
	nop := consumertest.NewNop()
	sink, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		emitted.Add(int64(ld.LogRecordCount()))
		return nop.ConsumeLogs(ctx, ld) // dropped: the sink keeps nothing
	})
	if err != nil {
		b.Fatal(err)
	}
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: kubeconfig}
	cfg.API = k8sevent.APICoreV1
	cfg.Initial = initialNone
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	rl, err := NewFactory().CreateLogs(context.Background(), set, cfg, sink)
	if err != nil {
		b.Fatal(err)
	}
	if err := rl.Start(context.Background(), host{}); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := rl.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	rcv := rl.(*k8seventsReceiver)
	for deadline := time.Now().Add(30 * time.Second); !rcv.watching(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("receiver not watching after 30s")
		}
	}

	// Sample while the load runs.
	var samples []memSnapshot
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(memSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				samples = append(samples, memSample(b))
			}
		}
	}()

	start := time.Now()
	written, loadErr := memLoad(cs, run)
	loadTook := time.Since(start)
	close(stopSampling)
	<-sampled
	if loadErr != nil {
		b.Fatalf("load: %v", loadErr)
	}

	// Every write should come back as one record (ADDED or MODIFIED).
	for deadline := time.Now().Add(memDrainTimeout); emitted.Load() < written && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	got := emitted.Load()
	b.Logf("load: %d writes in %s (%.0f/s), %d records emitted, %d memory samples",
		written, loadTook.Round(time.Millisecond), float64(written)/loadTook.Seconds(), got, len(samples))
	if got < written-memInFlight {
		b.Fatalf("receiver emitted %d records for %d writes", got, written)
	}
	if len(samples) == 0 {
		b.Fatal("no memory sample taken during the load")
	}

	heaps := make([]float64, len(samples))
	rsss := make([]float64, len(samples))
	for i, s := range samples {
		heaps[i], rsss[i] = s.heapMB, s.rssMB
	}
	res := memResult{
		heapMB: median(heaps), heapMaxMB: slices.Max(heaps),
		rssMB: median(rsss), rssMaxMB: slices.Max(rsss),
	}
	res.heapDeltaMB = res.heapMB - base.heapMB
	res.rssDeltaMB = res.rssMB - base.rssMB
	return res
}

// memLoad writes memLoadOps Events at memLoadRate per second in memLoadNS:
// new Events, and every memPatchEvery-th write a patch of one created
// earlier in this load. It returns the number of successful writes.
func memLoad(cs kubernetes.Interface, run string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), memLoadDuration+time.Minute)
	defer cancel()
	ops := make(chan int, memLoadRate)
	patchable := make(chan string, 1024) // created Events not yet patched
	var (
		written  atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	for range memLoadWorkers {
		wg.Go(func() {
			for i := range ops {
				if ctx.Err() != nil {
					continue // drain
				}
				if i%memPatchEvery == memPatchEvery-1 {
					select {
					case name := <-patchable:
						patch := fmt.Sprintf(`{"count":2,"lastTimestamp":%q}`, time.Now().UTC().Format(time.RFC3339))
						_, err := cs.CoreV1().Events(memLoadNS).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
						if err != nil {
							fail(fmt.Errorf("patch %s: %w", name, err))
							continue
						}
						written.Add(1)
						continue
					default: // nothing created yet: create instead
					}
				}
				name := fmt.Sprintf("load-%s-%d", run, i)
				if _, err := cs.CoreV1().Events(memLoadNS).Create(ctx, memEvent(memLoadNS, name), metav1.CreateOptions{}); err != nil {
					fail(fmt.Errorf("create %s: %w", name, err))
					continue
				}
				written.Add(1)
				select {
				case patchable <- name:
				default:
				}
			}
		})
	}
	t := time.NewTicker(time.Second / memLoadRate)
	for i := 0; i < memLoadOps && ctx.Err() == nil; i++ {
		<-t.C
		ops <- i
	}
	t.Stop()
	close(ops)
	wg.Wait()
	if firstErr != nil {
		return written.Load(), firstErr
	}
	if err := ctx.Err(); err != nil {
		return written.Load(), errors.New("load did not finish in time")
	}
	return written.Load(), nil
}

type memSnapshot struct{ heapMB, rssMB float64 }

// memSample is the live heap after a GC and the process RSS, in MB.
func memSample(b *testing.B) memSnapshot {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := vmRSS()
	if err != nil {
		b.Errorf("RSS: %v", err)
	}
	return memSnapshot{heapMB: float64(ms.HeapAlloc) / (1 << 20), rssMB: float64(rss) / (1 << 20)}
}

// vmRSS reads the resident set size of this process, in bytes, from
// /proc/self/status (Linux).
func vmRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmRSS in /proc/self/status")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
