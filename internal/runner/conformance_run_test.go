package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/testfix"
	"sigs.k8s.io/yaml"
)

// TestConformancePlanOnTheLab runs a conformance plan of two limiters, the
// lab's Envoy-like local token bucket (capacity 10, 10/s) and nginx
// limit_req whose binary is missing, under three of StandardShapes: the
// local bucket's cells each PASS with the admitted count checked against
// its model and its forwards' peak against the model's; every nginx cell is
// NOT_RUN naming nginx and how to install it, and the other row still ran.
func TestConformancePlanOnTheLab(t *testing.T) {
	t.Setenv(realparts.EnvNginxBin, filepath.Join(t.TempDir(), "no-nginx"))
	all, err := runner.StandardShapes(10, 10)
	if err != nil {
		t.Fatal(err)
	}
	var shapes []runner.ConformanceShape
	for _, s := range all {
		switch s.Name {
		case runner.ShapeBurst, runner.ShapeDoubleBurst, runner.ShapeNoisyKey:
			shapes = append(shapes, s)
		}
	}
	plan := &runner.Plan{Name: "conformance", Conformance: &runner.ConformancePlan{
		Limiters: []runner.ConformanceLimiter{
			{Name: "lab local bucket", Lab: mustLab(t, "{proxies: 1, local: {max_tokens: 10, tokens_per_fill: 1, fill_interval: 100ms}}")},
			{Name: "nginx nodelay", Lab: mustLab(t, "{nginx: {rate: 10r/s, burst: 9, nodelay: true}}")},
		},
		Shapes: shapes}}
	if err := runner.ValidatePlan(plan); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	runDir, err := runner.Run(ctx, plan, runner.Options{Root: t.TempDir(), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(ctx, runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	_ = report.WriteTableWith(&text, rep, report.TableOptions{Width: 100})
	t.Logf("progress:\n%s\n%s", progress.String(), text.String())
	m := rep.Matrix
	if m == nil || len(m.Limiters) != 2 || len(m.Shapes) != 3 || len(m.Cells) != 6 {
		t.Fatalf("matrix %+v", m)
	}
	for _, sh := range m.Shapes {
		c := m.Cell("lab local bucket", sh)
		if c == nil || c.Status != evidence.Pass {
			t.Errorf("lab local bucket × %s: %+v", sh, c)
			continue
		}
		if c.Admitted == nil || c.Admitted.Status != report.CheckPass || !strings.HasPrefix(c.Admitted.Want, "model ") {
			t.Errorf("lab local bucket × %s: admitted %+v", sh, c.Admitted)
		}
		if len(c.Forwards) == 0 || c.Forwards[len(c.Forwards)-1].Status != report.CheckPass {
			t.Errorf("lab local bucket × %s: forwards %+v", sh, c.Forwards)
		}
		n := m.Cell("nginx nodelay", sh)
		if n == nil || n.Status != evidence.NotRun || len(n.Why) == 0 || !strings.Contains(n.Why[0], runner.NginxNotInstalledReason) {
			t.Errorf("nginx nodelay × %s: %+v", sh, n)
		}
	}
}

// mustLab parses a lab section.
func mustLab(t *testing.T, y string) *runner.LabPlan {
	t.Helper()
	lp, err := runner.ParseLabFile("lab.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return lp
}

// TestConformanceExamplePlan: examples/conformance/plan.yaml loads, its
// limiters × shapes are its scenarios, and its shapes are
// StandardShapes(10, 10/s), as its comment says.
func TestConformanceExamplePlan(t *testing.T) {
	for _, name := range []string{"plan.yaml", "lua.yaml"} {
		t.Run(name, func(t *testing.T) { checkConformanceExample(t, name) })
	}
}

// checkConformanceExample: examples/conformance/<name> loads, expands to
// limiters × 5 scenarios, and its shapes are runner.StandardShapes(10, 10/s).
func checkConformanceExample(t *testing.T, name string) {
	path := filepath.Join(testfix.RepoRoot(t), "examples", "conformance", name)
	p, err := runner.LoadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw runner.Plan // the section as written (LoadPlan expands it)
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	c := raw.Conformance
	if len(p.Scenarios) != len(c.Limiters)*len(c.Shapes) || len(c.Shapes) != 5 || len(c.Limiters) < 1 || name == "plan.yaml" && len(c.Limiters) != 8 {
		t.Fatalf("%d scenarios of %d limiters × %d shapes", len(p.Scenarios), len(c.Limiters), len(c.Shapes))
	}
	want, err := runner.StandardShapes(10, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		// Compared in their JSON form: ranges and rates as the plan writes them.
		g, _ := json.Marshal(c.Shapes[i])
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) {
			t.Errorf("shape %d\n got %s\nwant %s", i, g, w)
		}
	}
}
