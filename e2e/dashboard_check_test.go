package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/k8sevents/otel-k8sevents/internal/harness/collectorproc"
)

// exposition is what Prometheus endpoints served: each metric's series
// (their label sets) and each metric family's type.
type exposition struct {
	series map[string][]map[string]string
	types  map[string]string // family name (# TYPE) → counter, gauge, histogram, ...
}

// add reads one endpoint's text into e.
func (e *exposition) add(raw []byte) error { return e.addLabelled(raw, nil) }

// addLabelled reads one endpoint's text into e, every series with the
// target's labels too (as Prometheus adds them at the scrape).
func (e *exposition) addLabelled(raw []byte, target map[string]string) error {
	if e.series == nil {
		e.series, e.types = map[string][]map[string]string{}, map[string]string{}
	}
	m, err := collectorproc.ParseMetrics(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	for key := range m {
		name, labels := collectorproc.Series(key)
		for k, v := range target {
			labels[k] = v
		}
		e.series[name] = append(e.series[name], labels)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			e.types[f[2]] = f[3]
		}
	}
	return sc.Err()
}

// typeOf is the type of the family a sample name belongs to: counters
// may be written name_total under # TYPE name, histograms name_bucket.
func (e exposition) typeOf(name string) string {
	if t, ok := e.types[name]; ok {
		return t
	}
	for _, suffix := range []string{"_total", "_bucket", "_sum", "_count"} {
		if t, ok := e.types[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) {
			return t
		}
	}
	return ""
}

// check lists what q and its legend template read that the endpoints do
// not serve: a metric that is not there, a matcher's label that no series
// of it has, matchers that select nothing, a label of by (...) or of the
// legend missing on a selected series, a legend label the aggregation
// drops, a counter function over a gauge.
func (e exposition) check(q promQuery, legend string) []string {
	var problems []string
	want := slices.Clone(q.grouping)
	for _, l := range legendLabels(legend) {
		switch {
		case !q.aggregated: // the selectors' own labels
			want = append(want, l)
		case !slices.Contains(q.grouping, l):
			problems = append(problems, fmt.Sprintf("legend {{%s}}: the aggregation keeps only (%s), every series would show it empty",
				l, strings.Join(q.grouping, ", ")))
		}
	}
	for _, s := range q.selectors {
		problems = append(problems, e.checkSelector(s, want)...)
	}
	return problems
}

func (e exposition) checkSelector(s promSelector, labels []string) []string {
	all, ok := e.series[s.metric]
	if !ok {
		msg := s.metric + ": not on the endpoints"
		if near := e.nearNames(s.metric); len(near) > 0 {
			msg += "; they serve " + strings.Join(near, ", ")
		}
		return []string{msg}
	}
	var problems []string
	if t := e.typeOf(s.metric); s.rated && t != "counter" && t != "histogram" {
		problems = append(problems, fmt.Sprintf("%s: rate or increase over a %s", s.metric, t))
	}
	selected := all
	for _, m := range s.matchers {
		if !anyHas(all, m.label) {
			return append(problems, fmt.Sprintf("%s: no series has label %s (its labels: %s)", s.metric, m.label, labelNames(all)))
		}
		selected = slices.DeleteFunc(slices.Clone(selected), func(ls map[string]string) bool { return !m.matches(ls[m.label]) })
		if len(selected) == 0 {
			return append(problems, fmt.Sprintf("%s: %s%s%q selects no series (values of %s: %s)",
				s.metric, m.label, m.op, m.value, m.label, labelValues(all, m.label)))
		}
	}
	for _, l := range labels {
		missing := len(slices.DeleteFunc(slices.Clone(selected), func(ls map[string]string) bool { _, ok := ls[l]; return ok }))
		if missing > 0 {
			problems = append(problems, fmt.Sprintf("%s: label %s missing on %d of its %d selected series (its labels: %s)",
				s.metric, l, missing, len(selected), labelNames(selected)))
		}
	}
	return problems
}

// matches applies a matcher as Prometheus does: regular expressions are
// anchored at both ends, and a missing label is the empty value.
func (m promMatcher) matches(v string) bool {
	switch m.op {
	case "=":
		return v == m.value
	case "!=":
		return v != m.value
	}
	ok := regexp.MustCompile("^(?:" + m.value + ")$").MatchString(v)
	return ok == (m.op == "=~")
}

// nearNames are the served names that differ from name in one
// underscore-separated part: a renamed component or a misspelt word.
func (e exposition) nearNames(name string) []string {
	want := strings.Split(name, "_")
	var out []string
	for have := range e.series {
		parts := strings.Split(have, "_")
		if len(parts) != len(want) {
			continue
		}
		diff := 0
		for i := range parts {
			if parts[i] != want[i] {
				diff++
			}
		}
		if diff == 1 {
			out = append(out, have)
		}
	}
	sort.Strings(out)
	return out
}

func anyHas(series []map[string]string, label string) bool {
	return slices.ContainsFunc(series, func(ls map[string]string) bool { _, ok := ls[label]; return ok })
}

