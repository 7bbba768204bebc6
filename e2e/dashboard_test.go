package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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

	"github.com/k8sevents/otel-k8sevents/internal/harness/faultproxy"
	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
	"github.com/k8sevents/otel-k8sevents/internal/harness/stormsend"
)

// dashboardFile is the Grafana dashboard, one file that a chart can ship.
const dashboardFile = "../deploy/dashboards/otel-k8sevents.json"

// dashboard is what the tests read of the Grafana JSON.
type dashboard struct {
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []dashVariable `json:"list"`
	} `json:"templating"`
}

type dashPanel struct {
	ID          int                      `json:"id"`
	Type        string                   `json:"type"`
	Title       string                   `json:"title"`
	Description string                   `json:"description"`
	GridPos     struct{ H, W, X, Y int } `json:"gridPos"`
	Targets     []struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // a collapsed row's
}

type dashVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
}

// dashQuery is one PromQL query of the dashboard and where it is.
type dashQuery struct {
	where, expr, legend string
}

func loadDashboard(t testing.TB) (dashboard, []byte) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d), dashboardFile)
	return d, raw
}

// allPanels is every panel, those of collapsed rows included.
func (d dashboard) allPanels() []dashPanel {
	var out []dashPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

func (d dashboard) variables() []string {
	var out []string
	for _, v := range d.Templating.List {
		out = append(out, v.Name)
	}
	return out
}

// labelValuesCall is a query variable's label_values(metric, label).
var labelValuesCall = regexp.MustCompile(`^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$`)

// queries are every panel's targets and every query variable, the latter
// as the PromQL that reads the same: group by (label) (metric).
func (d dashboard) queries() []dashQuery {
	var out []dashQuery
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, dashQuery{where: fmt.Sprintf("panel %q query %s", p.Title, tg.RefID), expr: tg.Expr, legend: tg.LegendFormat})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		expr := v.Definition
		if m := labelValuesCall.FindStringSubmatch(v.Definition); m != nil {
			expr = fmt.Sprintf("group by (%s) (%s)", m[2], m[1])
		}
		out = append(out, dashQuery{where: "variable " + v.Name, expr: expr})
	}
	return out
}

// TestDashboardIsPortable reads the dashboard as Grafana and a chart would:
// the Prometheus data source is a variable (no data source uid of one
// Grafana), every query parses in the subset the metric check reads, every
// panel has a title, a description and a place of its own on the grid, and
// docs/dashboard.md names every panel and every metric.
func TestDashboardIsPortable(t *testing.T) {
	parallel(t)
	d, raw := loadDashboard(t)
	var tree any
	require.NoError(t, json.Unmarshal(raw, &tree))
	sources := dataSources(tree)
	for _, ds := range sources {
		assert.Equal(t, map[string]any{"type": "prometheus", "uid": "${datasource}"}, ds, "every data source is the variable")
	}
	require.NotEmpty(t, d.Templating.List)
	dsVar := d.Templating.List[0]
	assert.Equal(t, "datasource", dsVar.Name)
	assert.Equal(t, "datasource", dsVar.Type)
	assert.JSONEq(t, `"prometheus"`, string(dsVar.Query))
	for _, v := range d.Templating.List[1:] {
		var q struct{ Query string }
		require.NoError(t, json.Unmarshal(v.Query, &q), "variable %s", v.Name)
		assert.Equal(t, v.Definition, q.Query, "variable %s: the query Grafana runs is the one it shows", v.Name)
	}

	docs, err := os.ReadFile("../docs/dashboard.md")
	require.NoError(t, err)
	panels, ids := d.allPanels(), map[int]bool{}
	for i, p := range panels {
		assert.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		assert.NotEmpty(t, p.Title, "panel %d", p.ID)
		assert.Contains(t, string(docs), p.Title, "docs/dashboard.md names every panel and row")
		g := p.GridPos
		assert.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q: grid %+v", p.Title, g)
		for _, o := range panels[:i] {
			h := o.GridPos
			assert.False(t, g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H, "panels %q and %q overlap", p.Title, o.Title)
		}
		if p.Type == "row" {
			continue
		}
		assert.NotEmpty(t, p.Description, "panel %q says what it answers", p.Title)
		assert.NotEmpty(t, p.Targets, "panel %q", p.Title)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			assert.False(t, refs[tg.RefID], "panel %q: refId %s twice", p.Title, tg.RefID)
			refs[tg.RefID] = true
		}
	}
	queries := d.queries()
	for _, q := range queries {
		parsed, err := parsePromQL(q.expr, d.variables())
		if !assert.NoError(t, err, q.where) {
			continue
		}
		assert.NotEmpty(t, parsed.selectors, "%s reads no metric", q.where)
		for _, s := range parsed.selectors {
			assert.Contains(t, string(docs), "`"+s.metric+"`", "docs/dashboard.md names every metric (%s)", q.where)
		}
	}
	assert.GreaterOrEqual(t, len(sources), len(queries), "every panel and query names its data source")
	t.Logf("%d panels, %d queries, %d data source references", len(panels), len(queries), len(sources))
}

