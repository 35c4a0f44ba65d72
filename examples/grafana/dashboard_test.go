package grafana

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	sdkprom "github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rlbench/rlbench/evidence"
	mn "github.com/rlbench/rlbench/internal/metricnames"
)

// committed returns the committed dashboard file.
func committed(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(File)
	if err != nil {
		t.Fatalf("read the committed dashboard: %v", err)
	}
	return b
}

// TestDashboardIsGenerated fails while the committed rlbench-dashboard.json
// differs from what the generator builds now.
func TestDashboardIsGenerated(t *testing.T) {
	fresh, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	old := committed(t)
	if bytes.Equal(fresh, old) {
		return
	}
	a, b := strings.Split(string(old), "\n"), strings.Split(string(fresh), "\n")
	line := 0
	for line < min(len(a), len(b)) && a[line] == b[line] {
		line++
	}
	at := func(l []string) string {
		if line < len(l) {
			return l[line]
		}
		return "(end of file)"
	}
	t.Errorf("examples/grafana/%s is stale (first difference at line %d: committed %q, generated %q); run `go generate ./examples/grafana` and commit the result",
		File, line+1, at(a), at(b))
}

// located is one PromQL expression or text template of the dashboard,
// and where it is.
type located struct {
	where, expr string
}

// dashboardQueries returns every expr of the dashboard's JSON (panel
// targets and annotations, found at any depth), every legend and
// annotation text template, and the template variables' queries by name.
func dashboardQueries(t *testing.T, raw []byte) (exprs []located, templates []located, vars map[string]string) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				s, isString := x.(string)
				switch {
				case k == "expr" && isString:
					exprs = append(exprs, located{path, s})
				case (k == "legendFormat" || k == "titleFormat" || k == "textFormat") && isString:
					templates = append(templates, located{path + "." + k, s})
				}
				walk(path+"."+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		}
	}
	walk("", doc)
	vars = map[string]string{}
	for _, v := range doc.(map[string]any)["templating"].(map[string]any)["list"].([]any) {
		m := v.(map[string]any)
		q, _ := m["query"].(string)
		vars[m["name"].(string)] = q
	}
	return exprs, templates, vars
}

// interpolate is Interpolate with every template variable of vars set to
// a multi-value selection, "(a|b)"; an unknown variable fails the test.
func interpolate(t *testing.T, where, expr string, vars map[string]string) string {
	t.Helper()
	vals := map[string]string{}
	for name := range vars {
		vals[name] = "(a|b)"
	}
	out, err := Interpolate(expr, vals)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return expr
	}
	return out
}

// checkSelectors checks every vector selector of expr: it names series
// rlbench emits, matches only labels those series have, and its matchers on
// class and status name existing response classes (or not_sent) and verdicts. It
// returns the label names of the selected series.
func checkSelectors(t *testing.T, where string, expr parser.Expr) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	values := map[string]map[string]bool{mn.LabelClass: {mn.ClassNotSent: true}, mn.LabelStatus: {evidence.Pass: true, evidence.Fail: true, evidence.NotRun: true}}
	for c := evidence.Class(0); c < evidence.NumClasses; c++ {
		values[mn.LabelClass][c.String()] = true
	}
	n := 0
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		n++
		names, err := SelectorNames(vs)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return nil
		}
		var have []string
		for _, name := range names {
			f, ok := mn.Lookup(name)
			if !ok {
				t.Errorf("%s: %s selects %s, which rlbench does not emit (internal/metricnames)", where, vs, name)
				continue
			}
			sl := f.SeriesLabels(name)
			for _, l := range sl {
				known[l] = true
			}
			have = append(have, sl...)
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName {
				continue
			}
			if !slices.Contains(have, m.Name) {
				t.Errorf("%s: %s matches the label %s, which %v do not have", where, vs, m.Name, names)
			}
			allowed := values[m.Name]
			if allowed == nil || m.Value == "(a|b)" {
				continue
			}
			for _, v := range strings.Split(m.Value, "|") {
				if !allowed[v] {
					t.Errorf("%s: %s: %s=%q is not a value rlbench writes", where, vs, m.Name, v)
				}
			}
		}
		return nil
	})
	if n == 0 {
		t.Errorf("%s: selects no series", where)
	}
	return known
}

// TestQueriesNameRlbenchSeries parses every PromQL expression of the
// committed dashboard (panel targets, annotations and the template
// variables' label_values selectors) with the Prometheus parser, and checks
// that each selects series rlbench emits (internal/metricnames), with their
// labels only, and that the aggregations, legends and annotation texts use
// only labels those series have.
func TestQueriesNameRlbenchSeries(t *testing.T) {
	exprs, templates, vars := dashboardQueries(t, committed(t))
	for _, v := range []string{VarDatasource, VarRunID, VarScenario} {
		if _, ok := vars[v]; !ok {
			t.Errorf("no template variable %s", v)
		}
	}
	if len(exprs) < 15 {
		t.Fatalf("only %d expressions found: the walk misses queries", len(exprs))
	}
	all := map[string]bool{}
	for _, q := range exprs {
		e, err := promqlParser.ParseExpr(interpolate(t, q.where, q.expr, vars))
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", q.where, q.expr, err)
			continue
		}
		known := checkSelectors(t, q.where, e)
		for l := range known {
			all[l] = true
		}
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			if a, ok := node.(*parser.AggregateExpr); ok {
				for _, l := range a.Grouping {
					if !known[l] {
						t.Errorf("%s: %q groups by %s, which the selected series do not have", q.where, q.expr, l)
					}
				}
			}
			return nil
		})
	}
	for name, q := range vars {
		if name == VarDatasource {
			continue
		}
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(selector, label)", name, q)
			continue
		}
		e, err := promqlParser.ParseExpr(interpolate(t, "variable "+name, m[1], vars))
		if err != nil {
			t.Errorf("variable %s: %q does not parse: %v", name, m[1], err)
			continue
		}
		if known := checkSelectors(t, "variable "+name, e); !known[m[2]] {
			t.Errorf("variable %s: the series selected have no label %s", name, m[2])
		}
		if m[2] != name {
			t.Errorf("variable %s lists the values of %s", name, m[2])
		}
	}
	tmpl := regexp.MustCompile(`\{\{ *(\w+) *\}\}`)
	for _, q := range templates {
		for _, m := range tmpl.FindAllStringSubmatch(q.expr, -1) {
			if !all[m[1]] {
				t.Errorf("%s: %q shows the label %s, which no selected series has", q.where, q.expr, m[1])
			}
		}
	}
}

