package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestPlanAdmittedModel (issue 21): `admitted: model` is the limiter
// model's bounds for the run; it goes into scenario.json as "model". A
// fixed range parses as before, and a word that is neither is an error
// naming the file, the line and the field.
func TestPlanAdmittedModel(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte("scenarios:\n - name: a\n   lab: {local: {max_tokens: 5, fill_interval: 1s}}\n   attack: {ids: 9}\n   expect:\n     admitted: model\n"+
		" - name: b\n   lab: {}\n   attack: {ids: 9}\n   expect: {admitted: 200..230}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Scenarios[0].Expect.Admitted, p.Scenarios[1].Expect.Admitted
	if a == nil || !a.Model || a.String() != "model" {
		t.Fatalf("a: admitted %+v", a)
	}
	if b == nil || b.Model || b.Range != (evidence.Range{Min: 200, Max: 230}) {
		t.Fatalf("b: admitted %+v", b)
	}
	js, err := json.Marshal(p.Scenarios[0].Expect.Expectation)
	if err != nil || !strings.Contains(string(js), `"admitted":"model"`) {
		t.Fatalf("scenario.json's expect: %s, %v", js, err)
	}
	s, err := evidence.DecodeScenario([]byte(`{"schema":"rlbench.scenario/v1","name":"a","expect":` + string(js) + `}`))
	if err != nil || s.Expect.Admitted == nil || !s.Expect.Admitted.Model {
		t.Fatalf("scenario.json read back: %+v, %v", s.Expect.Admitted, err)
	}
	for name, c := range map[string]struct{ plan, want string }{
		"misspelt": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     admitted: modle\n",
			`p.yaml: line 6: scenarios[0].expect.admitted: want N, "MIN..MAX", {min, max} or "model", not "modle"`},
		"capitalised": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     label: x\n     admitted: Model\n",
			`p.yaml: line 7: scenarios[0].expect.admitted: want N, "MIN..MAX", {min, max} or "model", not "Model"`},
		"min > max": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     admitted: 9..3\n",
			`p.yaml: line 6: scenarios[0].expect.admitted: range "9..3": min > max`},
	} {
		_, err := ParsePlan("p.yaml", []byte(c.plan))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err %v\nwant %s", name, err, c.want)
		}
	}
}
