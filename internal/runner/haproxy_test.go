package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/model"
)

// haproxyPlan is a one-scenario plan whose lab is lab.haproxy with the given flow-style body.
func haproxyPlan(body string) string {
	return "scenarios:\n  - name: h\n    lab:\n      haproxy:\n" + body + "    attack: {ids: 10}\n    expect: {admitted: model}\n"
}

// TestHAProxyPlanValidated: lab.haproxy's mistakes are errors naming the file, the line of the key and the key.
func TestHAProxyPlanValidated(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"no limit", "        period: 1s\n", "p.yaml: line 4: scenarios[0] (h): lab.haproxy.limit 0: want at least 1"},
		{"zero limit", "        limit: 0\n        period: 1s\n", "p.yaml: line 5: scenarios[0] (h): lab.haproxy.limit 0"},
		{"no period", "        limit: 5\n", "lab.haproxy.period 0s: want a positive whole number of milliseconds"},
		{"sub-ms period", "        limit: 5\n        period: 1500us\n", "p.yaml: line 6: scenarios[0] (h): lab.haproxy.period 1.5ms"},
		{"bad key", "        limit: 5\n        period: 1s\n        key: cookie:x\n", `p.yaml: line 7: scenarios[0] (h): lab.haproxy.key "cookie:x": want src or header:<name>`},
		{"bad header", "        limit: 5\n        period: 1s\n        key: \"header:a b\"\n", "p.yaml: line 7: scenarios[0] (h): lab.haproxy: HAProxyConfig.Header"},
		{"deny status", "        limit: 5\n        period: 1s\n        deny_status: 99\n", "p.yaml: line 7: scenarios[0] (h): lab.haproxy.deny_status 99: want 200..599"},
		{"short expire", "        limit: 5\n        period: 1s\n        expire: 1500ms\n", "p.yaml: line 7: scenarios[0] (h): lab.haproxy.expire 1.5s: want whole milliseconds, at least twice the period"},
		{"instances", "        limit: 5\n        period: 1s\n        instances: 27\n", "p.yaml: line 7: scenarios[0] (h): lab.haproxy.instances 27: want 1..26"},
		{"bad size", "        limit: 5\n        period: 1s\n        size: lots\n", "lab.haproxy: HAProxyConfig.Size \"lots\""},
		{"unknown key", "        limit: 5\n        period: 1s\n        rate: 5r/s\n", "rate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePlan("p.yaml", []byte(haproxyPlan(c.body)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, c.want)
			}
		})
	}
	y := "scenarios:\n  - name: h\n    lab:\n      proxies: 1\n      haproxy: {limit: 5, period: 1s}\n    attack: {ids: 10}\n    expect: {}\n"
	if _, err := ParsePlan("p.yaml", []byte(y)); err == nil || !strings.Contains(err.Error(), "lab.haproxy replaces the lab proxies") {
		t.Errorf("haproxy with proxies: %v", err)
	}
	y = "scenarios:\n  - name: h\n    lab:\n      haproxy: {limit: 5, period: 1s}\n    steps:\n      - fault: {action: stop, target: rls}\n      - attack: {ids: 10}\n    expect: {}\n"
	if _, err := ParsePlan("p.yaml", []byte(y)); err == nil || !strings.Contains(err.Error(), "a scenario with lab.haproxy has no rls") {
		t.Errorf("rls fault with haproxy: %v", err)
	}
}

// TestHAProxyPlanDeclaredOnce: the plan's parameters become the rendered config and the limiter model; the targets
// are the instances.
func TestHAProxyPlanDeclaredOnce(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte(haproxyPlan("        limit: 7\n        period: 250ms\n        instances: 2\n")))
	if err != nil {
		t.Fatal(err)
	}
	h := p.Scenarios[0].Lab.HAProxy
	if p.Scenarios[0].Lab.Proxies != 0 {
		t.Errorf("lab.proxies %d with lab.haproxy, want 0", p.Scenarios[0].Lab.Proxies)
	}
	cfg := h.config([]string{"127.0.0.1:9"})
	if cfg.Limit != 7 || cfg.Period != 250*time.Millisecond || cfg.KeyType != "ip" || cfg.Header != "" {
		t.Errorf("config %+v", cfg)
	}
	spec, err := h.modelSpec()
	if err != nil || spec == nil {
		t.Fatalf("modelSpec %v %v", spec, err)
	}
	want := model.Spec{Kind: model.KindSlidingCounter, Limit: 7, Window: model.Duration(250 * time.Millisecond), Count: model.CountAll, Align: model.AlignFreqCtr}
	if spec.Kind != want.Kind || spec.Limit != want.Limit || spec.Window != want.Window || spec.Count != want.Count || spec.Align != want.Align {
		t.Errorf("model %+v, want %+v", *spec, want)
	}
	hdr := HAProxyPlan{Limit: 3, Period: 1000, Key: "header:X-Tenant"}
	if c := hdr.config([]string{"127.0.0.1:9"}); c.KeyType != "string" || c.Header != "X-Tenant" {
		t.Errorf("header key config %+v", c)
	}
	if s, err := hdr.modelSpec(); s != nil || err != nil {
		t.Errorf("a header key has no per-request model: %v %v", s, err)
	}
	rule := h.haproxyClassify()
	cl, err := evidence.NewClassifier([]evidence.ClassRule{rule})
	if err != nil || rule.Class != "local_429" || rule.Status.Min != 429 || rule.Status.Max != 429 || len(cl.Headers()) != 1 {
		t.Errorf("classify rule %+v (%v)", rule, err)
	}
	if HAProxyName(1) != "haproxy-b" {
		t.Errorf("HAProxyName(1) = %s", HAProxyName(1))
	}
}

// TestHAProxyNotInstalledIsNotRun: without haproxy the scenario is NOT_RUN naming haproxy and how to install it,
// never PASS or FAIL; a second scenario of the plan (the lab's own) still runs.
func TestHAProxyNotInstalledIsNotRun(t *testing.T) {
	t.Setenv(realparts.EnvHAProxyBin, filepath.Join(t.TempDir(), "no-haproxy"))
	p, err := ParsePlan("p.yaml", []byte("name: p\nscenarios:\n - name: stick\n   lab: {haproxy: {limit: 2, period: 1s}}\n   attack: {ids: 3}\n   expect: {admitted: model}\n"+
		" - name: lab\n   lab: {proxies: 1}\n   attack: {ids: 2}\n   expect: {admitted: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	runDir, err := Run(context.Background(), p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "01-stick", "1", evidence.NotRunFile))
	if err != nil || !strings.HasPrefix(string(b), HAProxyNotInstalledReason) || !strings.Contains(string(b), realparts.EnvHAProxyBin) {
		t.Fatalf("NOT_RUN %q %v", b, err)
	}
	rep, err := analyze.Analyze(context.Background(), runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Scenarios[0]; s.Status != evidence.NotRun || !strings.HasPrefix(s.Reasons[0], HAProxyNotInstalledReason) {
		t.Errorf("%s %v", s.Status, s.Reasons)
	}
	if s := rep.Scenarios[1]; s.Status != evidence.Pass {
		t.Errorf("the other scenario: %s %v", s.Status, s.Reasons)
	}
}
