package schemagen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"sigs.k8s.io/yaml"

	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/schemas"
)

// repoPlans returns every plan file of the repository: examples/*/plan.yaml
// and the *.yaml files of the CLI's test scripts.
func repoPlans(t *testing.T) map[string][]byte {
	root := testfix.RepoRoot(t)
	out := map[string][]byte{}
	paths, _ := filepath.Glob(filepath.Join(root, "examples", "*", "plan.yaml"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	scripts, _ := filepath.Glob(filepath.Join(root, "internal", "cli", "testdata", "script", "*.txtar"))
	for _, p := range scripts {
		a, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if strings.HasSuffix(f.Name, ".yaml") && strings.Contains(string(f.Data), "scenarios:") {
				out[p+"#"+f.Name] = f.Data
			}
		}
	}
	return out
}

func validatePlan(yml []byte) error {
	j, err := yaml.YAMLToJSON(yml)
	if err != nil {
		return err
	}
	return schemas.Validate(schemas.Plan, j)
}

// TestPlansMatchSchema: every plan of the repository that runner.ParsePlan
// accepts matches schemas/plan.v1.schema.json.
func TestPlansMatchSchema(t *testing.T) {
	n := 0
	for name, data := range repoPlans(t) {
		if _, err := runner.ParsePlan(name, data); err != nil {
			t.Logf("%s: not a valid plan, skipped: %v", name, err)
			continue
		}
		if err := validatePlan(data); err != nil {
			t.Errorf("%s: a plan rlbench runs does not match the plan schema: %v", name, err)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("only %d plans checked", n)
	}
}

// TestPlanSchemaRejects: plans that runner.ParsePlan refuses for their
// shape are refused by the schema too.
func TestPlanSchemaRejects(t *testing.T) {
	const lab = "lab: {local: {max_tokens: 5, fill_interval: 1h}}"
	ok := "scenarios:\n  - name: a\n    " + lab + "\n    attack: {ids: 3}\n"
	if _, err := runner.ParsePlan("ok", []byte(ok)); err != nil {
		t.Fatal(err)
	}
	for _, good := range []string{ok,
		"scenarios: [{name: a, lab: {backend: {endpoints: 2, faults: {latency: 'uniform:10ms..50ms', error_status: 503, error_probability: 0.5}}}, " +
			"steps: [{fault: {action: set, target: backend, faults: {latency: 20ms}, for: 1s}}, {attack: {ids: 3}}, {fault: {action: clear, target: backend}}]}]",
		"scenarios: [{name: a, lab: {global: {domain: d, rate_limits: [{actions: [{remote_address: {}}]}]}, rls: {config: 'domain: d'}}, attack: {ids: 3}}]",
	} {
		if _, err := runner.ParsePlan("good", []byte(good)); err != nil {
			t.Fatalf("%s: %v", good, err)
		}
		if err := validatePlan([]byte(good)); err != nil {
			t.Fatalf("a good plan does not match: %v\n%s", err, good)
		}
	}
	bad := map[string]string{
		"unknown field":       "scenarios: [{name: a, " + lab + ", attack: {ids: 3}, retries: 2}]",
		"no scenarios":        "name: x\nscenarios: []",
		"no name":             "scenarios: [{" + lab + ", attack: {ids: 3}}]",
		"lab and external":    "scenarios: [{name: a, " + lab + ", external: {proxies: [{name: p, url: 'http://x'}]}, attack: {ids: 3}}]",
		"neither lab nor ext": "scenarios: [{name: a, attack: {ids: 3}}]",
		"attack and steps":    "scenarios: [{name: a, " + lab + ", attack: {ids: 3}, steps: [{attack: {ids: 1}}]}]",
		"no attack":           "scenarios: [{name: a, " + lab + "}]",
		"step with both":      "scenarios: [{name: a, " + lab + ", steps: [{attack: {ids: 1}, fault: {action: stop, target: rls}}]}]",
		"zero ids":            "scenarios: [{name: a, " + lab + ", attack: {ids: 0}}]",
		"bad rate":            "scenarios: [{name: a, " + lab + ", attack: {ids: 3, rate: fast}}]",
		"bad duration":        "scenarios: [{name: a, " + lab + ", attack: {ids: 3, timeout: forever}}]",
		"number duration":     "scenarios: [{name: a, " + lab + ", attack: {ids: 3, timeout: 5}}]",
		"negative range":      "scenarios: [{name: a, " + lab + ", attack: {ids: 3}, expect: {admitted: -1}}]",
		"bad range":           "scenarios: [{name: a, " + lab + ", attack: {ids: 3}, expect: {admitted: 'few'}}]",
		"fault action":        "scenarios: [{name: a, " + lab + ", steps: [{fault: {action: kill, target: rls}}, {attack: {ids: 1}}]}]",
		"fault target":        "scenarios: [{name: a, " + lab + ", steps: [{fault: {action: stop, target: db}}, {attack: {ids: 1}}]}]",
		"exec no command":     "scenarios: [{name: a, " + lab + ", steps: [{fault: {action: exec, target: x}}, {attack: {ids: 1}}]}]",
		"rls kind":            "scenarios: [{name: a, lab: {rls: {kind: cloud, config: 'domain: d'}}, attack: {ids: 3}}]",
		"no max_tokens":       "scenarios: [{name: a, lab: {local: {fill_interval: 1h}}, attack: {ids: 3}}]",
		"two actions":         "scenarios: [{name: a, lab: {global: {domain: d, descriptors: [{remote_address: {}, generic_key: {descriptor_value: v}}]}, rls: {config: 'domain: d'}}, attack: {ids: 3}}]",
		"percent":             "scenarios: [{name: a, lab: {local: {max_tokens: 5, fill_interval: 1h, filter_enabled: 150}}, attack: {ids: 3}}]",
		"no global action":    "scenarios: [{name: a, lab: {global: {domain: d}, rls: {config: 'domain: d'}}, attack: {ids: 3}}]",
		"set without faults":  "scenarios: [{name: a, " + lab + ", steps: [{fault: {action: set, target: backend}}, {attack: {ids: 1}}]}]",
		"set on rls":          "scenarios: [{name: a, " + lab + ", steps: [{fault: {action: set, target: rls, faults: {error_status: 503}}}, {attack: {ids: 1}}]}]",
		"clear with faults":   "scenarios: [{name: a, " + lab + ", steps: [{fault: {action: clear, target: backend, faults: {error_status: 503}}}, {attack: {ids: 1}}]}]",
		"bad latency":         "scenarios: [{name: a, lab: {backend: {faults: {latency: gamma:1s}}}, attack: {ids: 3}}]",
		"probability":         "scenarios: [{name: a, lab: {backend: {faults: {error_status: 503, error_probability: 2}}}, attack: {ids: 3}}]",
	}
	for name, y := range bad {
		if _, err := runner.ParsePlan(name, []byte(y)); err == nil {
			t.Errorf("%s: ParsePlan accepts it: not a bad plan", name)
		}
		if err := validatePlan([]byte(y)); err == nil {
			t.Errorf("%s: the plan schema accepts it", name)
		}
	}
}

// TestEvidenceSchemasReject: the evidence schemas lock their field lists
// and closed sets.
func TestEvidenceSchemasReject(t *testing.T) {
	good := map[string]string{
		schemas.Request:  `{"id":"1","target":"a","url":"http://x/","method":"GET","sent_ns":1,"latency_ns":2,"code":200,"bytes_in":0}`,
		schemas.Receipt:  `{"id":null,"recv_ns":1,"recv_time":"2026-12-01T00:00:00.000000001Z","method":"GET","path":"/","remote":"127.0.0.1:1"}`,
		schemas.Fault:    `{"name":"stop rls","action":"stop","target":"rls","begin_ns":1,"end_ns":2,"ok":true}`,
		schemas.Decision: `{"time_ns":1,"domain":"d","descriptor":[{"key":"k","value":"v"}],"code":"OVER_LIMIT"}`,
		schemas.Scenario: `{"schema":"rlbench.scenario/v1","name":"s","expect":{"admitted":"5..10","classes":{"local_429":{"min":1,"max":2},"sent":20}}}`,
	}
	for name, doc := range good {
		if err := schemas.Validate(name, []byte(doc)); err != nil {
			t.Errorf("%s rejects a good document: %v", name, err)
		}
	}
	bad := []struct{ schema, doc, why string }{
		{schemas.Request, `{"id":"1","target":"a","url":"u","method":"GET","sent_ns":1,"latency_ns":2,"code":200,"bytes_in":0,"extra":1}`, "unknown field"},
		{schemas.Request, `{"id":"1","target":"a","url":"u","method":"GET","sent_ns":1,"latency_ns":2,"bytes_in":0}`, "no code"},
		{schemas.Receipt, `{"id":"1","recv_ns":1}`, "no recv_time, method, path, remote"},
		{schemas.Fault, `{"name":"x","action":"kill","target":"rls","begin_ns":1,"end_ns":2,"ok":true}`, "unknown action"},
		{schemas.Decision, `{"time_ns":1,"domain":"d","descriptor":[],"code":"MAYBE"}`, "unknown code"},
		{schemas.Scenario, `{"schema":"rlbench.scenario/v2","name":"s","expect":{}}`, "other schema ID"},
		{schemas.Scenario, `{"schema":"rlbench.scenario/v1","name":"s","expect":{"classes":{"teapot":1}}}`, "unknown class"},
		{schemas.Attack, `{"schema":"rlbench.attack/v1","complete":true,"interrupted":false,"sent":0,"recorded":0,"start_ns":0,"end_ns":0,"phases":[]}`, "v1 ID in a v2 file"},
		{schemas.Report, `{"schema":"rlbench.report/v2","dir":"x","generated_at":"2026-11-30T00:00:00Z","status":"PASS","scenarios":[],"groups":[],"extra":1}`, "unknown field"},
		{schemas.Report, `{"schema":"rlbench.report/v2","dir":"x","generated_at":"2026-11-30T00:00:00Z","status":"MAYBE","scenarios":[],"groups":[]}`, "unknown verdict"},
	}
	for _, c := range bad {
		if schemas.Validate(c.schema, []byte(c.doc)) == nil {
			t.Errorf("%s accepts a document with %s", c.schema, c.why)
		}
	}
	// attack.v1 accepts both earlier shapes.
	for _, doc := range []string{
		`{"schema":"rlbench.attack/v1","complete":true,"interrupted":false,"sent":0,"recorded":0,"start_ns":0,"end_ns":0,"phases":[]}`,
	} {
		if err := schemas.Validate(schemas.AttackV1, []byte(doc)); err != nil {
			t.Errorf("attack.v1 rejects the runner's phase file: %v", err)
		}
	}
}
