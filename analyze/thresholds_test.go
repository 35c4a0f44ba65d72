package analyze

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// thresholdEv is the demo (10 admitted, 10 local 429s, 1 ms each) whose
// only expectations are expect's latency thresholds and ratios (decoded
// from their JSON, as scenario.json gives them); admittedNs is the
// admitted requests' latency, and stall, when > 0, the largest stall the
// host probe measured (harness.json).
func thresholdEv(t *testing.T, expect string, admittedNs int64, stall time.Duration) string {
	t.Helper()
	e := newEv(t).demo()
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{}
	must(t, json.Unmarshal([]byte(expect), &e.scenario.Expect))
	for i := range e.requests {
		if e.requests[i].Code == 200 {
			e.requests[i].LatencyNs = admittedNs
		}
	}
	dir := e.write()
	if stall > 0 {
		h := evidence.Harness{Schema: evidence.HarnessSchema, StartNs: t0, EndNs: t0 + 1e9, CPUs: 2, StealNs: -1, Load1Start: -1, Load1End: -1,
			Probe: evidence.HarnessProbe{IntervalNs: 1e6, Samples: 1000, MaxLateNs: int64(stall), P99LateNs: int64(stall), Stalls: []evidence.HarnessStall{}}}
		b, err := json.Marshal(h)
		must(t, err)
		must(t, os.WriteFile(evidence.Dir(dir).Harness(), b, 0o644))
	}
	return dir
}

// TestThresholdsPass: k6-style latency percentiles per class and target and
// a ratio, all met: PASS, each a check with its measured value.
func TestThresholdsPass(t *testing.T) {
	dir := thresholdEv(t, `{"latency": [{"class": "admitted", "p99": "<= 50ms"}, {"class": "local_429", "target": "proxy-a", "p99": "<= 5ms", "max": "< 2ms"}],
		"ratios": {"no_response": "< 0.1%", "admitted": ">= 50%"}}`, int64(20*time.Millisecond), 100*time.Microsecond)
	s := judged(t, dir, "26-thresholds-pass")
	wantVerdict(t, s, evidence.Pass)
	for name, want := range map[string]report.Check{
		"latency admitted p99":             {Status: report.CheckPass, Want: "<= 50ms", Got: "20ms (10 requests)"},
		"latency local_429 at proxy-a p99": {Status: report.CheckPass, Want: "<= 5ms", Got: "1ms (5 requests)"},
		"latency local_429 at proxy-a max": {Status: report.CheckPass, Want: "< 2ms", Got: "1ms (5 requests)"},
		"ratio no_response":                {Status: report.CheckPass, Want: "< 0.1%", Got: "0% (0 of 20)"},
		"ratio admitted":                   {Status: report.CheckPass, Want: ">= 50%", Got: "50% (10 of 20)"},
	} {
		c := check(t, s, name)
		want.Name = c.Name
		if c != want {
			t.Errorf("check %+v, want %+v", c, want)
		}
	}
}

// TestLatencyBreach: a p99 above its bound by more than the harness's
// largest stall FAILs with the measured value; the same breach within the
// stall (or, without a host probe, within the default tolerance) is
// inconclusive: the harness's own lateness could explain it.
func TestLatencyBreach(t *testing.T) {
	expect := `{"latency": [{"class": "admitted", "p99": "<= 10ms"}]}`
	s := judged(t, thresholdEv(t, expect, int64(40*time.Millisecond), time.Millisecond), "26-latency-fail")
	wantVerdict(t, s, evidence.Fail, "latency admitted p99: want <= 10ms, got 40ms (10 requests)")

	s = judged(t, thresholdEv(t, expect, int64(12*time.Millisecond), 3*time.Millisecond), "26-latency-within-stall")
	wantVerdict(t, s, evidence.NotRun, "inconclusive: latency admitted p99: want <= 10ms, got 12ms (10 requests): 2ms over the bound, within the host probe's largest stall 3ms")

	s = judged(t, thresholdEv(t, expect, int64(12*time.Millisecond), 0), "26-latency-unprobed")
	wantVerdict(t, s, evidence.NotRun, "2ms over the bound, within the default timing tolerance 5ms (the host was not probed)")
	s = judged(t, thresholdEv(t, expect, int64(16*time.Millisecond), 0), "26-latency-unprobed-fail")
	wantVerdict(t, s, evidence.Fail, "latency admitted p99: want <= 10ms, got 16ms")

	// A lower bound broken is never the harness's doing: a stall only adds latency.
	s = judged(t, thresholdEv(t, `{"latency": [{"class": "admitted", "p50": ">= 30ms"}]}`, int64(29*time.Millisecond), 5*time.Millisecond), "26-latency-lower")
	wantVerdict(t, s, evidence.Fail, "latency admitted p50: want >= 30ms, got 29ms")
}

