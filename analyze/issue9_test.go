package analyze

// One test per class of wrong verdict that issue 9 lists under "Why": each
// builds a small evidence directory that the previous release judged wrong
// (its verdict is in the test's comment, checked by running that release's
// `rlbench analyze` on the directory; RLBENCH_ISSUE9_DUMP=<dir> copies every
// directory there) and asserts the right verdict with the named finding.

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
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/model"
)

// dump copies a test's evidence directory to $RLBENCH_ISSUE9_DUMP/<name>.
func dump(t *testing.T, dir, name string) {
	root := os.Getenv("RLBENCH_ISSUE9_DUMP")
	if root == "" {
		return
	}
	dst := filepath.Join(root, name)
	must(t, os.RemoveAll(dst))
	copyDir(t, dir, dst)
}

// judged runs analyze on dir (after dumping it as name) and returns the scenario.
func judged(t *testing.T, dir, name string) report.ScenarioReport {
	t.Helper()
	dump(t, dir, name)
	return run(t, dir).Scenarios[0]
}

// wantVerdict fails unless s has status and, for each fragment, a reason containing it.
func wantVerdict(t *testing.T, s report.ScenarioReport, status string, fragments ...string) {
	t.Helper()
	r := reasons(s)
	if s.Status != status {
		t.Fatalf("status %s, want %s; reasons:\n%s", s.Status, status, r)
	}
	for _, f := range fragments {
		if !strings.Contains(r, f) {
			t.Fatalf("no reason with %q in:\n%s", f, r)
		}
	}
}

// local is a lab-proxy local bucket (Envoy 1.30 timer from start) per target.
func localLimiter(name string, maxTokens, tpf uint32, fill time.Duration, start int64) evidence.Limiter {
	spec := model.Spec{Kind: model.KindEnvoyLocal, EnvoyVersion: "1.30", MaxTokens: maxTokens, TokensPerFill: &tpf,
		FillInterval: model.Duration(fill), TimerStart: time.Unix(0, start).UTC().Format(time.RFC3339Nano)}
	return evidence.Limiter{Name: name, Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec}
}

// rlsLimiter is a global limiter on an RLS configuration.
func rlsLimiter(config string, actions ...descriptor.RateLimitAction) evidence.Limiter {
	return evidence.Limiter{Name: "global", Stage: evidence.StageGlobal, Key: evidence.KeyDescriptor, RateLimits: []descriptor.RateLimitEntry{{Actions: actions}},
		RLS: &evidence.RLSLimiter{Domain: "inventory", Config: config}, Resets: []string{evidence.FaultTargetRLS}}
}

const tenantLabConfig = "domain: inventory\ndescriptors:\n  - key: tenant\n    value: lab\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"

var tenantAction = descriptor.RateLimitAction{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "tenant", DescriptorValue: "lab"}}

// reqs sets n requests to target, sent every gap from t0, each taking 1 ms,
// with the codes given by code(i); 2xx get a receipt.
func (e *ev) reqs(n int, target string, gap time.Duration, code func(i int) (int, string, map[string]string)) {
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s-%02d", target, i)
		c, body, hdr := code(i)
		r := evidence.Request{ID: id, Target: target, Method: "GET", Phase: "attack", SentNs: t0 + int64(i)*int64(gap) + 1000, LatencyNs: 1_000_000,
			Code: c, Body: body, BytesIn: uint64(len(body)), Headers: hdr}
		if c >= 200 && c < 300 || hdr["x-envoy-upstream-service-time"] != "" {
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: r.SentNs + 500_000})
		}
		e.requests = append(e.requests, r)
	}
	e.attack["sent"] = len(e.requests)
}

func ok200(int) (int, string, map[string]string) { return 200, `{"id":"x"}`, nil }

func local429(int) (int, string, map[string]string) { return 429, "local_rate_limited", nil }

func global429(int) (int, string, map[string]string) {
	return 429, "", map[string]string{"x-envoy-ratelimited": "true"}
}

// firstN admits the first n, rejects the rest with rej.
func firstN(n int, rej func(int) (int, string, map[string]string)) func(int) (int, string, map[string]string) {
	return func(i int) (int, string, map[string]string) {
		if i < n {
			return ok200(i)
		}
		return rej(i)
	}
}

func bare(t *testing.T) *ev {
	e := newEv(t)
	e.scenario = evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "issue 9", Expect: evidence.Expectation{ReceiptsEqualAdmitted: true}}
	return e
}

