package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
)

// TestE06PlanModelBounds runs examples/e06/plan.yaml on the lab: every
// scenario PASSes with the previous figures, and its scenario.json declares
// the limiters the model checks with: each proxy's bucket (Envoy 1.30 timer
// from the proxy's start) or the RLS rule, the bounds "10..10", "5..5".
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
		if s.Status != analyze.Pass || s.Totals.Passed != w.admitted {
			t.Errorf("%s: %s, %d admitted; reasons %v", s.Name, s.Status, s.Totals.Passed, s.Reasons)
		}
		switch {
		case w.suspended && (s.Model != nil || s.Limiters[0].Status != analyze.LimiterSuspended):
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
		sc.Limiters[0].Model.TimerStart == "" || sc.Limiters[1].Targets[0] != "proxy-b" {
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
	if s.Status != analyze.Fail || s.Engagement == nil || s.Engagement.NoDescriptor != 4 || s.Engagement.Limited != 6 {
		t.Fatalf("status %s engagement %+v reasons %v", s.Status, s.Engagement, s.Reasons)
	}
	if s.Limiters[0].Total.Min != 3 || s.Limiters[0].Total.Max != 3 || s.Limiters[0].OverAdmittedCount != 0 {
		t.Fatalf("limiter %+v", s.Limiters[0])
	}
}
