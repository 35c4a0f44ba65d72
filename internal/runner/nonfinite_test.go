package runner

import (
	"strings"
	"testing"
)

// TestPlanNonFiniteNumberNamesLine (issue 27): a plan number written as
// YAML's .nan or .inf was refused by the
// YAML-to-JSON step with "unsupported value: NaN", naming neither the line
// nor the field. The error now names both; the same plan with a finite
// number parses, and a quoted ".nan" is a string, left to the field's own
// decoder.
func TestPlanNonFiniteNumberNamesLine(t *testing.T) {
	plan := func(v string) string {
		return "name: n\nscenarios:\n  - name: s\n    intended_limit: " + v +
			"\n    lab: {proxies: 1, local: {max_tokens: 5, tokens_per_fill: 5, fill_interval: 1h}}\n    attack: {ids: 5}\n    expect: {admitted: 5}\n"
	}
	for _, v := range []string{".nan", ".NaN", ".inf", "-.Inf", "+.INF"} {
		_, err := ParsePlan("p.yaml", []byte(plan(v)))
		if err == nil || !strings.Contains(err.Error(), "p.yaml: line 4: scenarios[0].intended_limit: "+v+" is not a finite number") {
			t.Errorf("%s: %v", v, err)
		}
	}
	if _, err := ParsePlan("p.yaml", []byte(plan("5"))); err != nil {
		t.Errorf("finite: %v", err)
	}
	if _, err := ParsePlan("p.yaml", []byte(plan(`".nan"`))); err == nil || strings.Contains(err.Error(), "not a finite number") {
		t.Errorf("quoted: %v", err)
	}
	// A lab file goes through the same decoder.
	if _, err := ParseLabFile("lab.yaml", []byte("proxies: 1\nlocal: {max_tokens: .inf, tokens_per_fill: 1, fill_interval: 1s}\n")); err == nil ||
		!strings.Contains(err.Error(), "lab.yaml: line 2: local.max_tokens: .inf is not a finite number") {
		t.Errorf("lab file: %v", err)
	}
}
