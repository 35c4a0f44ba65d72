package analyze

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
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

// TestInexactPrometheusCounter (issue 27): a counter read from Prometheus
// text at or past 2^53 (envoyrec.Snapshot.Inexact) is not Envoy's value:
// the checks reading it are unknown, naming the stat, and the scenario is
// NOT_RUN; the same snapshot without the mark passes.
func TestInexactPrometheusCounter(t *testing.T) {
	for _, inexact := range []bool{false, true} {
		dir, _ := statsEv(t)
		snap{1 << 53, 40, -1, t0 - sec}.write(t, dir, "proxy-b", evidence.LabelBefore)
		snap{1<<53 + 5, 45, -1, t0 + 2*sec}.write(t, dir, "proxy-b", evidence.LabelAfter)
		if inexact {
			markInexact(t, dir, "proxy-b", evidence.LabelAfter, "http_local_rate_limiter.http_local_rate_limit.ok")
		}
		s := run(t, dir).Scenarios[0]
		if !inexact {
			wantVerdict(t, s, evidence.Pass)
			continue
		}
		wantVerdict(t, s, evidence.NotRun, "inconclusive: proxy-b: local ok",
			"http_local_rate_limiter.http_local_rate_limit.ok ≈ 9007199254740997 in the after snapshot, read from Prometheus text at or past 2^53")
		if ch := check(t, s, "proxy-b: local enforced"); ch.Status != report.CheckPass {
			t.Errorf("an exact counter's check %+v", ch)
		}
	}
}

// markInexact lists name in a written snapshot's Inexact.
func markInexact(t *testing.T, dir, proxy, label, name string) {
	t.Helper()
	p := filepath.Join(dir, evidence.StatsDir, proxy+"."+label+".json")
	b, err := os.ReadFile(p)
	must(t, err)
	var s envoyrec.Snapshot
	must(t, json.Unmarshal(b, &s))
	s.Inexact = append(s.Inexact, name)
	b, err = json.Marshal(s)
	must(t, err)
	must(t, os.WriteFile(p, b, 0o644))
}

// TestNegativeOrContradictoryAttackCounts (issue 27): attack.json with
// "sent": -1 was judged PASS. A negative count, or counts that contradict
// each other, make attack.json incomplete evidence naming the file and the
// field; the demo with consistent counts still passes.
func TestNegativeOrContradictoryAttackCounts(t *testing.T) {
	for _, c := range []struct {
		name   string
		attack map[string]any
		why    string // "": PASS
	}{
		{"consistent", map[string]any{"complete": true, "sent": 20, "recorded": 20,
			"phases": []map[string]any{{"complete": true, "sent": 20, "recorded": 20, "config": map[string]any{"ids": 20},
				"codes_by_target": map[string]any{"proxy-a": map[string]int{"200": 5, "429": 5}, "proxy-b": map[string]int{"200": 5, "429": 5}}}}}, ""},
		{"sent -1", map[string]any{"complete": true, "sent": -1}, "attack.json: line 1: bad counts (incomplete evidence): sent = -1: negative"},
		{"phase sent -1", map[string]any{"complete": true, "sent": 20, "phases": []map[string]any{{"complete": true, "sent": -1}}},
			"phases[0].sent = -1: negative"},
		{"negative class count", map[string]any{"complete": true, "sent": 20, "phases": []map[string]any{{"complete": true, "sent": 20,
			"codes_by_target": map[string]any{"proxy-a": map[string]int{"200": -3}}}}}, `phases[0].codes_by_target["proxy-a"]["200"] = -3: negative`},
		{"class counts past sent", map[string]any{"complete": true, "sent": 20, "phases": []map[string]any{{"complete": true, "sent": 20,
			"codes_by_target": map[string]any{"proxy-a": map[string]int{"200": 15}, "proxy-b": map[string]int{"429": 10}}}}},
			"phases[0].codes_by_target sums to 25, more than phases[0].sent = 20"},
		{"sent past the IDs planned", map[string]any{"complete": true, "sent": 20, "phases": []map[string]any{{"complete": true, "sent": 20, "config": map[string]any{"ids": 10}}}},
			"phases[0].sent = 20 exceeds phases[0].config.ids = 10 (IDs attempted are among those planned)"},
		{"not_sent past sent", map[string]any{"complete": true, "sent": 20, "phases": []map[string]any{{"complete": true, "sent": 20, "not_sent": 21}}},
			"phases[0].not_sent = 21 exceeds phases[0].sent = 20"},
		{"a bare summary of rlbench attack", map[string]any{"schema": evidence.AttackSummarySchema, "complete": true, "config": map[string]any{"ids": 20}, "sent": 20, "recorded": -2},
			"phases[0].recorded = -2: negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEv(t).demo()
			e.attack = c.attack
			s := run(t, e.write()).Scenarios[0]
			if c.why == "" {
				wantVerdict(t, s, evidence.Pass)
				return
			}
			wantVerdict(t, s, evidence.NotRun, "incomplete: "+e.dir, c.why)
		})
	}
}