// A limiter that rejects everything: only upper bounds were checked, so a
// total block PASSed (previous release: PASS). The model's lower bound
// fails it, naming the rejections that had a token.
func TestIssue9RejectEverythingFails(t *testing.T) {
	e := bare(t)
	five := 5
	e.scenario.IntendedLimit = evidence.IntendedPerRun(five)
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Hour), StartNs: t0 - int64(time.Second)}}
	e.reqs(10, "proxy-a", 0, local429)
	e.reqs(10, "proxy-b", 0, local429)
	s := judged(t, e.write(), "01-reject-everything")
	wantVerdict(t, s, evidence.Fail, "limiter limits[0] token bucket: admitted within model bounds: want 10..10, got 0",
		"under-admitted (model must admit): want 0, got 20")
	if s.Model == nil || s.Model.Min != 10 || s.Model.Max != 10 {
		t.Fatalf("model bound %+v", s.Model)
	}
}

// 429s while the offered rate is below the fill rate (one request every 2 s
// on a bucket of 1 refilled every second): each request had a token
// (previous release: PASS).
func TestIssue9RejectionsBelowFillRateFail(t *testing.T) {
	e := bare(t)
	e.scenario.Limiters = []evidence.Limiter{localLimiter("local", 1, 1, time.Second, t0-int64(500*time.Millisecond))}
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 1, MaxTokens: 1, TokensPerFill: 1, FillInterval: int64(time.Second), StartNs: t0 - int64(500*time.Millisecond)}}
	e.reqs(6, "proxy-a", 2*time.Second, firstN(1, local429))
	s := judged(t, e.write(), "02-rejections-below-fill-rate")
	wantVerdict(t, s, evidence.Fail, "local: under-admitted (model must admit): want 0, got 5 (proxy-a-01,proxy-a-02,proxy-a-03,proxy-a-04,proxy-a-05)")
	l := s.Limiters[0]
	if l.UnderAdmitted[0].Model != "must admit" || l.UnderAdmitted[0].Observed != "rejected" || l.Total.Min != 6 {
		t.Fatalf("limiter %+v", l)
	}
}

// A fixed-window breach hidden by a boundary: 3 admitted inside one
// 2-per-minute window and 1 in the next gave "2 windows x 2 = 4", PASS
// (previous release: PASS). Counted per window, the third is over.
func TestIssue9FixedWindowBreachAtBoundaryFails(t *testing.T) {
	e := bare(t)
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitFixedWindow, Limit: 2, Unit: "MINUTE", WindowStart: evidence.WindowAligned}}
	for k, at := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 70 * time.Second} {
		id := fmt.Sprintf("id-%d", k)
		e.requests = append(e.requests, evidence.Request{ID: id, Target: "proxy-a", SentNs: t0 + int64(at), LatencyNs: 1_000_000, Code: 200, BytesIn: 2})
		e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: t0 + int64(at) + 1000})
	}
	e.attack["sent"] = 4
	s := judged(t, e.write(), "03-fixed-window-boundary")
	wantVerdict(t, s, evidence.Fail, "limiter limits[0] fixed window: over-admitted (model must reject): want 0, got 1 (id-2)")
	w := s.Limiters[0].Windows
	if len(w) != 2 || w[0].Admitted != 3 || w[0].Max != 2 || w[1].Admitted != 1 {
		t.Fatalf("windows %+v", w)
	}
}

// Any fault line switched the bound check off, even a no-op exec marker
// (previous release: PASS with 15 admitted by two buckets of 5). An exec
// acts on no limiter and suspends nothing; neither does an RLS fault in a
// scenario without an RLS.
func TestIssue9ExecMarkerSuspendsNothing(t *testing.T) {
	for _, f := range []evidence.Fault{
		{Name: "note", Action: evidence.ActionExec, Target: "marker", BeginNs: t0 - 1000, EndNs: t0 + int64(time.Second), OK: true},
		{Name: "restart rls", Action: evidence.ActionRestart, Target: "rls", BeginNs: t0 - 1000, EndNs: t0 + int64(time.Second), OK: true},
	} {
		e := bare(t)
		e.scenario.Faults = 1
		e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Hour), StartNs: t0 - int64(time.Second)}}
		e.reqs(10, "proxy-a", time.Millisecond, firstN(8, local429))
		e.reqs(10, "proxy-b", time.Millisecond, firstN(7, local429))
		dir := e.write()
		writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{f})
		s := judged(t, dir, "04-fault-"+f.Action)
		wantVerdict(t, s, evidence.Fail, "limiter limits[0] token bucket: over-admitted (model must reject): want 0, got 5",
			"admitted within model bounds: want 10..10, got 15")
		if fw := s.FaultWindows[0]; len(fw.ActsOn) != 0 || fw.RecoveryLagNs != 0 || s.Limiters[0].Suspended != 0 {
			t.Fatalf("fault window %+v, suspended %d", fw, s.Limiters[0].Suspended)
		}
	}
}

