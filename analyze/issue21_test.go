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
