package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// TestDashboardQueriesReadTheCollectorsMetrics runs the built collector
// with every component the dashboard and the alerts read, its own metrics
// as the chart configures them (deploy/'s chart.yaml of each workload: the
// reader, the level, the exact counts), on a real kube-apiserver: OTLP
// ingestion (otlp-ingestion.yaml, one collector for both tiers, scraped as
// tier 2's target) with a queue on disk as in the deployed shapes, and the
// mirror as deploy/collector.yaml runs it (its ConfigMap's two files, its
// container's environment). A short storm goes through, and what the
// refusal and failure panels show happens once each: a request without a
// token and one with a token the API server does not know, a client that
// may create Events nowhere and goes over its record budget, a record for a
// namespace outside the exporter's allowlist, and, from a proxy in front of
// the API server, three creates answered 429 and a namespace whose creates
// fail until the exporter gives them up.
// Then every query of the dashboard and every alert of
// deploy/monitoring/prometheusrule.yaml is checked against what the
// collectors serve, each series with the labels the chart's ServiceMonitor
// gives it (chartTargets: namespace, job, pod, ...; cluster as an
// external label): each metric there, with the labels its matchers,
// by (...) and legend use.
func TestDashboardQueriesReadTheCollectorsMetrics(t *testing.T) {
	parallel(t)
	binary(t)
	d, _ := loadDashboard(t)
	targets, rules := chartTargets(t), alertRules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	occs := mergeStorms(stormWindow(t, "crashloop", 2*time.Minute), stormWindow(t, "imagepull", time.Minute))
	namespaces := storm.Namespaces(occs)
	const (
		outside = "dashboard-outside" // the sender may write there, the exporter may not
		retried = "dashboard-retried" // its first creates fail: the exporter retries them until written
	)
	r := newAuthRig(t, outside, retried, targets["otel-k8sevents"].labels["namespace"])
	require.NoError(t, stormsend.EnsureNamespaces(ctx, r.srv.Clientset(), occs))
	sender := r.serviceAccount(t, "default", "dashboard-sender", append(namespaces, outside, retried)...)
	stranger := r.serviceAccount(t, "default", "dashboard-stranger") // may create Events nowhere

	proxy, err := faultproxy.NewForREST(r.srv.RESTConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	dir := t.TempDir()
	exporterKube := filepath.Join(dir, "kubeconfig-exporter")
	require.NoError(t, proxy.WriteKubeconfig(exporterKube))
	creates := "/apis/events.k8s.io/v1/namespaces/%s/events"
	throttled := proxy.Add(faultproxy.Rule{Verb: "POST", Path: fmt.Sprintf(creates, namespaces[0]), Times: 3, Action: faultproxy.Fail, Code: 429})
	failed := proxy.Add(faultproxy.Rule{Verb: "POST", Path: fmt.Sprintf(creates, retried), Times: 3, Action: faultproxy.Fail, Code: 503})

	mirror := startChartMirror(t, targets["otel-k8sevents"], r.kubeEnv(t))
	// The budget holds the sender's records at once and refills slowly, so
	// that the stranger's second large request is over it.
	burst := len(occs) + 200
	grpcAddr := loopback(t)
	tier2Overlay, ingest := targets["otelcol-tier2"].onLoopback(t)
	c := startScraped(t, filepath.Join(dir, "ingest"), readyConfig(t, "otlp-ingestion.yaml"), append(r.kubeEnv(t),
		"OTLP_GRPC_ENDPOINT="+grpcAddr, "OTLP_HTTP_ENDPOINT="+loopback(t), "REPORTING_CONTROLLER=k8sevents.io/e2e-dashboard",
		"CLIENT_RECORDS_PER_SECOND=1", fmt.Sprint("CLIENT_BURST=", burst), "POD_IP=127.0.0.1"),
		tier2Overlay, dashboardOverlay(t, dir, exporterKube, append(namespaces, retried)))
	scrape := func(tg scrapedTarget, col *collectorproc.Collector) collectorproc.Metrics {
		m, err := col.Metrics(ctx, tg.urls[0])
		require.NoError(t, err)
		return m
	}

	st, err := stormsend.OTLP(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+sender), grpcAddr, occs,
		stormsend.Options{Speed: 0, MaxDuration: time.Minute})
	require.NoError(t, err)
	provokeRefusals(ctx, t, grpcAddr, sender, stranger, namespaces[0], burst, outside, retried)

	// Settled: every occurrence counted, every record the processor emitted
	// written, the 429s and 503s answered (names outside the dashboard's, so
	// that a wrong name there cannot hold this wait); the mirror has emitted
	// what it watched.
	want := float64(st.Occurrences + 2)
	eventually(t, 2*time.Minute, func() (bool, string) {
		m := scrape(ingest, c)
		occ, out := m.Sum("otelcol_processor_eventseries_occurrences"), m.Pipeline().RecordsOut
		done := m.Sum("otelcol_exporter_sent_log_records", "exporter=k8sevents")
		lagged := scrape(mirror.target, mirror.c).Sum("otelcol_receiver_k8sevents_emit_lag_count")
		return occ == want && done == out && throttled.Acted() == 3 && failed.Acted() == 3 && lagged > 0,
			fmt.Sprintf("occurrences %v of %v, exporter done with %v of %v records, %d of 3 creates answered 429, %d of 3 answered 503, the mirror emitted %v",
				occ, want, done, out, throttled.Acted(), failed.Acted(), lagged)
	})
	m := scrape(ingest, c)
	p := m.Pipeline()
	t.Logf("storm: %d occurrences; processor: %v records out; exporter: %v writes, %v dropped, %v retried",
		st.Occurrences, p.RecordsOut, p.Writes, p.PermanentFailures, p.RetryableFailures)
	assert.Equal(t, 1.0, p.PermanentFailures, "the record outside the allowlist")
	assert.GreaterOrEqual(t, p.RetryableFailures, 6.0, "the 429s and 503s, each retried")
	assert.Equal(t, 1.0, m.Sum("otelcol_receiver_k8seventsotlp_refused_requests", "reason=no_token"), "refused at the stream's headers")
	assert.Equal(t, 1.0, m.Sum(authRefusals, "reason=invalid"))

	checkQueriesAgainstScrape(ctx, t, d, rules, []scrapedTarget{ingest, mirror.target})
}