// "Admitted" meant a client 2xx: a backend answering 429 itself behind an
// inert limiter PASSed "5 admitted" (previous release: PASS). Passed the
// limiter is what counts: 20 passed, 15 over the bucket.
func TestIssue9SelfLimitingBackendFails(t *testing.T) {
	e := bare(t)
	e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 5, Max: 5})
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 1, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Hour), StartNs: t0 - int64(time.Second)}}
	e.reqs(20, "proxy-a", time.Millisecond, firstN(5, func(int) (int, string, map[string]string) {
		return 429, `{"id":"x","error":"slow down"}`, map[string]string{"x-envoy-upstream-service-time": "1"}
	}))
	s := judged(t, e.write(), "05-self-limiting-backend")
	wantVerdict(t, s, evidence.Fail, "admitted: want 5, got 20", "over-admitted (model must reject): want 0, got 15")
	if s.Totals.N[evidence.ClassBackend429] != 15 || s.Totals.Passed != 20 || s.Totals.N[evidence.ClassOther4xx] != 0 {
		t.Fatalf("totals %+v", s.Totals)
	}
}

// A request that passed the limiter and got a 5xx from the backend was
// neither admitted nor reconciled: "5 admitted" FAILed with 3 (previous
// release: FAIL, wrongly). The limiter admitted 5.
func TestIssue9BackendErrorsPassedTheLimiter(t *testing.T) {
	e := bare(t)
	e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 5, Max: 5})
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 1, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Hour), StartNs: t0 - int64(time.Second)}}
	e.reqs(8, "proxy-a", time.Millisecond, func(i int) (int, string, map[string]string) {
		switch {
		case i < 3:
			return ok200(i)
		case i < 5:
			return 503, "backend down", map[string]string{"x-envoy-upstream-service-time": "2"}
		}
		return local429(i)
	})
	s := judged(t, e.write(), "06-backend-errors-passed")
	wantVerdict(t, s, evidence.Pass)
	if s.Totals.N[evidence.ClassBackend5xx] != 2 || s.Totals.Passed != 5 || s.Receipts.AdmittedWithReceipt != 5 {
		t.Fatalf("totals %+v receipts %+v", s.Totals, s.Receipts)
	}
}

func writeGlobalStats(t *testing.T, dir, proxy string, ok, over, errs, allowed uint64) {
	t.Helper()
	for _, l := range []struct {
		label                 string
		ok, over, err, allows uint64
	}{{"before", 0, 0, 0, 0}, {"after", ok, over, errs, allowed}} {
		b, err := json.Marshal(envoyrec.Snapshot{Schema: "rlbench.envoy-stats/v1", Proxy: proxy, Values: map[string]uint64{},
			Global: []envoyrec.GlobalRateLimit{{Cluster: "backend", OK: l.ok, OverLimit: l.over, Error: l.err, FailureModeAllowed: l.allows}}})
		must(t, err)
		must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, proxy+"."+l.label+".json"), b, 0o644))
	}
}

// Leaks without a fault: RLS calls that failed open were subtracted from the
// bound without a finding (previous release: PASS). No fault explains them.
func TestIssue9LeakWithoutFaultFails(t *testing.T) {
	e := bare(t)
	e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 20, Max: 20})
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitFixedWindow, Limit: 5, Unit: "HOUR"}}
	e.reqs(10, "proxy-a", time.Millisecond, ok200)
	e.reqs(10, "proxy-b", time.Millisecond, ok200)
	dir := e.write()
	writeGlobalStats(t, dir, "proxy-a", 3, 0, 7, 7)
	writeGlobalStats(t, dir, "proxy-b", 2, 0, 8, 8)
	s := judged(t, dir, "07-leak-without-fault")
	wantVerdict(t, s, evidence.Fail, "leak: 15 admitted while the RLS failed, with no fault injected")

	// With the RLS stopped for the whole attack, the same admissions are the
	// fault's and the RLS limiter is suspended, not over-admitting.
	e.scenario.Faults = 2
	e.write()
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "stop rls", Action: evidence.ActionStop, Target: "rls", BeginNs: t0 - 1000, EndNs: t0, OK: true},
		{Name: "start rls", Action: evidence.ActionStart, Target: "rls", BeginNs: t0 + int64(time.Second), EndNs: t0 + int64(time.Second) + 1000, OK: true},
	})
	s = run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	if s.Limiters[0].Status != report.LimiterSuspended || s.RLSFailures.OutsideFaults != 0 {
		t.Fatalf("limiter %+v failures %+v", s.Limiters[0], s.RLSFailures)
	}
}

