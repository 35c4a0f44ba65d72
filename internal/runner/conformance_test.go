package runner

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

const conformancePlanYAML = `name: c
scenarios:
  - name: plain
    labels: {limiter: own, shape: one}
    lab: {proxies: 1}
    attack: {ids: 3}
    expect: {admitted: 3}
conformance:
  limiters:
    - name: local bucket
      lab:
        proxies: 1
        local: {max_tokens: 10, tokens_per_fill: 1, fill_interval: 100ms}
    - name: nginx nodelay
      skip: [backend_peak]
      lab:
        nginx: {rate: 10r/s, burst: 9, nodelay: true}
  shapes:
    - name: burst
      attack: {ids: 15, concurrency: 15}
      expect: {admitted: model, backend_peak: {window: 100ms, model: true}}
    - name: two bursts
      steps:
        - attack: {ids: 10, concurrency: 10}
        - fault: {action: exec, target: idle, command: "sleep 0.5"}
        - attack: {ids: 10, concurrency: 10}
      expect: {admitted: model}
    - name: sustained
      repeat: 2
      attack:
        flows: [{name: s, rate: 20/1s, duration: 3s}]
      expect: {admitted: model}
`

// TestConformanceExpansion: limiters × shapes become scenarios after the
// plan's own, limiter by limiter, named "<limiter> × <shape>", labelled,
// each with its own copy of the sections (validate filled the defaults of
// each copy: the attack shorthand became a step in every one).
func TestConformanceExpansion(t *testing.T) {
	p, err := ParsePlan("c.yaml", []byte(conformancePlanYAML))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Scenarios) != 1+2*3 {
		t.Fatalf("%d scenarios, want 7", len(p.Scenarios))
	}
	var names []string
	for _, s := range p.Scenarios {
		names = append(names, s.Name)
	}
	want := []string{"plain", "local bucket × burst", "local bucket × two bursts", "local bucket × sustained",
		"nginx nodelay × burst", "nginx nodelay × two bursts", "nginx nodelay × sustained"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	if l := p.Scenarios[0].Labels; l == nil || *l != (evidence.Labels{Limiter: "own", Shape: "one"}) {
		t.Errorf("plain's labels %+v", l)
	}
	s := p.Scenarios[5]
	if *s.Labels != (evidence.Labels{Limiter: "nginx nodelay", Shape: "two bursts"}) {
		t.Errorf("labels %+v", s.Labels)
	}
	if s.Lab == nil || s.Lab.Nginx == nil || !s.Lab.Nginx.NoDelay || len(s.Steps) != 3 || s.Steps[1].Fault == nil {
		t.Errorf("nginx × two bursts: lab %+v, steps %+v", s.Lab, s.Steps)
	}
	if p.Scenarios[3].Repeat != 2 || p.Scenarios[6].Repeat != 2 || p.Scenarios[1].Repeat != 1 {
		t.Errorf("repeats %d %d %d", p.Scenarios[3].Repeat, p.Scenarios[6].Repeat, p.Scenarios[1].Repeat)
	}
	// Copies: changing one scenario's sections leaves the others alone.
	p.Scenarios[1].Lab.Local.MaxTokens = 99
	p.Scenarios[1].Steps[0].Attack.IDs = 99
	if p.Scenarios[2].Lab.Local.MaxTokens != 10 || p.Scenarios[4].Steps[0].Attack.IDs != 15 {
		t.Error("expanded scenarios share their sections")
	}
	if !p.Scenarios[1].Expect.Admitted.Model || len(p.Scenarios[1].Expect.BackendPeak) != 1 || !p.Scenarios[1].Expect.BackendPeak[0].Model {
		t.Errorf("expect not copied: %+v", p.Scenarios[1].Expect)
	}
	// nginx skips backend_peak: its copy of the shape has none, the shape keeps it.
	if !p.Scenarios[4].Expect.Admitted.Model || len(p.Scenarios[4].Expect.BackendPeak) != 0 || len(p.Scenarios[1].Expect.BackendPeak) != 1 {
		t.Errorf("skip: %+v", p.Scenarios[4].Expect)
	}
	// The section is expanded once: the plan is its scenarios, whose JSON
	// form loads as the same plan.
	if p.Conformance != nil {
		t.Error("the conformance section is kept after expansion")
	}
	if err := p.validate(); err != nil || len(p.Scenarios) != 7 {
		t.Errorf("validate again: %v, %d scenarios", err, len(p.Scenarios))
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParsePlan("again.yaml", b)
	if err != nil || !reflect.DeepEqual(again, p) {
		t.Errorf("the JSON form loads as %+v, %v", again, err)
	}
}

// TestConformanceLabCopiedWhole: a limiter's lab section goes into its
// scenarios field for field (through its JSON form, whatever sections it
// has).
func TestConformanceLabCopiedWhole(t *testing.T) {
	lab := `{proxies: 2, local: {max_tokens: 7, tokens_per_fill: 2, fill_interval: 200ms, status: 503}, backend: {endpoints: 2, seed: 4},
        proxy: {timeout: 3s, seed: 9}, cluster: {connect_timeout: 2s, healthy_panic_threshold: 30},
        global: {domain: d, descriptors: [{generic_key: {descriptor_value: v}}], timeout: 1s, failure_mode_deny: true},
        rls: {config: "domain: d\ndescriptors:\n  - key: generic_key\n    value: v\n    rate_limit: {unit: second, requests_per_unit: 5}\n"}}`
	plan := "conformance:\n  limiters:\n    - name: l\n      lab: " + lab + "\n  shapes:\n    - {name: s, attack: {ids: 4}}\n"
	p, err := ParsePlan("c.yaml", []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	var direct LabPlan
	if err := yaml.UnmarshalStrict([]byte(lab), &direct); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*p.Scenarios[0].Lab, direct) {
		t.Errorf("copied lab\n%+v\nwant\n%+v", *p.Scenarios[0].Lab, direct)
	}
}

// TestConformanceErrors: errors name the file, the line and the place in
// the conformance section: a limiter's lab, a shape's attack or expect.
func TestConformanceErrors(t *testing.T) {
	shape := "  shapes:\n    - name: s\n      attack: {ids: 4}\n"
	limiter := "  limiters:\n    - name: l\n      lab: {proxies: 1}\n"
	for name, c := range map[string]struct{ plan, want string }{
		"bad nginx rate": {"conformance:\n  limiters:\n    - name: l\n      lab:\n        nginx:\n          rate: fast\n" + shape,
			"c.yaml: line 6: conformance (l × s): lab.nginx: zone rl"}, // the line of rate:, not of nginx:
		"bad shape ids": {"conformance:\n" + limiter + "  shapes:\n    - name: s\n      attack:\n        ids: -4\n",
			"c.yaml: line 8: conformance (l × s): attack.ids must be > 0"},
		"bad shape expect": {"conformance:\n" + limiter + "  shapes:\n    - name: s\n      attack: {ids: 4}\n      expect:\n        classes: {local429: 1}\n",
			"c.yaml: line 9: conformance (l × s): expect.classes.local429: unknown class"},
		"no lab": {"conformance:\n  limiters:\n    - name: l\n" + shape,
			"c.yaml: line 3: conformance: conformance.limiters[0] (l): exactly one of lab or external is required"},
		"duplicate limiter": {"conformance:\n" + limiter + "    - name: l\n      lab: {}\n" + shape,
			`c.yaml: line 5: conformance: conformance.limiters[1].name "l": duplicate`},
		"bad skip": {"conformance:\n  limiters:\n    - name: l\n      lab: {}\n      skip: [admitted]\n" + shape,
			`c.yaml: line 5: conformance: conformance.limiters[0] (l): skip "admitted": want one of backend_peak, limit_req_status, classes`},
		"no shapes": {"conformance:\n" + limiter, "c.yaml: line 1: conformance: conformance.shapes is empty"},
		"empty shape name": {"conformance:\n" + limiter + "  shapes:\n    - name: ''\n      attack: {ids: 4}\n",
			"c.yaml: line 6: conformance: conformance.shapes[0].name is required"},
		"separator in name": {"conformance:\n  limiters:\n    - name: a × b\n      lab: {}\n" + shape,
			`c.yaml: line 3: conformance: conformance.limiters[0].name "a × b": must not contain "×"`},
		"labels on a scenario": {"scenarios:\n  - name: a\n    labels: {limiter: x}\n    lab: {}\n    attack: {ids: 1}\n",
			"c.yaml: line 3: scenarios[0] (a): labels.shape is required"},
		"name clash": {"scenarios:\n  - name: l × s\n    lab: {}\n    attack: {ids: 1}\nconformance:\n" + limiter + shape,
			"c.yaml: line 10: conformance (l × s): duplicate scenario name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePlan("c.yaml", []byte(c.plan))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error %v\nwant prefix %q", err, c.want)
			}
		})
	}
}

