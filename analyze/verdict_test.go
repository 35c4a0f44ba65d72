package analyze

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

func writeSnap(t *testing.T, dir, proxy, label string, ok, enforced uint64) {
	t.Helper()
	s := envoyrec.Snapshot{Schema: "rlbench.envoy-stats/v1", Proxy: proxy, Label: label, Format: envoyrec.FormatText,
		Values: map[string]uint64{},
		Local:  []envoyrec.LocalRateLimit{{Prefix: "http_local_rate_limiter", Enabled: ok + enforced, OK: ok, RateLimited: enforced, Enforced: enforced}}}
	b, err := json.Marshal(s)
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, proxy+"."+label+".json"), b, 0o644))
}

func reasons(s report.ScenarioReport) string { return strings.Join(s.Reasons, "\n") }

func TestStatsDeltasAgreeAndResetIsUnknown(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.Expect.StatsAgree = yes
	dir := e.write()
	for _, p := range []string{"proxy-a", "proxy-b"} {
		writeSnap(t, dir, p, "before", 100, 40)
		writeSnap(t, dir, p, "after", 105, 45)
	}
	s := run(t, dir).Scenarios[0]
	if s.Status != evidence.Pass || len(s.Stats) != 2 || s.Stats[0].Deltas[DeltaLocalOK] != 5 || s.Stats[0].Deltas[DeltaLocalEnforced] != 5 {
		t.Fatalf("status %s stats %+v reasons %s", s.Status, s.Stats, reasons(s))
	}
	// proxy-b's enforced counter disagrees with its clients: FAIL naming the check.
	writeSnap(t, dir, "proxy-b", "after", 105, 47)
	s = run(t, dir).Scenarios[0]
	if s.Status != evidence.Fail || !strings.Contains(reasons(s), "proxy-b: local enforced = local 429s: want 5, got 7") {
		t.Fatalf("status %s reasons %s", s.Status, reasons(s))
	}
	// proxy-b restarted between the snapshots: its counters went down. The
	// comparison is unknown, and the scenario is not PASS.
	writeSnap(t, dir, "proxy-b", "after", 5, 5)
	s = run(t, dir).Scenarios[0]
	if s.Stats[1].Status != "reset" || s.Status != evidence.NotRun || !strings.Contains(reasons(s), "inconclusive: proxy-b") {
		t.Fatalf("stats %+v status %s reasons %s", s.Stats[1], s.Status, reasons(s))
	}
	for _, c := range s.Checks {
		if strings.HasPrefix(c.Name, "proxy-b:") && c.Status != report.CheckUnknown {
			t.Fatalf("check %+v after a reset", c)
		}
	}
	// One snapshot of a pair missing: incomplete, stats_agree absent or true.
	must(t, os.Remove(filepath.Join(dir, evidence.StatsDir, "proxy-b.after.json")))
	e.scenario.Expect.StatsAgree = nil
	e.write()
	if s = run(t, dir).Scenarios[0]; s.Status != evidence.NotRun || !strings.Contains(reasons(s), "proxy-b.after.json") {
		t.Fatalf("status %s reasons %s", s.Status, reasons(s))
	}
}

func TestFaultsThatDidNotHappenAreIncomplete(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.Faults = 2
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "stop rls", Action: evidence.ActionStop, Target: "rls", BeginNs: t0, EndNs: t0 + 1, OK: false, Error: "could not stop"},
	})
	s := run(t, dir).Scenarios[0]
	r := reasons(s)
	if s.Status != evidence.NotRun || !strings.Contains(r, `fault "stop rls" (stop rls) did not take effect: could not stop`) ||
		!strings.Contains(r, "1 fault(s) recorded, scenario.json plans 2") {
		t.Fatalf("status %s reasons %s", s.Status, r)
	}
}

func TestUnidentifiedReceiptAndIntendedLimit(t *testing.T) {
	e := newEv(t).demo()
	e.receipts = append(e.receipts, evidence.Receipt{RecvNs: t0})
	s := run(t, e.write()).Scenarios[0]
	if s.Status != evidence.Fail || !strings.Contains(reasons(s), "receipts without id (unidentified): want 0, got 1") {
		t.Fatalf("status %s reasons %s", s.Status, reasons(s))
	}
	// With no admitted expectation, the intended limit is the expectation.
	e = newEv(t).demo()
	e.scenario.Expect = evidence.Expectation{}
	s = run(t, e.write()).Scenarios[0]
	if s.Status != evidence.Fail || !strings.Contains(reasons(s), "admitted within intended limit: want <= 5, got 10") {
		t.Fatalf("status %s reasons %s", s.Status, reasons(s))
	}
}

func TestMissingRLSDecisionsWhenRecorded(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.RLSDecisions = true
	s := run(t, e.write()).Scenarios[0]
	if s.Status != evidence.NotRun || !strings.Contains(reasons(s), "rls/decisions.jsonl: missing") {
		t.Fatalf("status %s reasons %s", s.Status, reasons(s))
	}
}

