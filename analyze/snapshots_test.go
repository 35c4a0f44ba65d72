package analyze

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/collect/envoy"
	"github.com/rlbench/rlbench/evidence"
)

// snap is one stats snapshot of a local rate limit filter: its ok and
// enforced counters, server.uptime in seconds (< 0: none) and taken_ns (0:
// none, as evidence older than taken_ns).
type snap struct {
	ok, enforced uint64
	uptime       int64
	takenNs      int64
}

func (s snap) write(t *testing.T, dir, proxy, label string) {
	t.Helper()
	v := map[string]uint64{}
	if s.uptime >= 0 {
		v[envoy.UptimeStat] = uint64(s.uptime)
	}
	b, err := json.Marshal(envoy.Snapshot{Schema: envoy.SnapshotSchema, Proxy: proxy, Label: label, Format: envoy.FormatText, TakenNs: s.takenNs, Values: v,
		Local: []envoy.LocalRateLimit{{Prefix: "http_local_rate_limiter", Enabled: s.ok + s.enforced, OK: s.ok, RateLimited: s.enforced, Enforced: s.enforced}}})
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, proxy+"."+label+".json"), b, 0o644))
}

// statsEv is the demo (10 requests per proxy, 5 admitted, 5 local 429s)
// with stats_agree true and proxy-a's snapshots agreeing; proxy-b's are
// written by the test.
func statsEv(t *testing.T) (string, *ev) {
	e := newEv(t).demo()
	e.scenario.Expect.StatsAgree = yes
	dir := e.write()
	snap{100, 40, 3600, t0 - sec}.write(t, dir, "proxy-a", evidence.LabelBefore)
	snap{105, 45, 3602, t0 + 2*sec}.write(t, dir, "proxy-a", evidence.LabelAfter)
	return dir, e
}

const sec = int64(1e9)

// TestRestartSeenOnlyInUptime (issue 21): a proxy that restarted between
// its snapshots but whose counters did not go down (it counted again from
// 0 past the before values) had its deltas compared: PASS or a counter
// FAIL. server.uptime shows the restart: below the before snapshot's, or
// below the time between the snapshots; the comparison is then a reset,
// unknown, and the scenario NOT_RUN.
func TestRestartSeenOnlyInUptime(t *testing.T) {
	for _, c := range []struct {
		name          string
		before, after snap
		restart       string // "" when no restart shows
	}{
		{"uptime went down", snap{2, 1, 40, t0 - sec}, snap{7, 6, 3, t0 + 2*sec}, "server.uptime went from 40 s to 3 s"},
		{"uptime below the time between", snap{0, 0, 0, t0 - sec}, snap{5, 5, 1, t0 + 30*sec},
			"server.uptime is 1 s at the after snapshot, taken 31s after the before snapshot (0 s): the proxy started in between"},
		{"a restart with counters that disagree", snap{2, 1, 40, t0 - sec}, snap{9, 3, 3, t0 + 2*sec}, "server.uptime went from 40 s to 3 s"},
		// No restart: the gauge lags by up to a stats flush interval.
		{"a live proxy's lagging uptime", snap{100, 40, 100, t0 - sec}, snap{105, 45, 125, t0 + 30*sec}, ""},
		{"a young proxy before its first flush", snap{0, 0, 0, t0 - sec}, snap{5, 5, 0, t0 + 4*sec}, ""},
		// Evidence without taken_ns or uptime behaves as before.
		{"no taken_ns", snap{0, 0, 0, 0}, snap{5, 5, 1, 0}, ""},
		{"no uptime", snap{100, 40, -1, t0 - sec}, snap{105, 45, -1, t0 + 30*sec}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := statsEv(t)
			c.before.write(t, dir, "proxy-b", evidence.LabelBefore)
			c.after.write(t, dir, "proxy-b", evidence.LabelAfter)
			s := run(t, dir).Scenarios[0]
			ps := s.Stats[1]
			if c.restart == "" {
				if ps.Status != StatsOK || s.Status != Pass {
					t.Fatalf("stats %+v, status %s, reasons %s", ps, s.Status, reasons(s))
				}
				return
			}
			if ps.Status != StatsReset || strings.Join(ps.Resets, "; ") != c.restart || s.Status != NotRun ||
				!strings.Contains(reasons(s), "inconclusive: proxy-b: the proxy restarted between snapshots (server.uptime)") {
				t.Fatalf("stats %+v, status %s, reasons %s", ps, s.Status, reasons(s))
			}
			for _, ch := range s.Checks {
				if strings.HasPrefix(ch.Name, "proxy-b:") && ch.Status != CheckUnknown {
					t.Errorf("check %+v after a restart", ch)
				}
			}
		})
	}
}
