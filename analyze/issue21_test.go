package analyze

// Tests for the classes of wrong verdicts of issue 21 on joins, keys and
// clocks: each builds synthetic evidence that the previous release judged
// wrong (its verdict in the test's comment) and asserts the right one.

import (
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

// rlbenchConfig is the RLS configuration of the captured 3fb7025 logs: no
// rule for nomatch.
const rlbenchConfig = "domain: rlbench\ndescriptors:\n  - key: generic_key\n    value: fixed\n    rate_limit: {unit: minute, requests_per_unit: 3}\n"

// nomatchEv is a scenario on the real envoyproxy/ratelimit that expects
// not_limited: three admitted requests whose descriptor (nomatch=zzz)
// matches no rule, and the RLS log of their three calls
// (testdata/rlsreal/nomatch-json.log: the captured startup and no-match
// lines of collect/rls/testdata/rls_local_3fb7025_json_debug.log at the
// requests' times). decisions transforms the parsed decisions before they
// are written to rls/decisions.jsonl.
func nomatchEv(t *testing.T, decisions func([]evidence.Decision) []evidence.Decision) (*ev, string) {
	e := realEv(t)
	e.scenario.IntendedLimit, e.scenario.Limits = nil, nil
	e.scenario.Expect = evidence.Expectation{NotLimited: true}
	l := rlsLimiter(rlbenchConfig, descriptor.RateLimitAction{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "nomatch", DescriptorValue: "zzz"}})
	l.RLS.Domain = "rlbench"
	e.scenario.Limiters = []evidence.Limiter{l}
	for i := 0; i < 3; i++ {
		e.request(fmt.Sprintf("id-%d", i), 1+10*int64(i), 5, 200)
	}
	dir := e.write()
	b, err := os.ReadFile("testdata/rlsreal/nomatch-json.log")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, evidence.RLSLogFile), b, 0o644))
	lg, err := rls.ParseLog(strings.NewReader(string(b)), "rls.log")
	must(t, err)
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), decisions(lg.EvidenceDecisions()))
	return e, dir
}

// Real envoyproxy/ratelimit, a descriptor that matches no rule: the
// no-match line names no domain, so the decisions joined no request, every
// admission looked fail-open (previous release: FAIL, "leak: 3 admitted
// while the RLS failed, with no fault injected"). The parser takes the
// domain from the configuration the log loaded (one domain, no `unknown
// domain` line) and the decisions join their requests.
func TestIssue21RealNoMatchJoins(t *testing.T) {
	_, dir := nomatchEv(t, func(ds []evidence.Decision) []evidence.Decision {
		for _, d := range ds {
			if !d.NoLimit || d.Domain != "rlbench" {
				t.Fatalf("decision %+v: want a no-limit decision of domain rlbench", d)
			}
		}
		return ds
	})
	s := judged(t, dir, "21-real-nomatch")
	wantVerdict(t, s, evidence.Pass)
	if c := check(t, s, "not limited: no limit engaged"); c.Status != report.CheckPass {
		t.Fatalf("check %+v", c)
	}
	if s.RLSFailures == nil || s.RLSFailures.FailOpen != 0 || s.RLS.Real.Zombies != 0 {
		t.Fatalf("failures %+v zombies %d", s.RLSFailures, s.RLS.Real.Zombies)
	}
	// decisions.jsonl of an earlier release has no domain for them: the
	// join takes them as the same descriptor in any domain.
	_, dir = nomatchEv(t, func(ds []evidence.Decision) []evidence.Decision {
		for i := range ds {
			ds[i].Domain = ""
		}
		return ds
	})
	s = run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	// A no-match decision of another descriptor still joins nobody: the
	// admissions are fail-open and the leak is found.
	_, dir = nomatchEv(t, func(ds []evidence.Decision) []evidence.Decision {
		for i := range ds {
			ds[i].Descriptor = []descriptor.DescriptorEntry{{Key: "nomatch", Value: "other"}}
		}
		return ds
	})
	s = run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.Fail, "leak: 3 admitted while the RLS failed")
}

