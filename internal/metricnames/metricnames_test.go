package metricnames

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rlbench/rlbench/analyze/report"
)

// TestEndOfRunFamiliesMatchWritePrometheus renders analyze's golden reports
// with report.WritePrometheus and parses the textfile back: every family it
// writes is listed in Families, not live, with the type the textfile
// declares, and every end-of-run family of Families is written by at least
// one of the reports (so a family renamed or added in analyze/report, or
// one listed here that nobody writes, fails), with the label names
// Families lists for it (run_id aside).
func TestEndOfRunFamiliesMatchWritePrometheus(t *testing.T) {
	listed := map[string]Family{}
	for _, f := range Families() {
		if _, dup := listed[f.Name]; dup {
			t.Errorf("%s is listed twice", f.Name)
		}
		listed[f.Name] = f
	}
	paths, err := filepath.Glob(filepath.Join("..", "..", "analyze", "testdata", "golden", "*.json.golden"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden reports: %v", err)
	}
	written := map[string]bool{}
	labels := map[string][]string{} // label names seen per family
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var rep report.Report
		if err := json.Unmarshal(b, &rep); err != nil || len(rep.Scenarios) == 0 {
			continue // not a report (flows.json.golden)
		}
		if strings.HasPrefix(filepath.Base(p), "manual.") {
			// no golden has a windowed intended limit (intended_limit per a
			// window): give manual's one, so that its family is written too
			for i := range rep.Scenarios {
				if o := rep.Scenarios[i].OverAdmission; o != nil {
					o.PerNs = int64(time.Second)
				}
			}
		}
		var buf bytes.Buffer
		if err := report.WritePrometheus(&buf, &rep); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		textParser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := textParser.TextToMetricFamilies(&buf)
		if err != nil {
			t.Fatalf("%s: the textfile does not parse: %v", p, err)
		}
		for name, fam := range fams {
			written[name] = true
			f, ok := listed[name]
			if !ok {
				t.Errorf("%s: WritePrometheus writes %s, which Families does not list", p, name)
				continue
			}
			if f.Live {
				t.Errorf("%s is an end-of-run family listed as live", name)
			}
			if got := strings.ToLower(fam.GetType().String()); got != string(f.Type) {
				t.Errorf("%s: Families says %s, the textfile %s", name, f.Type, got)
			}
			seen := map[string]bool{}
			for _, m := range fam.Metric {
				for _, l := range m.Label {
					seen[l.GetName()] = true
				}
				if len(m.GetSummary().GetQuantile()) > 0 {
					seen[LabelQuantile] = true
				}
			}
			labels[name] = append(labels[name], slices.Sorted(maps.Keys(seen))...)
		}
	}
	for _, f := range Families() {
		if !f.Live && !written[f.Name] {
			t.Errorf("%s is listed as an end-of-run family, and no golden report's textfile has it", f.Name)
			continue
		}
		if f.Live {
			continue
		}
		got := slices.Compact(slices.Sorted(slices.Values(labels[f.Name])))
		// the textfile's series have no run_id (remote write adds it)
		want := slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(f.Labels), func(l string) bool { return l == LabelRunID })))
		if !slices.Equal(got, want) {
			t.Errorf("%s: the textfile's series have the labels %v, Families lists %v (and run_id)", f.Name, got, want)
		}
	}
}

// TestNamesFollowConventions checks the Prometheus naming conventions the
// package doc promises: the rlbench_ prefix, a _total suffix exactly on
// counters, base unit seconds rather than milliseconds, and live series
// under the names the issue-26 design gave them.
func TestNamesFollowConventions(t *testing.T) {
	for _, f := range Families() {
		if !strings.HasPrefix(f.Name, "rlbench_") {
			t.Errorf("%s lacks the rlbench_ prefix", f.Name)
		}
		if strings.HasSuffix(f.Name, "_total") != (f.Type == Counter) {
			t.Errorf("%s (%s): _total is for counters only, and every counter has it", f.Name, f.Type)
		}
		if strings.Contains(f.Name, "_ms") || strings.Contains(f.Name, "millis") {
			t.Errorf("%s is not in base units", f.Name)
		}
	}
	set := SeriesNames()
	for _, n := range []string{"rlbench_requests_total", "rlbench_requests_in_flight", "rlbench_pacing_error_seconds",
		"rlbench_fault_active", "rlbench_scenario_latency_seconds_sum", "rlbench_scenario_latency_seconds_count"} {
		if !set[n] {
			t.Errorf("SeriesNames lacks %s", n)
		}
	}
	for _, n := range []string{"rlbench_requests_total_sum", "rlbench_scenario_status_count", "rlbench_scenario_latency_seconds_bucket",
		"rlbench_pacing_error_seconds_sum", "rlbench_pacing_error_seconds_count"} {
		if set[n] {
			t.Errorf("SeriesNames has %s, which rlbench does not write", n)
		}
	}
}

// TestEndOfRunListsEveryReportFamily: the end-of-run families of Families
// are exactly the Metric* constants of analyze/report/render_prometheus.go
// (the owner of those names), so a family added there cannot be missing
// from the list a dashboard and the integration test read, even before a
// golden report writes it.
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
	var listed []string
	for _, fam := range Families() {
		if !fam.Live {
			listed = append(listed, fam.Name)
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, declared) {
		t.Errorf("Families' end-of-run names %v\nreport declares %v", listed, declared)
	}
}

// TestNamesAndLabelsValid: every series name is a valid, unique
// Prometheus metric name, every label name a valid label name, every
// family has run_id, and the live ones have scenario and repeat (what
// the remote write puts on every live series).
func TestNamesAndLabelsValid(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Families() {
		for _, n := range f.SeriesNames() {
			if !model.LegacyValidation.IsValidMetricName(n) || seen[n] {
				t.Errorf("series %q: invalid or twice", n)
			}
			seen[n] = true
		}
		for _, l := range f.Labels {
			if !model.LegacyValidation.IsValidLabelName(l) {
				t.Errorf("%s: label %q invalid", f.Name, l)
			}
		}
		if !slices.Contains(f.Labels, LabelRunID) {
			t.Errorf("%s lacks %s", f.Name, LabelRunID)
		}
		if f.Live && (!slices.Contains(f.Labels, LabelScenario) || !slices.Contains(f.Labels, LabelRepeat)) {
			t.Errorf("live %s lacks scenario or repeat: %v", f.Name, f.Labels)
		}
	}
}