func labelNames(series []map[string]string) string {
	set := map[string]bool{}
	for _, ls := range series {
		for k := range ls {
			set[k] = true
		}
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

func labelValues(series []map[string]string, label string) string {
	set := map[string]bool{}
	for _, ls := range series {
		if v, ok := ls[label]; ok {
			set[v] = true
		}
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

// TestDashboardCheckFindsWhatIsNotServed: each mistake a query can make
// against an endpoint is reported, naming what is served instead; a query
// that reads what is served passes.
func TestDashboardCheckFindsWhatIsNotServed(t *testing.T) {
	parallel(t)
	var e exposition
	require.NoError(t, e.add([]byte(`# TYPE otelcol_exporter_k8sevent_writes counter
otelcol_exporter_k8sevent_writes{outcome="created"} 3
otelcol_exporter_k8sevent_writes{outcome="patched"} 1
# TYPE otelcol_exporter_queue_size gauge
otelcol_exporter_queue_size{exporter="k8sevents"} 0
# TYPE k8s_event_occurrences counter
k8s_event_occurrences_total{k8s_event_reason="BackOff",k8s_namespace_name="shop"} 7
`)))
	cases := []struct{ expr, legend, problem string }{
		{`sum by (outcome) (rate(otelcol_exporter_k8sevent_writes[$__rate_interval]))`, "{{outcome}}", ""},
		{`sum by (k8s_event_reason) (increase(k8s_event_occurrences_total{k8s_namespace_name=~"$namespace"}[$__range]))`, "", ""},
		{`max(otelcol_exporter_queue_size{exporter=~"k8sevents(/.*)?"})`, "", ""},
		{`sum(rate(otelcol_exporter_k8sevents_writes[5m]))`, "",
			"otelcol_exporter_k8sevents_writes: not on the endpoints; they serve otelcol_exporter_k8sevent_writes"},
		{`sum by (reason) (rate(otelcol_exporter_k8sevent_writes[5m]))`, "",
			"otelcol_exporter_k8sevent_writes: label reason missing on 2 of its 2 selected series (its labels: outcome)"},
		{`sum by (outcome) (rate(otelcol_exporter_k8sevent_writes[5m]))`, "{{reason}}",
			"legend {{reason}}: the aggregation keeps only (outcome), every series would show it empty"},
		{`sum(rate(otelcol_exporter_k8sevent_writes[5m]))`, "{{outcome}}",
			"legend {{outcome}}: the aggregation keeps only (), every series would show it empty"},
		{`otelcol_exporter_queue_size`, "{{exporter}}", ""},
		{`sum(rate(otelcol_exporter_k8sevent_writes{result="created"}[5m]))`, "",
			"otelcol_exporter_k8sevent_writes: no series has label result (its labels: outcome)"},
		{`sum(rate(otelcol_exporter_k8sevent_writes{outcome="stale"}[5m]))`, "",
			`otelcol_exporter_k8sevent_writes: outcome="stale" selects no series (values of outcome: created, patched)`},
		{`max(otelcol_exporter_queue_size{exporter=~"k8sevent"})`, "", // anchored, as in Prometheus
			`otelcol_exporter_queue_size: exporter=~"k8sevent" selects no series (values of exporter: k8sevents)`},
		{`sum(rate(otelcol_exporter_queue_size[5m]))`, "", "otelcol_exporter_queue_size: rate or increase over a gauge"},
	}
	for _, c := range cases {
		q, err := parsePromQL(c.expr, []string{"datasource", "namespace"})
		require.NoError(t, err)
		var want []string
		if c.problem != "" {
			want = []string{c.problem}
		}
		assert.Equal(t, want, e.check(q, c.legend), c.expr)
	}
}

// TestDashboardQueryParser reads selectors, their matchers (a dashboard
// variable stands for any value) and by (...) labels, and refuses by name
// what is outside the subset the check understands.
func TestDashboardQueryParser(t *testing.T) {
	parallel(t)
	vars := []string{"datasource", "namespace"}
	q, err := parsePromQL(`histogram_quantile(0.99, sum by (le) (rate(x_bucket{a="b", c=~"${namespace}"}[$__rate_interval]))) / -2`+
		` + sum(y) by (k) or vector(0)`, vars)
	require.NoError(t, err)
	assert.Equal(t, promQuery{
		selectors: []promSelector{
			{metric: "x_bucket", rated: true, matchers: []promMatcher{{"a", "=", "b"}, {"c", "=~", ".*"}}},
			{metric: "y"},
		},
		grouping:   []string{"le", "k"},
		aggregated: true,
	}, q)
	for expr, problem := range map[string]string{
		`sum(rate(a[5m])) / on(x) sum(rate(b[5m]))`: "on: outside the dashboard's PromQL subset",
		`sum without (x) (a)`:                       `want "(", have "without"`,
		`rates(a[5m])`:                              "unknown function rates",
		`rate(a)`:                                   "a: a range [..] belongs to the argument of rate, increase, irate, and only there",
		`a[5m]`:                                     "a: a range [..] belongs",
		`a{b=~"$nope"}`:                             "b: $nope is not a variable of the dashboard",
		`a{b="$namespace"}`:                         "b: a variable (All, several values) needs a regular-expression matcher, not =",
		`sum(a) offset 5m`:                          `unexpected "offset"`,
		`a @ 1700000000`:                            "cannot read",
	} {
		_, err := parsePromQL(expr, vars)
		if assert.Error(t, err, expr) {
			assert.Contains(t, err.Error(), problem, expr)
		}
	}
}
