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

	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/evidence"
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
	l := rlsLimiter(rlbenchConfig, evidence.RateLimitAction{GenericKey: &evidence.GenericKeyAction{DescriptorKey: "nomatch", DescriptorValue: "zzz"}})
	l.RLS.Domain = "rlbench"
	e.scenario.Limiters = []evidence.Limiter{l}
	for i := 0; i < 3; i++ {
		e.request(fmt.Sprintf("id-%d", i), 1+10*int64(i), 5, 200)
	}
	dir := e.write()
	b, err := os.ReadFile("testdata/rlsreal/nomatch-json.log")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, RealRLSLog), b, 0o644))
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
	wantVerdict(t, s, Pass)
	if c := check(t, s, "not limited: no limit engaged"); c.Status != CheckPass {
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
	wantVerdict(t, s, Pass)
	// A no-match decision of another descriptor still joins nobody: the
	// admissions are fail-open and the leak is found.
	_, dir = nomatchEv(t, func(ds []evidence.Decision) []evidence.Decision {
		for i := range ds {
			ds[i].Descriptor = []evidence.DescriptorEntry{{Key: "nomatch", Value: "other"}}
		}
		return ds
	})
	s = run(t, dir).Scenarios[0]
	wantVerdict(t, s, Fail, "leak: 3 admitted while the RLS failed")
}

var _ = time.Second

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
		e.scenario.Expect.Admitted = &evidence.Range{Min: 4, Max: 4}
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
		wantVerdict(t, s, Pass)
		if s.Shards == nil || s.Shards.OffsetBoundNs != 301*ms || s.RLSFailures == nil || s.RLSFailures.FailOpen != 0 {
			t.Fatalf("skew %d: shards %+v failures %+v", skew, s.Shards, s.RLSFailures)
		}
		// The bound is a bound: a decision further than it from every
		// request still joins none (two decisions a second late).
		ds[1].TimeNs += 1000 * ms
		ds[3].TimeNs += 1000 * ms
		writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
		s = run(t, dir).Scenarios[0]
		wantVerdict(t, s, Fail, "leak: 2 admitted while the RLS failed")
	}
}
