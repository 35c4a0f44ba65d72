package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
)

// inlinePlan is a plan whose one lab scenario carries config as its inline RLS config.
func inlinePlan(config string) []byte {
	var b strings.Builder
	b.WriteString("name: p\nscenarios:\n  - name: inline\n    lab:\n      rls:\n        config: |\n")
	for _, l := range strings.Split(strings.TrimRight(config, "\n"), "\n") {
		b.WriteString("          " + l + "\n")
	}
	b.WriteString("    attack: {ids: 1}\n")
	return []byte(b.String())
}

// TestInlineRLSConfigCheckedAtLoad: a bad inline RLS config used to surface only when its scenario started (after
// the lab parts), and an alias bomb in it grew to gigabytes there; now ParsePlan refuses both, naming the scenario
// and the line inside the config.
func TestInlineRLSConfigCheckedAtLoad(t *testing.T) {
	_, err := ParsePlan("p.yaml", inlinePlan("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), `p.yaml: line 6: scenarios[0] (inline): lab.rls.config:4: invalid rate limit unit 'fortnight'`) {
		t.Errorf("bad unit: %v", err)
	}
	if _, err := ParsePlan("p.yaml", inlinePlan("{}")); err == nil || !strings.Contains(err.Error(), "config file cannot have empty domain") {
		t.Errorf("empty config: %v", err)
	}

	// About 2.5 KB of nested aliases (5^15 descriptors once expanded).
	var bomb strings.Builder
	bomb.WriteString("domain: b\ndescriptors:\n- key: a\n  descriptors: &A [{key: a},{key: b},{key: c},{key: d},{key: e}]\n")
	for i := 1; i <= 15; i++ {
		a, p := string(rune('A'+i)), string(rune('A'+i-1))
		fmt.Fprintf(&bomb, "- key: %d\n  descriptors: &%s [{key: a,descriptors: *%s},{key: b,descriptors: *%s},{key: c,descriptors: *%s},{key: d,descriptors: *%s},{key: e,descriptors: *%s}]\n", i, a, p, p, p, p, p)
	}
	plan := inlinePlan(bomb.String())
	alloc := testfix.Allocated(func() { _, err = ParsePlan("p.yaml", plan) })
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") || !strings.Contains(err.Error(), "lab.rls.config:") {
		t.Fatalf("bomb (%d bytes): %v", bomb.Len(), err)
	}
	if alloc > 50<<20 {
		t.Errorf("refusing a %d-byte inline bomb allocated %d MB, want < 50 MB", bomb.Len(), alloc>>20)
	}
}
