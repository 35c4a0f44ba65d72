package runner

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