// TestRLSLoggedSumPastInt64 (issue 27): the proxies' ratelimit.ok +
// over_limit deltas, each within int64, were summed into an int64 that
// wrapped: 2^62+2^62 on proxy-a and 2^62+(2^62+20) on proxy-b summed to 20,
// and "rls decisions logged" PASSed against 20 logged decisions. The sum
// past the int64 range is now unknown.
func TestRLSLoggedSumPastInt64(t *testing.T) {
	e := globalDemo(t)
	dir := e.write()
	var ds []evidence.Decision
	for range 20 {
		ds = append(ds, evidence.Decision{TimeNs: t0, Domain: "inventory", Key: "inventory_tenant_lab_1", Limit: 10, Code: "OK"})
	}
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	snapshot := func(p, label string, ok, over uint64) {
		b, err := json.Marshal(envoyrec.Snapshot{Schema: envoyrec.SnapshotSchema, Proxy: p, Values: map[string]uint64{},
			Global: []envoyrec.GlobalRateLimit{{Cluster: "backend", OK: ok, OverLimit: over}}})
		must(t, err)
		must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, p+"."+label+".json"), b, 0o644))
	}
	for _, p := range []string{"proxy-a", "proxy-b"} {
		snapshot(p, evidence.LabelBefore, 0, 0)
	}
	snapshot("proxy-a", evidence.LabelAfter, 1<<62, 1<<62)
	snapshot("proxy-b", evidence.LabelAfter, 1<<62, 1<<62+20)
	s := run(t, dir).Scenarios[0]
	c := check(t, s, "rls decisions logged")
	if s.Status == evidence.Pass || c.Status != report.CheckUnknown || !strings.Contains(c.Got, "sum past the int64 range") {
		t.Fatalf("status %s, check %+v, reasons %s", s.Status, c, reasons(s))
	}
}

// TestUptimePastDuration (issue 27): server.uptime in seconds times
// time.Second wrapped past 2^63 ns (292 years), so a restart the gauge
// shows could be missed and the counters compared. Such an uptime makes
// the proxy's comparison unknown (a reset), never PASS or FAIL.
func TestUptimePastDuration(t *testing.T) {
	dir, _ := statsEv(t)
	snap{100, 40, 1 << 62, t0 - sec}.write(t, dir, "proxy-b", evidence.LabelBefore)
	snap{105, 45, 1<<62 + 2, t0 + 2*sec}.write(t, dir, "proxy-b", evidence.LabelAfter)
	s := run(t, dir).Scenarios[0]
	if ps := s.Stats[1]; ps.Status != report.StatsReset || !strings.Contains(strings.Join(ps.Resets, "; "), "past the range of a duration") {
		t.Fatalf("stats %+v", ps)
	}
	wantVerdict(t, s, evidence.NotRun, "inconclusive: proxy-b:")

	// An uptime within range, but taken_ns so far apart that uptime +
	// the time between wraps.
	dir, _ = statsEv(t)
	snap{100, 40, 1 << 33, 1}.write(t, dir, "proxy-b", evidence.LabelBefore)
	snap{105, 45, 1<<33 + 2, 1<<63 - 1}.write(t, dir, "proxy-b", evidence.LabelAfter)
	s = run(t, dir).Scenarios[0]
	if ps := s.Stats[1]; ps.Status != report.StatsReset || !strings.Contains(strings.Join(ps.Resets, "; "), "a restart cannot be ruled out") {
		t.Fatalf("stats %+v", ps)
	}
}

// TestFailOpenDeltaPastBounds (issue 27): a failure_mode_allowed delta
// that fits an int64 but not added to the RLS 500s (2^63-1) wrapped the
// bounds of the ratelimit.error check ("want -9223372036854775808..",
// FAIL). That check is now unknown naming the delta.
func TestFailOpenDeltaPastBounds(t *testing.T) {
	e := globalDemo(t)
	e.scenario.Expect.StatsAgree = yes
	dir := e.write()
	snapshot := func(p, label string, failOpen uint64) {
		b, err := json.Marshal(envoyrec.Snapshot{Schema: envoyrec.SnapshotSchema, Proxy: p, Values: map[string]uint64{},
			Global: []envoyrec.GlobalRateLimit{{Cluster: "backend", OK: 5, OverLimit: 5, FailureModeAllowed: failOpen}}})
		must(t, err)
		must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, p+"."+label+".json"), b, 0o644))
	}
	for _, p := range []string{"proxy-a", "proxy-b"} {
		snapshot(p, evidence.LabelBefore, 0)
		snapshot(p, evidence.LabelAfter, 0)
	}
	snapshot("proxy-b", evidence.LabelAfter, 1<<63-1)
	s := run(t, dir).Scenarios[0]
	if c := check(t, s, "proxy-b: ratelimit.error"); c.Status != report.CheckUnknown || !strings.Contains(c.Got, "ratelimit.failure_mode_allowed delta 9223372036854775807") {
		t.Fatalf("check %+v, reasons %s", c, reasons(s))
	}
}