// A limit that never engages: requests without the header the descriptor
// needs make no RLS call; with no rule matched the previous release wrote no
// limit and PASSed (previous release: PASS).
func TestIssue9LimitNeverEngagedFails(t *testing.T) {
	e := bare(t)
	e.scenario.Limiters = []evidence.Limiter{rlsLimiter(tenantLabConfig, descriptor.RateLimitAction{
		RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-tenant", DescriptorKey: "tenant"}})}
	e.reqs(20, "proxy-a", time.Millisecond, ok200)
	s := judged(t, e.write(), "08-limit-never-engaged")
	wantVerdict(t, s, evidence.Fail, "limit never engaged: want 0 requests unlimited, got 20 produced no descriptor (proxy-a-00,")
	if s.Engagement.NoDescriptor != 20 {
		t.Fatalf("engagement %+v", s.Engagement)
	}
	// With the header sent, the descriptor tenant=other matches no rule.
	e.scenario.RequestHeaders = map[string]map[string]string{"attack": {"x-tenant": "other"}}
	s = run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Fail, "limit never engaged: want 0 requests unlimited, got 20 matched no rule")
	// With the lab tenant it engages: 5 admitted of 20.
	e.scenario.RequestHeaders = map[string]map[string]string{"attack": {"x-tenant": "lab"}}
	e.requests, e.receipts = nil, nil
	e.reqs(20, "proxy-a", time.Millisecond, firstN(5, global429))
	s = run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	if s.Engagement.Limited != 20 || s.Model == nil || s.Model.Min != 5 || s.Model.Max != 5 {
		t.Fatalf("engagement %+v model %+v", s.Engagement, s.Model)
	}
}

// The RLS log says "descriptor does not match any limit": those decisions
// applied no limit, which the previous release ignored (previous release:
// PASS).
func TestIssue9NoMatchDecisionsFail(t *testing.T) {
	e := bare(t)
	e.scenario.RLSDecisions = true
	e.reqs(10, "proxy-a", time.Millisecond, ok200)
	dir := e.write()
	var ds []evidence.Decision
	for i := 0; i < 10; i++ {
		ds = append(ds, evidence.Decision{TimeNs: t0 + int64(i)*int64(time.Millisecond) + 2000, Domain: "inventory", Descriptor: tenantLab, Code: "OK"})
	}
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	s := judged(t, dir, "09-no-match-decisions")
	wantVerdict(t, s, evidence.Fail, "limit never engaged: want 0 requests unlimited, got 10 RLS decisions applied no limit")
}

// The correct expectation "requests without the header are not limited"
// FAILed with "every admitted request counted OK by the RLS" (previous
// release: FAIL). not_limited passes exactly when no limit engaged.
func TestIssue9NotLimitedPasses(t *testing.T) {
	e := bare(t)
	e.scenario.Expect = evidence.Expectation{Label: "no x-user header: not limited", Admitted: evidence.AdmittedIn(evidence.Range{Min: 20, Max: 20}), NotLimited: true, ReceiptsEqualAdmitted: true}
	e.scenario.RLSDecisions = true
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitFixedWindow, Limit: 5, Unit: "HOUR"}}
	cfg := "domain: inventory\ndescriptors:\n  - key: tenant\n    value: lab\n    descriptors:\n      - key: user\n        rate_limit: {unit: hour, requests_per_unit: 5}\n"
	e.scenario.Limiters = []evidence.Limiter{rlsLimiter(cfg, tenantAction,
		descriptor.RateLimitAction{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-user", DescriptorKey: "user"}})}
	e.reqs(10, "proxy-a", time.Millisecond, ok200)
	e.reqs(10, "proxy-b", time.Millisecond, ok200)
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), []evidence.Decision{})
	s := judged(t, dir, "10-not-limited")
	wantVerdict(t, s, evidence.Pass)
	if c := checkNamed(s, "not limited: no limit engaged"); c == nil || c.Status != report.CheckPass {
		t.Fatalf("check %+v", c)
	}
	// The same expectation fails once the header is sent and the limit engages.
	e.scenario.RequestHeaders = map[string]map[string]string{"attack": {"x-user": "u1"}}
	e.requests, e.receipts = nil, nil
	e.reqs(20, "proxy-a", time.Millisecond, firstN(5, global429))
	e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 5, Max: 5})
	s = run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Fail, "not limited: no limiter rejection: want 0, got 15", "not limited: no limit engaged")
}

