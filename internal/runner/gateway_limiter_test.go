package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/gateway"
)

// failingLimiter fails every call with err.
type failingLimiter struct{ err error }

func (f failingLimiter) Allow(context.Context, string, time.Time) (gateway.Decision, error) {
	return gateway.Decision{}, f.err
}

// TestGatewayLimiterFailedIsNotRun: a scenario whose gateway limiter
// failed on its requests (here every one, fail open: all were forwarded)
// is NOT_RUN naming how many of how many and the first error; with a
// redis fault step, where errors are expected, the runner adds no reason.
func TestGatewayLimiterFailedIsNotRun(t *testing.T) {
	be := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer be.Close()
	g, err := gateway.Start(context.Background(), gateway.Options{Name: GatewayName, Upstreams: []string{be.URL},
		Limiter: failingLimiter{errors.New("lua: EVALSHA: ERR user_script:1: boom")}, Key: gateway.Key{Kind: gateway.KeyClient}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		resp, err := http.Get(g.URL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("fail open: %d, want 200", resp.StatusCode)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	r := &scenarioRun{plan: &ScenarioPlan{Steps: []Step{{Attack: &AttackPlan{}}}}, gateway: g}
	want := "lab.gateway: the limiter failed on 3 of 3 requests (first: lua: EVALSHA: ERR user_script:1: boom); the limiter under test did not decide them"
	if got := r.gatewayLimiterReason(); got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	r.plan.Steps = append(r.plan.Steps, Step{Fault: &FaultPlan{Action: "stop", Target: evidence.FaultTargetRedis}})
	if got := r.gatewayLimiterReason(); got != "" {
		t.Errorf("with a redis fault step: %q, want none", got)
	}
	if got := limiterFailedReason(gateway.Stats{Calls: 5}); got != "" {
		t.Errorf("no error: %q", got)
	}
	if got := limiterFailedReason(gateway.Stats{Calls: 20, Errors: 1, FirstError: "x"}); got != "lab.gateway: the limiter failed on 1 of 20 requests (first: x); the limiter under test did not decide them" {
		t.Errorf("1 of 20: %q", got)
	}
}

// TestGatewayLuaScriptMustBeARegularFile: lab.gateway.lua.script is kept
// in the evidence, so a symbolic link (to /etc/shadow, say, or to a
// regular file beside the plan), a directory, a FIFO or a file over
// MaxLuaScriptBytes is refused when the plan is loaded, naming the plan
// file, the line and the path.
func TestGatewayLuaScriptMustBeARegularFile(t *testing.T) {
	planPath := writeScript(t)
	dir := filepath.Dir(planPath)
	mustDo(t, os.Symlink("/etc/shadow", filepath.Join(dir, "shadow.lua")))
	mustDo(t, os.Symlink("tb.lua", filepath.Join(dir, "link.lua")))
	mustDo(t, os.Mkdir(filepath.Join(dir, "dir.lua"), 0o755))
	mustDo(t, syscall.Mkfifo(filepath.Join(dir, "fifo.lua"), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(dir, "big.lua"), make([]byte, MaxLuaScriptBytes+1), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(dir, "max.lua"), make([]byte, MaxLuaScriptBytes), 0o644))
	for _, c := range []struct{ script, bad string }{
		{"shadow.lua", "is a symbolic link"},
		{"link.lua", "is a symbolic link"},
		{"dir.lua", "is a directory, not a regular file"},
		{"fifo.lua", "not a regular file"},
		{"big.lua", fmt.Sprintf("is larger than %d bytes", MaxLuaScriptBytes)},
		{"max.lua", ""},
	} {
		_, err := ParsePlan(planPath, []byte(gatewayPlan(`{lua: {script: `+c.script+`, keys: ["{key}"]}}`, "{ids: 1}")))
		if c.bad == "" {
			if err != nil {
				t.Errorf("%s: %v", c.script, err)
			}
			continue
		}
		want := planPath + ": line 5: scenarios[0] (s): lab.gateway.lua.script: " + filepath.Join(dir, c.script) + " "
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%s: %v, want %q ... %q", c.script, err, want, c.bad)
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestGatewayLuaTemplates: only {key} and {now} are placeholders of
// lab.gateway.lua's KEYS and ARGV; any other {...}, an unbalanced { or }
// is refused at plan load with the plan file and the template's line.
func TestGatewayLuaTemplates(t *testing.T) {
	planPath := writeScript(t)
	for _, c := range []struct{ keys, args, bad string }{
		{`["rl:{key}"]`, `[5, "{now}", "{key}:{now}", "plain"]`, ""},
		{`["{{key}}"]`, `[]`, `lab.gateway.lua.keys[0]: template "{{key}}": "{{key}" at byte 0 is not a placeholder`},
		{`["{key}"]`, `[1, "{now"]`, `lab.gateway.lua.args[1]: template "{now": the { at byte 0 has no }`},
		{`["{user}"]`, `[]`, `lab.gateway.lua.keys[0]: template "{user}": "{user}" at byte 0 is not a placeholder`},
		{`["{key}"]`, `["{now}}"]`, `lab.gateway.lua.args[0]: template "{now}}": the } at byte 5 has no {`},
		{`["{key}", "a}b"]`, `[]`, `lab.gateway.lua.keys[1]: template "a}b": the } at byte 1 has no {`},
		{`["{KEY}"]`, `[]`, `"{KEY}" at byte 0 is not a placeholder`},
	} {
		plan := "name: p\nscenarios:\n - name: s\n   lab:\n     gateway:\n       lua:\n         script: tb.lua\n         now: {unit: s}\n" +
			"         keys: " + c.keys + "\n         args: " + c.args + "\n   attack: {ids: 1}\n"
		_, err := ParsePlan(planPath, []byte(plan))
		if c.bad == "" {
			if err != nil {
				t.Errorf("%s %s: %v", c.keys, c.args, err)
			}
			continue
		}
		line := "line 9: "
		if strings.Contains(c.bad, ".args[") {
			line = "line 10: "
		}
		if err == nil || !strings.HasPrefix(err.Error(), planPath+": "+line) || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%s %s: %v, want %s... %q", c.keys, c.args, err, line, c.bad)
		}
	}
}