// TestRunDirectoryIntegrity: a run directory's manifest lists its scenario
// directories; one that was removed is NOT_RUN, a scenario.json that is not
// one is incomplete, and evidence/latest (a symlink) is followed.
func TestRunDirectoryIntegrity(t *testing.T) {
	root := t.TempDir()
	run1 := filepath.Join(root, "20261130T101500Z-1")
	for _, d := range []string{"01-a/1", "02-b/1"} {
		e := newEv(t).demo()
		e.dir = filepath.Join(run1, d)
		must(t, os.MkdirAll(e.dir, 0o755))
		e.write()
	}
	must(t, os.WriteFile(filepath.Join(run1, evidence.ManifestFile), []byte(`{"scenario_dirs":["01-a/1","02-b/1","03-c/1"]}`), 0o644))
	must(t, os.Symlink(filepath.Base(run1), filepath.Join(root, "latest")))
	rep := run(t, filepath.Join(root, "latest"))
	if len(rep.Scenarios) != 3 || rep.Status != evidence.NotRun {
		t.Fatalf("status %s scenarios %d", rep.Status, len(rep.Scenarios))
	}
	if s := rep.Scenarios[2]; s.Dir != "03-c/1" || s.Status != evidence.NotRun || !strings.Contains(reasons(s), "missing, but manifest.json lists it") {
		t.Fatalf("missing scenario %+v", s)
	}
	if rep.Scenarios[0].Status != evidence.Pass {
		t.Fatalf("01-a: %s %s", rep.Scenarios[0].Status, reasons(rep.Scenarios[0]))
	}
	// scenario.json blanked: incomplete, not a PASS without expectations.
	must(t, os.WriteFile(filepath.Join(run1, "01-a/1", evidence.ScenarioFile), []byte("{}"), 0o644))
	must(t, os.Remove(filepath.Join(run1, "02-b/1", evidence.ScenarioFile)))
	rep = run(t, run1)
	for _, s := range rep.Scenarios[:2] {
		if s.Status != evidence.NotRun || !strings.Contains(reasons(s), "scenario.json") {
			t.Fatalf("%s: %s %s", s.Dir, s.Status, reasons(s))
		}
	}
}

// TestTamperedSnapshotsAreNotPass: an empty snapshot, one of another proxy,
// or one whose rate-limit counters vanished never lets the scenario PASS.
func TestTamperedSnapshotsAreNotPass(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.Expect.StatsAgree = yes
	e.scenario.Limits = []evidence.LimitSpec{{Kind: "token_bucket", Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: 3600e9}}
	dir := e.write()
	good := func() {
		for _, p := range []string{"proxy-a", "proxy-b"} {
			writeSnap(t, dir, p, "before", 100, 40)
			writeSnap(t, dir, p, "after", 105, 45)
		}
	}
	good()
	if s := run(t, dir).Scenarios[0]; s.Status != evidence.Pass {
		t.Fatalf("baseline %s %s", s.Status, reasons(s))
	}
	after := filepath.Join(dir, evidence.StatsDir, "proxy-a.after.json")
	cases := map[string]func(){
		"empty object": func() { must(t, os.WriteFile(after, []byte("{}"), 0o644)) },
		"other proxy": func() {
			writeSnap(t, dir, "proxy-b", "after", 105, 45)
			copyFile(t, filepath.Join(dir, evidence.StatsDir, "proxy-b.after.json"), after)
		},
		"counters gone": func() {
			must(t, os.WriteFile(after, []byte(`{"schema":"rlbench.envoy-stats/v1","proxy":"proxy-a","values":{}}`), 0o644))
		},
		"never had stats": func() {
			must(t, os.WriteFile(after, []byte(`{"schema":"rlbench.envoy-stats/v1","proxy":"proxy-a","values":{}}`), 0o644))
			must(t, os.WriteFile(strings.Replace(after, "after", "before", 1), []byte(`{"schema":"rlbench.envoy-stats/v1","proxy":"proxy-a","values":{}}`), 0o644))
		},
	}
	for name, tamper := range cases {
		good()
		tamper()
		if s := run(t, dir).Scenarios[0]; s.Status == evidence.Pass {
			t.Errorf("%s: PASS", name)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	must(t, err)
	must(t, os.WriteFile(to, b, 0o644))
}

// globalDemo is the demo's 20 requests behind one global fixed window of 10
// per hour: 10 admitted, 10 global 429s, the RLS decisions recorded.
func globalDemo(t *testing.T) *ev {
	e := newEv(t).demo()
	for i := 10; i < 20; i++ { // the rejections are global 429s here
		e.requests[i].Body, e.requests[i].BytesIn = "", 0
		e.requests[i].Headers = map[string]string{"x-envoy-ratelimited": "true"}
	}
	e.scenario.Expect = evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 10, Max: 10})}
	e.scenario.Limits = []evidence.LimitSpec{{Kind: "fixed_window", Limit: 10, Unit: "HOUR"}}
	e.scenario.RLSDecisions = true
	return e
}

