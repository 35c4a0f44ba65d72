package grafana

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	sdkprom "github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Expr is one PromQL expression of the dashboard, as Grafana sends it
// before interpolating its variables.
type Expr struct {
	// Where names it: "panel <title> <refId>", "annotation <name>" or
	// "variable <name>" (a variable's label_values selector).
	Where string
	// PromQL is the expression, with Grafana's variables ($run_id,
	// $__rate_interval, ...) not yet replaced.
	PromQL string
}

// labelValues matches a query variable's label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+), *(\w+)\)$`)

// Exprs returns every PromQL expression of d: the panels' targets (rows'
// collapsed panels included), the annotations' and the query variables'
// label_values selectors, in dashboard order. A target that is not a
// Prometheus query, or a variable query of another form, is an error.
func Exprs(d dashboard.Dashboard) ([]Expr, error) {
	var out []Expr
	panel := func(p *dashboard.Panel) error {
		title := ""
		if p.Title != nil {
			title = *p.Title
		}
		for i, t := range p.Targets {
			var q *sdkprom.Dataquery
			switch t := t.(type) {
			case *sdkprom.Dataquery: // decoded
				q = t
			case sdkprom.Dataquery: // built
				q = &t
			default:
				return fmt.Errorf("panel %q target %d is a %T, not a Prometheus query", title, i, t)
			}
			ref := ""
			if q.RefId != nil {
				ref = *q.RefId
			}
			out = append(out, Expr{Where: "panel " + title + " " + ref, PromQL: q.Expr})
		}
		return nil
	}
	for _, p := range d.Panels {
		if p.Panel != nil {
			if err := panel(p.Panel); err != nil {
				return nil, err
			}
		}
		if p.RowPanel != nil {
			for i := range p.RowPanel.Panels {
				if err := panel(&p.RowPanel.Panels[i]); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != nil {
			out = append(out, Expr{Where: "annotation " + a.Name, PromQL: *a.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := ""
		if v.Query != nil && v.Query.String != nil {
			q = *v.Query.String
		}
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			return nil, fmt.Errorf("variable %s: %q is not label_values(selector, label)", v.Name, q)
		}
		out = append(out, Expr{Where: "variable " + v.Name, PromQL: m[1]})
	}
	return out, nil
}

// grafanaVar matches Grafana's variable references: $name, ${name} and
// ${name:format}.
var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// Interpolate replaces Grafana's variables in promql as Grafana does
// before sending it: the interval macros ($__rate_interval, $__interval,
// $__range) by "1m", a template variable by its value in values (for a
// regular expression matcher, a multi-value selection is "(a|b)"). A
// variable that is neither is an error naming it.
func Interpolate(promql string, values map[string]string) (string, error) {
	var unknown []string
	out := grafanaVar.ReplaceAllStringFunc(promql, func(ref string) string {
		m := grafanaVar.FindStringSubmatch(ref)
		name := m[1] + m[2]
		switch name {
		case "__rate_interval", "__interval", "__range":
			return "1m"
		}
		if v, ok := values[name]; ok {
			return v
		}
		unknown = append(unknown, "$"+name)
		return ref
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("%q uses %s: neither a template variable nor a Grafana interval macro", promql, strings.Join(unknown, ", "))
	}
	return out, nil
}

// promqlParser is Prometheus' PromQL parser with its default options.
var promqlParser = parser.NewParser(parser.Options{})

// Parse interpolates e with values (Interpolate) and parses it with
// Prometheus' PromQL parser.
func Parse(e Expr, values map[string]string) (parser.Expr, error) {
	s, err := Interpolate(e.PromQL, values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Where, err)
	}
	x, err := promqlParser.ParseExpr(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q does not parse: %w", e.Where, e.PromQL, err)
	}
	return x, nil
}

// literalName is a metric name without regular expression syntax.
var literalName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// SelectorNames returns the __name__ values a vector selector selects: its
// metric name, the value of an equality matcher on __name__, or the
// alternatives of a regular expression matcher made of literal names only
// (a|b). Any other way of selecting names is an error.
func SelectorNames(vs *parser.VectorSelector) ([]string, error) {
	if vs.Name != "" {
		return []string{vs.Name}, nil
	}
	for _, m := range vs.LabelMatchers {
		if m.Name != labels.MetricName {
			continue
		}
		switch m.Type {
		case labels.MatchEqual:
			return []string{m.Value}, nil
		case labels.MatchRegexp:
			alts := strings.Split(m.Value, "|")
			for _, a := range alts {
				if !literalName.MatchString(a) {
					return nil, fmt.Errorf("%s selects names by the pattern %q, not by a list of names", vs, m.Value)
				}
			}
			return alts, nil
		}
		return nil, fmt.Errorf("%s selects names with %s", vs, m)
	}
	return nil, fmt.Errorf("%s selects no metric name", vs)
}

// Series returns the names of the series the dashboard's expressions
// select (Exprs), sorted and without repeats: what a Prometheus must hold
// for every panel to show data (the end-of-run families appear once a
// scenario is judged; rlbench writes rlbench_scenario_bound only when the
// limits are described, _intended_limit only for an intended limit,
// rlbench_fault_active only for a plan with faults).
func Series() ([]string, error) {
	d, err := Build()
	if err != nil {
		return nil, err
	}
	exprs, err := Exprs(d)
	if err != nil {
		return nil, err
	}
	vals := map[string]string{VarDatasource: "prometheus", VarRunID: ".*", VarScenario: ".*"}
	var out []string
	for _, e := range exprs {
		x, err := Parse(e, vals)
		if err != nil {
			return nil, err
		}
		var inner error
		parser.Inspect(x, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				names, err := SelectorNames(vs)
				if err != nil && inner == nil {
					inner = fmt.Errorf("%s: %w", e.Where, err)
				}
				out = append(out, names...)
			}
			return nil
		})
		if inner != nil {
			return nil, inner
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
