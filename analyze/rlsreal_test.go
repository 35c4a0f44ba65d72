package analyze

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
)

const ms = int64(time.Millisecond)

var tenantLab = []descriptor.DescriptorEntry{{Key: "tenant", Value: "lab"}}

// realEv is a scenario on the real RLS: 2 proxies, limit 5 per hour, rls/rls.log present.
func realEv(t *testing.T) *ev {
	e := newEv(t)
	five := 5
	e.scenario = evidence.Scenario{Schema: "rlbench.scenario/v1", Name: "real", IntendedLimit: evidence.IntendedPerRun(five),
		Limits: []evidence.LimitSpec{{Kind: "fixed_window", Limit: 5, Unit: "HOUR", WindowStart: "aligned"}}}
	must(t, mkdirAll(filepath.Join(e.dir, "rls")))
	must(t, os.WriteFile(filepath.Join(e.dir, evidence.RLSLogFile), []byte(`{"@message":"Tracing disabled","@timestamp":"2026-11-30T09:00:00Z","level":"info"}`+"\n"), 0o644))
	return e
}

// request adds one request sent at t0+sentMs, lasting latMs, with an HTTP outcome.
func (e *ev) request(id string, sentMs, latMs int64, code int) {
	r := evidence.Request{ID: id, Target: "proxy-a", Method: "GET", SentNs: t0 + sentMs*ms, LatencyNs: latMs * ms, Code: code}
	switch code {
	case 200:
		r.BytesIn = 10
		e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: r.SentNs + 1})
	case 429:
		r.Headers = map[string]string{"x-envoy-ratelimited": "true"}
	}
	e.requests = append(e.requests, r)
	e.attack["sent"] = len(e.requests)
}

func dec(atNs int64, current uint64, code string) evidence.Decision {
	return evidence.Decision{TimeNs: atNs, Domain: "inventory", Descriptor: tenantLab, Key: "inventory_tenant_lab_1796029200",
		WindowStart: 1796029200, Current: current, Limit: 5, Unit: "HOUR", Code: code}
}

func check(t *testing.T, s report.ScenarioReport, prefix string) report.Check {
	t.Helper()
	for _, c := range s.Checks {
		if strings.HasPrefix(c.Name, prefix) {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", prefix, s.Checks)
	return report.Check{}
}

// A Redis outage under failure_mode_deny: 2 errors inside the window, all 20 clients get 500 within 5 ms, then
// Redis returns and 10 hung calls run late with current 1..10 (5 OK): they are zombies, flagged and not counted.
func TestRealZombiesFlaggedAndNotCounted(t *testing.T) {
	e := realEv(t)
	for i := 0; i < 20; i++ {
		e.request(fmt.Sprintf("id-%02d", i), 1+int64(i%5), 4, 500)
	}
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "stop redis", Action: evidence.ActionStop, Target: "redis", BeginNs: t0 - 10*ms, EndNs: t0 - 5*ms, OK: true},
		{Name: "start redis", Action: evidence.ActionStart, Target: "redis", BeginNs: t0 + 20*ms, EndNs: t0 + 30*ms, OK: true},
	})
	ds := []evidence.Decision{}
	for i := 0; i < 2; i++ {
		d := dec(t0+2*ms, 0, "ERROR")
		d.Current, d.Error = 0, "response returned from Conn: EOF"
		ds = append(ds, d)
	}
	for n := uint64(1); n <= 10; n++ {
		code := "OK"
		if n > 5 {
			code = "OVER_LIMIT"
		}
		// The RLS reconnects as soon as Redis answers, before the start action returns: some zombies are logged
		// inside the start action, yet they belong to the new Redis.
		ds = append(ds, dec(t0+22*ms+int64(n)*ms, n, code))
	}
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)

	checkZombies(t, run(t, dir).Scenarios[0])
	checkZombiesJoinedPerCall(t, e, dir)
}