// writeMerge writes merge.json of a run merged from shards on hosts a and
// b: host a's clock agrees with the backend's within ±1 ms, host b's is
// skew ahead of it (θ, the backend's clock minus b's, in -skew ± 1 ms).
func writeMerge(t *testing.T, dir string, skew int64) {
	t.Helper()
	m := evidence.MergeRecord{Schema: evidence.MergeSchema, Count: 2, Inputs: []string{}, Replicas: []evidence.MergeReplica{},
		Files: map[string]string{}, Problems: []string{}, Shards: []evidence.MergeShard{
			{Index: 0, Host: "a", IDs: 2, Requests: 2, Offsets: []evidence.ClockOffset{{Replica: "r", Pairs: 2, Bounded: true, MinNs: -ms, MaxNs: ms}}},
			{Index: 1, Host: "b", IDs: 2, Requests: 2, Offsets: []evidence.ClockOffset{{Replica: "r", Pairs: 2, Bounded: true, MinNs: -skew - ms, MaxNs: -skew + ms}}},
		}}
	must(t, evidence.WriteJSONFile(evidence.Dir(dir).Merge(), &m))
}

// Merged shards from hosts with skewed clocks: host b's requests carry its
// clock, 300 ms behind the RLS's and the backend's. The model replay
// widened its intervals by the measured offset bound, the RLS join did
// not: b's OK decisions joined none of b's requests and its admissions
// looked fail-open (previous release: FAIL, "leak: 2 admitted while the
// RLS failed, with no fault injected"). The join applies the same bound.
// With b's clock 300 ms ahead, its receipts precede its sends by as much
// (previous release: NOT_RUN, contradictory evidence): the merge's
// measured bound is part of the clock tolerance.
func TestIssue21SkewedShardJoins(t *testing.T) {
	for _, skew := range []int64{-300 * ms, 300 * ms} {
		e := bare(t)
		e.scenario.Limiters = []evidence.Limiter{rlsLimiter(tenantLabConfig, tenantAction)}
		e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 4, Max: 4})
		// true send times 1..4 ms; odd requests from host b
		for k, at := range []int64{1, 2, 3, 4} {
			shard := k % 2
			sent := t0 + at*ms
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(fmt.Sprintf("id-%d", k)), RecvNs: sent + ms/2})
			if shard == 1 {
				sent += skew // host b's clock
			}
			e.requests = append(e.requests, evidence.Request{ID: fmt.Sprintf("id-%d", k), Target: "proxy-a", Method: "GET",
				Phase: fmt.Sprintf("shard-%d", shard), SentNs: sent, LatencyNs: 5 * ms, Code: 200, BytesIn: 10})
		}
		e.attack["sent"] = len(e.requests)
		dir := e.write()
		writeMerge(t, dir, skew)
		var ds []evidence.Decision
		for n := uint64(1); n <= 4; n++ {
			ds = append(ds, dec(t0+int64(n)*ms+ms/2, n, evidence.CodeOK))
		}
		writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
		s := judged(t, dir, fmt.Sprintf("21-skewed-shard-join-%dms", skew/ms))
		wantVerdict(t, s, evidence.Pass)
		if s.Shards == nil || s.Shards.OffsetBoundNs != 301*ms || s.RLSFailures == nil || s.RLSFailures.FailOpen != 0 {
			t.Fatalf("skew %d: shards %+v failures %+v", skew, s.Shards, s.RLSFailures)
		}
		// The bound is a bound: a decision further than it from every
		// request still joins none (two decisions a second late).
		ds[1].TimeNs += 1000 * ms
		ds[3].TimeNs += 1000 * ms
		writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
		s = run(t, dir).Scenarios[0]
		wantVerdict(t, s, evidence.Fail, "leak: 2 admitted while the RLS failed")
	}
}

