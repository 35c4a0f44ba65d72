package analyze

import (
	"math"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// TestCounterPastInt64 (issue 27): Envoy's counters are uint64; a delta is
// an int64. A counter past 2^63−1 wrapped through int64: 2^64−1 read as −1
// and the local ok check FAILed ("want 5, got -1"), and two wrapped values
// could as well agree and PASS. The comparison that reads such a counter is
// now unknown, naming the stat, its value and the snapshot; the scenario is
// NOT_RUN. Counters that fit are compared as before.
func TestCounterPastInt64(t *testing.T) {
	const top = uint64(math.MaxUint64)
	for _, c := range []struct {
		name          string
		before, after snap
		unknown       []string // proxy-b's checks that are unknown
		why           string   // in the reasons
	}{
		{"2^64-1 after", snap{100, 40, -1, t0 - sec}, snap{top, 45, -1, t0 + 2*sec},
			[]string{"proxy-b: local ok"},
			"http_local_rate_limiter.http_local_rate_limit.ok = 18446744073709551615 in the after snapshot, past the int64 range of a delta (2^63-1)"},
		{"past 2^63 in both, agreeing if wrapped", snap{1<<63 + 100, 40, -1, t0 - sec}, snap{1<<63 + 105, 45, -1, t0 + 2*sec},
			[]string{"proxy-b: local ok"},
			"http_local_rate_limiter.http_local_rate_limit.ok = 9223372036854775908 in the before snapshot"},
		{"enforced at 2^63", snap{100, 40, -1, t0 - sec}, snap{105, 1 << 63, -1, t0 + 2*sec},
			[]string{"proxy-b: local ok", "proxy-b: local enforced"},
			"http_local_rate_limiter.http_local_rate_limit.enforced = 9223372036854775808 in the after snapshot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := statsEv(t)
			c.before.write(t, dir, "proxy-b", evidence.LabelBefore)
			c.after.write(t, dir, "proxy-b", evidence.LabelAfter)
			s := run(t, dir).Scenarios[0]
			if s.Status != evidence.NotRun || !strings.Contains(reasons(s), c.why) {
				t.Fatalf("status %s, reasons %s", s.Status, reasons(s))
			}
			for _, name := range c.unknown {
				if ch := check(t, s, name); ch.Status != report.CheckUnknown || !strings.Contains(ch.Got, "unknown: ") {
					t.Errorf("check %+v", ch)
				}
			}
			for _, ch := range s.Checks {
				if ch.Status == report.CheckFail {
					t.Errorf("FAIL from an unrepresentable counter: %+v", ch)
				}
			}
			if len(s.Stats[1].Unrepresentable) == 0 || len(s.Stats[0].Unrepresentable) != 0 {
				t.Errorf("unrepresentable %v / %v", s.Stats[1].Unrepresentable, s.Stats[0].Unrepresentable)
			}
		})
	}
}
