package runner

import (
	"strings"
	"testing"
)

// TestPlanValueErrorsNameFieldAndLine: a value refused by its own type's
// decoder (a rate, a duration, a latency, a range, a peak expectation) is
// named as every other plan error is: file, line and the field's path.
// Before, `rate: 1e300` printed "p.yaml: rate "1e+300": ..." with neither,
// and `latency: fast` or `admitted: {min: many}` had no field path.
func TestPlanValueErrorsNameFieldAndLine(t *testing.T) {
	for name, c := range map[string]struct{ plan, want string }{
		"attack rate number": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 1\n     rate: 1e300\n",
			`p.yaml: line 6: scenarios[0].attack.rate: rate "1e+300": want N/duration`},
		"flow rate": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - {name: x, rate: 1e300/1s, duration: 1s}\n",
			`p.yaml: line 6: scenarios[0].attack.flows[0].rate: rate "1e300/1s": want N/duration`},
		"flow duration": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - name: x\n        rate: 5/1s\n        duration: 5y\n",
			`p.yaml: line 8: scenarios[0].attack.flows[0].duration: time: unknown unit "y" in duration "5y"`},
		"step attack timeout": {"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - attack: {ids: 1}\n    - attack:\n        ids: 1\n        timeout: soon\n",
			`p.yaml: line 8: scenarios[0].steps[1].attack.timeout: time: invalid duration "soon"`},
		"fill interval": {"scenarios:\n - name: a\n   lab:\n     local: {max_tokens: 5, tokens_per_fill: 5, fill_interval: 1e300}\n   attack: {ids: 1}\n",
			`p.yaml: line 4: scenarios[0].lab.local.fill_interval: duration must be a string like "1h" or "20ms": 1e+300`},
		"backend latency": {"scenarios:\n - name: a\n   lab:\n     backend:\n       faults: {latency: fast}\n   attack: {ids: 1}\n",
			`p.yaml: line 5: scenarios[0].lab.backend.faults.latency: latency "fast": want a duration`},
		"range object": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     admitted: {min: many}\n",
			`p.yaml: line 6: scenarios[0].expect.admitted: want N, "MIN..MAX", {min, max} or "model", not {"min":"many"}`},
		"range string": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     classes:\n       local_429: 5..x\n",
			`p.yaml: line 7: scenarios[0].expect.classes.local_429: range "5..x": want N or MIN..MAX`},
		"peak window": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     backend_peak: {window: fast, max: 1}\n",
			`p.yaml: line 6: scenarios[0].expect.backend_peak.window: time: invalid duration "fast"`},
		// A type error inside a list decoded by its own UnmarshalJSON: the
		// list is named (its first line) and the message names the element.
		"peak max in a list": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     backend_peak:\n      - {window: 1s, max: 1}\n      - {window: 1s, max: 1e300}\n",
			`p.yaml: line 7: scenarios[0].expect.backend_peak: cannot unmarshal number 1e+300 into Go struct field .1.max of type int`},
		// The second of two anchored uses: the path is the first fitting
		// value in document order, which is where the bad value is written.
		"alias": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows: &f\n      - {name: x, rate: fast, duration: 1s}\n - name: b\n   lab: {}\n   attack: {flows: *f}\n",
			`p.yaml: line 6: scenarios[0].attack.flows[0].rate: rate "fast"`},
		// An embedded struct's Go name (ExpectPlan.Expectation) is not a
		// plan key: the type error names the plan's path and line.
		"embedded field type": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     starved: maybe\n",
			`p.yaml: line 6: scenarios[0].expect.starved: want true or false, not the string "maybe"`},
	} {
		_, err := ParsePlan("p.yaml", []byte(c.plan))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant it to contain %s", name, err, c.want)
		}
	}
}
