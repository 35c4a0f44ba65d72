package evidence

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAdmittedExpectationJSON: "admitted" reads every range form of the
// previous release and "model"; a range is written as it always was
// ({"min", "max"}), so an older reader loads it, and "model" as "model".
func TestAdmittedExpectationJSON(t *testing.T) {
	for in, want := range map[string]AdmittedExpectation{
		`5`:                    {Range: Exact(5)},
		`"5"`:                  {Range: Exact(5)},
		`"200..230"`:           {Range: Range{Min: 200, Max: 230}},
		`{"min": 1, "max": 3}`: {Range: Range{Min: 1, Max: 3}},
		`"model"`:              {Model: true},
	} {
		var a AdmittedExpectation
		if err := json.Unmarshal([]byte(in), &a); err != nil || a != want {
			t.Errorf("%s: got %+v, %v; want %+v", in, a, err, want)
		}
	}
	for _, bad := range []string{`"Model"`, `"models"`, `true`, `{"model": true}`, `"1..x"`} {
		var a AdmittedExpectation
		err := json.Unmarshal([]byte(bad), &a)
		if err == nil || !strings.Contains(err.Error(), `or "model", not `) {
			t.Errorf("%s: got %+v, %v", bad, a, err)
		}
	}
	var a AdmittedExpectation
	if err := json.Unmarshal([]byte(`"9..3"`), &a); err == nil || !strings.Contains(err.Error(), "min > max") {
		t.Errorf("9..3: %v", err)
	}
	b, err := json.Marshal(Expectation{Admitted: AdmittedIn(Range{Min: 200, Max: 230})})
	if err != nil || string(b) != `{"admitted":{"min":200,"max":230}}` {
		t.Errorf("range written as %s, %v", b, err)
	}
	var old struct {
		Admitted *Range `json:"admitted"`
	}
	if err := json.Unmarshal(b, &old); err != nil || *old.Admitted != (Range{Min: 200, Max: 230}) {
		t.Errorf("the previous release's type reads %s as %+v, %v", b, old.Admitted, err)
	}
	b, err = json.Marshal(Expectation{Admitted: AdmittedByModel()})
	if err != nil || string(b) != `{"admitted":"model"}` {
		t.Errorf("model written as %s, %v", b, err)
	}
	s, err := DecodeScenario([]byte(`{"schema":"rlbench.scenario/v1","name":"x","expect":{"admitted":"model"}}`))
	if err != nil || s.Expect.Admitted == nil || !s.Expect.Admitted.Model || s.Expect.Admitted.String() != "model" {
		t.Fatalf("decoded %+v, %v", s.Expect.Admitted, err)
	}
	if _, err := s.Expect.CheckCounts(); err != nil {
		t.Errorf("model counts: %v", err)
	}
}

// FuzzAdmittedExpectation: what UnmarshalJSON accepts is "model" or a
// range with min <= max, and it reads back the same after MarshalJSON.
func FuzzAdmittedExpectation(f *testing.F) {
	for _, s := range []string{`"model"`, `5`, `"1..3"`, `{"min":1,"max":2}`, `"mod"`, `null`, `{"min":3,"max":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a AdmittedExpectation
		if a.UnmarshalJSON(b) != nil {
			return
		}
		if !a.Model && a.Range.Min > a.Range.Max {
			t.Fatalf("%q accepted as %+v", b, a)
		}
		out, err := a.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back AdmittedExpectation
		if err := back.UnmarshalJSON(out); err != nil || back != a {
			t.Fatalf("%q -> %+v -> %s -> %+v, %v", b, a, out, back, err)
		}
	})
}
