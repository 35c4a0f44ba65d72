//go:build integration

package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
)

// TestRealRLSPlan runs examples/real-rls/plan.yaml on the real redis-server and envoyproxy/ratelimit and checks
// every scenario's figures and verdict. Without the binaries it skips, unless RLBENCH_REQUIRE_REAL_PARTS=1.
func TestRealRLSPlan(t *testing.T) {
	_, err1 := realparts.FindRedis()
	_, err2 := realparts.FindRLS()
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	const path = "../../examples/real-rls/plan.yaml"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := ParsePlan(path, b)
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: four scenarios take ~12 s, plus at most one 30 s wait for a fresh hour window.
	ctx, cancel := context.WithTimeout(context.Background(), 85*time.Second)
	defer cancel()
	var progress bytes.Buffer
	runDir, err := Run(ctx, plan, Options{Root: t.TempDir(), PlanBytes: b, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", progress.String())
	rep, err := analyze.Analyze(ctx, runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 4 {
		t.Fatalf("%d scenarios", len(rep.Scenarios))
	}
	checkRealHarness(ctx, t, runDir)
	by := map[string]report.ScenarioReport{}
	for _, s := range rep.Scenarios {
		by[s.Name] = s
		checkRealPass(t, s)
	}
	checkRealShared(t, by["shared real RLS"])
	for _, name := range []string{"Redis stopped, deny", "Redis stopped, allow"} {
		checkRealRedisStopped(t, name, by[name])
	}
	checkRealRestarted(t, runDir, by["real RLS restarted"])
}

// checkRealHarness: real-parts scenarios measure their host too
// (harness.json), over a window that holds the attack.
func checkRealHarness(ctx context.Context, t *testing.T, runDir string) {
	t.Helper()
	bundle, err := evidence.Load(ctx, runDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bundle.Scenarios {
		if h := s.Harness; h == nil || s.Attack == nil || h.StartNs > s.Attack.StartNs || h.EndNs < s.Attack.EndNs {
			t.Errorf("%s: harness %+v, attack %+v", s.Dir, h, s.Attack)
		}
	}
}

// checkRealPass: the scenario PASSes, has rls.real, and its "rls real"
// checks pass.
func checkRealPass(t *testing.T, s report.ScenarioReport) {
	t.Helper()
	if s.Status != evidence.Pass {
		t.Errorf("%s: %s %v", s.Name, s.Status, s.Reasons)
	}
	if s.RLS == nil || s.RLS.Real == nil {
		t.Fatalf("%s: no rls.real", s.Name)
	}
	for _, c := range s.Checks {
		if strings.HasPrefix(c.Name, "rls real") && c.Status != report.CheckPass {
			t.Errorf("%s: %+v", s.Name, c)
		}
	}
}

// checkRealShared: one real RLS shared by the proxies admits 5 of 20 in
// one window, as its model says.
func checkRealShared(t *testing.T, s report.ScenarioReport) {
	t.Helper()
	if s.Totals.Sent != 20 || s.Totals.N[evidence.ClassAdmitted] != 5 || s.Totals.N[evidence.ClassGlobal429] != 15 || s.OverAdmission.Min != 0 || s.OverAdmission.Max != 0 {
		t.Errorf("shared: totals %+v over-admission %+v", s.Totals, s.OverAdmission)
	}
	if w := s.RLS.Real.Windows; len(w) != 1 || w[0].OK != 5 || w[0].OverLimit != 15 || w[0].MaxCurrent != 20 || w[0].Limit != 5 {
		t.Errorf("shared: windows %+v", w)
	}
	// The RLS limiter's model (the rule's fixed window, epoch aligned) admits exactly 5 of the 20.
	if s.Model == nil || s.Model.Min != 5 || s.Model.Max != 5 || len(s.Limiters) != 1 || s.Limiters[0].Status != report.LimiterChecked {
		t.Errorf("shared: model %+v limiters %+v", s.Model, s.Limiters)
	}
}

// checkRealRedisStopped: with Redis stopped every request lies in the
// fault window; failure_mode_deny rejects all 20 as RLS errors, allow
// admits all 20, each with its receipt; the RLS limiter is suspended.
func checkRealRedisStopped(t *testing.T, name string, s report.ScenarioReport) {
	t.Helper()
	if len(s.FaultWindows) != 1 || s.FaultWindows[0].Target != "redis" || s.FaultWindows[0].Open {
		t.Fatalf("%s: fault windows %+v", name, s.FaultWindows)
	}
	in := s.FaultWindows[0].Inside
	if name == "Redis stopped, deny" && (s.Totals.N[evidence.ClassAdmitted] != 0 || s.Totals.N[evidence.ClassRLSError] != 20 || in.N[evidence.ClassRLSError] != 20) {
		t.Errorf("%s: totals %+v inside %+v", name, s.Totals, in)
	}
	if name == "Redis stopped, allow" && (s.Totals.N[evidence.ClassAdmitted] != 20 || in.N[evidence.ClassAdmitted] != 20 || s.Receipts.AdmittedWithReceipt != 20) {
		t.Errorf("%s: totals %+v inside %+v", name, s.Totals, in)
	}
	e := s.RLS.Real.Errors
	if e.Total == 0 || e.Inside != e.Total || e.Unexplained != 0 {
		t.Errorf("%s: rls errors %+v", name, e)
	}
	// The RLS limiter is suspended: every request lies in the Redis fault window.
	if len(s.Limiters) != 1 || s.Limiters[0].Status != report.LimiterSuspended || len(s.FaultWindows[0].ActsOn) != 1 {
		t.Errorf("%s: limiters %+v acts on %v", name, s.Limiters, s.FaultWindows[0].ActsOn)
	}
	// No OK of the RLS admitted anyone: zombies (if any ran after Redis came back) are not counted.
	for _, w := range s.RLS.Real.Windows {
		if w.OK != 0 {
			t.Errorf("%s: window %+v", name, w)
		}
	}
}

// checkRealRestarted: the counts live in Redis, so restarting the RLS is
// no new epoch: 3 admitted before the restart and 2 after, 5 of 23 as the
// model says, one window seen by two RLS processes.
func checkRealRestarted(t *testing.T, runDir string, s report.ScenarioReport) {
	t.Helper()
	if s.Totals.Sent != 23 || s.Totals.N[evidence.ClassAdmitted] != 5 || s.Totals.N[evidence.ClassGlobal429] != 18 || s.OverAdmission.Min != 0 || s.OverAdmission.Max != 0 {
		t.Errorf("restart: totals %+v over-admission %+v", s.Totals, s.OverAdmission)
	}
	reqs, err := os.ReadFile(filepath.Join(runDir, s.Dir, evidence.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	before, after := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(string(reqs)), "\n") {
		if !strings.Contains(l, `"code":200`) {
			continue
		}
		switch {
		case strings.Contains(l, "-before-restart-"):
			before++
		case strings.Contains(l, "-after-restart-"):
			after++
		}
	}
	if before != 3 || after != 2 {
		t.Errorf("restart: admitted %d before and %d after the RLS restart, want 3 and 2", before, after)
	}
	// Counts live in Redis: the RLS restart is no new epoch, the model admits 5 of the 23.
	if s.Model == nil || s.Model.Min != 5 || s.Model.Max != 5 {
		t.Errorf("restart: model %+v", s.Model)
	}
	rr := s.RLS.Real
	if len(rr.Windows) != 1 || rr.Windows[0].OK != 5 || rr.Windows[0].MaxCurrent != 23 || len(rr.Windows[0].DuplicateCurrents) != 0 {
		t.Errorf("restart: windows %+v", rr.Windows)
	}
	procs := map[int]bool{}
	for _, id := range rr.Identities {
		procs[id.Process] = true
	}
	if !procs[1] || !procs[2] {
		t.Errorf("restart: identities %+v", rr.Identities)
	}
}
