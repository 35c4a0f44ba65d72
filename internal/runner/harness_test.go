package runner

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/schemas"
)

// TestLabRecordsItsOwnTimes runs a tiny lab plan (a local token bucket of
// 3, then a lab RLS allowing 2) and loads its evidence: each scenario has a
// harness.json (valid against its schema) whose window holds the attack;
// the access logs give, for every admitted request, start_ns <= local_ns
// <= upstream_start_ns (or rls_start_ns <= rls_end_ns <= upstream_start_ns)
// and for every rejected one the limiter's time without a forward; every
// lab RLS decision has its receive time, not after its decision time.
func TestLabRecordsItsOwnTimes(t *testing.T) {
	plan, err := ParsePlan("times.yaml", []byte(`
name: times
scenarios:
  - name: local
    lab:
      proxies: 1
      local: {max_tokens: 3, fill_interval: 1h}
    attack: {ids: 6}
    expect: {admitted: 3}
  - name: global
    lab:
      proxies: 1
      global:
        domain: inventory
        descriptors: [{generic_key: {descriptor_key: tenant, descriptor_value: lab}}]
        timeout: 5s
      rls:
        config: |
          domain: inventory
          descriptors:
            - {key: tenant, value: lab, rate_limit: {unit: hour, requests_per_unit: 2}}
    attack: {ids: 5}
    expect: {admitted: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Run(context.Background(), plan, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := evidence.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Scenarios) != 2 {
		t.Fatalf("%d scenarios", len(b.Scenarios))
	}
	for _, s := range b.Scenarios {
		if len(s.Problems) != 0 || s.NotRun || s.Attack == nil {
			t.Fatalf("%s: problems %v, not run %v %q", s.Dir, s.Problems, s.NotRun, s.NotRunReason)
		}
		checkHarnessWindow(t, s)
		if len(s.AccessLogs) != 1 {
			t.Fatalf("%s: %d access logs", s.Dir, len(s.AccessLogs))
		}
		global := s.Scenario.Name == "global"
		admitted, rejected := checkAccessLogTimes(t, s, global)
		want := map[bool][2]int{false: {3, 3}, true: {2, 3}}[global]
		if admitted != want[0] || rejected != want[1] {
			t.Errorf("%s: %d admitted, %d rejected in the access log, want %v", s.Dir, admitted, rejected, want)
		}
		if global {
			if len(s.Decisions) != 5 {
				t.Errorf("%s: %d decisions", s.Dir, len(s.Decisions))
			}
			for i, d := range s.Decisions {
				if d.RecvNs == 0 || d.RecvNs > d.TimeNs {
					t.Errorf("%s decision %d: recv_ns %d, time_ns %d", s.Dir, i, d.RecvNs, d.TimeNs)
				}
			}
		}
	}
}

// checkHarnessWindow: the scenario has a harness.json, valid against its
// schema, whose window holds the attack.
func checkHarnessWindow(t *testing.T, s *evidence.ScenarioEvidence) {
	t.Helper()
	h := s.Harness
	if h == nil {
		t.Fatalf("%s: no harness.json", s.Dir)
	}
	if h.Schema != evidence.HarnessSchema || h.StartNs > s.Attack.StartNs || h.EndNs < s.Attack.EndNs || h.CPUs != runtime.NumCPU() ||
		h.Probe.IntervalNs != int64(time.Millisecond) || h.Probe.Stalls == nil || h.Probe.MaxLateNs < h.Probe.P99LateNs {
		t.Errorf("%s: harness %+v, attack %d..%d", s.Dir, h, s.Attack.StartNs, s.Attack.EndNs)
	}
	raw, err := os.ReadFile(evidence.Dir(s.Path).Harness())
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(schemas.Harness, raw); err != nil {
		t.Errorf("%s: harness.json does not match its schema: %v", s.Dir, err)
	}
}

// checkAccessLogTimes checks the times of the scenario's one access log:
// for every admitted request start_ns <= local_ns <= upstream_start_ns (or,
// global, rls_start_ns <= rls_end_ns <= upstream_start_ns), for every
// rejected one the limiter's time without a forward. It returns the
// admitted and rejected counts.
func checkAccessLogTimes(t *testing.T, s *evidence.ScenarioEvidence, global bool) (admitted, rejected int) {
	t.Helper()
	for _, e := range s.AccessLogs[0].Entries {
		limiter := e.LocalNs
		if global {
			limiter = e.RLSEndNs
			if e.LocalNs != 0 || e.RLSStartNs == 0 || e.RLSStartNs < e.StartNs || e.RLSEndNs < e.RLSStartNs {
				t.Errorf("%s line %d: start %d, local %d, rls %d..%d", s.Dir, e.Line, e.StartNs, e.LocalNs, e.RLSStartNs, e.RLSEndNs)
			}
		} else if e.RLSStartNs != 0 || e.RLSEndNs != 0 || e.LocalNs < e.StartNs {
			t.Errorf("%s line %d: start %d, local %d, rls %d..%d", s.Dir, e.Line, e.StartNs, e.LocalNs, e.RLSStartNs, e.RLSEndNs)
		}
		switch envoyrec.Producer(e) {
		case envoyrec.ProducerBackend:
			admitted++
			if e.StartNs == 0 || limiter == 0 || e.UpstreamStartNs < limiter {
				t.Errorf("%s line %d admitted: start %d, limiter %d, upstream %d", s.Dir, e.Line, e.StartNs, limiter, e.UpstreamStartNs)
			}
		default:
			rejected++
			if limiter == 0 || e.UpstreamStartNs != 0 {
				t.Errorf("%s line %d rejected (%d %v): limiter %d, upstream %d", s.Dir, e.Line, e.Code, e.Flags, limiter, e.UpstreamStartNs)
			}
		}
	}
	return admitted, rejected
}
