//go:build integration

package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
)

// perUserPlan keys the real RLS by user: Envoy's request_headers action on x-user makes each user its own
// descriptor value and its own envoyproxy/ratelimit counter (a rule on key user without a value: 10 per second per
// user). noisy offers 20/s, quiet-1 and quiet-2 5/s each, for 2 s.
const perUserPlan = `name: real-rls-per-user
scenarios:
  - name: per-user real RLS
    description: "one descriptor per user (request_headers x-user); noisy at 20/s, quiet-1 and quiet-2 at 5/s, for 2s"
    lab:
      proxies: 1
      global:
        domain: users
        descriptors: [{request_headers: {header_name: x-user, descriptor_key: user}}]
        timeout: 1s
        failure_mode_deny: true
      rls:
        kind: real
        config: |
          domain: users
          descriptors:
            - key: user
              rate_limit: {unit: second, requests_per_unit: 10}
    attack:
      flows:
        - {name: noisy, rate: 20/1s, duration: 2s, headers: {x-user: noisy}}
        - {name: quiet-1, rate: 5/1s, duration: 2s, headers: {x-user: quiet-1}}
        - {name: quiet-2, rate: 5/1s, duration: 2s, headers: {x-user: quiet-2}}
    expect:
      label: the limiter's model
      admitted: model
`

// TestRealRLSPerUserDescriptors runs perUserPlan on the real redis-server and envoyproxy/ratelimit: the run PASSes
// and each user's OK decisions equal the admissions of that user's requests (the previous release wanted each
// user's OK count to reach the run's 44 admissions and FAILed). Without the binaries it skips, unless
// RLBENCH_REQUIRE_REAL_PARTS=1.
func TestRealRLSPerUserDescriptors(t *testing.T) {
	_, err1 := realparts.FindRedis()
	_, err2 := realparts.FindRLS()
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	path := filepath.Join(t.TempDir(), "plan.yaml")
	plan, err := ParsePlan(path, []byte(perUserPlan))
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: one 2 s scenario takes ~5 s.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runDir, err := Run(ctx, plan, Options{Root: t.TempDir(), PlanBytes: []byte(perUserPlan)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(ctx, runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 1 {
		t.Fatalf("%d scenarios", len(rep.Scenarios))
	}
	s := rep.Scenarios[0]
	checkRealPass(t, s)
	if s.Totals.Sent != 60 {
		t.Errorf("totals %+v", s.Totals)
	}
	ok := map[string]int{}
	for _, d := range s.RLS.Real.Descriptors {
		if !d.PerValue || d.OK != d.AdmittedMin || d.OK != d.AdmittedMax {
			t.Errorf("descriptor %+v", d)
		}
		ok[d.Descriptor] = d.OK
	}
	// quiet users stay under their own limit; noisy gets the rest of the admissions.
	if len(ok) != 3 || ok["users user=quiet-1"] != 10 || ok["users user=quiet-2"] != 10 ||
		ok["users user=noisy"] != s.Totals.Passed-20 || s.Totals.N[evidence.ClassGlobal429] == 0 {
		t.Errorf("OK per user %v, totals %+v", ok, s.Totals)
	}
}
