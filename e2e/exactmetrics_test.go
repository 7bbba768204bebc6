package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/kubetest"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// occurrencesMetric is what the prometheus exporter makes of the eventsum
// connector's k8s.event.occurrences (a monotonic cumulative sum).
const occurrencesMetric = "k8s_event_occurrences_total"

// TestExactMetrics runs testdata/config/exact-metrics.yaml on the built
// collector against a real kube-apiserver: a storm written as raw Events
// (one create or count patch per occurrence), watched, folded into series
// by the processor (far fewer records than occurrences), summed by the
// eventsum connector and scraped from the prometheus exporter. Per
// (namespace, reason) the counter must equal the occurrences sent, and
// nothing else may be counted. finish_after is 10 s (env) so that every
// series ends, and its last count reaches the counter, soon after the
// storm. That most occurrences had no record of their own is checked
// against seriesRecordsBound, computed from the storm and the wall time
// the test took, so it holds at any pace of the storm: the test runs in
// parallel with the others.
func TestExactMetrics(t *testing.T) {
	parallel(t)
	binary(t) // skips before starting an API server when the collector is not built
	start := time.Now()
	srv := kubetest.Start(t)
	cs := srv.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	occs := mergeStorms(stormWindow(t, "crashloop", 5*time.Minute), stormWindow(t, "imagepull", 5*time.Minute),
		stormWindow(t, "failedscheduling", 2*time.Minute))
	require.NoError(t, stormsend.EnsureNamespaces(ctx, cs, occs))

	cfg, err := os.ReadFile("../testdata/config/exact-metrics.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	prom := freePort(t)
	c := startCollectorEnv(t, dir, string(cfg), []string{
		"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + srv.Kubeconfig(t), "STORAGE_DIR=" + dir,
		"POD_IP=127.0.0.1", fmt.Sprint("PROMETHEUS_PORT=", prom),
		"SERIES_FINISH_AFTER=10s", // the heartbeat stays at the config's 1m: it does not fire during the test
	})
	// scrape reads the prometheus exporter; before the first point it
	// serves nothing, which reads as no samples.
	scrape := func() collectorproc.Metrics {
		m, err := c.Metrics(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", prom))
		if err != nil && strings.Contains(err.Error(), "no metrics") {
			return collectorproc.Metrics{}
		}
		require.NoError(t, err)
		return m
	}

	// The receiver watches from the resourceVersion of its first list, which
	// comes a moment after the collector reports healthy: a marker written
	// before it is never seen. Markers, one object each in a namespace of
	// their own, go in every 2 s until one is counted: the watch is then up,
	// and nothing of the storm can fall before it. How many were counted is
	// read beside the storm's counts, at the end.
	const markerNS = "e2e-exact-metrics"
	first := time.Now() // no occurrence reaches the processor before this
	var markers int
	var lastMarker time.Time
	eventually(t, time.Minute, func() (bool, string) {
		if n := scrape().Sum(occurrencesMetric, "k8s_namespace_name="+markerNS); n > 0 {
			return true, ""
		}
		if time.Since(lastMarker) >= 2*time.Second {
			markers++
			require.NoError(t, writeMarker(ctx, cs, markerNS, fmt.Sprint("marker-", markers)))
			lastMarker = time.Now()
		}
		return false, fmt.Sprintf("none of %d markers counted", markers)
	})

	stats, err := stormsend.Raw(ctx, srv.RESTConfig(), occs, stormsend.Options{Speed: 0, MaxDuration: time.Minute})
	require.NoError(t, err)
	t.Logf("storm: %d of %d occurrences in %d raw writes, %v", stats.Occurrences, len(occs), stats.Writes, stats.Elapsed.Round(time.Millisecond))
	// Raw writes in stream order and fails on a lost write, so what it
	// sent is a prefix: the whole storm unless the minute ran out first
	// (a loaded machine), and the counter must equal that prefix.
	require.Positive(t, stats.Occurrences)
	occs = occs[:stats.Occurrences]

	want := occurrencesByNamespaceReason(occs)
	var stormTotal float64
	for _, n := range want {
		stormTotal += float64(n)
	}
	// The markers come before the storm in the watch (one watch over every
	// namespace, in the API server's order), so once the storm is counted,
	// so are they: everything beyond the storm is theirs, or wrong.
	var m collectorproc.Metrics
	var total, marked float64
	eventually(t, time.Minute, func() (bool, string) {
		m = scrape()
		diff := diffCounter(m, want)
		marked = m.Sum(occurrencesMetric, "k8s_namespace_name="+markerNS, "k8s_event_reason="+markerReason)
		total = stormTotal + marked
		if got := m.Sum(occurrencesMetric); len(diff) > 0 || got != total {
			return false, fmt.Sprintf("counter total %v, want %v (%v markers); per (namespace, reason) got/want: %s",
				got, total, marked, strings.Join(diff, "; "))
		}
		return true, ""
	})
	require.LessOrEqual(t, marked, float64(markers), "markers counted beyond the ones written")

	var samples []string
	for k, v := range m {
		if strings.HasPrefix(k, occurrencesMetric+"{") {
			samples = append(samples, fmt.Sprintf("%s %v", k, v))
		}
	}
	sort.Strings(samples)
	t.Logf("scraped:\n%s", strings.Join(samples, "\n"))
	own := c.scrape(t)
	span := time.Since(first) // every record counted in own was emitted within it
	recordsOut, counted := own.Pipeline().RecordsOut, own.Sum("otelcol_processor_eventseries_occurrences")
	t.Logf("%d (namespace, reason) pairs, %v occurrences: the processor emitted %v records, the counter says %v; took %v",
		len(want), total, recordsOut, m.Sum(occurrencesMetric), time.Since(start).Round(time.Second))
	assert.Equal(t, total, counted, "the processor counted every occurrence")
	withMarkers := occs[:len(occs):len(occs)]
	for i := range int(marked) {
		withMarkers = append(withMarkers, storm.Occurrence{Regarding: storm.Ref{Namespace: markerNS, Name: fmt.Sprint("marker-", i)}, Reason: markerReason})
	}
	bound := seriesRecordsBound(withMarkers, span, 10*time.Second, time.Minute)
	t.Logf("records-out bound over %v: %v (the occurrences: %v)", span.Round(time.Second), bound, total)
	assert.LessOrEqual(t, recordsOut, bound, "the counter is exact although the processor folded occurrences into series")
	assert.Zero(t, own.Sum("otelcol_connector_eventsum_skipped_records"))
}

// occurrencesByNamespaceReason counts a storm's occurrences per (namespace
// of the regarding object, reason).
func occurrencesByNamespaceReason(occs []storm.Occurrence) map[[2]string]int64 {
	out := map[[2]string]int64{}
	for i := range occs {
		out[[2]string{occs[i].Regarding.Namespace, occs[i].Reason}]++
	}
	return out
}

// diffCounter lists the (namespace, reason) pairs whose counter is not
// what want says, sorted, at most 10.
func diffCounter(m collectorproc.Metrics, want map[[2]string]int64) []string {
	var out []string
	for p, n := range want {
		if got := m.Sum(occurrencesMetric, "k8s_namespace_name="+p[0], "k8s_event_reason="+p[1]); got != float64(n) {
			out = append(out, fmt.Sprintf("%s/%s %v/%d", p[0], p[1], got, n))
		}
	}
	sort.Strings(out)
	return out[:min(len(out), 10)]
}

// seriesRecordsBound is the most records the eventseries processor (series
// mode, no restart, no eviction) can emit for occs when every occurrence
// reaches it within span, whatever the pace. A series emits a record at its
// first and second occurrence, at most one finished, and a heartbeat every
// heartbeat of its life: at most min(m, 3) records of its m occurrences plus
// its heartbeats. A key's next series starts only after an idle gap of
// finishAfter, so one key (the stream's distinct Event: regarding, type,
// reason, note, controller, instance; the processor's key is no finer) has
// at most 1+span/finishAfter series, and its series, one after another,
// at most span/heartbeat heartbeats.
func seriesRecordsBound(occs []storm.Occurrence, span, finishAfter, heartbeat time.Duration) float64 {
	type key struct {
		regarding                               storm.Ref
		typ, reason, note, controller, instance string
	}
	n := map[key]int64{}
	for i := range occs {
		o := &occs[i]
		n[key{o.Regarding, o.Type, o.Reason, o.Note, o.Controller, o.Instance}]++
	}
	series, beats := 1+int64(span/finishAfter), int64(span/heartbeat)
	var bound int64
	for _, m := range n {
		bound += min(m, 3*series)
		if m > 1 {
			bound += beats
		}
	}
	return float64(bound)
}

// TestSeriesRecordsBound: per key min(occurrences, 3 per possible series),
// plus the heartbeats of a key with a second occurrence.
func TestSeriesRecordsBound(t *testing.T) {
	parallel(t)
	pod := storm.Ref{Kind: "Pod", Namespace: "ns", Name: "p"}
	var occs []storm.Occurrence
	for range 20 {
		occs = append(occs, storm.Occurrence{Regarding: pod, Reason: "BackOff"})
	}
	occs = append(occs, storm.Occurrence{Regarding: pod, Reason: "Pulled"})
	assert.Equal(t, 3.0+1, seriesRecordsBound(occs, 9*time.Second, 10*time.Second, time.Minute))
	assert.Equal(t, 9.0+1, seriesRecordsBound(occs, 25*time.Second, 10*time.Second, time.Minute))
	assert.Equal(t, 20.0+2+1, seriesRecordsBound(occs, 150*time.Second, 10*time.Second, time.Minute))
}
