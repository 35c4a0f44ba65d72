package analyze

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/model"
)

// planAction is a second generic_key entry beside tenantAction.
var planAction = descriptor.RateLimitAction{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "plan", DescriptorValue: "free"}}

// TestEnvoyLocalDescriptorBuckets: an Envoy local rate limit with a
// descriptor bucket judges each request with its descriptor (envoyLocalKind):
// the descriptor's bucket of 2 an hour bounds the admissions (the model
// must reject the last 3), not the default bucket of 100; a third
// admission is over-admitted.
func TestEnvoyLocalDescriptorBuckets(t *testing.T) {
	e := bare(t)
	tpf, one := uint32(100), uint32(1)
	spec := model.Spec{Kind: model.KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 100, TokensPerFill: &tpf, FillInterval: model.Duration(time.Hour),
		Descriptors: []model.EnvoyDescriptor{{Entries: []model.Entry{{Key: "tenant", Value: "lab"}}, MaxTokens: 2, TokensPerFill: &one,
			FillInterval: model.Duration(time.Hour)}}}
	e.scenario.Limiters = []evidence.Limiter{{Name: "local", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec,
		RateLimits: []descriptor.RateLimitEntry{{Actions: []descriptor.RateLimitAction{tenantAction}}}}}
	e.reqs(5, "proxy-a", time.Millisecond, firstN(2, local429))
	s := run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	l := s.Limiters[0]
	if l.Status != report.LimiterChecked || l.Model != model.KindEnvoyLocal || l.Offered != 5 || l.Admitted != 2 || l.Rejected != 3 ||
		l.MustReject != 3 {
		t.Fatalf("limiter %+v", l)
	}
	descBucket := false
	for _, b := range l.Buckets {
		descBucket = descBucket || b.Bucket != "" && b.Max == 2
	}
	if !descBucket {
		t.Fatalf("no descriptor bucket bounding 2 in %+v", l.Buckets)
	}
	e = bare(t)
	e.scenario.Limiters = []evidence.Limiter{{Name: "local", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec,
		RateLimits: []descriptor.RateLimitEntry{{Actions: []descriptor.RateLimitAction{tenantAction}}}}}
	e.reqs(5, "proxy-a", time.Millisecond, firstN(3, local429))
	wantVerdict(t, run(t, e.write()).Scenarios[0], evidence.Fail, "local: over-admitted (model must reject)")
}

// TestRLSRequestsHitSeveralCounters: at an RLS whose two rules both match a
// request (two rate_limits entries), each request is an event of both
// rules' windows (rlsKind); a rejection without the decisions log cannot
// tell which counter rejected it, yet the request counts as rejected once.
func TestRLSRequestsHitSeveralCounters(t *testing.T) {
	const config = "domain: inventory\ndescriptors:\n" +
		"  - key: tenant\n    value: lab\n    rate_limit: {unit: hour, requests_per_unit: 3}\n" +
		"  - key: plan\n    value: free\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"
	build := func(admitted int) report.ScenarioReport {
		e := bare(t)
		l := rlsLimiter(config, tenantAction)
		l.RateLimits = append(l.RateLimits, descriptor.RateLimitEntry{Actions: []descriptor.RateLimitAction{planAction}})
		e.scenario.Limiters = []evidence.Limiter{l}
		e.reqs(6, "proxy-a", time.Millisecond, firstN(admitted, global429))
		return run(t, e.write()).Scenarios[0]
	}
	s := build(3)
	l := s.Limiters[0]
	if l.Status != report.LimiterChecked || l.Offered != 6 || l.Admitted != 3 || l.Rejected != 3 || l.Unknown != 0 || l.Total.Offered != 12 || l.MustReject != 3 {
		t.Fatalf("limiter %+v", l)
	}
	if l.Model != "rls inventory.tenant_lab 3/hour, inventory.plan_free 5/hour" || len(l.OverAdmitted) != 0 {
		t.Fatalf("limiter %+v", l)
	}
	s = build(4)
	if l := s.Limiters[0]; l.OverAdmittedCount == 0 {
		t.Fatalf("4 admissions under a rule of 3: limiter %+v", l)
	}
}

// TestJoinOutcome: a request's outcome over its counters: the same outcome
// stays, admissions beside shadow rejections make a shadow rejection,
// anything else is unknown.
func TestJoinOutcome(t *testing.T) {
	A, R, S, U := model.Admitted, model.Rejected, model.ShadowRejected, model.Unknown
	for _, c := range []struct {
		os   []model.Outcome
		want model.Outcome
	}{
		{[]model.Outcome{R}, R},
		{[]model.Outcome{A, A}, A},
		{[]model.Outcome{A, S}, S},
		{[]model.Outcome{S, A, A}, S},
		{[]model.Outcome{A, R}, U},
		{[]model.Outcome{R, R}, R},
		{[]model.Outcome{U, A}, U},
		{[]model.Outcome{S, R}, U},
	} {
		var got model.Outcome
		for n, o := range c.os {
			got = joinOutcome(got, o, n == 0)
		}
		if got != c.want {
			t.Errorf("%v: %v, want %v", c.os, got, c.want)
		}
	}
}