// An RLS rule in shadow_mode: every hit is answered OK and counted; the
// previous release reported RLS over-admission ("OK within limit: want <= 5,
// got 20") and a broken bound (previous release: FAIL). They are 15
// would-have-rejected, checked against expect.shadow.
func TestIssue9ShadowModeRuleCountsShadow(t *testing.T) {
	e := bare(t)
	e.scenario.Expect = evidence.Expectation{Label: "shadow: 20 admitted, 15 would have been rejected", Admitted: evidence.AdmittedIn(evidence.Range{Min: 20, Max: 20}),
		Shadow: &evidence.Range{Min: 15, Max: 15}, ReceiptsEqualAdmitted: true}
	e.scenario.RLSDecisions = true
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitFixedWindow, Limit: 5, Unit: "HOUR"}}
	cfg := strings.Replace(tenantLabConfig, "    rate_limit:", "    shadow_mode: true\n    rate_limit:", 1)
	e.scenario.Limiters = []evidence.Limiter{rlsLimiter(cfg, tenantAction)}
	e.reqs(20, "proxy-a", time.Millisecond, ok200)
	dir := e.write()
	var ds []evidence.Decision
	for i := 0; i < 20; i++ {
		d := dec(t0+int64(i)*int64(time.Millisecond)+2000, uint64(i+1), "OK")
		d.Shadow = i >= 5
		ds = append(ds, d)
	}
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	s := judged(t, dir, "11-shadow-mode-rule")
	wantVerdict(t, s, evidence.Pass)
	// The model agrees: the 15 it must reject are the shadow decisions.
	if s.Shadow == nil || s.Shadow.Observed != 15 || s.Shadow.RLS != 15 || s.Limiters[0].MustReject != 15 || s.Limiters[0].OverAdmittedCount != 0 {
		t.Fatalf("shadow %+v limiter %+v", s.Shadow, s.Limiters[0])
	}
	e.scenario.Expect.Shadow = &evidence.Range{Min: 0, Max: 0}
	e.write()
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.Fail, "shadow (would-have-rejected): want 0, got 15")
}

// A local filter with filter_enforced 0: rate_limited grows, enforced stays
// 0, every request passes; the previous release reported the stats as
// inconsistent and the bound as broken (previous release: FAIL).
func TestIssue9UnenforcedLocalFilterCountsShadow(t *testing.T) {
	e := bare(t)
	e.scenario.Expect = evidence.Expectation{Label: "shadow", Admitted: evidence.AdmittedIn(evidence.Range{Min: 10, Max: 10}), Shadow: &evidence.Range{Min: 5, Max: 5},
		ReceiptsEqualAdmitted: true, StatsAgree: yes}
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 1, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Hour), StartNs: t0 - int64(time.Second)}}
	l := localLimiter("local", 5, 5, time.Hour, t0-int64(time.Second))
	zero := 0.0
	l.Model.FilterEnforcedPercent = &zero
	e.scenario.Limiters = []evidence.Limiter{l}
	e.reqs(10, "proxy-a", time.Millisecond, ok200)
	dir := e.write()
	for label, v := range map[string][4]uint64{"before": {}, "after": {10, 5, 5, 0}} {
		b, err := json.Marshal(envoyrec.Snapshot{Schema: "rlbench.envoy-stats/v1", Proxy: "proxy-a", Values: map[string]uint64{},
			Local: []envoyrec.LocalRateLimit{{Prefix: "http_local_rate_limiter", Enabled: v[0], OK: v[1], RateLimited: v[2], Enforced: v[3]}}})
		must(t, err)
		must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, "proxy-a."+label+".json"), b, 0o644))
	}
	s := judged(t, dir, "12-unenforced-local-filter")
	wantVerdict(t, s, evidence.Pass)
	// The clients cannot tell which passes were shadow: the model judges no
	// admission surely charged, the stats count them.
	if s.Shadow.Local != 5 || s.Limiters[0].OverAdmittedCount != 0 || s.Limiters[0].Total.Min != 5 {
		t.Fatalf("shadow %+v limiter %+v", s.Shadow, s.Limiters[0])
	}
}

