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

// BenchmarkFairnessFloodDelay measures what issue 11 item 5 describes: the
// factory-built exporter with its defaults (QPS 20, burst 50, in-memory
// queue with batch, lookahead of 256 requests) is handed floodRecords distinct valid
// records in namespace shop, then one record in namespace other. Reported:
// how long until the other namespace's Event is visible on the API server
// (delay-s), and how many flood records were written before it. The flood
// comes in requests of 100 records (a processor batch: all within the
// lookahead), or of one (more requests than the lookahead: the default
// sending_queue::batch merges them; without it, the lookahead's limit).
//
//	go test -run XXX -bench BenchmarkFairnessFloodDelay -benchtime 1x ./exporter/k8seventexporter/
func BenchmarkFairnessFloodDelay(b *testing.B) {
	for _, batch := range []int{100, 1} {
		b.Run(fmt.Sprintf("requests-of-%d", batch), func(b *testing.B) { benchFloodDelay(b, batch) })
	}
}

func benchFloodDelay(b *testing.B, floodBatch int) {
	srv := kubetest.Start(b)
	ctx := context.Background()
	for _, ns := range []string{"shop", "other"} {
		if _, err := srv.Clientset().CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range b.N {
		exp := startDefaultExporter(b, srv.Kubeconfig(b))
		for start := 0; start < floodRecords; start += floodBatch {
			evs := make([]k8sevent.Event, 0, floodBatch)
			for j := start; j < min(start+floodBatch, floodRecords); j++ {
				evs = append(evs, record(fmt.Sprintf("web-1.flood-%d-%05d", i, j), k8sevent.StateSingleton, 1, t0))
			}
			if err := exp.ConsumeLogs(ctx, encodeLogs(evs...)); err != nil {
				b.Fatal(err)
			}
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
		if err := exp.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
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

// startDefaultExporter is the factory's exporter with its default
// configuration (QPS cap, queue) against the kubeconfig's API server.
func startDefaultExporter(b *testing.B, kubeconfig string) exporter.Logs {
	b.Helper()
	cfg := createDefaultConfig()
	cfg.Config = k8sclient.Config{AuthType: k8sclient.AuthKubeConfig, KubeConfig: kubeconfig}
	cfg.API = k8sevent.APIEventsV1
	set := exportertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	return exp
}