// provokeRefusals sends what the refusal panels and alerts show: records
// for a namespace outside the exporter's allowlist and one whose first
// writes fail, requests without a token and with an unknown one, and a
// client allowed nowhere over its budget.
func provokeRefusals(ctx context.Context, t *testing.T, grpcAddr, sender, stranger, ns string, burst int, outside, retried string) {
	t.Helper()
	conn := dial(t, grpcAddr, nil)
	for _, in := range []string{outside, retried} {
		_, err := exportAs(ctx, conn, sender, appendOccurrences(plog.NewLogs(), in, "web", "Started", 1, nil))
		require.NoError(t, err)
	}
	for _, token := range []string{"", "not-a-token"} {
		_, err := exportAs(ctx, conn, token, appendOccurrences(plog.NewLogs(), ns, "web", "Refused", 1, nil))
		require.Equal(t, codes.Unauthenticated, status.Code(err), "token %q: %v", token, err)
	}
	flood := appendOccurrences(plog.NewLogs(), ns, "web", "Forbidden", burst/2+1, nil)
	for try := 1; ; try++ {
		resp, err := exportAs(ctx, conn, stranger, flood)
		if status.Code(err) == codes.ResourceExhausted {
			return
		}
		require.NoError(t, err)
		require.Equal(t, int64(flood.LogRecordCount()), resp.PartialSuccess().RejectedLogRecords())
		require.Less(t, try, 5, "the stranger's requests were never over its budget")
	}
}

// chartMirror is the mirror of deploy/ running here, scraped as its target.
type chartMirror struct {
	c      *collectorproc.Collector
	target scrapedTarget
}

// startChartMirror runs the mirror as deploy/collector.yaml's pod would
// (its two configuration files, its container's environment), as the API
// server's admin (kubeEnv), its listeners on loopback ports; it returns
// once the receiver's watch is open.
func startChartMirror(t *testing.T, tg chartTarget, kubeEnv []string) chartMirror {
	t.Helper()
	overlay, target := tg.onLoopback(t)
	dir := t.TempDir()
	c := startScraped(t, dir, tg.configs[0], tg.env(t, append(kubeEnv, "STORAGE_DIR="+filepath.Join(dir, "storage"))...), overlay)
	eventually(t, 2*time.Minute, func() (bool, string) {
		m, err := c.Metrics(context.Background(), target.urls[0])
		if err != nil {
			return false, err.Error()
		}
		n := m.Sum("otelcol_receiver_k8sevents_watches_open")
		return n == 1, fmt.Sprintf("the mirror's watches open: %v", n)
	})
	return chartMirror{c: c, target: target}
}

// checkQueriesAgainstScrape checks every query of the dashboard and every
// alert against the targets' endpoints, each series with its target's
// labels.
func checkQueriesAgainstScrape(ctx context.Context, t *testing.T, d dashboard, rules map[string]string, targets []scrapedTarget) {
	t.Helper()
	queries := d.queries()
	var names []string
	for name := range rules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		queries = append(queries, dashQuery{where: "alert " + name, expr: rules[name]})
	}
	var problems []string
	var selectors int
	eventually(t, 30*time.Second, func() (bool, string) {
		e, err := scrapeTargets(ctx, targets)
		if err != nil {
			return false, err.Error()
		}
		problems, selectors = nil, 0
		for _, q := range queries {
			parsed, err := parsePromQL(q.expr, d.variables())
			require.NoError(t, err, q.where)
			selectors += len(parsed.selectors)
			for _, problem := range e.check(parsed, q.legend) {
				problems = append(problems, q.where+": "+problem)
			}
		}
		return len(problems) == 0, "what the dashboard and the alerts read and the collectors do not serve:\n" + strings.Join(problems, "\n")
	})
	t.Logf("%d queries and alerts, %d selectors: every metric served with the labels they use", len(queries), selectors)
}

// dashboardOverlay gives the k8sevents exporter a queue on disk in dir, as
// the deployed shapes have (mirror.yaml, tier2-processor.yaml), kubeconfig,
// an allowlist of namespaces, and retries that give up within seconds.
func dashboardOverlay(t *testing.T, dir, kubeconfig string, namespaces []string) string {
	t.Helper()
	overlay, err := yaml.Marshal(map[string]any{
		"extensions": map[string]any{"file_storage": map[string]any{"directory": dir}},
		"exporters": map[string]any{
			"k8sevents": map[string]any{"kubeconfig": kubeconfig, "namespaces": namespaces,
				"sending_queue":    map[string]any{"storage": "file_storage"},
				"retry_on_failure": map[string]any{"initial_interval": "100ms", "max_interval": "500ms", "max_elapsed_time": "3s"}},
		},
		"service": map[string]any{"extensions": []string{"health_check", "k8stokenauth", "file_storage"}},
	})
	require.NoError(t, err)
	return string(overlay)
}
