package k8seventexporter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter/internal/metadata"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// The flood in namespace shop that precedes one record in namespace other.
const (
	floodRecords   = 3000
	fairnessWaitAt = 10 * time.Minute
)

// BenchmarkFairnessFloodDelay measures how long a flood of floodRecords
// distinct valid records in namespace shop delays one record in namespace
// other, through the factory-built exporter (QPS 20, burst 50). Reported:
// how long until the other namespace's Event is visible on the API server
// (delay-s), and how many flood records were written before it.
//
//   - queued: a persistent sending_queue with this exporter's defaults
//     (lookahead of 256 requests, batch), handed the whole flood, then the
//     other record. The flood comes in requests of 100 records (a
//     processor's batch) or of one (more requests than the lookahead: the
//     queue's batch merges them).
//
//   - unqueued: no queue (the default). One caller sends the flood in
//     requests of 100, each answered once written; once the first is, a
//     second caller sends the other record. (A single caller gets no
//     lookahead across its pushes: its next push waits for the one before.)
//
//     go test -run XXX -bench BenchmarkFairnessFloodDelay -benchtime 1x ./exporter/k8seventexporter/
func BenchmarkFairnessFloodDelay(b *testing.B) {
	for _, batch := range []int{100, 1} {
		b.Run(fmt.Sprintf("queued/requests-of-%d", batch), func(b *testing.B) { benchFloodDelay(b, batch, true) })
	}
	b.Run("unqueued/requests-of-100", func(b *testing.B) { benchFloodDelay(b, 100, false) })
}

func benchFloodDelay(b *testing.B, floodBatch int, queued bool) {
	srv := kubetest.Start(b)
	ctx := context.Background()
	for _, ns := range []string{"shop", "other"} {
		if _, err := srv.Clientset().CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range b.N {
		exp, stop := startFairnessExporter(b, srv.Kubeconfig(b), queued)
		floodCtx, endFlood := context.WithCancel(ctx)
		firstDone := make(chan struct{})
		flooded := make(chan error, 1)
		go func() {
			for start := 0; start < floodRecords; start += floodBatch {
				evs := make([]k8sevent.Event, 0, floodBatch)
				for j := start; j < min(start+floodBatch, floodRecords); j++ {
					evs = append(evs, record(fmt.Sprintf("web-1.flood-%d-%05d", i, j), k8sevent.StateSingleton, 1, t0))
				}
				if err := exp.ConsumeLogs(floodCtx, encodeLogs(evs...)); err != nil {
					flooded <- err
					return
				}
				if start == 0 {
					close(firstDone)
				}
			}
			flooded <- nil
		}()
		if queued {
			if err := <-flooded; err != nil { // the whole flood is queued
				b.Fatal(err)
			}
		} else {
			<-firstDone // the first request is written; the caller sends the next
		}
		quiet := record(fmt.Sprintf("api-1.quiet-%d", i), k8sevent.StateSingleton, 1, t0)
		quiet.Regarding.Namespace, quiet.Regarding.Name = "other", "api-1"
		sent := time.Now()
		if err := exp.ConsumeLogs(ctx, encodeLogs(quiet)); err != nil {
			b.Fatal(err)
		}
		delay := waitVisible(b, srv, "other", quiet.Name, sent)
		written, err := srv.Clientset().EventsV1().Events("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(delay.Seconds(), "delay-s")
		b.ReportMetric(float64(len(written.Items)), "flood-written-before")
		endFlood()
		stop()
	}
}

// waitVisible polls (as an admin, not through the exporter's rate limit)
// until the Event exists; bounded by fairnessWaitAt.
func waitVisible(b *testing.B, srv *kubetest.Server, ns, name string, since time.Time) time.Duration {
	deadline := since.Add(fairnessWaitAt)
	for time.Now().Before(deadline) {
		if _, err := srv.Clientset().EventsV1().Events(ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			return time.Since(since)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("%s/%s not visible after %s", ns, name, fairnessWaitAt)
	return 0
}

// startFairnessExporter is the factory's exporter with its default
// configuration (QPS cap) against the kubeconfig's API server, with a
// persistent sending_queue when queued; stop shuts it (and its storage)
// down.
func startFairnessExporter(b *testing.B, kubeconfig string, queued bool) (exp exporter.Logs, stop func()) {
	b.Helper()
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: kubeconfig}
	cfg.API = k8sevent.APIEventsV1
	var host component.Host = componenttest.NewNopHost()
	var ext extension.Extension
	if queued {
		ext = outageFileStorage(b, b.TempDir())
		host = outageHost{outageStorageID: ext}
		persistentQueue(cfg)
	}
	set := exportertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := exp.Start(context.Background(), host); err != nil {
		b.Fatal(err)
	}
	return exp, func() {
		if err := exp.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		if ext != nil {
			_ = ext.Shutdown(context.Background())
		}
	}
}