var tenantHeader = descriptor.RateLimitAction{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-tenant", DescriptorKey: "tenant"}}

// sentHeaders makes attack.json's phases say that each sent the X-Tenant
// header (header_names: names only, values are not recorded).
func (e *ev) sentHeaders(phases ...string) {
	var ps []map[string]any
	for _, p := range phases {
		ps = append(ps, map[string]any{"complete": true, "config": map[string]any{"name": p, "header_names": []string{"X-Tenant"}}})
	}
	e.attack["phases"] = ps
}

// phaseReqs adds n requests of phase p to proxy-a, the k-th sent at
// t0+at(k), each taking 1 ms, with the codes code(k) gives.
func (e *ev) phaseReqs(p string, n int, at func(k int) time.Duration, code func(int) (int, string, map[string]string)) {
	for k := 0; k < n; k++ {
		id := fmt.Sprintf("%s-%02d", p, k)
		c, body, hdr := code(k)
		r := evidence.Request{ID: id, Target: "proxy-a", Method: "GET", Phase: p, SentNs: t0 + int64(at(k)), LatencyNs: 1_000_000,
			Code: c, Body: body, BytesIn: uint64(len(body)), Headers: hdr}
		if c >= 200 && c < 300 {
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: r.SentNs + 500_000})
		}
		e.requests = append(e.requests, r)
	}
	e.attack["sent"] = len(e.requests)
}

// Unknown request attributes are unknown, not absent: the attack sent
// X-Tenant (attack.json names it) and scenario.json does not record its
// value. The previous release built the descriptor as if the header were
// missing (previous release: FAIL, "limit never engaged: ... 20 produced
// no descriptor"). The limiter's key is unknown: nothing can be decided,
// NOT_RUN naming the header.
func TestIssue21UnknownHeaderIsNotAbsent(t *testing.T) {
	e := bare(t)
	e.scenario.Limiters = []evidence.Limiter{rlsLimiter(tenantLabConfig, tenantHeader)}
	e.sentHeaders("attack")
	e.phaseReqs("attack", 20, func(k int) time.Duration { return time.Duration(k) * time.Millisecond }, firstN(5, global429))
	s := judged(t, e.write(), "21-unknown-header")
	wantVerdict(t, s, evidence.NotRun, "limiter global: model check", "x-tenant", "limit engaged for every request to the RLS")
	l := s.Limiters[0]
	if l.Status != report.LimiterNotChecked || l.UnknownKey != 20 || fmt.Sprint(l.UnknownKeyHeaders) != "[x-tenant]" ||
		!strings.Contains(l.Detail, "the key of 20 of the 20 requests is unknown: they sent request header x-tenant") {
		t.Fatalf("limiter %+v", l)
	}
	if en := s.Engagement; en.UnknownKey != 20 || en.NoDescriptor != 0 {
		t.Fatalf("engagement %+v", en)
	}
	// With the value recorded the same evidence is judged: it engages.
	e.scenario.RequestHeaders = map[string]map[string]string{"attack": {"x-tenant": "lab"}}
	s = run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	// Without header_names (a header not sent), it is absent: never engaged.
	e.scenario.RequestHeaders = nil
	delete(e.attack, "phases")
	s = run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Fail, "limit never engaged")
}

