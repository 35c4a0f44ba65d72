package grafana

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/prometheus/promql/parser"

	mn "github.com/rlbench/rlbench/internal/metricnames"
)

// TestSeries lists the series the dashboard uses: every one is a series
// rlbench emits, the issue-26 families are among them, and Exprs finds as
// many expressions in the built dashboard as a walk of the committed
// file's JSON finds there (plus the two label_values variables), so Series
// misses none; Exprs of the committed file decoded by the SDK are the
// built dashboard's.
func TestSeries(t *testing.T) {
	got, err := Series()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if _, ok := mn.Lookup(s); !ok {
			t.Errorf("Series has %s, which rlbench does not emit", s)
		}
	}
	for _, want := range []string{mn.RequestsTotal, mn.RequestsInFlight, mn.PacingError, mn.FaultActive, mn.Status, mn.ScenarioStatus,
		mn.Sent, mn.Admitted, mn.Bound, mn.IntendedLimit, mn.OverAdmission, mn.Reconciliation, mn.Latency, mn.Latency + "_sum", mn.Latency + "_count"} {
		if !slices.Contains(got, want) {
			t.Errorf("Series lacks %s: %v", want, got)
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("Series is not sorted without repeats: %v", got)
	}
	d, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	exprs, err := Exprs(d)
	if err != nil {
		t.Fatal(err)
	}
	plugins.RegisterDefaultPlugins()
	var decoded dashboard.Dashboard
	if err := json.Unmarshal(committed(t), &decoded); err != nil {
		t.Fatal(err)
	}
	if fromFile, err := Exprs(decoded); err != nil || !slices.Equal(fromFile, exprs) {
		t.Errorf("Exprs of the committed file (%v) differ from the built dashboard's:\n%v\n%v", err, fromFile, exprs)
	}
	walked, _, vars := dashboardQueries(t, committed(t))
	if labelValued := len(vars) - 1; len(exprs) != len(walked)+labelValued {
		t.Errorf("Exprs finds %d expressions, the file has %d and %d variable selectors", len(exprs), len(walked), labelValued)
	}
}

func TestInterpolate(t *testing.T) {
	vals := map[string]string{"run_id": "(a|b)", "datasource": "prometheus"}
	for _, tc := range []struct{ in, want, err string }{
		{`rate(x{run_id=~"$run_id"}[$__rate_interval])`, `rate(x{run_id=~"(a|b)"}[1m])`, ""},
		{`x{run_id=~"${run_id}", y=~"${run_id:regex}"}[$__range]`, `x{run_id=~"(a|b)", y=~"(a|b)"}[1m]`, ""},
		{`sum_over_time(x[$__interval])`, `sum_over_time(x[1m])`, ""},
		{`x{scenario=~"$scenario"} + $offset`, "", "$scenario, $offset"},
	} {
		got, err := Interpolate(tc.in, vals)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Interpolate(%q) = %q, %v; want an error naming %s", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Interpolate(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestSelectorNames(t *testing.T) {
	for _, tc := range []struct {
		sel  string
		want []string // nil: an error
	}{
		{`rlbench_fault_active{run_id="r"}`, []string{"rlbench_fault_active"}},
		{`{__name__="rlbench_status"}`, []string{"rlbench_status"}},
		{`{__name__=~"rlbench_requests_total|rlbench_scenario_status", run_id=~".*"}`, []string{"rlbench_requests_total", "rlbench_scenario_status"}},
		{`{__name__=~"rlbench_.*"}`, nil},
		{`{__name__!="rlbench_status", run_id="r"}`, nil},
	} {
		x, err := parser.NewParser(parser.Options{}).ParseExpr(tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SelectorNames(x.(*parser.VectorSelector))
		if tc.want == nil {
			if err == nil {
				t.Errorf("SelectorNames(%s) = %v, want an error", tc.sel, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SelectorNames(%s) = %v, %v; want %v", tc.sel, got, err, tc.want)
		}
	}
}

// FuzzInterpolate: Interpolate never panics; when it succeeds every
// variable reference of the input is replaced (one pass, as Grafana does:
// "$$__interval" becomes "$1m"), and when it fails the error names the
// variable that is neither a template variable nor an interval macro.
func FuzzInterpolate(f *testing.F) {
	for _, s := range []string{`rate(x{run_id=~"$run_id"}[$__rate_interval])`, `${run_id:regex}`, `$`, `$$`, `${`, `${}`, `$1`, `${a:}`, `x{a="$scenario"}`, `$$__interval`} {
		f.Add(s)
	}
	vals := map[string]string{"run_id": "(a|b)", "scenario": ".*"}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Interpolate(in, vals)
		if err != nil {
			if !strings.Contains(err.Error(), "$") {
				t.Fatalf("Interpolate(%q): the error names no variable: %v", in, err)
			}
			return
		}
		// every reference is replaced by a value or "1m", which hold no $
		if refs := len(grafanaVar.FindAllString(in, -1)); strings.Count(out, "$") != strings.Count(in, "$")-refs {
			t.Fatalf("Interpolate(%q) = %q: %d references, not all replaced", in, out, refs)
		}
	})
}
