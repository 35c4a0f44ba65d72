package metricnames

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

// TestEndOfRunListsEveryReportFamily: EndOfRun names every Metric*
// constant of analyze/report/render_prometheus.go (the owner of those
// names), so a family added there cannot be missing from the list a
// dashboard and the integration test read.
func TestEndOfRunListsEveryReportFamily(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../analyze/report/render_prometheus.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range vs.Names {
			if strings.HasPrefix(id.Name, "Metric") && i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					v, _ := strconv.Unquote(lit.Value)
					declared = append(declared, v)
				}
			}
		}
		return true
	})
	if len(declared) == 0 {
		t.Fatal("no Metric* constants found in render_prometheus.go")
	}
	slices.Sort(declared)
	got := slices.Sorted(slices.Values(EndOfRun()))
	if !slices.Equal(got, declared) {
		t.Errorf("EndOfRun %v\nreport declares %v", got, declared)
	}
}

// TestNamesValid: every name is a valid, unique Prometheus metric name
// with the rlbench_ prefix; the counter ends in _total.
func TestNamesValid(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range All() {
		if !model.LegacyValidation.IsValidMetricName(n) || !strings.HasPrefix(n, "rlbench_") || seen[n] {
			t.Errorf("name %q: invalid, unprefixed or twice", n)
		}
		seen[n] = true
	}
	if !strings.HasSuffix(RequestsTotal, "_total") {
		t.Errorf("counter %s without _total", RequestsTotal)
	}
	for _, l := range []string{LabelRunID, LabelScenario, LabelRepeat, LabelTarget, LabelClass, LabelQuantile, LabelFault, LabelStatus} {
		if !model.LegacyValidation.IsValidLabelName(l) {
			t.Errorf("label %q invalid", l)
		}
	}
}
