package runner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/internal/yamlguard"
)

// TestPlanAliasBomb: a plan of under 1 KiB whose tools map is an alias bomb
// is refused, naming the file and the alias line, in bounded memory.
func TestPlanAliasBomb(t *testing.T) {
	plan := "name: bomb\ntools:\n" + testfix.AliasBomb("  ", 8, 10) + "scenarios:\n - {name: a, lab: {}, attack: {ids: 1}}\n"
	if len(plan) > 1024 {
		t.Fatalf("plan is %d bytes", len(plan))
	}
	var err error
	if n := testfix.Allocated(func() { _, err = ParsePlan("bomb.yaml", []byte(plan)) }); n > 50<<20 {
		t.Errorf("refusing the bomb allocated %d bytes, want < 50 MiB", n)
	}
	var ge *yamlguard.Error
	if !errors.As(err, &ge) || ge.Name != "bomb.yaml" || ge.Line < 3 || ge.Line > 11 || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Fatalf("err = %v, want excessive aliasing naming bomb.yaml and a bomb line", err)
	}
	// Ordinary anchors still work.
	ok := "x-attack: &atk {ids: 4}\nscenarios:\n - {name: a, lab: {}, attack: *atk}\n - {name: b, lab: {}, attack: *atk}\n"
	if _, err := ParsePlan("ok.yaml", []byte(ok)); err == nil || !strings.Contains(err.Error(), `unknown field "x-attack"`) {
		t.Fatalf("anchors: err = %v, want only the strict unknown-field error", err)
	}
	ok = "scenarios:\n - {name: a, lab: {}, attack: &atk {ids: 4}}\n - {name: b, lab: {}, attack: *atk}\n"
	p, err := ParsePlan("ok.yaml", []byte(ok))
	if err != nil || p.Scenarios[1].Steps[0].Attack.IDs != 4 {
		t.Fatalf("anchored plan: %v", err)
	}
}

func TestPlanFileLimits(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "plan.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	_, err := LoadPlan(fifo)
	var nr *boundedio.NotRegularError
	if !errors.As(err, &nr) {
		t.Errorf("FIFO plan: %v, want NotRegularError", err)
	}
	if _, err := ParsePlan("huge.yaml", make([]byte, yamlguard.DefaultMaxBytes+1)); !yamlguard.IsGuard(err) || !strings.Contains(err.Error(), "huge.yaml") {
		t.Errorf("oversized plan: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadPlanFile(ctx, fifo); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v", err)
	}
}
