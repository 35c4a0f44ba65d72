//go:build integration

package cli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/testfix"
)

// TestMicroburstNginxPlan runs examples/bursts/microburst-nginx.yaml on
// real nginx: 2 sender processes (this test binary as rlbench), 1000 IDs
// each, 250 pipelined per write, at limit_req (4 nginx workers) rate=1r/m burst=15 nodelay.
// Whatever the width the burst landed over, limit_req passed exactly 16
// (its own count and the model), rejected 1984 with 429, each ID reached
// nginx once, and the report says how wide the burst landed at nginx by
// its own log: PASS within 10 ms, else NOT_RUN for that reason alone, with
// the width measured, never FAIL.
func TestMicroburstNginxPlan(t *testing.T) {
	if _, err := realparts.FindNginx(); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" || !errors.Is(err, realparts.ErrNotInstalled) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	rep := runPlanReport(t, filepath.Join(testfix.RepoRoot(t), "examples", "bursts", "microburst-nginx.yaml"), 1)
	s := rep.Scenarios[0]
	c := landedCheck(s)
	if c == nil || !strings.Contains(c.Got, "2000 requests landed over") || !strings.Contains(c.Got, "in the access log of nginx nginx-a (1 ms resolution)") {
		t.Fatalf("landed check %+v", c)
	}
	t.Logf("%s: %s: %s", s.Name, s.Status, c.Got)
	switch {
	case c.Status == report.CheckPass && s.Status == evidence.Pass:
	case c.Status == report.CheckUnknown && s.Status == evidence.NotRun && len(s.Reasons) == 1 &&
		strings.HasPrefix(s.Reasons[0], "inconclusive: burst landed within 10ms"):
	default:
		t.Fatalf("%s, landed %s: %v", s.Status, c.Status, s.Reasons)
	}
	for _, ch := range s.Checks {
		if ch.Name != c.Name && ch.Status != report.CheckPass {
			t.Errorf("check %s: %s (%s)", ch.Name, ch.Status, ch.Got)
		}
	}
	// nginx's 4 workers each stamp by their own cached clock: the log's
	// $pid tells them apart, and the model takes the stamps as lower bounds.
	if h := s.Harness; h == nil || !slices.Contains(h.SeenSources, "nginx log (4 workers by $pid: from below only)") {
		t.Errorf("harness %+v: want the nginx log's times taken from below only", h)
	}
	if s.Totals.Sent != 2000 || s.Receipts.Total != 16 || s.Receipts.Duplicates != 0 {
		t.Errorf("sent %d, receipts %d, duplicates %d; want 2000, 16, 0", s.Totals.Sent, s.Receipts.Total, s.Receipts.Duplicates)
	}
	if n := s.Nginx; n == nil || len(n.Proxies) != 1 || n.Proxies[0].ByLimitReqStatus["PASSED"] != 16 || n.Proxies[0].ByLimitReqStatus["REJECTED"] != 1984 {
		t.Errorf("nginx %+v", s.Nginx)
	}
	if a := s.Arrivals; a == nil || len(a.Senders) != 2 || a.Senders[0].Requests != 1000 || a.Senders[1].Requests != 1000 {
		t.Errorf("arrivals %+v", s.Arrivals)
	} else {
		// Each sender's landing at nginx counts its 1000, rejected ones
		// too, on nginx's ms grid, no wider than the whole burst's.
		whole := landedWidth(t, c.Got)
		for k, sa := range a.Senders {
			if w := time.Duration(sa.LimiterWidthNs); sa.AtLimiter != 1000 || w < time.Millisecond-1 || w.Round(time.Microsecond) > whole || (w+1)%time.Millisecond != 0 {
				t.Errorf("sender %d at nginx: %d over %v; want 1000 within %v, a whole number of ms less 1 ns", k, sa.AtLimiter, w, whole)
			}
		}
	}
}