// checkZombies: the ten late decisions of TestRealZombiesFlaggedAndNotCounted
// are zombies of the stop, flagged in the window and the descriptor and not
// counted as OK decisions; the two errors lie inside the fault window.
func checkZombies(t *testing.T, s report.ScenarioReport) {
	t.Helper()
	if s.Status != evidence.Pass {
		t.Fatalf("status %s: %v", s.Status, s.Reasons)
	}
	rr := s.RLS.Real
	if rr == nil || rr.Zombies != 10 || len(rr.ZombieDecisions) != 10 || rr.ZombieDecisions[0].Fault != "stop redis" || rr.ZombieDecisions[9].Fault != "stop redis" {
		t.Fatalf("zombies %+v", rr)
	}
	if rr.TimeResolutionNs != 1 {
		t.Fatalf("resolution %d", rr.TimeResolutionNs)
	}
	if len(rr.Windows) != 1 {
		t.Fatalf("windows %+v", rr.Windows)
	}
	w := rr.Windows[0]
	if w.Epoch != "after start redis" || w.OK != 0 || w.OverLimit != 0 || w.ZombieOK != 5 || w.ZombieOver != 5 || w.Inconsistent != 0 {
		t.Fatalf("window %+v", w)
	}
	if d := rr.Descriptors; len(d) != 1 || d[0].OK != 0 || d[0].ZombieOK != 5 || d[0].AdmittedMin != 0 || d[0].AdmittedMax != 0 {
		t.Fatalf("descriptors %+v", d)
	}
	if c := check(t, s, "rls real inventory tenant=lab: OK decisions"); c.Status != report.CheckPass || c.Got != "0 (+5 zombie)" {
		t.Fatalf("check %+v", c)
	}
	if e := rr.Errors; e.Total != 2 || e.Inside != 2 || e.Unexplained != 0 || len(e.Windows) != 1 || e.Windows[0].Errors != 2 {
		t.Fatalf("errors %+v", e)
	}
}

// checkZombiesJoinedPerCall: the zombies of TestRealZombiesFlaggedAndNotCounted
// are joined per call, not per run.
func checkZombiesJoinedPerCall(t *testing.T, e *ev, dir string) {
	t.Helper()
	// Joined per call: one unrelated client still in flight does not hide them. A request that got a 500 took no
	// decision (its RLS call failed), so all ten stay late and the scenario passes; the previous reconciliation
	// (no zombie while any request of the run was in flight) counted all ten and failed.
	e.request("late", 22, 30, 500)
	e.write()
	s := run(t, dir).Scenarios[0]
	if s.RLS.Real.Zombies != 10 || s.Status != evidence.Pass {
		t.Fatalf("zombies %d status %s %v", s.RLS.Real.Zombies, s.Status, s.Reasons)
	}
	// An admitted request in flight takes exactly one OK decision: one is not late, nine are.
	e.requests = e.requests[:len(e.requests)-1]
	e.receipts = nil
	e.request("admitted", 22, 30, 200)
	e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 1, Max: 1})
	e.write()
	s = run(t, dir).Scenarios[0]
	if s.RLS.Real.Zombies != 9 {
		t.Fatalf("zombies %d status %s %v", s.RLS.Real.Zombies, s.Status, s.Reasons)
	}
	if c := check(t, s, "rls real inventory tenant=lab: OK decisions"); c.Status != report.CheckPass || c.Got != "1 (+4 zombie)" || c.Want != "1" {
		t.Fatalf("check %+v", c)
	}
}