// dataSources are the values of every "datasource" key in the JSON tree.
func dataSources(node any) []any {
	var out []any
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if k == "datasource" {
				out = append(out, v)
			} else {
				out = append(out, dataSources(v)...)
			}
		}
	case []any:
		for _, v := range n {
			out = append(out, dataSources(v)...)
		}
	}
	return out
}

// TestDashboardQueriesReadTheCollectorsMetrics runs the built collector
// with every component the dashboard shows, its own metrics at the
// default level (normal), on a real kube-apiserver: OTLP ingestion
// (otlp-ingestion.yaml) with the eventsum connector and prometheus exporter
// of exact-metrics.yaml beside the k8sevents exporter, which has a queue on
// disk as in the deployed shapes. A short storm goes
// through, and what the refusal and failure panels show happens once
// each: a request without a token and one with a token the API server does
// not know, a client that may create Events nowhere and goes over its
// record budget, a record for a namespace outside the exporter's
// allowlist, and, from a proxy in front of the API server, three creates
// answered 429 and a namespace whose creates fail until the exporter gives
// them up.
// Then every query of the dashboard is checked against what the
// collector's telemetry endpoint and the prometheus exporter serve: each
// metric there, with the labels its matchers, by (...) and legend use.
func TestDashboardQueriesReadTheCollectorsMetrics(t *testing.T) {
	parallel(t)
	binary(t)
	d, _ := loadDashboard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	occs := mergeStorms(stormWindow(t, "crashloop", 2*time.Minute), stormWindow(t, "imagepull", time.Minute))
	namespaces := storm.Namespaces(occs)
	const (
		outside = "dashboard-outside" // the sender may write there, the exporter may not
		giveUp  = "dashboard-give-up" // every create there fails until the exporter gives up
	)
	r := newAuthRig(t, outside, giveUp)
	require.NoError(t, stormsend.EnsureNamespaces(ctx, r.srv.Clientset(), occs))
	sender := r.serviceAccount(t, "default", "dashboard-sender", append(namespaces, outside, giveUp)...)
	stranger := r.serviceAccount(t, "default", "dashboard-stranger") // may create Events nowhere

	proxy, err := faultproxy.NewForREST(r.srv.RESTConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	dir := t.TempDir()
	exporterKube := filepath.Join(dir, "kubeconfig-exporter")
	require.NoError(t, proxy.WriteKubeconfig(exporterKube))
	creates := "/apis/events.k8s.io/v1/namespaces/%s/events"
	throttled := proxy.Add(faultproxy.Rule{Verb: "POST", Path: fmt.Sprintf(creates, namespaces[0]), Times: 3, Action: faultproxy.Fail, Code: 429})
	proxy.Add(faultproxy.Rule{Verb: "POST", Path: fmt.Sprintf(creates, giveUp), Action: faultproxy.Fail, Code: 503})

	// The budget holds the sender's records at once and refills slowly, so
	// that the stranger's second large request is over it.
	burst := len(occs) + 200
	grpcAddr, promPort := loopback(t), freePort(t)
	c := startCollectorAt(t, "normal", dir, readyConfig(t, "otlp-ingestion.yaml"), append(r.kubeEnv(t),
		"OTLP_GRPC_ENDPOINT="+grpcAddr, "OTLP_HTTP_ENDPOINT="+loopback(t), "REPORTING_CONTROLLER=k8sevents.io/e2e-dashboard",
		"CLIENT_RECORDS_PER_SECOND=1", fmt.Sprint("CLIENT_BURST=", burst), "POD_IP=127.0.0.1", fmt.Sprint("PROMETHEUS_PORT=", promPort)),
		dashboardOverlay(t, dir, exporterKube, append(namespaces, giveUp)))

	st, err := stormsend.OTLP(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+sender), grpcAddr, occs,
		stormsend.Options{Speed: 0, MaxDuration: time.Minute})
	require.NoError(t, err)
	conn := dial(t, grpcAddr, nil)
	for _, ns := range []string{outside, giveUp} {
		_, err = exportAs(ctx, conn, sender, appendOccurrences(plog.NewLogs(), ns, "web", "Started", 1, nil))
		require.NoError(t, err)
	}
	for _, token := range []string{"", "not-a-token"} {
		_, err := exportAs(ctx, conn, token, appendOccurrences(plog.NewLogs(), namespaces[0], "web", "Refused", 1, nil))
		require.Equal(t, codes.Unauthenticated, status.Code(err), "token %q: %v", token, err)
	}
	flood := appendOccurrences(plog.NewLogs(), namespaces[0], "web", "Forbidden", burst/2+1, nil)
	for try := 1; ; try++ {
		resp, err := exportAs(ctx, conn, stranger, flood)
		if status.Code(err) == codes.ResourceExhausted {
			break
		}
		require.NoError(t, err)
		require.Equal(t, int64(flood.LogRecordCount()), resp.PartialSuccess().RejectedLogRecords())
		require.Less(t, try, 5, "the stranger's requests were never over its budget")
	}

	// Settled: every occurrence counted, every record the processor emitted
	// written or given up by the exporter, the 429s answered (names outside
	// the dashboard's, so that a wrong name there cannot hold this wait).
	want := float64(st.Occurrences + 2)
	var gaveUp float64
	eventually(t, 2*time.Minute, func() (bool, string) {
		m := c.scrape(t)
		occ, out := m.Sum("otelcol_processor_eventseries_occurrences"), m.Sum("otelcol_processor_eventseries_records_out")
		gaveUp = m.Sum("otelcol_exporter_send_failed_log_records", "exporter=k8sevents")
		done := m.Sum("otelcol_exporter_sent_log_records", "exporter=k8sevents") + gaveUp
		return occ == want && done == out && gaveUp > 0 && throttled.Acted() == 3,
			fmt.Sprintf("occurrences %v of %v, exporter done with %v of %v records (%v given up), %d of 3 creates answered 429",
				occ, want, done, out, gaveUp, throttled.Acted())
	})
	m := c.scrape(t)
	p := m.Pipeline()
	t.Logf("storm: %d occurrences; processor: %v records out; exporter: %v writes, %v dropped, %v retried, %v given up",
		st.Occurrences, p.RecordsOut, p.Writes, p.PermanentFailures, p.RetryableFailures, gaveUp)
	assert.Equal(t, 1.0, p.PermanentFailures, "the record outside the allowlist")
	assert.GreaterOrEqual(t, p.RetryableFailures, 3.0, "the 429s and 503s")
	assert.Equal(t, 1.0, m.Sum(authRefusals, "reason=missing"))
	assert.Equal(t, 1.0, m.Sum(authRefusals, "reason=invalid"))

	endpoints := []string{fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metrics), fmt.Sprintf("http://127.0.0.1:%d/metrics", promPort)}
	var problems []string
	var selectors int
	eventually(t, 30*time.Second, func() (bool, string) {
		e, err := scrapeExposition(ctx, endpoints)
		if err != nil {
			return false, err.Error()
		}
		problems, selectors = nil, 0
		for _, q := range d.queries() {
			parsed, err := parsePromQL(q.expr, d.variables())
			require.NoError(t, err, q.where)
			selectors += len(parsed.selectors)
			for _, problem := range e.check(parsed, q.legend) {
				problems = append(problems, q.where+": "+problem)
			}
		}
		return len(problems) == 0, "what the dashboard reads and the collector does not serve:\n" + strings.Join(problems, "\n")
	})
	t.Logf("%d queries, %d selectors: every metric served with the labels they use", len(d.queries()), selectors)
}