// TestLabRLSDecisionsMatchProxyCounters: the lab RLS's decision log must hold
// every decision the proxies counted; a log with lines removed FAILs.
func TestLabRLSDecisionsMatchProxyCounters(t *testing.T) {
	e := globalDemo(t)
	dir := e.write()
	for _, p := range []string{"proxy-a", "proxy-b"} {
		for label, n := range map[string]uint64{"before": 0, "after": 5} {
			b, err := json.Marshal(envoyrec.Snapshot{Schema: "rlbench.envoy-stats/v1", Proxy: p, Values: map[string]uint64{},
				Global: []envoyrec.GlobalRateLimit{{Cluster: "backend", OK: n, OverLimit: n}}})
			must(t, err)
			must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, p+"."+label+".json"), b, 0o644))
		}
	}
	decisions := func(n int) {
		var ds []evidence.Decision
		for i := 0; i < n; i++ {
			code := "OK"
			if i >= 10 {
				code = "OVER_LIMIT"
			}
			ds = append(ds, evidence.Decision{TimeNs: t0, Domain: "inventory", Key: "inventory_tenant_lab_1", Limit: 10, Code: code})
		}
		writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	}
	decisions(20)
	if s := run(t, dir).Scenarios[0]; s.Status != evidence.Pass {
		t.Fatalf("complete log: %s %s", s.Status, reasons(s))
	}
	decisions(19)
	if s := run(t, dir).Scenarios[0]; s.Status != evidence.Fail || !strings.Contains(reasons(s), "rls decisions logged = decisions the proxies received: want 20") {
		t.Fatalf("a line removed: %s %s", s.Status, reasons(s))
	}
}

func TestRLSErrorsOutsideFaultWindowsFail(t *testing.T) {
	e := newEv(t).demo()
	for i := 10; i < 20; i++ {
		e.requests[i].Code, e.requests[i].Body, e.requests[i].BytesIn = 500, "", 0
	}
	e.scenario.Expect = evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 10, Max: 10})}
	e.scenario.Faults = 2
	dir := e.write()
	window := func(shift int64) {
		writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
			{Name: "stop rls", Action: evidence.ActionStop, Target: "rls", BeginNs: t0 - 1000 + shift, EndNs: t0 + shift, OK: true},
			{Name: "start rls", Action: evidence.ActionStart, Target: "rls", BeginNs: t0 + 10_000_000_000 + shift, EndNs: t0 + 10_000_000_001 + shift, OK: true},
		})
	}
	window(0)
	if s := run(t, dir).Scenarios[0]; s.Status != evidence.Pass {
		t.Fatalf("500s inside the window: %s %s", s.Status, reasons(s))
	}
	window(1000_000_000_000) // the same faults, 1000 s later
	if s := run(t, dir).Scenarios[0]; s.Status != evidence.Fail || !strings.Contains(reasons(s), "RLS 500s outside fault windows (unexplained): want 0, got 10") {
		t.Fatalf("shifted faults: %s %s", s.Status, reasons(s))
	}
}

func TestDuplicateRequestLineNamesBothLines(t *testing.T) {
	e := newEv(t).demo()
	e.requests = append(e.requests, e.requests[3])
	e.attack["sent"] = 21
	s := run(t, e.write()).Scenarios[0]
	if s.Status != evidence.NotRun || !strings.Contains(reasons(s), `requests.jsonl:21: id "id-03" recorded again (first on line 4)`) {
		t.Fatalf("%s %s", s.Status, reasons(s))
	}
}

// TestUpstreamCountersMatchAdmissions: a proxy claiming it forwarded more
// 2xx than its clients were admitted is caught.
func TestUpstreamCountersMatchAdmissions(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.Cluster = "backend"
	dir := e.write()
	put := func(p, label string, n uint64) {
		b, err := json.Marshal(envoyrec.Snapshot{Schema: "rlbench.envoy-stats/v1", Proxy: p, Values: map[string]uint64{},
			Upstream: []envoyrec.ClusterCodes{{Cluster: "backend", Codes: map[string]uint64{"2xx": n, "200": n}}}})
		must(t, err)
		must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, p+"."+label+".json"), b, 0o644))
	}
	for _, p := range []string{"proxy-a", "proxy-b"} {
		put(p, "before", 7)
		put(p, "after", 12)
	}
	if s := run(t, dir).Scenarios[0]; s.Status != evidence.Pass {
		t.Fatalf("%s %s", s.Status, reasons(s))
	}
	put("proxy-a", "after", 13)
	if s := run(t, dir).Scenarios[0]; s.Status != evidence.Fail || !strings.Contains(reasons(s), "proxy-a: cluster.backend.upstream_rq_2xx = admitted: want 5, got 6") {
		t.Fatalf("%s %s", s.Status, reasons(s))
	}
}
