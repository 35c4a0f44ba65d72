package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/realparts"
)

func TestWindowWait(t *testing.T) {
	hour := time.Unix(1796029200, 0) // 09:00:00Z, an hour (and minute) boundary
	for _, c := range []struct {
		name  string
		now   time.Time
		units []int64
		want  time.Duration
	}{
		{"fresh hour", hour.Add(10 * time.Second), []int64{3600}, 0},
		{"mid hour", hour.Add(30 * time.Minute), []int64{3600}, 0},
		{"exactly margin left", hour.Add(time.Hour - 30*time.Second), []int64{3600}, 0},
		{"20 s left in the hour", hour.Add(time.Hour - 20*time.Second), []int64{3600}, 20*time.Second + 10*time.Millisecond},
		{"minute with 29.5 s left", hour.Add(30500 * time.Millisecond), []int64{60}, 29500*time.Millisecond + 10*time.Millisecond},
		{"minute with 31 s left", hour.Add(29 * time.Second), []int64{60}, 0},
		{"second limits are never waited for", hour.Add(999 * time.Millisecond), []int64{1}, 0},
		{"the longest wait of several units", hour.Add(time.Hour - 5*time.Second), []int64{1, 60, 3600}, 5*time.Second + 10*time.Millisecond},
		{"day", hour.Add(15*time.Hour - time.Second), []int64{86400}, time.Second + 10*time.Millisecond},
		{"no limits", hour.Add(time.Hour - time.Second), nil, 0},
	} {
		if got := WindowWait(c.now, c.units, WindowMargin); got != c.want {
			t.Errorf("%s: WindowWait = %v, want %v", c.name, got, c.want)
		}
		// After the wait, margin is left in every window.
		if d := WindowWait(c.now.Add(WindowWait(c.now, c.units, WindowMargin)), c.units, WindowMargin); d != 0 {
			t.Errorf("%s: still %v to wait after waiting", c.name, d)
		}
	}
}

const realPlanYAML = `
name: real
scenarios:
  - name: shared real RLS
    intended_limit: 5
    lab:
      proxies: 2
      global:
        domain: inventory
        descriptors: [{generic_key: {descriptor_key: tenant, descriptor_value: lab}}]
        timeout: 1s
      rls:
        kind: real
        config: |
          domain: inventory
          descriptors:
            - key: tenant
              value: lab
              rate_limit: {unit: hour, requests_per_unit: 5}
    attack: {ids: 4, path: /inventory}
    expect: {admitted: 4}
`

// Without the RLS binary the scenario is NOT_RUN with the install hint, and no part is left running.
func TestRealNotInstalledIsNotRun(t *testing.T) {
	t.Setenv(realparts.EnvRLSBin, filepath.Join(t.TempDir(), "no-service_cmd"))
	plan, err := ParsePlan("real.yaml", []byte(realPlanYAML))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runDir, err := Run(ctx, plan, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "01-shared-real-rls", "1", "NOT_RUN"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), NotInstalledReason) || !strings.Contains(string(b), "no-service_cmd") {
		t.Fatalf("NOT_RUN reason %q", b)
	}
}

func TestRealPlanExampleParses(t *testing.T) {
	plan, err := LoadPlan("../../examples/real-rls/plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Scenarios) != 4 {
		t.Fatalf("%d scenarios", len(plan.Scenarios))
	}
	for _, s := range plan.Scenarios {
		if s.Lab == nil || s.Lab.RLS == nil || s.Lab.RLS.Kind != "real" || time.Duration(s.Lab.Global.Timeout) != time.Second {
			t.Fatalf("%s: lab %+v", s.Name, s.Lab)
		}
	}
}
