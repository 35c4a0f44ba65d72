package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestPlanExternalProxiesCap: a plan's external section of more than
// evidence.MaxScenarioProxies proxies is refused when it loads, naming the
// field's line and the cap (analyze would refuse the scenario.json it
// writes); at the cap it loads.
func TestPlanExternalProxiesCap(t *testing.T) {
	plan := func(n int) []byte {
		var b strings.Builder
		b.WriteString("scenarios:\n - name: a\n   external:\n     proxies:\n")
		for i := range n {
			fmt.Fprintf(&b, "      - {name: p%d, url: 'http://127.0.0.1:1'}\n", i)
		}
		b.WriteString("   attack: {ids: 1}\n")
		return []byte(b.String())
	}
	if p, err := ParsePlan("p.yaml", plan(evidence.MaxScenarioProxies)); err != nil || len(p.Scenarios[0].External.Proxies) != evidence.MaxScenarioProxies {
		t.Fatalf("at the cap: %v", err)
	}
	_, err := ParsePlan("p.yaml", plan(evidence.MaxScenarioProxies+1))
	want := "p.yaml: line 4: scenarios[0] (a): external.proxies: more than 10000 proxies, the most one scenario has"
	if err == nil || err.Error() != want {
		t.Fatalf("over the cap: got %v, want %q", err, want)
	}
}
