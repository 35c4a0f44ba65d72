package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/model"
)

// gatewayPlan is a one-scenario plan of lab.gateway gw (flow YAML) and attack.
func gatewayPlan(gw, attack string) string {
	return "name: p\nscenarios:\n - name: s\n   lab:\n     gateway: " + gw + "\n   attack: " + attack + "\n"
}

// writeScript writes a Lua script beside a plan in a temporary directory
// and returns the plan's path.
func writeScript(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tb.lua"), []byte("return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "plan.yaml")
}

func TestGatewayPlanValidation(t *testing.T) {
	planPath := writeScript(t)
	for _, c := range []struct{ gw, bad string }{
		{`{xrate: {rate: 100, burst: 50}}`, ""},
		{`{key: "header:x-user", xrate: {rate: 0.5, burst: 1, per_key: true}, deny_status: 503, failure_mode_deny: true, timeout: 20ms}`, ""},
		{`{key: route, gcra: {rate: 10, burst: 5, period: 1m}}`, ""},
		{`{lua: {script: tb.lua, keys: ["{key}"], args: [2000, 1000, "{now}"], now: {unit: ms}, claim: {token_bucket: {capacity: 2000, rate: 1000}}}}`, ""},
		{`{lua: {script: tb.lua, keys: ["rl:{key}"], admit_when: "OK"}}`, ""},
		// line 5 is lab.gateway's line in gatewayPlan
		{`{}`, "line 5: scenarios[0] (s): lab.gateway: give exactly one limiter: lua, gcra or xrate"},
		{`{xrate: {rate: 1, burst: 1}, gcra: {rate: 1, burst: 1}}`, "give exactly one limiter"},
		{`{key: ip, xrate: {rate: 1, burst: 1}}`, `lab.gateway.key: key "ip": want header:<name>, client or route`},
		{`{key: "header:", xrate: {rate: 1, burst: 1}}`, `lab.gateway.key`},
		{`{deny_status: 200, xrate: {rate: 1, burst: 1}}`, "lab.gateway.deny_status: 200: want 400..599"},
		{`{timeout: -1s, xrate: {rate: 1, burst: 1}}`, "lab.gateway.timeout"},
		{`{xrate: {rate: 0, burst: 1}}`, "lab.gateway.xrate.rate: xrate: rate 0"},
		{`{xrate: {rate: 1, burst: 0}}`, "lab.gateway.xrate.burst: xrate: burst 0"},
		{`{xrate: {rate: 1, burst: 1, bucket: 3}}`, `unknown field "bucket"`},
		{`{gcra: {rate: 0, burst: 1}}`, "lab.gateway.gcra.rate: 0"},
		{`{gcra: {rate: 1, burst: 0}}`, "lab.gateway.gcra.burst: 0"},
		{`{gcra: {rate: 1, burst: 1, period: -1s}}`, "lab.gateway.gcra.period"},
		{`{lua: {keys: ["{key}"]}}`, "lab.gateway.lua.script: the Lua script file is required"},
		{`{lua: {script: missing.lua, keys: ["{key}"]}}`, "lab.gateway.lua.script: "},
		{`{lua: {script: tb.lua}}`, "lab.gateway.lua.keys"},
		{`{lua: {script: tb.lua, keys: ["{key}"], args: ["{now}"]}}`, "a template uses {now}: give now"},
		{`{lua: {script: tb.lua, keys: ["{key}"], args: ["{now}"], now: {unit: min}}}`, `lab.gateway.lua.now: now unit "min"`},
		{`{lua: {script: tb.lua, keys: ["{key}"], args: ["{now}"], now: {unit: s, decimals: 12}}}`, "now decimals 12"},
		{`{lua: {script: tb.lua, keys: ["{key}"], args: [true]}}`, "want a string or a number"},
		{`{lua: {script: tb.lua, keys: ["{key}"], claim: {}}}`, "lab.gateway.lua.claim"},
		{`{lua: {script: tb.lua, keys: ["{key}"], admit_when: "1"}}`, ""},
		{`{lua: {script: tb.lua, keys: ["{key}"], admit_when: "true"}}`, `line 5: scenarios[0] (s): lab.gateway.lua.admit_when: admit_when "true": a script's Lua true reaches the gateway as the integer 1`},
		{`{lua: {script: tb.lua, keys: ["{key}"], admit_when: " OK"}}`, `lab.gateway.lua.admit_when: admit_when " OK": want nonzero`},
		{`{lua: {script: tb.lua, keys: ["{key}"], claim: {token_bucket: {capacity: 0, rate: 1}}}}`, "lab.gateway: model: "},
	} {
		_, err := ParsePlan(planPath, []byte(gatewayPlan(c.gw, "{ids: 1}")))
		if (err == nil) != (c.bad == "") || err != nil && !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%s: %v, want %q", c.gw, err, c.bad)
		}
		if err != nil && !strings.HasPrefix(err.Error(), planPath+": line ") {
			t.Errorf("%s: %v does not name the plan file and a line", c.gw, err)
		}
	}
	for _, c := range []struct{ lab, bad string }{
		{"{proxies: 1, gateway: {xrate: {rate: 1, burst: 1}}}", "the gateway replaces the lab proxies"},
		{"{local: {max_tokens: 1, fill_interval: 1s}, gateway: {xrate: {rate: 1, burst: 1}}}", "the gateway replaces the lab proxies"},
		{"{nginx: {rate: 1r/s}, gateway: {xrate: {rate: 1, burst: 1}}}", "lab.nginx and lab.gateway each replace the lab proxies"},
	} {
		plan := "name: p\nscenarios:\n - name: s\n   lab: " + c.lab + "\n   attack: {ids: 1}\n"
		if _, err := ParsePlan(planPath, []byte(plan)); err == nil || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%s: %v, want %q", c.lab, err, c.bad)
		}
	}
	// One target: a split over two is refused; no rls or redis faults.
	if _, err := ParsePlan(planPath, []byte(gatewayPlan("{xrate: {rate: 1, burst: 1}}", "{ids: 2, split: \"counts=1,1\"}"))); err == nil {
		t.Error("split over 2 targets of one gateway: accepted")
	}
	faults := func(gw, target string) string {
		return "name: p\nscenarios:\n - name: s\n   lab: {gateway: " + gw + "}\n   steps:\n    - fault: {action: stop, target: " + target + "}\n    - attack: {ids: 1}\n"
	}
	if _, err := ParsePlan(planPath, []byte(faults("{xrate: {rate: 1, burst: 1}}", "redis"))); err == nil || !strings.Contains(err.Error(), "line 6: scenarios[0] (s): steps[0]: a scenario with lab.gateway has no redis") {
		t.Errorf("redis fault with the xrate gateway: %v", err)
	}
	if _, err := ParsePlan(planPath, []byte(faults("{gcra: {rate: 1, burst: 1}}", "rls"))); err == nil || !strings.Contains(err.Error(), "lab.gateway has no rls") {
		t.Errorf("rls fault with the gateway: %v", err)
	}
	for _, gw := range []string{"{gcra: {rate: 1, burst: 1}}", "{lua: {script: tb.lua, keys: [\"{key}\"]}}"} {
		if _, err := ParsePlan(planPath, []byte(faults(gw, "redis"))); err != nil {
			t.Errorf("redis fault with %s: %v", gw, err)
		}
	}
	// The lab file (rlbench lab -f) reads the section the same way.
	if _, err := ParseLabFile(planPath, []byte("gateway: {lua: {script: tb.lua, keys: [\"{key}\"]}}\n")); err != nil {
		t.Errorf("lab file: %v", err)
	}
	if _, err := ParseLabFile(planPath, []byte("gateway: {xrate: {rate: 1, burst: 0}}\n")); err == nil || !strings.Contains(err.Error(), "line 1: lab.gateway.xrate.burst") {
		t.Errorf("lab file: %v", err)
	}
}