// dashboardOverlay adds exact-metrics.yaml's eventsum connector and
// prometheus exporter to the ingestion pipeline, and gives the k8sevents
// exporter a queue on disk in dir, as the deployed shapes have (mirror.yaml,
// tier2-processor.yaml), kubeconfig and an allowlist of namespaces.
func dashboardOverlay(t *testing.T, dir, kubeconfig string, namespaces []string) string {
	t.Helper()
	var exact struct {
		Connectors map[string]any `json:"connectors"`
		Exporters  map[string]any `json:"exporters"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readyConfig(t, "exact-metrics.yaml")), &exact))
	overlay, err := yaml.Marshal(map[string]any{
		"extensions": map[string]any{"file_storage": map[string]any{"directory": dir}},
		"connectors": exact.Connectors,
		"exporters": map[string]any{
			"prometheus": exact.Exporters["prometheus"],
			"k8sevents": map[string]any{"kubeconfig": kubeconfig, "namespaces": namespaces,
				"sending_queue": map[string]any{"storage": "file_storage"},
				// A write that keeps failing is given up within seconds.
				"retry_on_failure": map[string]any{"initial_interval": "100ms", "max_interval": "500ms", "max_elapsed_time": "3s"}},
		},
		"service": map[string]any{
			"extensions": []string{"health_check", "k8stokenauth", "file_storage"},
			"pipelines": map[string]any{
				"logs":    map[string]any{"exporters": []string{"k8sevents", "eventsum"}},
				"metrics": map[string]any{"receivers": []string{"eventsum"}, "exporters": []string{"prometheus"}},
			},
		},
	})
	require.NoError(t, err)
	return string(overlay)
}

// scrapeExposition reads every endpoint into one exposition.
func scrapeExposition(ctx context.Context, urls []string) (exposition, error) {
	var e exposition
	for _, url := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return e, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return e, fmt.Errorf("scrape %s: %w", url, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return e, fmt.Errorf("scrape %s: %w", url, err)
		}
		if err := e.add(raw); err != nil {
			return e, fmt.Errorf("scrape %s: %w", url, err)
		}
	}
	return e, nil
}
