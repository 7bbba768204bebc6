package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The dashboard's PromQL, read by a parser of its own rather than
// Prometheus's (github.com/prometheus/prometheus/promql/parser would bring
// the Prometheus server's module into go.mod for one test). It accepts the
// subset the dashboard uses and refuses the rest by name, so a query that
// leaves the subset fails TestDashboardIsPortable rather than going
// unchecked: selectors with label matchers and ranges, aggregations with
// by (...), the functions of knownFunctions, number literals, and the
// arithmetic, comparison and set operators without on/ignoring/group_*
// (every selector of a query then carries the query's grouping labels,
// which exposition.check relies on).

// promQuery is what one expression reads.
type promQuery struct {
	selectors  []promSelector
	grouping   []string // the labels of every by (...), in order of appearance
	aggregated bool     // an aggregation keeps only its by (...) labels
}

// promSelector is one vector selector.
type promSelector struct {
	metric   string
	matchers []promMatcher
	rated    bool // the argument of a counter function (rate, increase, irate)
}

type promMatcher struct{ label, op, value string }

// aggregations take by (...) before or after their arguments.
var aggregations = []string{"sum", "min", "max", "avg", "count", "topk", "bottomk", "quantile", "group"}

// knownFunctions are the functions a query may call; counterFunctions take
// a range of a counter.
var (
	knownFunctions   = []string{"rate", "increase", "irate", "histogram_quantile", "clamp_min", "clamp_max", "vector", "scalar", "round", "abs"}
	counterFunctions = []string{"rate", "increase", "irate"}
	refusedKeywords  = []string{"on", "ignoring", "group_left", "group_right", "without", "offset", "bool", "by"}
	setOperators     = []string{"and", "or", "unless"}
	binaryOperators  = []string{"+", "-", "*", "/", "%", "^", "==", "!=", ">=", "<=", ">", "<"}
)

// grafanaIntervals are Grafana's built-in variables a range may hold.
var grafanaIntervals = strings.NewReplacer("${__rate_interval}", "5m", "$__rate_interval", "5m",
	"${__interval}", "5m", "$__interval", "5m", "${__range}", "1h", "$__range", "1h")

// templateRef is a reference to a dashboard variable: $name, ${name} or ${name:format}.
var templateRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}?`)

// parsePromQL reads expr; vars are the dashboard's variables, which may
// appear only in the value of a regular-expression matcher (=~, !~), where
// they stand for any value (All is .*).
func parsePromQL(expr string, vars []string) (promQuery, error) {
	toks, err := lexPromQL(grafanaIntervals.Replace(expr))
	if err != nil {
		return promQuery{}, err
	}
	p := &promParser{toks: toks, vars: vars}
	if err := p.expr(false); err != nil {
		return promQuery{}, fmt.Errorf("%q: %w", expr, err)
	}
	if p.i < len(p.toks) {
		return promQuery{}, fmt.Errorf("%q: unexpected %q", expr, p.toks[p.i].text)
	}
	return p.q, nil
}

type promToken struct {
	kind byte // 'i' identifier, 's' string, 'n' number, 'r' range [..], 'p' punctuation
	text string
}

var promLexer = regexp.MustCompile(`^(?:` +
	`(?P<i>[A-Za-z_:][A-Za-z0-9_:]*)|` +
	`(?P<s>"(?:[^"\\]|\\.)*")|` +
	`(?P<n>[0-9]+(?:\.[0-9]+)?)|` +
	`(?P<r>\[[0-9]+[smhdw]\])|` +
	`(?P<p>=~|!~|!=|==|>=|<=|[-+*/%^(){},=<>]))`)

func lexPromQL(s string) ([]promToken, error) {
	var toks []promToken
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		m := promLexer.FindStringSubmatchIndex(s)
		if m == nil {
			return nil, fmt.Errorf("cannot read %q", s)
		}
		for g, name := range promLexer.SubexpNames() {
			if name != "" && m[2*g] >= 0 {
				toks = append(toks, promToken{kind: name[0], text: s[m[2*g]:m[2*g+1]]})
			}
		}
		s = s[m[1]:]
	}
	return toks, nil
}

type promParser struct {
	toks []promToken
	i    int
	vars []string
	q    promQuery
}

func (p *promParser) peek() promToken {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return promToken{}
}

func (p *promParser) take(text string) error {
	if t := p.peek(); t.text != text || t.kind == 's' {
		return fmt.Errorf("want %q, have %q", text, t.text)
	}
	p.i++
	return nil
}

// expr reads operands joined by binary operators; rated says the
// expression is a counter function's argument.
func (p *promParser) expr(rated bool) error {
	for {
		if err := p.operand(rated); err != nil {
			return err
		}
		t := p.peek()
		if !(t.kind == 'p' && slices.Contains(binaryOperators, t.text)) && !(t.kind == 'i' && slices.Contains(setOperators, t.text)) {
			return nil
		}
		p.i++
	}
}

