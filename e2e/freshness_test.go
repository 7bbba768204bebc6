package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// BenchmarkFreshness measures what the pipeline adds to the time an Event
// takes to become visible: the built collector in processing time with the
// processor's defaults and no throttling (OTLP in → eventseries → k8sevent →
// a local kube-apiserver), and a watch on that server. For each of 200
// pods, the delay from sending its first occurrence to its Event appearing
// in the watch, then from sending its second occurrence to the object's
// series count 2 (the `started` record) appearing. Reported as p50 and p99
// in milliseconds; the goal is p99 ≤ 1 s for both. Later occurrences of a
// series are, by design, visible at the next heartbeat or finish (see the
// processor's TestStateStalenessIsBounded for that bound).
func BenchmarkFreshness(b *testing.B) {
	binary(b)
	srv := kubetest.Start(b)
	for range b.N {
		first, started := freshnessRun(b, srv, 200)
		for name, d := range map[string][]time.Duration{"first": first, "started": started} {
			b.ReportMetric(percentile(d, 50).Seconds()*1000, name+"-p50-ms")
			b.ReportMetric(percentile(d, 99).Seconds()*1000, name+"-p99-ms")
		}
	}
}

func freshnessRun(b *testing.B, srv *kubetest.Server, pods int) (first, started []time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := srv.Clientset()
	ns := fmt.Sprintf("fresh-%d", time.Now().UnixNano())
	require.NoError(b, stormsend.CreateNamespaces(ctx, cs, ns))
	grpcAddr := loopback(b)
	startCollector(b, b.TempDir(), fmt.Sprintf(`
receivers:
  otlp: {protocols: {grpc: {endpoint: %q}}}
processors:
  eventseries: {}
exporters:
  k8sevents: {auth_type: kubeConfig, kubeconfig: %q, api: events.k8s.io/v1, qps: 1000, burst: 1000}
service:
  extensions: [health_check]
  pipelines: {logs: {receivers: [otlp], processors: [eventseries], exporters: [k8sevents]}}
`, grpcAddr, srv.Kubeconfig(b)))

	// The harness clients time a request out after 30 s, which ends a watch
	// silently: this one has no timeout, and await fails if it ends.
	w, err := srv.WatchClientset(b).EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(b, err)
	defer w.Stop()
	seen := newVisibility()
	go seen.follow(w.ResultChan())

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	defer conn.Close()
	client := plogotlp.NewGRPCClient(conn)
	send := func(pod string) time.Time {
		ev := k8sevent.Event{Reason: "BackOff", Note: "Back-off restarting failed container", Type: k8sevent.TypeWarning,
			Time: time.Now(), Regarding: k8sevent.ObjectRef{Kind: "Pod", Namespace: ns, Name: pod, UID: "uid-" + pod}}
		ld := plog.NewLogs()
		k8sevent.Encode(&ev, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		at := time.Now()
		_, err := client.Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
		require.NoError(b, err)
		return at
	}
	for occurrence := 1; occurrence <= 2; occurrence++ {
		for i := range pods {
			pod := fmt.Sprintf("pod-%d", i)
			sent := send(pod)
			visible := seen.await(ctx, b, pod, occurrence)
			if occurrence == 1 {
				first = append(first, visible.Sub(sent))
			} else {
				started = append(started, visible.Sub(sent))
			}
		}
	}
	return first, started
}

// visibility records when each regarding object's Event first showed each count.
type visibility struct {
	mu      sync.Mutex
	changed *sync.Cond
	at      map[[2]string]time.Time // pod, count
	ended   bool                    // the watch closed
}

func newVisibility() *visibility {
	v := &visibility{at: map[[2]string]time.Time{}}
	v.changed = sync.NewCond(&v.mu)
	return v
}

func (v *visibility) follow(ch <-chan watch.Event) {
	for e := range ch {
		ev, ok := e.Object.(*eventsv1.Event)
		if !ok {
			continue
		}
		count := k8sevent.EventsV1Occurrences(ev)
		v.mu.Lock()
		key := [2]string{ev.Regarding.Name, fmt.Sprint(count)}
		if _, ok := v.at[key]; !ok {
			v.at[key] = time.Now()
		}
		v.changed.Broadcast()
		v.mu.Unlock()
	}
	v.mu.Lock()
	v.ended = true
	v.changed.Broadcast()
	v.mu.Unlock()
}

// await waits until pod's Event shows count, up to ctx's deadline.
func (v *visibility) await(ctx context.Context, b *testing.B, pod string, count int) time.Time {
	stop := context.AfterFunc(ctx, func() { v.mu.Lock(); v.changed.Broadcast(); v.mu.Unlock() })
	defer stop()
	v.mu.Lock()
	defer v.mu.Unlock()
	key := [2]string{pod, fmt.Sprint(count)}
	for {
		if at, ok := v.at[key]; ok {
			return at
		}
		if ctx.Err() != nil {
			b.Fatalf("%s never showed count %d", pod, count)
		}
		if v.ended {
			b.Fatalf("the watch ended before %s showed count %d", pod, count)
		}
		v.changed.Wait()
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}
