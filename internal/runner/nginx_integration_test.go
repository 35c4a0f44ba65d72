//go:build integration

package runner_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
)

// needNginx skips without nginx, unless RLBENCH_REQUIRE_REAL_PARTS=1 (CI).
func needNginx(t *testing.T) {
	t.Helper()
	if _, err := realparts.FindNginx(); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" || !errors.Is(err, realparts.ErrNotInstalled) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// TestTokenVsLeakyPlan runs examples/bursts/token-vs-leaky.yaml on the lab
// and real nginx: every scenario PASSes, which holds each 10 ms and 100 ms
// window of nginx's forwards, by its own access log's clock, to its model
// bound (the leaky bucket: 2 per 10 ms, plus what its model had due and it
// had not yet made), the receipts to the bound widened by the lags of each
// window's receipts, and, without nodelay, every forward to limit_req's
// delay; and the figures show the difference: the token bucket and nodelay
// let the burst through at once, the leaky bucket smooths it, delay=50
// forwards 51 at once. The one NOT_RUN a busy host may give is the path
// check's, naming the measured lag (the lab backend's first receipts can
// lag tens of ms, bunching them beyond what 2 per 10 ms can judge), with
// nginx's own forwards judged and passed.
func TestTokenVsLeakyPlan(t *testing.T) {
	needNginx(t)
	by := runBurstsPlan(t, "token-vs-leaky.yaml", 90*time.Second)
	for name, s := range by {
		if s.Status == evidence.Pass {
			continue
		}
		pathOnly := s.Status == evidence.NotRun
		for _, c := range s.Checks {
			if c.Status != report.CheckPass && !(strings.HasPrefix(c.Name, "backend peak per ") && strings.Contains(c.Got, "the limiter's own forwards were")) {
				pathOnly = false
			}
		}
		if !pathOnly {
			t.Errorf("%s: %s %v", name, s.Status, s.Reasons)
		} else {
			t.Logf("%s: %s %v", name, s.Status, s.Reasons)
		}
	}
	token := by["token bucket lets the burst through"]
	nodelay := by["nginx nodelay forwards the burst at once"]
	leaky := by["nginx without nodelay smooths to its rate"]
	delay := by["nginx delay=50 forwards 51 at once, then its rate"]
	for _, s := range []report.ScenarioReport{token, nodelay, leaky, delay} {
		if s.Arrivals == nil {
			t.Fatalf("%s: no arrivals", s.Name)
		}
		t.Logf("%s: %d receipts, peak per 10 ms %d, per 100 ms %d", s.Name, s.Arrivals.Receipts.Count,
			peakOf(t, s.Arrivals.Receipts, 10*time.Millisecond), peakOf(t, s.Arrivals.Receipts, 100*time.Millisecond))
	}
	for _, s := range []report.ScenarioReport{token, nodelay} {
		if p, l := peakOf(t, s.Arrivals.Receipts, 100*time.Millisecond), peakOf(t, leaky.Arrivals.Receipts, 100*time.Millisecond); p < 2*l {
			t.Errorf("%s: %d per 100 ms, the leaky bucket %d: the burst was not let through", s.Name, p, l)
		}
	}
	if n := nodelay.Nginx; n == nil || n.Proxies[0].ByLimitReqStatus["DELAYED"] != 0 || n.Proxies[0].ByLimitReqStatus["PASSED"] < 201 {
		t.Errorf("nodelay: %+v", n)
	}
	if n := delay.Nginx; n == nil || n.Proxies[0].ByLimitReqStatus["PASSED"] < 51 || n.Proxies[0].ByLimitReqStatus["DELAYED"] < 150 {
		t.Errorf("delay=50: %+v", n)
	}
	// Each model check passed; its want names the bound it held nginx's
	// forwards to; the delays were judged where limit_req queues.
	found := 0
	for _, c := range leaky.Checks {
		if c.Name == "limiter forwards per 10ms within the model" {
			found++
			if !strings.HasPrefix(c.Want, "<= 2 ") {
				t.Errorf("leaky bucket: %+v, want the bound rate × 10 ms + 1 = 2", c)
			}
		}
	}
	if found != 1 {
		t.Errorf("leaky bucket: %d checks of nginx's own forwards per 10 ms, want 1", found)
	}
	for _, s := range []report.ScenarioReport{leaky, delay} {
		timed := false
		for _, c := range s.Checks {
			timed = timed || c.Name == "admission timing (nginx-a limit_req)" && c.Status == report.CheckPass
		}
		if !timed {
			t.Errorf("%s: no passed admission timing check in %+v", s.Name, s.Checks)
		}
	}
}

// TestNginxRetryStormPlan runs examples/bursts/nginx-retry-storm.yaml: 3
// attempts per request with proxy_next_upstream_tries 3 and max_fails=0,
// reported as proxy retries; with the default max_fails the storm stops.
func TestNginxRetryStormPlan(t *testing.T) {
	needNginx(t)
	by := runBurstsPlan(t, "nginx-retry-storm.yaml", 60*time.Second)
	for name, s := range by {
		if s.Status != evidence.Pass {
			t.Errorf("%s: %s %v", name, s.Status, s.Reasons)
		}
	}
	s := by["nginx tries every failing upstream"]
	if a := s.Amplification; a == nil || a.Passed != 30 || a.Attempts != 90 || a.Factor != 3 || a.ProxyRetries != 60 || a.ClientResends != 0 {
		t.Errorf("amplification %+v", a)
	}
	if s.Nginx == nil || s.Nginx.Proxies[0].Retried != 30 || s.Nginx.Proxies[0].ServerTries != 90 {
		t.Errorf("nginx %+v", s.Nginx)
	}
	m := by["nginx max_fails takes the failing upstreams out"]
	if a := m.Amplification; a == nil || a.Attempts > 6 || a.ClientResends != 0 {
		t.Errorf("max_fails: amplification %+v", a)
	}
}