// Within one window and Redis epoch each counter value is unique; a repeated one fails the scenario. The same
// values after a Redis restart (a new epoch) are fine.
func TestRealDuplicateCurrentFails(t *testing.T) {
	e := realEv(t)
	for i := 0; i < 4; i++ {
		e.request(fmt.Sprintf("id-%d", i), int64(i), 100, 200)
	}
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), []evidence.Decision{
		dec(t0+10*ms, 1, "OK"), dec(t0+11*ms, 2, "OK"), dec(t0+12*ms, 2, "OK"), dec(t0+13*ms, 3, "OK"),
	})
	s := run(t, dir).Scenarios[0]
	c := check(t, s, "rls real inventory_tenant_lab_1796029200: current values unique")
	if s.Status != evidence.Fail || c.Status != report.CheckFail || !strings.Contains(c.Got, "duplicated current [2]") {
		t.Fatalf("status %s check %+v", s.Status, c)
	}
	if w := s.RLS.Real.Windows[0]; w.Decisions != 4 || w.OK != 4 || w.MaxCurrent != 3 {
		t.Fatalf("window %+v", w)
	}

	// A Redis restart between the two 2s: two epochs, no duplicate.
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "restart redis", Action: evidence.ActionRestart, Target: "redis", BeginNs: t0 + 11*ms + 500_000, EndNs: t0 + 11*ms + 600_000, OK: true},
	})
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), []evidence.Decision{
		dec(t0+10*ms, 1, "OK"), dec(t0+11*ms, 2, "OK"), dec(t0+12*ms, 1, "OK"), dec(t0+13*ms, 2, "OK"),
	})
	s = run(t, dir).Scenarios[0]
	ws := s.RLS.Real.Windows
	if len(ws) != 2 || ws[0].Epoch != "" || ws[1].Epoch != "after restart redis" || len(ws[0].DuplicateCurrents)+len(ws[1].DuplicateCurrents) != 0 {
		t.Fatalf("windows %+v", ws)
	}
	for _, c := range s.Checks {
		if strings.HasPrefix(c.Name, "rls real") && c.Status != report.CheckPass {
			t.Fatalf("check %+v", c)
		}
	}
}

// envoyproxy/ratelimit answers OK iff current <= limit; an OK at 6 of 5 is inconsistent.
func TestRealOKAboveLimitIsInconsistent(t *testing.T) {
	e := realEv(t)
	for i := 0; i < 6; i++ {
		e.request(fmt.Sprintf("id-%d", i), int64(i), 100, 200)
	}
	dir := e.write()
	var ds []evidence.Decision
	for n := uint64(1); n <= 6; n++ {
		ds = append(ds, dec(t0+int64(n)*ms, n, "OK"))
	}
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	s := run(t, dir).Scenarios[0]
	c := check(t, s, "rls real inventory_tenant_lab_1796029200: OK iff current <= limit")
	if c.Status != report.CheckFail || c.Got != "1" || s.Status != evidence.Fail {
		t.Fatalf("status %s check %+v", s.Status, c)
	}
	// Every admitted request had its OK: that check passes on its own.
	if c := check(t, s, "rls real inventory tenant=lab: OK decisions"); c.Status != report.CheckPass || c.Got != "6" {
		t.Fatalf("check %+v", c)
	}
}

// Text-log errors (whole seconds) are joined to the Redis window with their 1 s resolution: an error logged at
// second S matches a window that begins at S+0.4 s; one logged after the window is "after recovery"; one before
// any Redis fault is unexplained and fails the check.
func TestRealErrorsJoinedToWindowsWithResolution(t *testing.T) {
	e := realEv(t)
	e.request("a", 1600, 10, 500)
	dir := e.write()
	s0 := int64(1796029200) * int64(time.Second)
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "stop redis", Action: evidence.ActionStop, Target: "redis", BeginNs: s0 + 1400*ms, EndNs: s0 + 1410*ms, OK: true},
		{Name: "start redis", Action: evidence.ActionStart, Target: "redis", BeginNs: s0 + 2400*ms, EndNs: s0 + 2500*ms, OK: true},
	})
	errAt := func(sec int64) evidence.Decision {
		return evidence.Decision{TimeNs: s0 + sec*int64(time.Second), Domain: "inventory", Descriptor: tenantLab, Code: "ERROR",
			Error: "response returned from Conn: EOF"}
	}
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), []evidence.Decision{errAt(1), errAt(2), errAt(4)})
	s := run(t, dir).Scenarios[0]
	rr := s.RLS.Real
	if rr.TimeResolutionNs != int64(time.Second) {
		t.Fatalf("resolution %d", rr.TimeResolutionNs)
	}
	if e := rr.Errors; e.Total != 3 || e.Inside != 2 || e.AfterRecovery != 1 || e.Unexplained != 0 {
		t.Fatalf("errors %+v", e)
	}
	if c := check(t, s, "rls real: Redis errors"); c.Status != report.CheckPass {
		t.Fatalf("check %+v", c)
	}

	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), []evidence.Decision{errAt(0), errAt(1)})
	s = run(t, dir).Scenarios[0]
	if e := s.RLS.Real.Errors; e.Inside != 1 || e.Unexplained != 1 {
		t.Fatalf("errors %+v", e)
	}
	if c := check(t, s, "rls real: Redis errors"); c.Status != report.CheckFail || s.Status != evidence.Fail {
		t.Fatalf("status %s check %+v", s.Status, c)
	}
}

