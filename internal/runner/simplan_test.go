package runner

import (
	"strings"
	"testing"
)

// TestSimulatePlanValidated: the simulate section's fields are checked
// when the plan is loaded, naming the line; a good one decodes and the lab
// ignores it.
func TestSimulatePlanValidated(t *testing.T) {
	head := "scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1}\n   simulate:\n"
	for name, c := range map[string]struct{ plan, want string }{
		"arrivals":  {head + "     arrivals: bursty\n", `p.yaml: line 6: scenarios[0] (a): simulate.arrivals must be uniform or poisson, not "bursty"`},
		"row alone": {head + "     row: r\n", `p.yaml: line 5: scenarios[0] (a): simulate: give row and column together`},
		"latency":   {head + "     latency: -1ms\n", `p.yaml: line 6: scenarios[0] (a): simulate.latency must not be negative`},
		"limiter": {head + "     limiters:\n      - {name: x, stage: local, key: shared}\n",
			`p.yaml: line 7: scenarios[0] (a): simulate.limiters[0].model, rls: give exactly one`},
		"limiter twice": {head + "     limiters:\n      - {name: x, stage: local, key: shared, model: {kind: token_bucket, capacity: 1, rate_per_sec: 1}}\n" +
			"      - name: x\n        stage: local\n        key: shared\n        model: {kind: token_bucket, capacity: 1, rate_per_sec: 1}\n",
			`p.yaml: line 8: scenarios[0] (a): simulate.limiters[1].name: "x" is used twice`},
		"unknown field": {head + "     dimension: per_user\n", `p.yaml: line 6: unknown field "dimension"`},
	} {
		_, err := ParsePlan("p.yaml", []byte(c.plan))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err %v, want prefix %q", name, err, c.want)
		}
	}
	p, err := ParsePlan("p.yaml", []byte(head+"     arrivals: poisson\n     row: r\n     column: c\n     latency: 2ms\n"))
	if err != nil || p.Scenarios[0].Simulate.Arrivals != ArrivalsPoisson || p.Scenarios[0].Simulate.Column != "c" {
		t.Fatalf("%v %+v", err, p)
	}
}
