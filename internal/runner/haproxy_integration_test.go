//go:build integration

package runner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/testfix"
)

// needHAProxy skips without haproxy, unless RLBENCH_REQUIRE_REAL_PARTS=1 (CI).
func needHAProxy(t *testing.T) {
	t.Helper()
	if _, err := realparts.FindHAProxy(); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" || !errors.Is(err, realparts.ErrNotInstalled) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// TestHAProxyPlan runs examples/haproxy/plan.yaml on the lab and a real HAProxy: every scenario PASSes, the
// stick table's admissions equal what the freq_ctr model allows at the ms HAProxy's rule ran (its own log), every
// request is decided by the model or left to the order within one ms, HAProxy's 429s are the limiter's
// (local_429), and its log is kept as evidence.
func TestHAProxyPlan(t *testing.T) {
	needHAProxy(t)
	path := filepath.Join(testfix.RepoRoot(t), "examples", "haproxy", "plan.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.ParsePlan(path, b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var progress bytes.Buffer
	runDir, err := runner.Run(ctx, p, runner.Options{Root: t.TempDir(), PlanBytes: b, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(ctx, runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	_ = report.WriteTable(&table, rep)
	t.Logf("progress:\n%s\n%s", progress.String(), table.String())
	if len(rep.Scenarios) != len(p.Scenarios) {
		t.Fatalf("%d scenarios reported, plan has %d", len(rep.Scenarios), len(p.Scenarios))
	}
	for _, s := range rep.Scenarios {
		if s.Status != evidence.Pass {
			t.Errorf("%s: %s %v", s.Name, s.Status, s.Reasons)
		}
		if len(s.Limiters) != 1 {
			t.Fatalf("%s: %d limiters, want the stick table", s.Name, len(s.Limiters))
		}
		l := s.Limiters[0]
		if l.Admitted < l.Total.Min || l.Admitted > l.Total.Max {
			t.Errorf("%s: %d admitted, model %d..%d", s.Name, l.Admitted, l.Total.Min, l.Total.Max)
		}
		// exact, since HAProxy's log gives each request's ms on its clock; unless HAProxy moved its clock during
		// the run (a loaded host's stall), which leaves some times off the clients' by more than 2 ms: measured
		if l.Total.Max != l.Total.Min {
			if s.Harness == nil || s.Harness.Inconsistent == 0 {
				t.Errorf("%s: model %d..%d, not exact, and no limiter time was off the client's", s.Name, l.Total.Min, l.Total.Max)
			} else {
				t.Logf("%s: model %d..%d: %d of HAProxy's times were off the clients' (its clock moved)", s.Name, l.Total.Min, l.Total.Max, s.Harness.Inconsistent)
			}
		}
		if l.Admitted == 0 || l.Rejected == 0 || l.OverAdmittedCount+l.UnderAdmittedCount != 0 {
			t.Errorf("%s: admitted %d, rejected %d, over %d, under %d", s.Name, l.Admitted, l.Rejected, l.OverAdmittedCount, l.UnderAdmittedCount)
		}
		if s.Totals.N[evidence.ClassLocal429] != l.Rejected {
			t.Errorf("%s: %d local_429, the limiter rejected %d", s.Name, s.Totals.N[evidence.ClassLocal429], l.Rejected)
		}
		t.Logf("%s: model %s, %d admitted of %d (%d..%d), %d must admit, %d must reject", s.Name, l.Model, l.Admitted, l.Offered,
			l.Total.Min, l.Total.Max, l.MustAdmit, l.MustReject)
	}
	dirs, _ := filepath.Glob(filepath.Join(runDir, "*", "*", evidence.HAProxyDir, "haproxy-a", evidence.HAProxyLogFile))
	if len(dirs) != len(p.Scenarios) {
		t.Errorf("haproxy logs %v, want one per scenario", dirs)
	}
}
