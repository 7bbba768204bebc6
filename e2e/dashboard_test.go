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
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
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
	Panels      []dashPanel `json:"panels"` // a collapsed row's
	FieldConfig struct {
		Defaults struct {
			Thresholds *struct {
				Mode  string `json:"mode"`
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// colorAt is the panel's threshold color for value v (the last step at or
// below it).
func (p dashPanel) colorAt(v float64) string {
	color := ""
	for _, s := range p.FieldConfig.Defaults.Thresholds.Steps {
		if s.Value == nil || *s.Value <= v {
			color = s.Color
		}
	}
	return color
}

// healthyValues are what panels show on a healthy cluster where it is not
// 0 (no refusal, no retry, no drop, an empty queue): the mirror's leader
// has its watch open.
var healthyValues = map[string]float64{"Watches open": 1}

// collectorVariables are the variables every query of a collector's
// metrics follows, as kube-prometheus dashboards do.
var collectorVariables = []string{"cluster", "namespace", "job", "pod"}

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

// labelValuesCall is a query variable's label_values(selector, label).
var labelValuesCall = regexp.MustCompile(`^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*(?:\{[^}]*\})?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$`)

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
// Grafana), every query parses in the subset the metric check reads and
// follows the cluster, namespace, job and pod variables, every panel has a
// title, a description, a place of its own on the grid and thresholds
// that are green on a healthy cluster, and docs/dashboard.md names every
// panel and every metric.
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
		if assert.NotNil(t, p.FieldConfig.Defaults.Thresholds, "panel %q: thresholds of its own, not Grafana's red at 80", p.Title) {
			assert.Equal(t, "green", p.colorAt(healthyValues[p.Title]), "panel %q on a healthy cluster", p.Title)
		}
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
			if !strings.HasPrefix(q.where, "panel ") {
				break // the variables' own queries
			}
			var scoped []string
			for _, m := range s.matchers {
				if slices.Contains(collectorVariables, m.label) && m.op == "=~" {
					scoped = append(scoped, m.label)
				}
			}
			assert.ElementsMatch(t, collectorVariables, scoped, "%s: %s follows the collector variables", q.where, s.metric)
		}
		for _, s := range parsed.selectors {
			assert.Contains(t, string(docs), "`"+s.metric+"`", "docs/dashboard.md names every metric (%s)", q.where)
		}
	}
	assert.GreaterOrEqual(t, len(sources), len(queries), "every panel and query names its data source")
	t.Logf("%d panels, %d queries, %d data source references", len(panels), len(queries), len(sources))
}

// refusalComponents are the metadata of the components that authenticate
// and authorize apps on OTLP ingestion: what they refuse, and what they ask
// the API server, is what an operator reads to see who is turned away.
var refusalComponents = []string{
	"../receiver/k8seventsotlpreceiver/metadata.yaml",
	"../extension/k8stokenauthextension/metadata.yaml",
}

// byAttribute is how a metric's description names the attribute its series
// are split by, for metrics that declare no attributes of their own.
var byAttribute = regexp.MustCompile(`by attribute ([a-z_]+)`)

// TestDashboardShowsEveryRefusal: every metric of refusalComponents is read
// by a panel, and split there by each attribute it has (refusals by
// reason, reviews by outcome), so that a refusal of any kind, before or
// after the records are read, shows on the dashboard by its reason.
func TestDashboardShowsEveryRefusal(t *testing.T) {
	parallel(t)
	d, _ := loadDashboard(t)
	groupings := map[string][][]string{} // metric -> the by (...) labels of each panel query reading it
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			q, err := parsePromQL(tg.Expr, d.variables())
			require.NoError(t, err, "panel %q query %s", p.Title, tg.RefID)
			for _, s := range q.selectors {
				groupings[s.metric] = append(groupings[s.metric], q.grouping)
			}
		}
	}
	var checked int
	for _, f := range refusalComponents {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var md struct {
			Attributes map[string]struct {
				NameOverride string `json:"name_override"`
			} `json:"attributes"`
			Telemetry struct {
				Metrics map[string]struct {
					Description string   `json:"description"`
					Attributes  []string `json:"attributes"`
					Histogram   any      `json:"histogram"`
				} `json:"metrics"`
			} `json:"telemetry"`
		}
		require.NoError(t, yaml.Unmarshal(raw, &md), f)
		for name, m := range md.Telemetry.Metrics {
			checked++
			served := "otelcol_" + name
			if m.Histogram != nil {
				served += "_bucket"
			}
			read, ok := groupings[served]
			if !assert.True(t, ok, "%s (%s): no panel reads it", served, f) {
				continue
			}
			var labels []string
			for _, a := range m.Attributes {
				if o := md.Attributes[a].NameOverride; o != "" {
					a = o
				}
				labels = append(labels, a)
			}
			for _, match := range byAttribute.FindAllStringSubmatch(m.Description, -1) {
				labels = append(labels, match[1])
			}
			for _, l := range labels {
				assert.True(t, slices.ContainsFunc(read, func(g []string) bool { return slices.Contains(g, l) }),
					"%s: no panel shows it by %s", served, l)
			}
		}
	}
	assert.GreaterOrEqual(t, checked, 6, "the receiver's and the extension's metrics")
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

// scrape reads every endpoint into e, each series with the target's
// labels (none: as served).
func (e *exposition) scrape(ctx context.Context, urls []string, target map[string]string) error {
	for _, url := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("scrape %s: %w", url, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("scrape %s: %w", url, err)
		}
		if err := e.addLabelled(raw, target); err != nil {
			return fmt.Errorf("scrape %s: %w", url, err)
		}
	}
	return nil
}

// TestMetricsDocListsEveryMetric: docs/metrics.md lists every metric of
// every component's metadata.yaml under the name the collector serves it
// to Prometheus (otelcol_<name>, a histogram's _bucket), with its type.
func TestMetricsDocListsEveryMetric(t *testing.T) {
	parallel(t)
	doc, err := os.ReadFile("../docs/metrics.md")
	require.NoError(t, err)
	files, err := filepath.Glob("../*/*/metadata.yaml")
	require.NoError(t, err)
	var listed int
	for _, f := range files {
		var md struct {
			Telemetry struct {
				Metrics map[string]map[string]any `json:"metrics"`
			} `json:"telemetry"`
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(raw, &md), f)
		for name, m := range md.Telemetry.Metrics {
			kind, served := "counter", "otelcol_"+name
			switch {
			case m["histogram"] != nil:
				kind, served = "histogram", served+"_bucket"
			case m["gauge"] != nil:
				kind = "gauge"
			}
			assert.True(t, strings.Contains(string(doc), "| `"+served+"` | "+kind+" |"), "docs/metrics.md lists %s (%s) of %s", served, kind, f)
			listed++
		}
	}
	assert.Greater(t, listed, 25, "every component's metrics")
}