// TestConformanceCap: limiters × shapes over MaxConformanceScenarios is
// refused before anything is copied.
func TestConformanceCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("conformance:\n  limiters:\n")
	for i := range 17 {
		fmt.Fprintf(&b, "    - {name: l%d, lab: {}}\n", i)
	}
	b.WriteString("  shapes:\n")
	for j := range 16 {
		fmt.Fprintf(&b, "    - {name: s%d, attack: {ids: 1}}\n", j)
	}
	_, err := ParsePlan("c.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "17 limiters × 16 shapes make 272 scenarios, more than 256") {
		t.Fatalf("error %v", err)
	}
}

// TestStandardShapes: the five shapes of issue 23 for capacity 10 and 10/s
// make a valid plan with the sizes the doc comment gives, and bad sizes
// are refused.
func TestStandardShapes(t *testing.T) {
	shapes, err := StandardShapes(10, 10)
	if err != nil {
		t.Fatal(err)
	}
	p := &Plan{Conformance: &ConformancePlan{Limiters: []ConformanceLimiter{{Name: "l", Lab: &LabPlan{Proxies: 1}}}, Shapes: shapes}}
	if err := p.validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Scenarios) != 5 {
		t.Fatalf("%d scenarios", len(p.Scenarios))
	}
	ids := func(s ScenarioPlan) (n int) {
		for _, st := range s.Steps {
			if a := st.Attack; a != nil {
				n += a.IDs
				for i := range a.Flows {
					n += a.Flows[i].ids()
				}
			}
		}
		return n
	}
	for i, want := range []int{15, 60, 20, 40 + 10 + 10, 5 + 15} {
		if got := ids(p.Scenarios[i]); got != want {
			t.Errorf("%s: %d ids, want %d", p.Scenarios[i].Name, got, want)
		}
		ex := p.Scenarios[i].Expect
		if !ex.Admitted.Model || len(ex.BackendPeak) != 1 || !ex.BackendPeak[0].Model {
			t.Errorf("%s: expect %+v", p.Scenarios[i].Name, ex)
		}
	}
	if f := p.Scenarios[4].Steps[1].Fault; f == nil || f.Command != "sleep 2.000" {
		t.Errorf("idle gap %+v", f)
	}
	for _, c := range []struct {
		capacity int
		rate     float64
	}{{0, 1}, {1, 0}, {1, -1}, {200000, 1}} {
		if _, err := StandardShapes(c.capacity, c.rate); err == nil {
			t.Errorf("StandardShapes(%d, %v) accepted", c.capacity, c.rate)
		}
	}
}