// The real outage-fast log (LOG_FORMAT=text) and its fault timeline: the 5 `caught error during call` lines at
// 09:42:32 lie in the Redis window that began at 09:42:32.389; after Redis came back the counter restarted at 1
// (a new epoch, no duplicate), and after the RLS restart it went on at 4 (counts live in Redis).
func TestRealOutageFixture(t *testing.T) {
	f, err := os.Open("testdata/rlsreal/rls-text.log")
	must(t, err)
	defer f.Close()
	lg, err := rls.ParseLog(f, "rls-text.log")
	must(t, err)
	tl, err := os.ReadFile("testdata/rlsreal/d_timeline.txt")
	must(t, err)
	var stop, stopped, start, started int64
	for _, l := range strings.Split(strings.TrimSpace(string(tl)), "\n") {
		var what string
		var ns int64
		i := strings.LastIndex(l, "unix_ns=")
		what = strings.TrimSpace(l[:i])
		_, err := fmt.Sscan(l[i+len("unix_ns="):], &ns)
		must(t, err)
		switch what {
		case "redis stop at":
			stop = ns
		case "redis stopped at":
			stopped = ns
		case "redis start at":
			start = ns
		case "redis started at":
			started = ns
		}
	}
	// The outage phase begins at log line 350 (earlier phases flushed Redis by hand, without a fault record).
	var ds []evidence.Decision
	for i, d := range lg.Decisions {
		if d.Line >= 350 {
			ds = append(ds, lg.EvidenceDecisions()[i])
		}
	}
	e := realEv(t)
	// The clients of the phase (the gRPC calls of d_outage.jsonl and the calls after it), one per decision, in
	// flight during the whole phase: each decision reaches one of them.
	for k, d := range ds {
		code := 200
		switch d.Code {
		case evidence.CodeOverLimit:
			code = 429
		case evidence.CodeError:
			code = 500
		}
		e.request(fmt.Sprintf("phase-%02d", k), (stop-t0)/ms-100, (started-stop)/ms+8000, code)
	}
	dir := e.write()
	rlsRestart := int64(1796031758) * int64(time.Second) // "received terminated" at 09:42:38
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "stop redis", Action: evidence.ActionStop, Target: "redis", BeginNs: stop, EndNs: stopped, OK: true},
		{Name: "start redis", Action: evidence.ActionStart, Target: "redis", BeginNs: start, EndNs: started, OK: true},
		{Name: "restart rls", Action: evidence.ActionRestart, Target: "rls", BeginNs: rlsRestart, EndNs: rlsRestart + 900*ms, OK: true},
	})
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	s := run(t, dir).Scenarios[0]
	rr := s.RLS.Real
	if rr.TimeResolutionNs != int64(time.Second) || rr.Errors.Total != 5 || rr.Errors.Inside != 5 || rr.Errors.Unexplained != 0 {
		t.Fatalf("resolution %d errors %+v", rr.TimeResolutionNs, rr.Errors)
	}
	if len(rr.Windows) != 2 {
		t.Fatalf("windows %+v", rr.Windows)
	}
	first, after := rr.Windows[0], rr.Windows[1]
	if first.Epoch != "" || first.Decisions != 2 || first.MaxCurrent != 2 || after.Epoch != "after start redis" ||
		after.Decisions != 6 || after.MaxCurrent != 6 || after.OK != 5 || after.OverLimit != 1 {
		t.Fatalf("windows %+v", rr.Windows)
	}
	for _, w := range rr.Windows {
		if len(w.DuplicateCurrents) != 0 || w.Inconsistent != 0 {
			t.Fatalf("window %+v", w)
		}
	}
}

