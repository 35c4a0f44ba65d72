package runner_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/testfix"
)

// runBurstsPlan runs examples/bursts/<name> and analyzes it.
func runBurstsPlan(t *testing.T, name string, timeout time.Duration) map[string]report.ScenarioReport {
	t.Helper()
	path := filepath.Join(testfix.RepoRoot(t), "examples", "bursts", name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.ParsePlan(path, b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
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
	out := map[string]report.ScenarioReport{}
	for _, s := range rep.Scenarios {
		out[s.Name] = s
	}
	if len(out) != len(p.Scenarios) {
		t.Fatalf("%d scenarios reported, plan has %d", len(out), len(p.Scenarios))
	}
	return out
}

func peakOf(t *testing.T, st report.ArrivalStats, w time.Duration) int {
	t.Helper()
	for _, p := range st.Peaks {
		if p.WindowNs == int64(w) {
			return p.Peak
		}
	}
	t.Fatalf("no %v peak", w)
	return 0
}

// TestRetryStormPlan: examples/bursts/retry-storm.yaml PASSes with its
// figures: 4 attempts per request (x-envoy-attempt-count 1..4) reported as
// proxy retries, not client re-sends; max_retries caps the second storm.
func TestRetryStormPlan(t *testing.T) {
	by := runBurstsPlan(t, "retry-storm.yaml", 60*time.Second)
	s := by["retry storm amplifies the failure"]
	if s.Status != evidence.Pass {
		t.Errorf("%s: %s %v", s.Name, s.Status, s.Reasons)
	}
	a := s.Amplification
	if a == nil || a.Passed != 30 || a.Attempts != 120 || a.Factor != 4 || a.ProxyRetries != 90 || a.ClientResends != 0 || a.MaxAttempts != 4 {
		t.Errorf("amplification %+v", a)
	}
	if s.Receipts.Duplicates != 90 || s.Receipts.Resent != 0 {
		t.Errorf("receipts %+v", s.Receipts)
	}
	c := by["max_retries caps the storm"]
	if c.Status != evidence.Pass || c.Amplification == nil || c.Amplification.Factor >= 2 || c.Amplification.ClientResends != 0 {
		t.Errorf("%s: %s %v %+v", c.Name, c.Status, c.Reasons, c.Amplification)
	}
}

// TestLabCascadePlan: examples/bursts/lab-cascade.yaml PASSes; behind the
// circuit breaker the slow backend saw at most one request per 100 ms.
func TestLabCascadePlan(t *testing.T) {
	by := runBurstsPlan(t, "lab-cascade.yaml", 60*time.Second)
	for name, s := range by {
		if s.Status != evidence.Pass {
			t.Errorf("%s: %s %v", name, s.Status, s.Reasons)
		}
	}
	s := by["slow backend trips the circuit breaker"]
	if s.Arrivals == nil || s.Arrivals.Receipts.Count != 3 || peakOf(t, s.Arrivals.Receipts, 100*time.Millisecond) != 1 {
		t.Errorf("arrivals %+v", s.Arrivals)
	}
}

// TestBurstsPlansParse: every plan of examples/bursts loads.
func TestBurstsPlansParse(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testfix.RepoRoot(t), "examples", "bursts", "*.yaml"))
	if err != nil || len(paths) < 4 {
		t.Fatalf("%v %v", paths, err)
	}
	for _, p := range paths {
		if _, err := runner.LoadPlan(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
