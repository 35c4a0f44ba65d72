package runner

import (
	"strings"
	"testing"
)

// TestPlanTypeErrorsNameLineAndField (tester report 1, item 3): a value of
// the wrong type names the file, the line and the plan's field path, in
// the plan's terms, not Go's ("Go struct field AttackPlan.scenarios.attack.ids
// of type int").
func TestPlanTypeErrorsNameLineAndField(t *testing.T) {
	const head = "scenarios:\n - name: a\n   lab:\n     proxies: 1\n"
	for name, c := range map[string]struct{ plan, want string }{
		"ids string": {"scenarios: [{name: s, lab: {proxies: 1}, attack: {ids: \"three\"}, expect: {admitted: 3}}]\n",
			`p.yaml: line 1: scenarios[0].attack.ids: want a whole number, not the string "three"`},
		"ids too large": {head + "   attack:\n     ids: 99999999999999999999\n",
			`p.yaml: line 6: scenarios[0].attack.ids: want a whole number from -9223372036854775808 to 9223372036854775807, not 99999999999999999999`},
		"proxies list": {"scenarios:\n - name: s\n   lab: {proxies: [1]}\n   attack: {ids: 3}\n",
			`p.yaml: line 3: scenarios[0].lab.proxies: want a whole number, not a list`},
		"max_tokens negative": {head + "     local: {max_tokens: -5, fill_interval: 1s}\n   attack: {ids: 3}\n",
			`p.yaml: line 5: scenarios[0].lab.local.max_tokens: want a whole number from 0 to 4294967295, not -5`},
		"max_tokens 1e30": {head + "     local:\n       fill_interval: 1s\n       max_tokens: 1e30\n   attack: {ids: 3}\n",
			`p.yaml: line 7: scenarios[0].lab.local.max_tokens: want a whole number from 0 to 4294967295, not 1e30`},
		"second scenario": {"scenarios:\n - {name: a, lab: {}, attack: {ids: 1}}\n - name: b\n   lab: {}\n   attack:\n     ids: [2]\n",
			`p.yaml: line 6: scenarios[1].attack.ids: want a whole number`},
		"step": {"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - attack: {ids: 1}\n    - attack: {ids: 1, concurrency: x}\n",
			`p.yaml: line 6: scenarios[0].steps[1].attack.concurrency: want a whole number`},
		"header in a map": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 1\n     headers: {x-a: \"1\", x-b: [2]}\n",
			`p.yaml: line 6: scenarios[0].attack.headers.x-b: want a string, not a list`},
		"plan is a list": {"- 1\n- 2\n", `p.yaml: line 1: the plan: want a mapping, not a list`},
		"name a mapping": {"scenarios:\n - name: {x: 1}\n   lab: {}\n   attack: {ids: 1}\n", `p.yaml: line 2: scenarios[0].name: want a string, not a mapping`},
	} {
		_, err := ParsePlan("p.yaml", []byte(c.plan))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err %v,\nwant prefix %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "Go struct") {
			t.Errorf("%s: err %v names Go types", name, err)
		}
	}
}