// writeMetrics writes rls/metrics.<label>.json from a real Prometheus fixture, as the runner does.
func writeMetrics(t *testing.T, dir, label, fixture string, timeNs int64, process int, stable bool) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata/rlsreal", fixture))
	must(t, err)
	defer f.Close()
	snap, err := rls.ParsePrometheus(f, fixture)
	must(t, err)
	writeMetricsCounters(t, dir, label, snap, snap.RLSCounters(), timeNs, process, stable)
}

func writeMetricsCounters(t *testing.T, dir, label string, snap *rls.PromSnapshot, c *evidence.RLSCounters, timeNs int64, process int, stable bool) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"schema": "rlbench.rls-metrics/v1", "label": label, "time_ns": timeNs, "process": process,
		"stable": stable, "prometheus": snap, "counters": c})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "rls", "metrics."+label+".json"), b, 0o644))
}

func identity(t *testing.T, ids []report.RealIdentity, process int) report.RealIdentity {
	t.Helper()
	for _, id := range ids {
		if id.Process == process && id.Key == "inventory.tenant_lab" {
			return id
		}
	}
	t.Fatalf("no identity for process %d in %+v", process, ids)
	return report.RealIdentity{}
}

// The RLS stat identity on the real json-prometheus scrapes: after the short outage total_hits 40 = 15 + 20 + 5
// with redis_error 5 (explained); after the RLS restart the counters went down — a new process, recognised from
// the counters alone when the snapshots carry no process number — and 3 = 2 + 1 holds for it.
func TestRealIdentitiesAcrossRestart(t *testing.T) {
	e := realEv(t)
	e.request("a", 0, 1, 200)
	dir := e.write()
	writeMetrics(t, dir, "during", "prom_metrics_4_during_outage.txt", t0+1, 0, true)
	writeMetrics(t, dir, "pre-1-restart-rls", "prom_metrics_5_after_d.txt", t0+2, 0, true)
	writeMetrics(t, dir, "after", "prom_metrics_6_after_e.txt", t0+3, 0, true)
	s := run(t, dir).Scenarios[0]
	rr := s.RLS.Real
	if len(rr.Snapshots) != 3 || rr.Snapshots[0].Label != "during" || rr.Snapshots[2].Label != "after" {
		t.Fatalf("snapshots %+v", rr.Snapshots)
	}
	p1, p2 := identity(t, rr.Identities, 1), identity(t, rr.Identities, 2)
	if p1.Status != IdentityExplained || p1.Snapshot != "pre-1-restart-rls" || p1.TotalHits != 40 || p1.Gap != 5 || p1.RedisErrors != 5 {
		t.Fatalf("process 1 %+v", p1)
	}
	if p2.Status != rls.IdentityPass || p2.TotalHits != 3 || p2.WithinLimit != 2 || p2.OverLimit != 1 {
		t.Fatalf("process 2 %+v", p2)
	}
	c := check(t, s, "rls real stats (process 1) inventory.tenant_lab")
	if c.Status != report.CheckPass {
		t.Fatalf("check %+v", c)
	}

	// Labelled as one process, the same drop is a reset nobody explains: unknown, never a pass.
	writeMetrics(t, dir, "pre-1-restart-rls", "prom_metrics_5_after_d.txt", t0+2, 1, true)
	writeMetrics(t, dir, "after", "prom_metrics_6_after_e.txt", t0+3, 1, true)
	writeMetrics(t, dir, "during", "prom_metrics_4_during_outage.txt", t0+1, 1, true)
	s = run(t, dir).Scenarios[0]
	if id := identity(t, s.RLS.Real.Identities, 1); id.Status != IdentityUnknown {
		t.Fatalf("identity %+v", id)
	}
	if c := check(t, s, "rls real stats (process 1)"); c.Status != report.CheckUnknown || s.Status != evidence.NotRun {
		t.Fatalf("status %s check %+v", s.Status, c)
	}

	// A gap with no errors and no hanging calls to explain it fails.
	for _, l := range []string{"during", "pre-1-restart-rls"} {
		must(t, os.Remove(filepath.Join(dir, "rls", "metrics."+l+".json")))
	}
	c6 := &evidence.RLSCounters{Source: "hand", Keys: map[string]evidence.RLSKeyCounters{"inventory.tenant_lab": {TotalHits: 10, WithinLimit: 5, OverLimit: 3}}}
	writeMetricsCounters(t, dir, "after", &rls.PromSnapshot{}, c6, t0+3, 1, true)
	s = run(t, dir).Scenarios[0]
	if id := identity(t, s.RLS.Real.Identities, 1); id.Status != rls.IdentityFail || id.Gap != 2 {
		t.Fatalf("identity %+v", id)
	}
}