// A limit changed mid-window by a configuration reload: the previous release
// froze the window's limit at its first decision and called the later OKs
// inconsistent (previous release: FAIL). The config-load line explains them;
// without it the change fails.
func TestIssue9ConfigReloadMidWindow(t *testing.T) {
	e := realEv(t)
	e.scenario.Expect = evidence.Expectation{Label: "reload to 10", Admitted: evidence.AdmittedIn(evidence.Range{Min: 8, Max: 8})}
	e.scenario.IntendedLimit = nil
	e.scenario.Limits = nil
	var ds []evidence.Decision
	for i := 0; i < 8; i++ {
		e.request(fmt.Sprintf("id-%d", i), int64(i)*100, 10, 200)
		d := dec(t0+int64(i)*100*ms+5*ms, uint64(i+1), "OK")
		if i >= 5 {
			d.Limit = 10
		}
		ds = append(ds, d)
	}
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	reload := func(at int64) {
		lg := map[string]any{"config_loads": []evidence.RLSConfigLoad{{Line: 3, TimeNs: t0 - int64(time.Minute), OK: true, Initial: true},
			{Line: 40, TimeNs: at, OK: true, Message: "Successfully loaded new configuration"}}}
		b, err := json.Marshal(lg)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, evidence.RLSParsedLogFile), b, 0o644))
	}
	reload(t0 + 450*ms)
	s := judged(t, dir, "13-config-reload")
	wantVerdict(t, s, evidence.Pass)
	w := s.RLS.Real.Windows[0]
	if w.Inconsistent != 0 || w.Reloaded == nil || !*w.Reloaded || len(w.Limits) != 2 {
		t.Fatalf("window %+v", w)
	}
	reload(t0 + 900*ms) // the only reload comes after the change
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.Fail, "limit change explained by a config reload: want a config-load line between, got limits [5 10]")
}

// The stat identity ignored hits through the RLS's HTTP /json endpoint: calls
// that hung there are in total_hits but not in the gRPC total_requests
// (previous release: FAIL). The RLS log's hung lookups explain the gap.
func TestIssue9StatIdentityCountsJSONEndpoint(t *testing.T) {
	e := realEv(t)
	e.scenario.Expect = evidence.Expectation{Label: "5 admitted", Admitted: evidence.AdmittedIn(evidence.Range{Min: 5, Max: 5})}
	e.scenario.Limits = nil
	e.scenario.IntendedLimit = nil
	for i := 0; i < 5; i++ {
		e.request(fmt.Sprintf("id-%d", i), int64(i), 10, 200)
	}
	dir := e.write()
	var ds []evidence.Decision
	for i := 0; i < 5; i++ {
		ds = append(ds, dec(t0+int64(i)*ms+2*ms, uint64(i+1), "OK"))
	}
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	c := &evidence.RLSCounters{Source: "x", Keys: map[string]evidence.RLSKeyCounters{"inventory.tenant_lab": {TotalHits: 8, WithinLimit: 5}}, TotalRequests: 5}
	p := &rls.PromSnapshot{RLSPrometheus: evidence.RLSPrometheus{TotalRequests: map[string]float64{"ShouldRateLimit": 5},
		ResponseTime: map[string]evidence.RLSHistogram{"ShouldRateLimit": {Count: 5}}}}
	writeMetricsCounters(t, dir, "after", p, c, t0+int64(time.Second), 1, true)
	pending := func(n int) {
		evs := make([]rls.Event, n)
		b, err := json.Marshal(map[string]any{"pending_lookups": evs})
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, evidence.RLSParsedLogFile), b, 0o644))
	}
	pending(3)
	s := judged(t, dir, "14-json-endpoint-identity")
	wantVerdict(t, s, evidence.Pass)
	if id := s.RLS.Real.Identities[0]; id.Status != IdentityExplained || !strings.Contains(id.Detail, "3 more hung in the log (/json calls)") {
		t.Fatalf("identity %+v", id)
	}
	pending(0)
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.Fail, "total_hits = within_limit + over_limit")
}

