package evidence

import (
	"fmt"
	"strings"
	"testing"
)

// TestDecodeScenarioCountsAndKeys (tester report 1, items 4 and 8):
// scenario.json is refused (the analysis is NOT_RUN naming the field) for
// a misspelt class, negative ranges, a duplicate key and min > max, each
// with its line and field path, and the message holds no multi-line JSON.
func TestDecodeScenarioCountsAndKeys(t *testing.T) {
	const head = "{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\n"
	for name, c := range map[string]struct{ doc, want string }{
		"unknown class": {head + "\"expect\": {\n  \"classes\": {\n    \"local429\": {\"min\": 0, \"max\": 0}}}}",
			`line 4: expect.classes.local429: unknown class "local429"; want one of no_response, admitted,`},
		"negative admitted": {head + "\"expect\": {\n  \"admitted\": {\"min\": -5, \"max\": -1}}}",
			`line 3: expect.admitted -5..-1: want 0 <= min <= max`},
		"negative class": {head + "\"expect\": {\"classes\": {\"local_429\": -2}}}",
			`line 2: expect.classes.local_429 -2: want 0 <= min <= max`},
		"duplicate key": {head + "\"intended_limit\": 5,\n\"intended_limit\": 50,\n\"expect\": {}}",
			`line 3: intended_limit: duplicate key (first on line 2)`},
		"duplicate nested key": {head + "\"expect\": {\"admitted\": 3,\n \"admitted\": 30}}",
			`line 3: expect.admitted: duplicate key (first on line 2)`},
		"min > max": {head + "\"expect\": {\n  \"admitted\": {\n    \"min\": 11,\n    \"max\": 5\n  }\n}}",
			`line 4: expect.admitted: range {min: 11, max: 5}: min > max`},
		"bad range form": {head + "\"expect\": {\n  \"admitted\": {\n    \"min\": 11\n  }\n}}",
			`line 3: expect.admitted: want N, "MIN..MAX", {min, max} or "model", not {"min":11}`},
		"bad admitted word": {head + "\"expect\": {\n  \"admitted\": \"modle\"}}",
			`line 3: expect.admitted: want N, "MIN..MAX", {min, max} or "model", not "modle"`},
		"admitted min > max text": {head + "\"expect\": {\n  \"admitted\": \"9..3\"}}",
			`line 3: expect.admitted: range "9..3": min > max`},
		"bad class range form": {head + "\"expect\": {\"classes\": {\"sent\": {\"min\": 1}}}}",
			`range must be N, "MIN..MAX" or {min, max}, not {"min":1}`},
	} {
		_, err := DecodeScenario([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: message spans lines: %q", name, err)
		}
	}
	ok := head + "\"expect\": {\"admitted\": 3, \"classes\": {\"sent\": 10, \"passed\": 3, \"local_429\": \"7\"}},\n" +
		"\"limiters\": [{\"name\": \"a\", \"stage\": \"local\", \"key\": \"target\", \"model\": {\"kind\": \"token_bucket\", \"capacity\": 1}}," +
		" {\"name\": \"b\", \"stage\": \"local\", \"key\": \"target\", \"model\": {\"kind\": \"token_bucket\", \"capacity\": 1}}]}"
	if _, err := DecodeScenario([]byte(ok)); err != nil {
		t.Errorf("valid scenario (same keys in different objects): %v", err)
	}
}

// FuzzDecodeScenario: DecodeScenario never panics, and what it accepts
// has checked counts and no duplicate key; its errors name a line when
// they name one within the document.
func FuzzDecodeScenario(f *testing.F) {
	f.Add([]byte(`{"schema":"rlbench.scenario/v1","name":"x","expect":{"admitted":{"min":1,"max":2},"classes":{"sent":3}}}`))
	f.Add([]byte("{\"name\":\"x\",\n\"intended_limit\":5,\"intended_limit\":50,\"expect\":{}}"))
	f.Add([]byte(`{"name":"x","expect":{"admitted":{"min":11,"max":5}}}`))
	f.Add([]byte(`{"name":"x","expect":{"classes":{"local429":0}}}`))
	f.Add([]byte("{\"name\":\"x\",\n\"intended_limit\":{\"requests\":5,\"per\":\"1m\"},\"expect\":{\"admitted\":\"model\"}}"))
	f.Add([]byte("{\"name\":\"x\",\n\"intended_limit\":\"5/0s\",\"expect\":{\"admitted\":\"modle\"}}"))
	f.Add([]byte(`{"name":"x","expect":{"admitted":{"min":-5,"max":-1}},"limiters":[{"name":"a"},{"name":"a"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeScenario(b)
		if err != nil {
			var n int
			if _, scanErr := fmt.Sscanf(err.Error(), "line %d:", &n); scanErr == nil && (n < 1 || n > strings.Count(string(b), "\n")+1) {
				t.Fatalf("error %q names line %d of a %d-line document", err, n, strings.Count(string(b), "\n")+1)
			}
			return
		}
		if p, err := s.Expect.CheckCounts(); err != nil {
			t.Fatalf("accepted with %s: %v", p, err)
		}
		if _, err := scanKeys(b); err != nil {
			t.Fatalf("accepted with %v", err)
		}
	})
}
