package analyze

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
)

// userConfig is an envoyproxy/ratelimit rule on key user without a value: one limit (5 per hour) per value.
const userConfig = "domain: inventory\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"

// perUserEv is a run on the real RLS whose one descriptor is Envoy's request_headers action on x-user: three
// phases, one user each (noisy sends 20, quiet-1 and quiet-2 send 5 and 4), each user its own descriptor value
// and its own counter; the first 5 of each user are admitted. Every request takes one decision of its user.
func perUserEv(t *testing.T) *perUser {
	e := realEv(t)
	e.scenario = evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "three keys", RLSDecisions: true,
		Expect: evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 14, Max: 14}), ReceiptsEqualAdmitted: true},
		Limits: []evidence.LimitSpec{{Kind: evidence.LimitFixedWindow, Limit: 5, Unit: "HOUR", WindowStart: "aligned"}},
		Limiters: []evidence.Limiter{rlsLimiter(userConfig, descriptor.RateLimitAction{
			RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-user", DescriptorKey: "user"}})},
		RequestHeaders: map[string]map[string]string{"noisy": {"x-user": "noisy"}, "quiet-1": {"x-user": "quiet-1"},
			"quiet-2": {"x-user": "quiet-2"}}}
	var ds []evidence.Decision
	for p, user := range []string{"noisy", "quiet-1", "quiet-2"} {
		n := []int{20, 5, 4}[p]
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("%s-%02d", user, i)
			sent := t0 + int64(p)*int64(time.Millisecond)/3 + int64(i)*int64(50*time.Millisecond) + 1000
			r := evidence.Request{ID: id, Target: "proxy-a", Method: "GET", Phase: user, SentNs: sent, LatencyNs: 1_000_000}
			code := evidence.CodeOK
			if i < 5 {
				r.Code, r.Body, r.BytesIn = 200, `{"id":"x"}`, 10
				e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: sent + 500_000})
			} else {
				r.Code, r.Headers, code = 429, map[string]string{"x-envoy-ratelimited": "true"}, evidence.CodeOverLimit
			}
			e.requests = append(e.requests, r)
			ds = append(ds, evidence.Decision{TimeNs: sent + 200_000, Domain: "inventory",
				Descriptor: []descriptor.DescriptorEntry{{Key: "user", Value: user}}, Key: "inventory_user_" + user + "_1796029200",
				WindowStart: 1796029200, Current: uint64(i + 1), Limit: 5, Unit: "HOUR", Code: code})
		}
	}
	e.attack["sent"] = len(e.requests)
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.DecisionsFile), ds)
	return &perUser{e, ds}
}

// perUser is perUserEv's evidence and the decisions it wrote.
type perUser struct {
	*ev
	decisions []evidence.Decision
}

// Per-key descriptors are compared per value: each user's OK decisions against the admissions of the requests
// that carried that user (5, 5, 4), not against the run's 14 (previous release: FAIL "want >= 14, got 5").
func TestRealPerKeyDescriptorsComparedPerValue(t *testing.T) {
	e := perUserEv(t)
	s := run(t, e.dir).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	for user, want := range map[string]string{"noisy": "5", "quiet-1": "5", "quiet-2": "4"} {
		c := check(t, s, "rls real inventory user="+user+": OK decisions")
		if c.Status != report.CheckPass || c.Want != want || c.Got != want {
			t.Fatalf("%s: check %+v", user, c)
		}
	}
	// quiet-2's last admission without its OK decision fails quiet-2's own value, not the others: with the run's
	// admissions every value would fail, with the sum over values the missing OK would hide in noisy's.
	writeLines(t, filepath.Join(e.dir, evidence.DecisionsFile), e.decisions[:len(e.decisions)-1])
	s = run(t, e.dir).Scenarios[0]
	if c := check(t, s, "rls real inventory user=quiet-2: OK decisions"); c.Status != report.CheckFail || c.Want != "4" || c.Got != "3" {
		t.Fatalf("quiet-2: check %+v", c)
	}
	if c := check(t, s, "rls real inventory user=noisy: OK decisions"); c.Status != report.CheckPass {
		t.Fatalf("noisy: check %+v", c)
	}
}

// Without the limiter's rate_limits (hand-collected evidence with only a fixed-window limit) no request's
// descriptor is known: descriptors that differ only in the user's value are compared summed, 5 + 5 + 4 OK against
// the run's 14 admissions (previous release: "want >= 14, got 5" for each). The fixed-window limit itself
// (one counter of 5 for the run) still fails the model checks.
func TestRealPerKeyDescriptorsSummedWhenUnknown(t *testing.T) {
	e := perUserEv(t)
	e.scenario.Limiters = nil
	e.write()
	s := run(t, e.dir).Scenarios[0]
	name := "rls real inventory user: OK decisions summed over values (zombies excluded) >= admissions through the RLS"
	if c := check(t, s, name); c.Status != report.CheckPass || c.Want != ">= 14" || c.Got != "14" {
		t.Fatalf("check %+v", c)
	}
	if c := checkNamed(s, "rls real inventory user=noisy: OK decisions (zombies excluded) = admissions through the RLS"); c != nil {
		t.Fatalf("per-value check without the requests' descriptors: %+v", c)
	}
	// One OK decision fewer fails the sum.
	writeLines(t, filepath.Join(e.dir, evidence.DecisionsFile), e.decisions[:len(e.decisions)-1])
	s = run(t, e.dir).Scenarios[0]
	if c := check(t, s, name); c.Status != report.CheckFail || c.Got != "13" {
		t.Fatalf("check %+v", c)
	}
}