// PASS with nothing checked: no requests, no scenario.json, no expectation,
// all-empty stats snapshots, a misspelt expectation (previous release: PASS
// each). Each is NOT_RUN, saying why.
func TestIssue9NothingCheckedIsNotRun(t *testing.T) {
	cases := map[string]func(e *ev) string{
		"no requests": func(e *ev) string {
			e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 0, Max: 0})
			e.attack["sent"] = 0
			return e.write()
		},
		"no scenario.json": func(e *ev) string {
			e.reqs(3, "proxy-a", 0, ok200)
			dir := e.write()
			must(t, os.Remove(filepath.Join(dir, evidence.ScenarioFile)))
			return dir
		},
		"no expectation": func(e *ev) string {
			e.scenario.Expect = evidence.Expectation{}
			e.reqs(3, "proxy-a", 0, ok200)
			return e.write()
		},
		"empty stats": func(e *ev) string {
			e.scenario.Expect = evidence.Expectation{StatsAgree: yes}
			e.reqs(3, "proxy-a", 0, ok200)
			dir := e.write()
			for _, l := range []string{"before", "after"} {
				must(t, os.MkdirAll(filepath.Join(dir, evidence.StatsDir), 0o755))
				must(t, os.WriteFile(filepath.Join(dir, evidence.StatsDir, "proxy-a."+l+".json"), []byte(`{"schema":"rlbench.envoy-stats/v1","proxy":"proxy-a","values":{}}`), 0o644))
			}
			return dir
		},
		"misspelt": func(e *ev) string {
			e.reqs(3, "proxy-a", 0, ok200)
			dir := e.write()
			must(t, os.WriteFile(filepath.Join(dir, evidence.ScenarioFile), []byte("{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\n\"expect\":{\"admited\":3}}"), 0o644))
			return dir
		},
	}
	want := map[string]string{
		"no requests": "nothing to check: no requests in requests.jsonl",
		// issue 25: the reason names what would give it something to check.
		"no scenario.json": "nothing to check: no scenario.json (no expectation, no configured limit): give --expect-admitted N or --intended-limit N, or declare expect, intended_limit or limiters in scenario.json (in a plan: a scenario's expect, intended_limit, lab.local or lab.global)",
		"no expectation":   "nothing to check: scenario.json has neither an expectation nor an intended limit nor a configured limiter: give --expect-admitted N",
		"empty stats":      "hold no rate limit or upstream counters",
		"misspelt":         `scenario.json: line 2: unknown field "admited"`,
	}
	for name, build := range cases {
		e := bare(t)
		dir := build(e)
		s := judged(t, dir, "15-nothing-"+strings.ReplaceAll(name, " ", "-"))
		wantVerdict(t, s, evidence.NotRun, want[name])
	}
}

// The rate-limit headers are checked against the decision sequence:
// consistent ones pass; a remaining that rises, a 429 with tokens left, a
// wrong limit and a reset past the window are findings with their IDs.
func TestIssue9RateLimitHeaders(t *testing.T) {
	e := bare(t)
	l := localLimiter("local", 3, 3, time.Hour, t0-int64(time.Second))
	l.RateLimitHeaders = true
	e.scenario.Limiters = []evidence.Limiter{l}
	hdr := func(limit, remaining, reset int) map[string]string {
		return map[string]string{"x-ratelimit-limit": fmt.Sprint(limit), "x-ratelimit-remaining": fmt.Sprint(remaining), "x-ratelimit-reset": fmt.Sprint(reset)}
	}
	good := func(i int) (int, string, map[string]string) {
		if i < 3 {
			return 200, "ok", hdr(3, 2-i, 3598)
		}
		return 429, "local_rate_limited", hdr(3, 0, 3598)
	}
	e.reqs(5, "proxy-a", 10*time.Millisecond, good)
	s := judged(t, e.write(), "16-rate-limit-headers-good")
	wantVerdict(t, s, evidence.Pass)
	if rh := s.RateLimitHeaders; rh == nil || rh.Checked != 5 || len(rh.Mismatches) != 0 {
		t.Fatalf("headers %+v", rh)
	}
	// proxy-a-00 says 1 left and proxy-a-01, after it, 2: rose; proxy-a-02
	// says limit 4; the rejection proxy-a-03 says 1 left (more than the 0
	// before it) and a reset past the hour.
	e.requests, e.receipts = nil, nil
	e.reqs(5, "proxy-a", 10*time.Millisecond, func(i int) (int, string, map[string]string) {
		switch i {
		case 0:
			return 200, "ok", hdr(3, 1, 3598)
		case 1:
			return 200, "ok", hdr(3, 2, 3598)
		case 2:
			return 200, "ok", hdr(4, 0, 3598)
		case 3:
			return 429, "local_rate_limited", hdr(3, 1, 7200)
		}
		return good(i)
	})
	s = run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Fail, "rate-limit headers: limit = configured limit: want 0 mismatches, got 1 (proxy-a-02)",
		"rate-limit headers: remaining non-increasing within a window: want 0 mismatches, got 2 (proxy-a-01,proxy-a-03)",
		"rate-limit headers: remaining 0 on a rejection: want 0 mismatches, got 1 (proxy-a-03)",
		"rate-limit headers: reset within the window: want 0 mismatches, got 1 (proxy-a-03)")
}