// A lab-RLS scenario (no rls/rls.log) gets no rls.real.
func TestRealOnlyWithRLSLog(t *testing.T) {
	e := realEv(t)
	e.request("a", 0, 1, 200)
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), []evidence.Decision{dec(t0, 1, "OK")})
	must(t, os.Remove(filepath.Join(dir, evidence.RLSLogFile)))
	s := run(t, dir).Scenarios[0]
	if s.RLS == nil || s.RLS.Real != nil {
		t.Fatalf("rls %+v", s.RLS)
	}
}

// A report with every rls.real part filled validates against schemas/report.v2.schema.json.
func TestRealReportMatchesSchema(t *testing.T) {
	e := realEv(t)
	e.request("a", 0, 50, 200)
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "stop redis", Action: evidence.ActionStop, Target: "redis", BeginNs: t0 + 10*ms, EndNs: t0 + 11*ms, OK: true},
		{Name: "start redis", Action: evidence.ActionStart, Target: "redis", BeginNs: t0 + 20*ms, EndNs: t0 + 21*ms, OK: true},
	})
	errd := dec(t0+15*ms, 0, "ERROR")
	errd.Error = "EOF"
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), []evidence.Decision{dec(t0+1*ms, 1, "OK"), errd, dec(t0+80*ms, 1, "OK")})
	writeMetrics(t, dir, "after", "prom_metrics_5_after_d.txt", t0+100*ms, 1, true)
	must(t, os.WriteFile(filepath.Join(dir, "rls", "metrics.broken.json"), []byte("{"), 0o644))
	rep := run(t, dir)
	rr := rep.Scenarios[0].RLS.Real
	if rr.Zombies != 1 || len(rr.Windows) != 2 || len(rr.Identities) == 0 || len(rr.Snapshots) != 2 || rr.Errors.Total != 1 {
		t.Fatalf("rls.real %+v", rr)
	}
	validReport(t, rep)
}

// Hand-collected evidence: `rlbench collect rls-log --out` (rls/log.json, no rls/rls.log) and `rlbench collect
// prometheus` (bare counters, ordered by label): before and after of one process, identity checked on after.
func TestRealHandCollected(t *testing.T) {
	e := realEv(t)
	must(t, os.Remove(filepath.Join(e.dir, evidence.RLSLogFile)))
	must(t, os.WriteFile(filepath.Join(e.dir, evidence.RLSParsedLogFile), []byte("{}"), 0o644))
	e.request("a", 0, 10, 200)
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), []evidence.Decision{dec(t0+ms, 1, "OK")})
	for _, c := range []struct {
		label      string
		hits, ok   float64
		overLimits float64
	}{{"after", 21, 6, 15}, {"before", 1, 1, 0}} {
		b, err := json.Marshal(&evidence.RLSCounters{Source: "x", Keys: map[string]evidence.RLSKeyCounters{
			"inventory.tenant_lab": {TotalHits: c.hits, WithinLimit: c.ok, OverLimit: c.overLimits}}})
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, "rls", "metrics."+c.label+".json"), b, 0o644))
	}
	s := run(t, dir).Scenarios[0]
	rr := s.RLS.Real
	if rr == nil || len(rr.Snapshots) != 2 || rr.Snapshots[0].Label != "before" || rr.Snapshots[1].Label != "after" {
		t.Fatalf("rls.real %+v", rr)
	}
	if id := identity(t, rr.Identities, 1); id.Status != rls.IdentityPass || id.Snapshot != "after" || id.TotalHits != 21 {
		t.Fatalf("identity %+v", rr.Identities)
	}
	if s.Status != evidence.Pass {
		t.Fatalf("status %s %v", s.Status, s.Reasons)
	}
}