// A phase whose X-Tenant value is recorded (lab) and one whose value is
// not: 3 admitted at 1-3 ms, 2 unknown-key admissions at 10-11 ms, then 2
// rejections at 20-21 ms (limit 5 per hour). Keyed as if the header were
// missing, the unknown requests were out of the model and the rejections
// had room (previous release: FAIL, under-admitted). They are possible hits
// of the window: the rejections are "either"; the unknown requests are
// judged neither way, and whether the limit engaged for them is not known.
func TestIssue21UnknownHeaderIsEither(t *testing.T) {
	e := bare(t)
	e.scenario.Limiters = []evidence.Limiter{rlsLimiter(tenantLabConfig, tenantHeader)}
	e.scenario.RequestHeaders = map[string]map[string]string{"known": {"x-tenant": "lab"}}
	e.sentHeaders("known", "hidden")
	e.phaseReqs("known", 5, func(k int) time.Duration {
		return []time.Duration{1, 2, 3, 20, 21}[k] * time.Millisecond
	}, firstN(3, global429))
	e.phaseReqs("hidden", 2, func(k int) time.Duration { return time.Duration(10+k) * time.Millisecond }, ok200)
	s := judged(t, e.write(), "21-unknown-header-either")
	wantVerdict(t, s, evidence.NotRun, "2 requests with an unknown descriptor (header x-tenant sent, its value not recorded)")
	l := s.Limiters[0]
	if l.Status != report.LimiterChecked || l.UnknownKey != 2 || l.UnderAdmittedCount != 0 || l.OverAdmittedCount != 0 {
		t.Fatalf("limiter %+v", l)
	}
	for _, c := range s.Checks {
		if strings.HasPrefix(c.Name, "limiter global") && c.Status != report.CheckPass {
			t.Fatalf("check %+v", c)
		}
	}
	if c := check(t, s, "limiter global: admitted within model bounds"); !strings.Contains(c.Got, "2 of 7 with an unknown key (header x-tenant not recorded)") {
		t.Fatalf("check %+v", c)
	}
	// The known requests alone still decide: a fourth admission of the
	// known phase after 5 surely counted hits is over-admitted.
	e.requests, e.receipts = nil, nil
	e.phaseReqs("known", 7, func(k int) time.Duration { return time.Duration(1+k) * time.Millisecond }, ok200)
	e.phaseReqs("hidden", 2, func(k int) time.Duration { return time.Duration(10+k) * time.Millisecond }, ok200)
	s = run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Fail, "limiter global: over-admitted (model must reject)")
	if l := s.Limiters[0]; l.OverAdmittedCount != 2 {
		t.Fatalf("limiter %+v", l)
	}
}

// RLS decisions that match no request are not dropped from the
// engagement checks: a decision that applied a limit, late and matched to
// no request of a not_limited scenario, may be one of its requests limited.
// The previous release dropped it there and held it against the requests
// elsewhere, as if every request carried its descriptor (previous release:
// FAIL, "rls real rlbench generic_key=fixed: OK decisions ... want >= 3,
// got 0 (+1 zombie)"). Inconclusive: NOT_RUN.
func TestIssue21UnmatchedDecisionsAreUnknownEvidence(t *testing.T) {
	_, dir := nomatchEv(t, func(ds []evidence.Decision) []evidence.Decision {
		late := dec(t0+5*int64(time.Second), 1, evidence.CodeOK)
		late.Domain, late.Key, late.Descriptor = "rlbench", "rlbench_generic_key_fixed_1796029200", []descriptor.DescriptorEntry{{Key: "generic_key", Value: "fixed"}}
		late.Limit, late.Unit = 3, "MINUTE"
		return append(ds, late)
	})
	s := judged(t, dir, "21-unmatched-limited-decision")
	wantVerdict(t, s, evidence.NotRun, "not limited: no limit engaged", "1 RLS decisions that applied a limit matched no request")
	if en := s.Engagement; en.UnmatchedLimitedDecisions != 1 || en.LimitedDecisions != 0 {
		t.Fatalf("engagement %+v", en)
	}

	// A limit that must engage, and a late decision that applied none:
	// maybe a request of the run no limit engaged for (previous release:
	// PASS).
	e := bare(t)
	e.scenario.Limiters = []evidence.Limiter{rlsLimiter(tenantLabConfig, tenantAction)}
	e.reqs(5, "proxy-a", time.Millisecond, ok200)
	dir = e.write()
	var ds []evidence.Decision
	for n := uint64(1); n <= 5; n++ {
		ds = append(ds, dec(t0+int64(n)*ms-ms/2, n, evidence.CodeOK))
	}
	ds = append(ds, evidence.Decision{TimeNs: t0 + 5*int64(time.Second), Domain: "inventory", Descriptor: []descriptor.DescriptorEntry{{Key: "tenant", Value: "other"}},
		Code: evidence.CodeOK, NoLimit: true})
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	s = judged(t, dir, "21-unmatched-nolimit-decision")
	wantVerdict(t, s, evidence.NotRun, "limit engaged for every request to the RLS", "1 RLS decisions that applied no limit matched no request")
	// Without it, the limit engaged: PASS.
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds[:5])
	s = run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
}