// TestGatewayModelDecl: the parameters written once become the model and
// its key: xrate's token bucket (burst, rate), a Lua script's claim, per
// header value (request_headers), per target for client, a global xrate
// and a route of one path, gcra's GCRA; none for a Lua script without a
// claim, or a route of several paths.
func TestGatewayModelDecl(t *testing.T) {
	one := []Step{{Attack: &AttackPlan{Path: "/a?x=1"}}}
	two := []Step{{Attack: &AttackPlan{Path: "/a"}}, {Attack: &AttackPlan{Path: "/b"}}}
	for _, c := range []struct {
		name   string
		g      GatewayPlan
		steps  []Step
		key    string
		header string
		spec   *model.Spec
	}{
		{"xrate per user", GatewayPlan{Key: "header:X-User", XRate: &XRatePlan{Rate: 100, Burst: 50, PerKey: true}}, one,
			evidence.KeyDescriptor, "x-user", &model.Spec{Kind: model.KindTokenBucket, Capacity: 50, RatePerSec: 100}},
		{"xrate global", GatewayPlan{Key: "header:x-user", XRate: &XRatePlan{Rate: 2, Burst: 3}}, one,
			evidence.KeyTarget, "", &model.Spec{Kind: model.KindTokenBucket, Capacity: 3, RatePerSec: 2}},
		{"xrate client", GatewayPlan{XRate: &XRatePlan{Rate: 2, Burst: 3, PerKey: true}}, one,
			evidence.KeyTarget, "", &model.Spec{Kind: model.KindTokenBucket, Capacity: 3, RatePerSec: 2}},
		{"lua claim by route", GatewayPlan{Key: "route", Lua: &LuaPlan{Claim: &LuaClaim{TokenBucket: &TokenBucketClaim{Capacity: 2000, Rate: 1000}}}}, one,
			evidence.KeyTarget, "", &model.Spec{Kind: model.KindTokenBucket, Capacity: 2000, RatePerSec: 1000}},
		{"route of two paths", GatewayPlan{Key: "route", XRate: &XRatePlan{Rate: 2, Burst: 3, PerKey: true}}, two, "", "", nil},
		{"lua without claim", GatewayPlan{Lua: &LuaPlan{}}, one, "", "", nil},
		{"gcra per route", GatewayPlan{Key: "route", GCRA: &GCRAPlan{Rate: 10, Burst: 5}}, one,
			evidence.KeyTarget, "", &model.Spec{Kind: model.KindGCRA}},
	} {
		l, err := c.g.limiterDecl(c.steps)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.spec == nil {
			if l != nil {
				t.Errorf("%s: declared %+v, want none", c.name, l)
			}
			continue
		}
		if l == nil || l.Key != c.key || l.Model.Kind != c.spec.Kind || l.Model.Capacity != c.spec.Capacity || l.Model.RatePerSec != c.spec.RatePerSec || l.Stage != evidence.StageLocal || len(l.Targets) != 1 || l.Targets[0] != GatewayName {
			t.Errorf("%s: %+v, want key %s model %+v", c.name, l, c.key, c.spec)
			continue
		}
		if onRedis := c.g.Lua != nil || c.g.GCRA != nil; onRedis != (len(l.DependsOn) == 1 && len(l.Resets) == 1 && l.DependsOn[0] == evidence.FaultTargetRedis) {
			t.Errorf("%s: depends_on %v resets %v: a limiter on Redis depends on it and loses its state with it", c.name, l.DependsOn, l.Resets)
		}
		got := ""
		if len(l.RateLimits) == 1 && l.RateLimits[0].Actions[0].RequestHeaders != nil {
			got = l.RateLimits[0].Actions[0].RequestHeaders.HeaderName
		}
		if got != c.header {
			t.Errorf("%s: request_headers %q, want %q", c.name, got, c.header)
		}
	}
}

