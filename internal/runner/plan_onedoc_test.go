package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/yamlguard"
)

// TestPlanSecondDocument: a plan or lab file is one YAML document. A second
// one (after "---") used to be dropped by the decoder without a word; it is
// an error naming the file and the line of its separator. A lone trailing
// "---" (nothing, or comments only, after it) holds no value and is
// accepted.
func TestPlanSecondDocument(t *testing.T) {
	const plan = "scenarios:\n - {name: a, lab: {}, attack: {ids: 3}}\n"
	for name, c := range map[string]struct {
		text string
		line int // 0: accepted
	}{
		"second plan":          {plan + "---\nscenarios:\n - {name: b, lab: {}, attack: {ids: 3}}\n", 3},
		"explicit first":       {"---\n" + plan + "---\n- x\n", 4},
		"scalar after":         {plan + "--- more\n", 3},
		"explicit null after":  {plan + "---\n~\n", 3},
		"empty first":          {"---\n---\n" + plan, 2},
		"malformed second":     {plan + "\n---\nscenarios: [\n", 4},
		"after an end marker":  {plan + "...\n---\nx: 1\n", 4},
		"trailing separator":   {plan + "---\n", 0},
		"trailing and comment": {plan + "---\n# the end\n", 0},
		"end marker":           {plan + "...\n", 0},
	} {
		_, err := ParsePlan("plan.yaml", []byte(c.text))
		if c.line == 0 {
			if err != nil {
				t.Errorf("%s: %v, want accepted", name, err)
			}
			continue
		}
		var ge *yamlguard.Error
		if !errors.As(err, &ge) || ge.Name != "plan.yaml" || ge.Line != c.line || !strings.Contains(err.Error(), "second YAML document") {
			t.Errorf("%s: err = %v, want a second-document error at plan.yaml line %d", name, err, c.line)
		}
	}
	lab := "local: {max_tokens: 5, tokens_per_fill: 5, fill_interval: 1h}\n"
	if _, err := ParseLabFile("lab.yaml", []byte(lab+"---\nproxies: 3\n")); err == nil || err.Error() != `lab.yaml:2: a second YAML document (after a "---" separator): this file holds one document, and only the first would be read` {
		t.Errorf("lab file with two documents: %v", err)
	}
	if _, err := ParseLabFile("lab.yaml", []byte(lab+"---\n")); err != nil {
		t.Errorf("lab file with a trailing separator: %v", err)
	}
}
