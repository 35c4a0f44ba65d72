package runner

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// TestE06PlanModelBounds runs examples/e06/plan.yaml on the lab: every
// scenario PASSes with the previous figures, and its scenario.json declares
// the limiters the model checks with: each proxy's bucket (the lab proxy's
// continuous refill, Envoy 1.31+ with an exact token count) or the RLS
// rule, the bounds "10..10", "5..5".
func TestE06PlanModelBounds(t *testing.T) {
	plan, err := LoadPlan("../../examples/e06/plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Run(context.Background(), plan, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(context.Background(), dir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// admitted and the model's bound (exactly that many), or suspended: every
	// request lies in the fault window acting on the RLS.
	want := map[string]struct {
		admitted  int
		suspended bool
	}{
		"two local buckets": {10, false}, "shared RLS": {5, false}, "RLS stopped, deny": {0, true},
		"RLS stopped, allow": {20, true}, "in-memory RLS restarted": {10, false},
	}
	for _, s := range rep.Scenarios {
		w := want[s.Name]
		if s.Status != evidence.Pass || s.Totals.Passed != w.admitted {
			t.Errorf("%s: %s, %d admitted; reasons %v", s.Name, s.Status, s.Totals.Passed, s.Reasons)
		}
		switch {
		case w.suspended && (s.Model != nil || s.Limiters[0].Status != report.LimiterSuspended):
			t.Errorf("%s: model %+v limiters %+v", s.Name, s.Model, s.Limiters)
		case !w.suspended && (s.Model == nil || s.Model.Min != w.admitted || s.Model.Max != w.admitted):
			t.Errorf("%s: model %+v, want %d..%d", s.Name, s.Model, w.admitted, w.admitted)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "01-two-local-buckets", "1", evidence.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := evidence.DecodeScenario(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Limiters) != 2 || sc.Limiters[0].Targets[0] != "proxy-a" || sc.Limiters[0].Model.EnvoyVersion != labEnvoyVersion ||
		!sc.Limiters[0].Model.ExactLevel || sc.Limiters[0].Model.TimerStart != "" || sc.Limiters[1].Targets[0] != "proxy-b" {
		t.Fatalf("limiters %+v", sc.Limiters)
	}
}

// TestLabPlanRecordsDescriptorHeaders: a descriptor read from a request
// header is recorded per attack step, so that analysis builds each
// request's descriptor; without the header no limit engages and the
// scenario FAILs "limit never engaged", with it the limit holds.
func TestLabPlanRecordsDescriptorHeaders(t *testing.T) {
	plan, err := ParsePlan("headers.yaml", []byte(`
name: headers
scenarios:
  - name: tenant header
    intended_limit: 3
    lab:
      proxies: 1
      global:
        domain: inventory
        descriptors: [{request_headers: {header_name: x-tenant, descriptor_key: tenant}}]
        timeout: 1s
        failure_mode_deny: true
      rls:
        config: |
          domain: inventory
          descriptors:
            - {key: tenant, value: lab, rate_limit: {unit: hour, requests_per_unit: 3}}
    steps:
      - name: with header
        attack: {ids: 6, headers: {X-Tenant: lab, Authorization: secret}}
      - name: without header
        attack: {ids: 4}
    expect: {admitted: 7}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Run(context.Background(), plan, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, "01-tenant-header", "1")
	b, err := os.ReadFile(filepath.Join(sd, evidence.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := evidence.DecodeScenario(b)
	if err != nil {
		t.Fatal(err)
	}
	if h := sc.RequestHeaders; len(h) != 2 || h["with header"]["x-tenant"] != "lab" || len(h["with header"]) != 1 || len(h["without header"]) != 0 {
		t.Fatalf("request headers %v (only those the actions read)", h)
	}
	rep, err := analyze.Analyze(context.Background(), dir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Scenarios[0]
	if s.Status != evidence.Fail || s.Engagement == nil || s.Engagement.NoDescriptor != 4 || s.Engagement.Limited != 6 {
		t.Fatalf("status %s engagement %+v reasons %v", s.Status, s.Engagement, s.Reasons)
	}
	if s.Limiters[0].Total.Min != 3 || s.Limiters[0].Total.Max != 3 || s.Limiters[0].OverAdmittedCount != 0 {
		t.Fatalf("limiter %+v", s.Limiters[0])
	}
}

// TestLocalSpec maps the lab proxy's local rate limit to the envoy_local
// model: continuous (default) or timer refill, per-connection scope,
// descriptors, and a limiter without a default bucket.
func TestLocalSpec(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	no := false
	two := uint32(2)
	desc := []proxy.LocalDescriptor{{Entries: []descriptor.DescriptorEntry{{Key: "user", Value: "a"}},
		TokenBucket: proxy.TokenBucket{MaxTokens: 2, FillInterval: proxy.Duration(2 * time.Second)}}}
	cases := []struct {
		name  string
		lc    proxy.LocalRateLimit
		check func(*model.Spec) bool
	}{
		{"continuous", proxy.LocalRateLimit{MaxTokens: 5, TokensPerFill: 5, FillInterval: proxy.Duration(time.Hour)},
			func(s *model.Spec) bool {
				return s.EnvoyVersion == labEnvoyVersion && s.ExactLevel && s.TimerStart == ""
			}},
		{"timer", proxy.LocalRateLimit{MaxTokens: 5, FillInterval: proxy.Duration(time.Second), TokenBucketMode: proxy.TokenBucketTimer},
			func(s *model.Spec) bool {
				return s.EnvoyVersion == decl.EnvoyTimerVersion && !s.ExactLevel && s.TimerStart == start.Format(time.RFC3339Nano)
			}},
		{"per connection", proxy.LocalRateLimit{MaxTokens: 5, FillInterval: proxy.Duration(time.Second), TokenBucketMode: proxy.TokenBucketTimer, PerDownstreamConnection: true},
			func(s *model.Spec) bool { return s.Scope == model.ScopeConnection && s.TimerStart == "" }},
		{"descriptors", proxy.LocalRateLimit{MaxTokens: 5, FillInterval: proxy.Duration(time.Second), Descriptors: desc, AlwaysConsumeDefaultTokenBucket: &no, MaxDynamicDescriptors: &two},
			func(s *model.Spec) bool {
				return len(s.Descriptors) == 1 && s.Descriptors[0].MaxTokens == 2 && *s.Descriptors[0].TokensPerFill == 1 &&
					!*s.AlwaysConsumeDefault && *s.MaxDynamicDescriptors == 2
			}},
		{"no default bucket", proxy.LocalRateLimit{MaxTokens: 5, Descriptors: desc},
			func(s *model.Spec) bool {
				return s.MaxTokens == math.MaxUint32 && time.Duration(s.FillInterval) == 2*time.Second
			}},
	}
	for _, c := range cases {
		s, err := localSpec(&c.lc, start)
		if err != nil || s == nil {
			t.Fatalf("%s: not expressible: %v", c.name, err)
		}
		if _, err := model.New(*s); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !c.check(s) {
			t.Errorf("%s: %+v", c.name, s)
		}
	}
}

// TestLabPlanSeveralDescriptors: a global filter with two rate_limits
// entries sends two descriptors per call (tenant, and user from a header);
// the RLS logs a decision per descriptor, the join takes each to its own
// descriptor of its own request, and each rule's counter is checked: a
// user's 3 of 6, then 4 of the tenant's remaining 10 - 6 = 4 admitted.
func TestLabPlanSeveralDescriptors(t *testing.T) {
	plan, err := ParsePlan("multi.yaml", []byte(`
name: multi
scenarios:
  - name: tenant and user
    lab:
      proxies: 1
      global:
        domain: inventory
        descriptors: [{generic_key: {descriptor_key: tenant, descriptor_value: lab}}]
        rate_limits: [{actions: [{request_headers: {header_name: x-user, descriptor_key: user}}]}]
        timeout: 1s
        failure_mode_deny: true
      rls:
        config: |
          domain: inventory
          descriptors:
            - {key: tenant, value: lab, rate_limit: {unit: hour, requests_per_unit: 10}}
            - {key: user, value: alice, rate_limit: {unit: hour, requests_per_unit: 3}}
    steps:
      - name: alice
        attack: {ids: 6, headers: {X-User: alice}}
      - name: anonymous
        attack: {ids: 10}
    expect: {admitted: 7}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Run(context.Background(), plan, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(context.Background(), dir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Scenarios[0]
	if s.Status != evidence.Pass || s.Totals.Passed != 7 || len(s.Limiters) != 1 {
		t.Fatalf("status %s passed %d limiters %+v reasons %v", s.Status, s.Totals.Passed, s.Limiters, s.Reasons)
	}
	l := s.Limiters[0]
	if l.Status != report.LimiterChecked || l.Offered != 16 || l.Admitted != 7 || l.Rejected != 9 || l.Zombies != 0 || l.Total.Offered != 22 || l.OverAdmittedCount+l.UnderAdmittedCount != 0 {
		t.Fatalf("limiter %+v", l)
	}
	want := map[string][2]int{"inventory_tenant_lab_": {10, 10}, "inventory_user_alice_": {3, 3}}
	for _, b := range l.Buckets {
		if w, ok := want[b.Bucket]; !ok || b.Min != w[0] || b.Max != w[1] {
			t.Errorf("bucket %+v, want %v", b, want)
		}
	}
	if s.Model != nil {
		t.Errorf("several counters per request: no end-to-end bound, got %+v", s.Model)
	}
}

// TestLabPlanFlowHeaders: the flows of one attack send their own headers;
// scenario.json records them per flow (flow_request_headers), so each
// request's descriptor is its flow's: alice's 2 and bob's 3 admitted, each
// user's counter bounded exactly.
func TestLabPlanFlowHeaders(t *testing.T) {
	plan, err := ParsePlan("flows.yaml", []byte(`
name: flows
scenarios:
  - name: two users
    lab:
      proxies: 1
      global:
        domain: inventory
        descriptors: [{request_headers: {header_name: x-user, descriptor_key: user}}]
        timeout: 1s
        failure_mode_deny: true
      rls:
        config: |
          domain: inventory
          descriptors:
            - {key: user, value: alice, rate_limit: {unit: hour, requests_per_unit: 2}}
            - {key: user, value: bob, rate_limit: {unit: hour, requests_per_unit: 3}}
    attack:
      headers: {x-tenant: lab}
      flows:
        - {name: alice, ids: 5, headers: {X-User: alice}}
        - {name: bob, ids: 5, headers: {x-user: bob}}
    expect: {admitted: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Run(context.Background(), plan, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "01-two-users", "1", evidence.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := evidence.DecodeScenario(b)
	if err != nil {
		t.Fatal(err)
	}
	var phase string
	for p := range sc.FlowRequestHeaders {
		phase = p
	}
	if f := sc.FlowRequestHeaders[phase]; len(sc.FlowRequestHeaders) != 1 || f["alice"]["x-user"] != "alice" || f["bob"]["x-user"] != "bob" || len(f["bob"]) != 1 {
		t.Fatalf("flow request headers %v", sc.FlowRequestHeaders)
	}
	rep, err := analyze.Analyze(context.Background(), dir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Scenarios[0]
	if s.Status != evidence.Pass || s.Totals.Passed != 5 || s.Engagement == nil || s.Engagement.Limited != 10 {
		t.Fatalf("status %s passed %d engagement %+v reasons %v", s.Status, s.Totals.Passed, s.Engagement, s.Reasons)
	}
	want := map[string]int{"inventory_user_alice_": 2, "inventory_user_bob_": 3}
	for _, bk := range s.Limiters[0].Buckets {
		if w, ok := want[bk.Bucket]; !ok || bk.Min != w || bk.Max != w || bk.Admitted != w {
			t.Errorf("bucket %+v, want %v", bk, want)
		}
	}
	if len(s.Limiters[0].Buckets) != 2 {
		t.Errorf("buckets %+v", s.Limiters[0].Buckets)
	}
}
