package runner

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// TestPlanThresholds (issue 26): expect takes k6-style latency thresholds
// per class and target and ratios; they go into scenario.json as written
// and read back. A bad one is an error naming the file, the line and the
// field.
func TestPlanThresholds(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte(`scenarios:
 - name: a
   lab: {}
   attack: {ids: 9}
   expect:
     latency: [{class: admitted, p99: "<= 50ms"}, {class: local_429, target: proxy-a, p99: "<= 5ms"}]
     ratios: {no_response: "< 0.1%"}
`))
	if err != nil {
		t.Fatal(err)
	}
	ex := p.Scenarios[0].Expect.Expectation
	if len(ex.Latency) != 2 || ex.Latency[0].P99 == nil || ex.Latency[0].P99.D != 50*time.Millisecond || ex.Latency[1].Target != "proxy-a" ||
		ex.Ratios["no_response"].Ratio != 0.001 || !ex.Checks() {
		t.Fatalf("expect %+v", ex)
	}
	js, err := json.Marshal(ex)
	var written struct {
		Latency []map[string]string `json:"latency"`
		Ratios  map[string]string   `json:"ratios"`
	}
	if err != nil || json.Unmarshal(js, &written) != nil || len(written.Latency) != 2 || written.Latency[0]["p99"] != "<= 50ms" ||
		written.Ratios["no_response"] != "< 0.1%" {
		t.Fatalf("scenario.json's expect: %s, %v", js, err)
	}
	s, err := evidence.DecodeScenario([]byte(`{"schema":"rlbench.scenario/v1","name":"a","expect":` + string(js) + `}`))
	if err != nil || len(s.Expect.Latency) != 2 || s.Expect.Ratios["no_response"] != ex.Ratios["no_response"] {
		t.Fatalf("scenario.json read back: %+v, %v", s.Expect, err)
	}
	head := "scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n"
	for name, c := range map[string]struct{ plan, want string }{
		"bad duration": {head + "     latency:\n       - class: admitted\n         p99: \"<= fast\"\n",
			`p.yaml: line 8: scenarios[0].expect.latency[0].p99: threshold "<= fast": "fast" is not a duration such as 50ms`},
		"no operator": {head + "     ratios: {no_response: 0.1%}\n",
			`p.yaml: line 6: scenarios[0].expect.ratios.no_response: threshold "0.1%": want an operator (<, <=, >, >=) and a value, e.g. "<= 50ms"`},
		"unknown class": {head + "     latency:\n       - class: admited\n         p99: \"<= 5ms\"\n",
			`p.yaml: line 7: scenarios[0] (a): expect.latency[0]: class "admited": want one of`},
		"no percentile": {head + "     latency: [{class: admitted}]\n",
			`expect.latency[0]: give a percentile to bound`},
		"unknown ratio": {head + "     ratios: {noresponse: \"< 1%\"}\n",
			`p.yaml: line 6: scenarios[0] (a): expect.ratios.noresponse: unknown class "noresponse"`},
		"unknown stat": {head + "     latency: [{class: admitted, p95: \"<= 5ms\"}]\n", `p95`},
	} {
		_, err := ParsePlan("p.yaml", []byte(c.plan))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v\nwant %s", name, err, c.want)
		}
	}
}