func (p *promParser) operand(rated bool) error {
	t := p.peek()
	switch {
	case t.kind == 'n':
		p.i++
		return nil
	case t.kind == 'p' && t.text == "-":
		p.i++
		return p.operand(rated)
	case t.kind == 'p' && t.text == "(":
		p.i++
		if err := p.expr(rated); err != nil {
			return err
		}
		return p.take(")")
	case t.kind != 'i':
		return fmt.Errorf("unexpected %q", t.text)
	case slices.Contains(refusedKeywords, t.text):
		return fmt.Errorf("%s: outside the dashboard's PromQL subset", t.text)
	case slices.Contains(aggregations, t.text):
		p.i++
		return p.aggregation()
	}
	p.i++
	if p.peek().text == "(" {
		if !slices.Contains(knownFunctions, t.text) {
			return fmt.Errorf("unknown function %s", t.text)
		}
		p.i++
		if err := p.args(slices.Contains(counterFunctions, t.text)); err != nil {
			return err
		}
		return p.take(")")
	}
	return p.selector(t.text, rated)
}

// aggregation reads `[by (l, ...)] (args) [by (l, ...)]` after its name.
func (p *promParser) aggregation() error {
	p.q.aggregated = true
	if err := p.by(); err != nil {
		return err
	}
	if err := p.take("("); err != nil {
		return err
	}
	if err := p.args(false); err != nil {
		return err
	}
	if err := p.take(")"); err != nil {
		return err
	}
	return p.by()
}

func (p *promParser) by() error {
	if p.peek().text != "by" {
		return nil
	}
	p.i++
	return p.list("(", ")", func() error {
		t := p.peek()
		if t.kind != 'i' {
			return fmt.Errorf("by: want a label, have %q", t.text)
		}
		p.q.grouping = append(p.q.grouping, t.text)
		p.i++
		return nil
	})
}

func (p *promParser) args(rated bool) error {
	for {
		if err := p.expr(rated); err != nil {
			return err
		}
		if p.peek().text != "," {
			return nil
		}
		p.i++
	}
}

// list reads open item (, item)* close.
func (p *promParser) list(open, close string, item func() error) error {
	if err := p.take(open); err != nil {
		return err
	}
	for p.peek().text != close {
		if err := item(); err != nil {
			return err
		}
		if p.peek().text == "," {
			p.i++
		}
	}
	return p.take(close)
}

// selector reads `{matchers}` and `[range]` after a metric name.
func (p *promParser) selector(metric string, rated bool) error {
	s := promSelector{metric: metric, rated: rated}
	if p.peek().text == "{" {
		err := p.list("{", "}", func() error {
			m, err := p.matcher()
			s.matchers = append(s.matchers, m)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", metric, err)
		}
	}
	hasRange := p.peek().kind == 'r'
	if hasRange {
		p.i++
	}
	if hasRange != rated {
		return fmt.Errorf("%s: a range [..] belongs to the argument of %s, and only there", metric, strings.Join(counterFunctions, ", "))
	}
	p.q.selectors = append(p.q.selectors, s)
	return nil
}

func (p *promParser) matcher() (promMatcher, error) {
	if p.i+2 >= len(p.toks) || p.toks[p.i].kind != 'i' || p.toks[p.i+2].kind != 's' {
		return promMatcher{}, fmt.Errorf("want label op \"value\" at %q", p.peek().text)
	}
	m := promMatcher{label: p.toks[p.i].text, op: p.toks[p.i+1].text, value: p.toks[p.i+2].text}
	p.i += 3
	if !slices.Contains([]string{"=", "!=", "=~", "!~"}, m.op) {
		return m, fmt.Errorf("%s: unknown matcher %s", m.label, m.op)
	}
	value, err := strconv.Unquote(m.value)
	if err != nil {
		return m, fmt.Errorf("%s: %w", m.label, err)
	}
	m.value = value
	for _, ref := range templateRef.FindAllStringSubmatch(m.value, -1) {
		if !slices.Contains(p.vars, ref[1]) {
			return m, fmt.Errorf("%s: $%s is not a variable of the dashboard", m.label, ref[1])
		}
		if m.op != "=~" && m.op != "!~" {
			return m, fmt.Errorf("%s: a variable (All, several values) needs a regular-expression matcher, not %s", m.label, m.op)
		}
	}
	m.value = templateRef.ReplaceAllString(m.value, ".*")
	return m, nil
}

// legendLabels are the labels a legend template {{label}} names.
func legendLabels(format string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`).FindAllStringSubmatch(format, -1) {
		out = append(out, m[1])
	}
	return out
}