// TestNominal: the capacity and rate that size the shapes, read from each
// kind of model; a kind without them is not ok.
func TestNominal(t *testing.T) {
	two := uint32(2)
	for _, c := range []struct {
		spec model.Spec
		cap  int
		rate float64
		ok   bool
	}{
		{model.Spec{Kind: model.KindTokenBucket, Capacity: 10, RatePerSec: 5}, 10, 5, true},
		{model.Spec{Kind: model.KindEnvoyLocal, MaxTokens: 8, TokensPerFill: &two, FillInterval: model.Duration(100 * time.Millisecond)}, 8, 20, true},
		{model.Spec{Kind: model.KindFixedWindow, Limit: 120, Unit: "minute"}, 120, 2, true},
		{model.Spec{Kind: model.KindSlidingCounter, Limit: 10, Window: model.Duration(2 * time.Second), Count: model.CountAll}, 10, 5, true},
		{model.Spec{Kind: model.KindNginxLimitReq, Rate: "30r/m", Burst: 4}, 5, 0.5, true},
		{model.Spec{Kind: model.KindFixedWindow, Limit: 5, Unit: "fortnight"}, 0, 0, false},
		{model.Spec{Kind: "gcra"}, 0, 0, false},
	} {
		capacity, rate, ok := Nominal(c.spec)
		if ok != c.ok || ok && (capacity != c.cap || rate != c.rate) {
			t.Errorf("%s: %d, %v, %v; want %d, %v, %v", c.spec.Kind, capacity, rate, ok, c.cap, c.rate, c.ok)
		}
	}
}