// realError returns err, or nil when it is an empty cog.BuildErrors: the
// SDK's UnmarshalJSONStrict returns its error list as an error even when
// the list is empty (a non-nil interface holding a nil slice).
func realError(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}

// TestDashboardUnmarshalsWithSDK decodes the committed file with the SDK's
// strict decoder (unknown or mistyped fields fail) and validates it: the
// dashboard Grafana imports is one the SDK's schema accepts. It then checks
// the layout: unique panel ids, every panel within the 24-column grid
// without overlapping another, querying the datasource variable with
// Prometheus queries only, and the fault windows as an annotation.
func TestDashboardUnmarshalsWithSDK(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	var strict dashboard.Dashboard
	if err := realError(strict.UnmarshalJSONStrict(committed(t))); err != nil {
		t.Fatalf("the SDK does not decode %s: %v", File, err)
	}
	// The strict decoder reports every unknown, missing or mistyped field,
	// but (v0.0.22) leaves the panels out of its result: a panel's decoder
	// returns its empty error list as a non-nil error, and the panel-or-row
	// decoder gives up on it. The ordinary decoder fills them.
	var d dashboard.Dashboard
	if err := json.Unmarshal(committed(t), &d); err != nil {
		t.Fatalf("the SDK does not decode %s: %v", File, err)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("the SDK does not validate %s: %v", File, err)
	}
	if d.Uid == nil || *d.Uid != UID {
		t.Errorf("uid %v, want %s", d.Uid, UID)
	}
	type rect struct {
		title      string
		x, y, w, h uint32
	}
	var rects []rect
	ids := map[uint32]string{}
	types := map[string]int{}
	for _, p := range d.Panels {
		switch {
		case p.RowPanel != nil:
			r := p.RowPanel
			if prev, dup := ids[r.Id]; dup {
				t.Errorf("row %q has the id %d of %q", *r.Title, r.Id, prev)
			}
			ids[r.Id] = "row"
			rects = append(rects, rect{"row " + *r.Title, r.GridPos.X, r.GridPos.Y, r.GridPos.W, r.GridPos.H})
		case p.Panel != nil:
			pn := p.Panel
			title := ""
			if pn.Title != nil {
				title = *pn.Title
			}
			types[pn.Type]++
			if pn.Id == nil {
				t.Errorf("panel %q has no id", title)
			} else {
				if prev, dup := ids[*pn.Id]; dup {
					t.Errorf("panel %q has the id %d of %q", title, *pn.Id, prev)
				}
				ids[*pn.Id] = title
			}
			if pn.GridPos == nil {
				t.Errorf("panel %q has no position", title)
				continue
			}
			g := pn.GridPos
			rects = append(rects, rect{title, g.X, g.Y, g.W, g.H})
			if pn.Datasource == nil || pn.Datasource.Uid == nil || *pn.Datasource.Uid != "${"+VarDatasource+"}" {
				t.Errorf("panel %q does not query the datasource variable: %+v", title, pn.Datasource)
			}
			if len(pn.Targets) == 0 {
				t.Errorf("panel %q has no query", title)
			}
			for i, target := range pn.Targets {
				q, ok := target.(*sdkprom.Dataquery)
				if !ok {
					t.Errorf("panel %q target %d is a %T, not a Prometheus query", title, i, target)
					continue
				}
				if q.Expr == "" || q.Datasource == nil || q.Datasource.Uid == nil || *q.Datasource.Uid != "${"+VarDatasource+"}" {
					t.Errorf("panel %q target %d: expr %q, datasource %+v", title, i, q.Expr, q.Datasource)
				}
			}
		}
	}
	for i, a := range rects {
		if a.w == 0 || a.h == 0 || a.x+a.w > 24 {
			t.Errorf("%q lies outside the grid: %+v", a.title, a)
		}
		for _, b := range rects[i+1:] {
			if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				t.Errorf("%q and %q overlap: %+v %+v", a.title, b.title, a, b)
			}
		}
	}
	for _, typ := range []string{"stat", "state-timeline", "table", "timeseries"} {
		if types[typ] == 0 {
			t.Errorf("no %s panel (panels: %v)", typ, types)
		}
	}
	faults := false
	for _, a := range d.Annotations.List {
		if a.Expr != nil && strings.Contains(*a.Expr, mn.FaultActive) {
			faults = true
			if a.Datasource == nil || a.Datasource.Uid == nil || *a.Datasource.Uid != "${"+VarDatasource+"}" {
				t.Errorf("annotation %q does not query the datasource variable", a.Name)
			}
		}
	}
	if !faults {
		t.Errorf("no annotation shows the fault windows (%s)", mn.FaultActive)
	}
}