// TestGatewayXRateRun: an xrate gateway scenario runs end to end (no
// Redis): the limiter's burst passes, the rest is a local_429, the
// scenario PASSes its model (admitted: model), whose bound is what the
// gateway admitted, and its access log is judged as the lab proxy's.
func TestGatewayXRateRun(t *testing.T) {
	// 1 token per 1000 s: within the run only the burst of 5 passes,
	// whatever the machine's speed.
	plan := "name: p\nscenarios:\n - name: xrate\n   lab: {gateway: {key: \"header:x-user\", xrate: {rate: 0.001, burst: 5, per_key: true}}}\n" +
		"   steps:\n    - attack: {ids: 40, concurrency: 8, headers: {x-user: alice}}\n    - attack: {ids: 12, concurrency: 4, headers: {x-user: bob}}\n" +
		"   expect: {admitted: model, classes: {local_429: 42}}\n"
	p, err := ParsePlan("p.yaml", []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runDir, err := Run(ctx, p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sd := evidence.Dir(filepath.Join(runDir, "01-xrate", "1"))
	if b, err := os.ReadFile(sd.NotRun()); err == nil {
		t.Fatalf("NOT_RUN: %s", b)
	}
	if _, err := os.Stat(sd.AccessLog(GatewayName)); err != nil {
		t.Fatalf("gateway access log: %v", err)
	}
	rep, err := analyze.Analyze(ctx, runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Scenarios[0]
	if s.Status != evidence.Pass {
		t.Errorf("status %s %v", s.Status, s.Reasons)
	}
	if s.Totals.N[evidence.ClassAdmitted] != 10 || s.Totals.N[evidence.ClassLocal429] != 42 {
		t.Errorf("admitted %d, local_429 %d; want 10 (two bursts of 5), 42", s.Totals.N[evidence.ClassAdmitted], s.Totals.N[evidence.ClassLocal429])
	}
	if len(s.Limiters) != 1 {
		t.Fatalf("limiters %+v", s.Limiters)
	}
	l := s.Limiters[0]
	if l.Name != "gateway xrate" || l.Status != "checked" || l.Offered != 52 || l.Admitted != 10 || l.Total.Max != 10 || l.OverAdmittedCount != 0 {
		t.Errorf("limiter %s %s: offered %d admitted %d total %+v over %d; want 52, 10 of at most 10, none over",
			l.Name, l.Status, l.Offered, l.Admitted, l.Total, l.OverAdmittedCount)
	}
}

// TestGatewayGlobalXRateLimitsEveryRequest: a global xrate (not per key)
// limits every request, those without the key's header too, as its model
// (one bucket) counts them: 3 of 6 pass, 2 of them without x-user.
func TestGatewayGlobalXRateLimitsEveryRequest(t *testing.T) {
	plan := "name: p\nscenarios:\n - name: global\n   lab: {gateway: {key: \"header:x-user\", xrate: {rate: 0.001, burst: 3}}}\n" +
		"   steps:\n    - attack: {ids: 2, concurrency: 1}\n    - attack: {ids: 4, concurrency: 1, headers: {x-user: a}}\n" +
		"   expect: {admitted: model, classes: {admitted: 3, local_429: 3}}\n"
	p, err := ParsePlan("p.yaml", []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	runDir, err := Run(context.Background(), p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(context.Background(), runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Scenarios[0]; s.Status != evidence.Pass {
		t.Errorf("%s %v", s.Status, s.Reasons)
	}
}

// TestGatewayRedisNotInstalledIsNotRun: without redis-server a lua or gcra
// scenario is NOT_RUN naming redis-server and the install script; an
// xrate scenario of the same plan still runs.
func TestGatewayRedisNotInstalledIsNotRun(t *testing.T) {
	t.Setenv(realparts.EnvRedisBin, filepath.Join(t.TempDir(), "no-redis-server"))
	planPath := writeScript(t)
	plan := "name: p\nscenarios:\n" +
		" - {name: lua, lab: {gateway: {lua: {script: tb.lua, keys: [\"{key}\"]}}}, attack: {ids: 2}}\n" +
		" - {name: gcra, lab: {gateway: {gcra: {rate: 1, burst: 1}}}, attack: {ids: 2}}\n" +
		" - {name: xrate, lab: {gateway: {xrate: {rate: 1, burst: 1}}}, attack: {ids: 2}, expect: {admitted: 1..2}}\n"
	p, err := ParsePlan(planPath, []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	runDir, err := Run(context.Background(), p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"01-lua", "02-gcra"} {
		b, err := os.ReadFile(filepath.Join(runDir, d, "1", evidence.NotRunFile))
		if err != nil || !strings.HasPrefix(string(b), RedisNotInstalledReason) || !strings.Contains(string(b), "redis-server") {
			t.Errorf("%s NOT_RUN %q %v", d, b, err)
		}
	}
	rep, err := analyze.Analyze(context.Background(), runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, s := range rep.Scenarios {
		st[s.Name] = s.Status
	}
	if st["lua"] != evidence.NotRun || st["gcra"] != evidence.NotRun || st["xrate"] != evidence.Pass {
		t.Errorf("statuses %v, want lua and gcra NOT_RUN, xrate PASS", st)
	}
}