// TestExternalLimiterPlan: the one-limiter plan of `rlbench conformance`:
// the shapes sized by the model, each after a settle step of two refills,
// keyed by the limiter's header, its rejections classified, its model
// declared per key; a missing receipts URL, an unknown shape and a model
// without sizes are refused.
func TestExternalLimiterPlan(t *testing.T) {
	l := ExternalLimiter{URL: "http://127.0.0.1:1", ReceiptsURL: "http://127.0.0.1:2/_rlbench/receipts", KeyHeader: "x-api-key",
		Model: model.Spec{Kind: model.KindTokenBucket, Capacity: 4, RatePerSec: 2}, Shapes: []string{ShapeBurst, ShapeNoisyKey},
		Headers: map[string]string{"Authorization": "Bearer t"}, RejectStatus: 503}
	p, err := l.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Scenarios) != 2 || p.Scenarios[0].Name != "limiter × "+ShapeBurst {
		t.Fatalf("scenarios %+v", p.Scenarios)
	}
	burst := p.Scenarios[0]
	if f := burst.Steps[0].Fault; f == nil || f.Command != "sleep 4.100" {
		t.Errorf("settle step %+v", burst.Steps[0])
	}
	if a := burst.Steps[1].Attack; a == nil || a.IDs != 6 || a.Headers["x-api-key"] != "solo" || a.Headers[ShapeKeyHeader] != "" || a.Headers["Authorization"] != "Bearer t" {
		t.Errorf("burst attack %+v", burst.Steps[1].Attack)
	}
	if fl := p.Scenarios[1].Steps[1].Attack.Flows; len(fl) != 3 || fl[0].Headers["x-api-key"] != "noisy" {
		t.Errorf("noisy key flows %+v", fl)
	}
	if d := burst.Limiters; len(d) != 1 || d[0].Key != evidence.KeyDescriptor || d[0].Model.Capacity != 4 {
		t.Errorf("limiters %+v", d)
	}
	if c := burst.Classify; len(c) != 1 || c[0].Status.Min != 503 || c[0].Class != evidence.ClassLocal429.String() {
		t.Errorf("classify %+v", c)
	}
	for _, bad := range []func(*ExternalLimiter){
		func(l *ExternalLimiter) { l.ReceiptsURL = "" },
		func(l *ExternalLimiter) { l.Shapes = []string{"nope"} },
		func(l *ExternalLimiter) { l.Model = model.Spec{Kind: model.KindTokenBucket, Capacity: 5} },              // no rate: nothing sizes the shapes
		func(l *ExternalLimiter) { l.Model = model.Spec{Kind: model.KindFixedWindow, Limit: 100, Unit: "hour"} }, // a refill of an hour
	} {
		m := l
		bad(&m)
		if _, err := m.Plan(); err == nil {
			t.Errorf("accepted %+v", m)
		}
	}
}
