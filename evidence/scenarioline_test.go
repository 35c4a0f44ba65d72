package evidence

import (
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

// TestDecodeScenarioValueLines: errors of values that decode themselves
// were reported without a line ("window": "ten": `time: invalid duration
// "ten"`; "model": "yes" in backend_peak: "Go struct field .0.model"), or
// with the line of the offset inside a limiter's model ("burst": "200" on
// line 9). Each names its line and field.
func TestDecodeScenarioValueLines(t *testing.T) {
	head := "{\"schema\": \"rlbench.scenario/v1\",\n\"name\": \"x\",\n"
	nginx := "\"limiters\": [\n{\"name\": \"a\", \"stage\": \"local\", \"key\": \"target\",\n \"model\": {\"kind\": \"nginx_limit_req\", \"rate\": \"10r/s\", \"burst\": 5}},\n" +
		"{\"name\": \"b\", \"stage\": \"local\", \"key\": \"target\",\n \"model\": {\"kind\": \"nginx_limit_req\",\n  \"rate\": \"10r/s\",\n  \"burst\": \"200\"}}],\n"
	for _, c := range []struct{ doc, want string }{
		{head + "\"expect\": {\n\"backend_peak\": [{\"window\": \"1s\", \"max\": 3},\n {\"max\": 2,\n  \"window\": \"ten\"}]}}",
			`line 6: expect.backend_peak[1].window: time: invalid duration "ten"`},
		{head + "\"expect\": {\n\"backend_peak\": {\"max\": 2,\n  \"window\": \"ten\"}}}",
			`line 5: expect.backend_peak.window: time: invalid duration "ten"`},
		{head + "\"expect\": {\n\"backend_peak\": [{\"window\": \"1s\",\n  \"model\": \"yes\"}]}}",
			`line 5: expect.backend_peak[0].model: `},
		{head + "\"limiters\": [{\"name\": \"s\", \"stage\": \"local\", \"key\": \"target\",\n \"model\": {\"kind\": \"sliding_log\", \"limit\": 5,\n  \"window\": \"ten\"}}],\n\"expect\": {}}",
			`line 5: limiters[0].model.window: limiter spec: time: invalid duration "ten"`},
		{head + nginx + "\"expect\": {}}",
			`line 9: limiters[1].model.burst: limiter spec: `},
	} {
		_, err := DecodeScenario([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.doc, err, c.want)
		}
	}
	if _, err := DecodeScenario([]byte(head + strings.Replace(nginx, `"200"`, "200", 1) + "\"expect\": {}}")); err != nil {
		t.Fatalf("valid limiters: %v", err)
	}
}

// TestScenarioNotAnObjectOrBOM: scenario.json holding [] was reported as
// "line 1: : json: ..." (an empty field name), and one starting with a
// byte-order mark as "invalid character 'ï'". The field is left out when
// there is none, and the mark is named, as for every evidence document
// read with JSONError.
func TestScenarioNotAnObjectOrBOM(t *testing.T) {
	_, err := DecodeScenario([]byte("[]"))
	if err == nil || strings.Contains(err.Error(), ": :") || !strings.HasPrefix(err.Error(), "line 1: json: cannot unmarshal array") {
		t.Errorf("[]: %v", err)
	}
	doc := "\xef\xbb\xbf{\"schema\": \"rlbench.scenario/v1\", \"name\": \"x\", \"expect\": {}}"
	_, err = DecodeScenario([]byte(doc))
	if err == nil || !strings.HasPrefix(err.Error(), "line 1: a byte-order mark (U+FEFF) starts the file") {
		t.Errorf("BOM: %v", err)
	}
	if err := JSONError([]byte(doc), json.Unmarshal([]byte(doc), new(Attack))); err == nil || !strings.Contains(err.Error(), "byte-order mark") {
		t.Errorf("BOM in another document: %v", err)
	}
}
