package runner

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
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

// TestPlanIntendedLimitUnits (issue 21): intended_limit takes a window,
// {requests: 5, per: 1m} or "5/1m"; a plain number is per run as before.
// Bad values name the file, the line and the field.
func TestPlanIntendedLimitUnits(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte("scenarios:\n"+
		" - {name: a, lab: {}, attack: {ids: 3}, intended_limit: 5}\n"+
		" - {name: b, lab: {}, attack: {ids: 3}, intended_limit: {requests: 5, per: 1m}}\n"+
		" - {name: c, lab: {}, attack: {ids: 3}, intended_limit: 5/1m}\n"+
		" - {name: d, lab: {}, attack: {ids: 3}, intended_limit: \"100/s\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	perMinute := evidence.IntendedLimit{Requests: 5, Per: model.Duration(time.Minute)}
	for i, want := range []evidence.IntendedLimit{{Requests: 5}, perMinute, perMinute, {Requests: 100, Per: model.Duration(time.Second)}} {
		if got := p.Scenarios[i].IntendedLimit; got == nil || *got != want {
			t.Errorf("scenario %d: intended limit %+v, want %+v", i, got, want)
		}
	}
	for name, c := range map[string]struct{ plan, want string }{
		"words": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   intended_limit: 5 per minute\n",
			`p.yaml: line 5: scenarios[0].intended_limit: want N (per run), {requests: N, per: DURATION} or "N/DURATION", not "5 per minute"`},
		"per zero": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   intended_limit:\n     requests: 5\n     per: 0s\n",
			`p.yaml: line 6: scenarios[0].intended_limit: intended limit per 0s: want 1ms .. 8784h (omit per for the whole run)`},
		"misspelt field": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   intended_limit: {requests: 5, window: 1m}\n",
			`p.yaml: line 5: scenarios[0].intended_limit: want N (per run), {requests: N, per: DURATION} or "N/DURATION", not {"requests":5,"window":"1m"}: unknown field "window"`},
		"negative per run": {"scenarios:\n - name: a\n   intended_limit: -5\n   lab: {}\n   attack: {ids: 1}\n",
			`p.yaml: line 3: scenarios[0] (a): intended_limit must be >= 0, not -5`},
		"negative per window": {"scenarios:\n - name: a\n   intended_limit: -5/1m\n   lab: {}\n   attack: {ids: 1}\n",
			`p.yaml: line 3: scenarios[0].intended_limit: intended limit requests -5: must be >= 0`},
	} {
		_, err := ParsePlan("p.yaml", []byte(c.plan))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err %v\nwant %s", name, err, c.want)
		}
	}
}