// Classification rules: nginx's limit_req rejection (503 with its error
// page) is the limiter's, declared in scenario.json without code; a
// circuit-breaker 503 passed the rate limit filters.
func TestIssue9ClassificationRules(t *testing.T) {
	e := bare(t)
	e.scenario.Classify = []evidence.ClassRule{{Status: evidence.Range{Min: 503, Max: 503}, Body: "<center>nginx</center>", Class: "local_429"}}
	spec := model.Spec{Kind: model.KindNginxLimitReq, Rate: "1r/s", Burst: 2, NoDelay: true}
	e.scenario.Limiters = []evidence.Limiter{{Name: "nginx", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec}}
	e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 3, Max: 3})
	e.reqs(10, "nginx", 0, firstN(3, func(int) (int, string, map[string]string) {
		return 503, "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>", nil
	}))
	for i := range e.requests {
		if e.requests[i].Code == 503 {
			e.requests[i].Body = e.requests[i].Body[len(e.requests[i].Body)-64:]
		}
	}
	s := judged(t, e.write(), "17-nginx-rule")
	wantVerdict(t, s, evidence.Pass)
	if s.Totals.N[evidence.ClassLocal429] != 7 || s.Model == nil || s.Model.Min != 3 || s.Model.Max != 3 {
		t.Fatalf("totals %+v model %+v", s.Totals, s.Model)
	}
	// Without the rule the 503s are of unknown origin: the model cannot judge them.
	e.scenario.Classify = nil
	s = run(t, e.write()).Scenarios[0]
	if s.Totals.N[evidence.ClassOther5xx] != 7 || s.Limiters[0].Unknown != 7 {
		t.Fatalf("totals %+v limiter %+v", s.Totals, s.Limiters[0])
	}
	// A circuit-breaker 503 passed the limiter (the router comes after it).
	e.requests, e.receipts = nil, nil
	e.scenario.Limiters = []evidence.Limiter{localLimiter("local", 3, 3, time.Hour, t0-int64(time.Second))}
	e.reqs(5, "proxy-a", 0, func(i int) (int, string, map[string]string) {
		switch {
		case i < 2:
			return ok200(i)
		case i < 3:
			return 503, "upstream connect error or disconnect/reset before headers. reset reason: overflow", map[string]string{"x-envoy-overloaded": "true"}
		}
		return local429(i)
	})
	s = run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	if s.Totals.N[evidence.ClassCircuitBreaker] != 1 || s.Totals.Passed != 3 || s.Limiters[0].Admitted != 3 {
		t.Fatalf("totals %+v limiter %+v", s.Totals, s.Limiters[0])
	}
}

// nginx's own log says what limit_req decided ($limit_req_status in
// nginx/<proxy>/access.jsonl, written by `rlbench collect nginx-access-log`):
// REJECTED is the limiter's rejection whatever nginx answered, and a dry run's
// REJECTED_DRY_RUN is a would-have-rejected pass.
func TestIssue9NginxLimitReqStatus(t *testing.T) {
	for _, dry := range []bool{false, true} {
		e := bare(t)
		spec := model.Spec{Kind: model.KindNginxLimitReq, Rate: "1r/s", Burst: 2, NoDelay: true, DryRun: dry}
		e.scenario.Limiters = []evidence.Limiter{{Name: "nginx", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec}}
		rejected := func(int) (int, string, map[string]string) { return 503, "<html>503</html>", nil }
		if dry {
			rejected = ok200
			e.scenario.Expect.Shadow = &evidence.Range{Min: 7, Max: 7}
		}
		e.reqs(10, "nginx", 0, firstN(3, rejected))
		dir := e.write()
		var recs []string
		for i, r := range e.requests {
			st, up := "PASSED", `,"upstreams":[{"addr":"127.0.0.1:8080","server":true,"status":200}]`
			if i >= 3 {
				st = map[bool]string{false: "REJECTED", true: "REJECTED_DRY_RUN"}[dry]
				if !dry {
					up = "" // rejected by limit_req: no upstream try
				}
			}
			recs = append(recs, fmt.Sprintf(`{"line":%d,"id":%q,"status":%d,"limit_req_status":%q%s}`, i+1, r.ID, r.Code, st, up))
		}
		must(t, os.MkdirAll(filepath.Join(dir, evidence.NginxPath("nginx", "")), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, evidence.NginxPath("nginx", evidence.NginxAccessFile)), []byte(strings.Join(recs, "\n")+"\n"), 0o644))
		s := judged(t, dir, fmt.Sprintf("18-nginx-limit-req-status-dry-%v", dry))
		wantVerdict(t, s, evidence.Pass)
		l := s.Limiters[0]
		if !dry && (s.Totals.N[evidence.ClassLocal429] != 7 || l.Rejected != 7 || l.Total.Min != 3 || l.Total.Max != 3) {
			t.Fatalf("totals %+v limiter %+v", s.Totals, l)
		}
		if dry && (s.Shadow.Local != 7 || l.Total.Min != 3 || l.Total.Max != 3 || l.OverAdmittedCount != 0) {
			t.Fatalf("shadow %+v limiter %+v", s.Shadow, l)
		}
	}
}