// TestRatioBreach: a ratio over its bound FAILs with the count; "passed"
// that requests without response decide is inconclusive.
func TestRatioBreach(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{}
	must(t, json.Unmarshal([]byte(`{"ratios": {"no_response": "< 0.1%"}}`), &e.scenario.Expect))
	e.requests[19].Code, e.requests[19].Body, e.requests[19].BytesIn, e.requests[19].Error = 0, "", 0, "timeout"
	wantVerdict(t, judged(t, e.write(), "26-ratio-fail"), evidence.Fail, "ratio no_response: want < 0.1%, got 5% (1 of 20)")

	e = newEv(t).demo()
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{}
	must(t, json.Unmarshal([]byte(`{"ratios": {"passed": "<= 50%"}}`), &e.scenario.Expect))
	e.requests[19].Code, e.requests[19].Body, e.requests[19].BytesIn, e.requests[19].Error = 0, "", 0, "timeout"
	wantVerdict(t, judged(t, e.write(), "26-ratio-passed-undecided"), evidence.NotRun,
		"inconclusive: ratio passed: want <= 50%, got 50%..55% (10..11 of 20): the requests without response decide it")
}

// TestThresholdsNothingMeasured: a class without responses (at the target)
// is inconclusive, never PASS; bounds that cannot fail are not checked,
// and alone leave nothing to check.
func TestThresholdsNothingMeasured(t *testing.T) {
	s := judged(t, thresholdEv(t, `{"latency": [{"class": "global_429", "p99": "<= 5ms"}, {"class": "admitted", "target": "proxy-z", "p50": "< 1s"}]}`, 1e6, time.Millisecond), "26-nothing-measured")
	wantVerdict(t, s, evidence.NotRun, "inconclusive: latency global_429 p99: want <= 5ms, got no global_429 responses: nothing measured",
		"latency admitted at proxy-z p50: want < 1s, got no admitted responses to proxy-z")

	s = judged(t, thresholdEv(t, `{"ratios": {"no_response": "<= 100%"}, "latency": [{"class": "admitted", "max": ">= 0s"}]}`, 1e6, time.Millisecond), "26-vacuous")
	wantVerdict(t, s, evidence.NotRun, "nothing to check: latency admitted max >= 0s cannot fail: a latency is never below 0; ratio no_response <= 100% cannot fail")
	// Beside a real check, one that cannot fail is shown, not checked.
	s = judged(t, thresholdEv(t, `{"ratios": {"no_response": "<= 100%", "admitted": ">= 50%"}}`, 1e6, time.Millisecond), "26-vacuous-beside")
	wantVerdict(t, s, evidence.Pass)
	if c := check(t, s, "ratio no_response"); c.Status != report.CheckNotChecked || !strings.Contains(c.Got, "0% (0 of 20) (not checked: <= 100% cannot fail") {
		t.Errorf("check %+v", c)
	}
}

// TestThresholdsInScenarioJSON: scenario.json's thresholds load, and a bad
// one is incomplete evidence naming scenario.json and the threshold.
func TestThresholdsInScenarioJSON(t *testing.T) {
	e := newEv(t).demo()
	dir := e.write()
	b, err := os.ReadFile(evidence.Dir(dir).Scenario())
	must(t, err)
	bad := strings.Replace(string(b), `"expect":{`, `"expect":{"latency":[{"class":"admitted","p99":"<= soon"}],`, 1)
	must(t, os.WriteFile(evidence.Dir(dir).Scenario(), []byte(bad), 0o644))
	s := run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.NotRun, "scenario.json: line 1", `threshold "<= soon": "soon" is not a duration`)

	bad = strings.Replace(string(b), `"expect":{`, `"expect":{"ratios":{"no_respons":"< 1%"},`, 1)
	must(t, os.WriteFile(evidence.Dir(dir).Scenario(), []byte(bad), 0o644))
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.NotRun, "scenario.json: line 1", `expect.ratios.no_respons: unknown class "no_respons"`)
}
