package analyze

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// TestSectionsInDependencyOrder: every section observe runs comes after the
// sections it needs, and each name is given once, so a section never reads
// a part of Input that is not computed yet.
func TestSectionsInDependencyOrder(t *testing.T) {
	done := map[string]bool{}
	for i, s := range sections {
		if s.name == "" || s.compute == nil {
			t.Fatalf("sections[%d] = %q: a section needs a name and a compute step", i, s.name)
		}
		if done[s.name] {
			t.Errorf("section %q listed twice", s.name)
		}
		for _, n := range s.needs {
			if !done[n] {
				t.Errorf("section %q needs %q, which is not computed before it", s.name, n)
			}
		}
		done[s.name] = true
	}
	for _, want := range []string{"nginx", "receipts", "totals", "stats", "faults", "access logs", "limiters", "flows", "headers", "rls", "real rls", "arrivals", "latency"} {
		if !done[want] {
			t.Errorf("no section %q", want)
		}
	}
}

// sectionsJSON is a scenario report without what the checkers set (Checks,
// Reasons, Status, Incomplete): the computed sections, as JSON.
func sectionsJSON(t *testing.T, sr report.ScenarioReport) string {
	t.Helper()
	sr.Checks, sr.Reasons, sr.Status, sr.Incomplete = nil, nil, "", false
	b, err := json.Marshal(sr)
	must(t, err)
	return string(b)
}

// TestExtraCheckerSeesEverySection: a checker of another program, added
// with Options.ExtraCheckers or replacing the table with Options.Checkers,
// sees every section of the report already computed: the report at its
// check equals the final one but for the checks and the verdict.
func TestExtraCheckerSeesEverySection(t *testing.T) {
	seen, ran := map[string]bool{}, 0
	for _, fx := range []string{"bare", "demo", "e06", "manual", "real-rls"} { // testdata/v1-release
		b, err := evidence.Load(context.Background(), filepath.Join("testdata", "v1-release", fx))
		must(t, err)
		for _, table := range []string{"extra", "replaced"} {
			at := map[string]string{}
			spy := Checker{Name: "spy", Check: func(in *Input) Result {
				at[in.Report.Dir] = sectionsJSON(t, *in.Report)
				if len(in.Report.Stats) > 0 {
					seen["stats"] = true
				}
				if in.Report.RLS != nil {
					seen["rls"] = true
					if in.Report.RLS.Real != nil {
						seen["real rls"] = true
					}
				}
				if len(in.Report.Limiters) > 0 {
					seen["limiters"] = true
				}
				if in.Report.Latency != nil {
					seen["latency"] = true
				}
				return Result{}
			}}
			opts := Options{Now: fixedNow, ExtraCheckers: []Checker{spy}}
			if table == "replaced" {
				opts = Options{Now: fixedNow, Checkers: []Checker{spy}}
			}
			rep := Judge(b, opts)
			ran += len(at)
			for _, sr := range rep.Scenarios {
				got, ok := at[sr.Dir]
				if !ok {
					continue // NOT_RUN before the checkers
				}
				if want := sectionsJSON(t, sr); got != want {
					t.Errorf("%s %s (%s): the checker saw other sections than the report has:\n%s", fx, sr.Dir, table, firstDiff(got, want))
				}
			}
		}
	}
	if ran == 0 {
		t.Fatal("the checker never ran")
	}
	for _, s := range []string{"stats", "rls", "real rls", "limiters", "latency"} {
		if !seen[s] {
			t.Errorf("no fixture gave the checker a %s section: the test proves nothing about it", s)
		}
	}
}
