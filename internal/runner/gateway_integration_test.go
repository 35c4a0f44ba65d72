//go:build integration

package runner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/schemas"
)

// TestGatewayExamplePlan runs examples/gateway/plan.yaml on a real
// redis-server (it skips without one, unless RLBENCH_REQUIRE_REAL_PARTS=1):
// x/time/rate and redis_rate's GCRA PASS; the production gateway's Lua
// script runs as its gateway called it and its claimed token bucket is
// judged on every request (the verdict is the script's); the evidence
// keeps the script and redis-server's log and validates against schemas/.
func TestGatewayExamplePlan(t *testing.T) {
	if _, err := realparts.FindRedis(); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" || !errors.Is(err, realparts.ErrNotInstalled) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	path := filepath.Join(testfix.RepoRoot(t), "examples", "gateway", "plan.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.ParsePlan(path, b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	runDir, err := runner.Run(ctx, p, runner.Options{Root: t.TempDir(), PlanBytes: b, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(ctx, runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	_ = report.WriteTable(&table, rep)
	t.Logf("progress:\n%s\n%s", progress.String(), table.String())
	by := map[string]report.ScenarioReport{}
	for _, s := range rep.Scenarios {
		by[s.Name] = s
	}
	for _, name := range []string{"x/time/rate per user", "gcra on redis"} {
		if s := by[name]; s.Status != evidence.Pass {
			t.Errorf("%s: %s %v", name, s.Status, s.Reasons)
		}
	}
	lua := by["lua token bucket of a production gateway"]
	if lua.Status == evidence.NotRun || len(lua.Limiters) != 1 {
		t.Fatalf("lua: %s %v, limiters %+v", lua.Status, lua.Reasons, lua.Limiters)
	}
	if l := lua.Limiters[0]; l.Status != report.LimiterChecked || l.Offered != 3000 || l.Model != "token_bucket" {
		t.Errorf("lua limiter %s: %s, offered %d, model %s; want checked, 3000, token_bucket", l.Name, l.Status, l.Offered, l.Model)
	}
	// The script in whole seconds: judged on every request; its verdict
	// (a FAIL when its step refill crosses 3 second boundaries in the
	// 2.975 s of the attack, as it almost always does) is logged.
	whole := by["lua token bucket with now in whole seconds"]
	if len(whole.Limiters) != 1 || whole.Limiters[0].Status != report.LimiterChecked || whole.Limiters[0].Offered != 120 {
		t.Errorf("lua in whole seconds: %s, limiters %+v", whole.Status, whole.Limiters)
	}
	t.Logf("lua in whole seconds: %s %v", whole.Status, whole.Reasons)
	sd := evidence.Dir(filepath.Join(runDir, "02-lua-token-bucket-of-a-production-gateway", "1"))
	script, err := os.ReadFile(sd.GatewayScript())
	want, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "token-bucket-gateway.lua"))
	if err != nil || !bytes.Equal(script, want) {
		t.Errorf("gateway/script.lua: %v (%d bytes, want the plan's %d)", err, len(script), len(want))
	}
	if _, err := os.Stat(filepath.Join(sd.GatewayRedis(), "redis.log")); err != nil {
		t.Errorf("redis log: %v", err)
	}
	if _, err := schemas.ValidateDir(runDir); err != nil {
		t.Errorf("evidence does not validate: %v", err)
	}
}

// TestGatewayRedisFaults: a Lua gateway whose redis-server is stopped
// between attacks answers 500 (rls_error) under failure_mode_deny and
// forwards (fail open) without it; started again, Redis has lost the
// bucket, which is full again (the script is loaded again after NOSCRIPT).
// Both PASS: the limiter's model suspends the fault window and starts a
// new state after it (depends_on and resets redis); under
// failure_mode_deny the run is within the model.
func TestGatewayRedisFaults(t *testing.T) {
	if _, err := realparts.FindRedis(); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" || !errors.Is(err, realparts.ErrNotInstalled) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	script := filepath.Join(testfix.RepoRoot(t), "examples", "gateway", "token-bucket-gateway.lua")
	scenario := func(name string, deny bool, expect string) string {
		return " - name: " + name + "\n   lab:\n     gateway:\n       key: \"header:x-user\"\n       failure_mode_deny: " + map[bool]string{true: "true", false: "false"}[deny] +
			"\n       lua: {script: " + script + ", keys: [\"{key}\"], args: [5, 0.001, \"{now}\"], now: {unit: s, decimals: 3}, claim: {token_bucket: {capacity: 5, rate: 0.001}}}\n" +
			"   steps:\n" +
			"    - attack: {ids: 3, concurrency: 1, headers: {x-user: a}}\n" +
			"    - fault: {action: stop, target: redis}\n" +
			"    - attack: {ids: 4, concurrency: 1, headers: {x-user: a}}\n" +
			"    - fault: {action: start, target: redis}\n" +
			"    - attack: {ids: 7, concurrency: 1, headers: {x-user: a}}\n" +
			"   expect: " + expect + "\n"
	}
	plan := "name: redis faults\nscenarios:\n" +
		scenario("deny", true, "{admitted: model, classes: {admitted: 8, rls_error: 4, local_429: 2}}") +
		// failing open admits 4 the bucket's 2 tokens could not: more than
		// the model allows over the run (admitted: model would FAIL), as
		// failure_mode_deny: false means
		scenario("open", false, "{admitted: 12, classes: {admitted: 12, local_429: 2}}")
	p, err := runner.ParsePlan("plan.yaml", []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	runDir, err := runner.Run(ctx, p, runner.Options{Root: t.TempDir(), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(ctx, runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	_ = report.WriteTable(&table, rep)
	t.Logf("progress:\n%s\n%s", progress.String(), table.String())
	for _, s := range rep.Scenarios {
		if s.Status != evidence.Pass {
			t.Errorf("%s: %s %v", s.Name, s.Status, s.Reasons)
		}
	}
}

// TestGatewayLimiterFailureIsNotRun: a Lua script that never answers (an
// endless loop: Redis is stuck, the gateway fails open after its
// timeout) or that answers an error reply is NOT_RUN naming how many of
// how many requests the limiter failed on and the first error, as is one
// that answers a string where admit_when wants an integer; never the
// PASS or the plain over-admission FAIL that the forwarded requests
// would give against the claimed token bucket.
func TestGatewayLimiterFailureIsNotRun(t *testing.T) {
	if _, err := realparts.FindRedis(); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" || !errors.Is(err, realparts.ErrNotInstalled) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	for name, src := range map[string]string{"loop.lua": "while true do end\n", "boom.lua": "return redis.error_reply(\"boom\")\n",
		"text.lua": "return \"1\"\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scenario := func(name, script string) string {
		return " - name: " + name + "\n   lab: {gateway: {timeout: 200ms, lua: {script: " + script +
			", keys: [\"{key}\"], claim: {token_bucket: {capacity: 10, rate: 10}}}}}\n" +
			"   attack: {ids: 20, concurrency: 20}\n   expect: {admitted: model}\n"
	}
	plan := "name: limiter failures\nscenarios:\n" + scenario("loop", "loop.lua") + scenario("boom", "boom.lua") + scenario("text", "text.lua")
	planPath := filepath.Join(dir, "plan.yaml")
	p, err := runner.ParsePlan(planPath, []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	runDir, err := runner.Run(ctx, p, runner.Options{Root: t.TempDir(), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", progress.String())
	for d, first := range map[string]string{"01-loop": "timeout", "02-boom": "ERR boom",
		"03-text": `answered a string "1", but admit_when nonzero wants an integer`} {
		b, err := os.ReadFile(filepath.Join(runDir, d, "1", evidence.NotRunFile))
		if err != nil || !strings.HasPrefix(string(b), "lab.gateway: the limiter failed on 20 of 20 requests (first: ") || !strings.Contains(string(b), first) {
			t.Errorf("%s NOT_RUN %q %v, want 20 of 20 with %q", d, b, err, first)
		}
	}
	rep, err := analyze.Analyze(ctx, runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Scenarios {
		if s.Status != evidence.NotRun {
			t.Errorf("%s: %s %v, want NOT_RUN", s.Name, s.Status, s.Reasons)
		}
	}
}
