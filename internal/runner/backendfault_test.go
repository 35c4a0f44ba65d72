package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// A lab scenario with three backend endpoints, a retry policy, circuit
// breakers and outlier detection in the plan; a fault step fails endpoint 1
// for the first attack, a clear ends it: faults.jsonl holds the set and
// the clear with the endpoint as target, the receipts say which endpoint
// answered what.
func TestPlanBackendFaultSteps(t *testing.T) {
	plan := `
name: backend faults
scenarios:
 - name: failing endpoint
   lab:
     proxies: 1
     backend: {endpoints: 3, seed: 1}
     proxy:
       retry_policy: {retry_on: "5xx", num_retries: 2, retry_back_off: {base_interval: 1ms}}
       include_request_attempt_count: true
       seed: 5
     cluster:
       circuit_breakers: {max_retries: 10}
       outlier_detection: {consecutive_5xx: 100, interval: 1h}
   steps:
    - fault: {action: set, target: backend, endpoints: [1], faults: {error_status: 503}}
    - attack: {ids: 9, concurrency: 1}
    - fault: {action: clear, target: backend, endpoints: [1]}
    - attack: {ids: 3, concurrency: 1}
   expect:
     admitted: 12
     receipts_equal_admitted: false
`
	p, err := ParsePlan("bf.yaml", []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	runDir, err := Run(context.Background(), p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(runDir, "01-failing-endpoint", "1")
	var faults []evidence.Fault
	if err := evidence.ReadFile(filepath.Join(dir, evidence.FaultsFile), func(_ int, f *evidence.Fault) error {
		faults = append(faults, *f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(faults) != 2 || faults[0].Action != "set" || faults[0].Target != "backend-1" || !strings.Contains(faults[0].Detail, `"error_status":503`) ||
		faults[1].Action != "clear" || faults[1].Target != "backend-1" || !faults[0].OK || !faults[1].OK {
		t.Fatalf("faults %+v", faults)
	}
	perEndpoint := map[string]map[int]int{}
	var retried int
	if err := evidence.ReadFile(filepath.Join(dir, evidence.ReceiptsFile), func(_ int, rc *evidence.Receipt) error {
		if perEndpoint[rc.Endpoint] == nil {
			perEndpoint[rc.Endpoint] = map[int]int{}
		}
		perEndpoint[rc.Endpoint][rc.Status]++
		if rc.Headers["x-envoy-attempt-count"] != "1" {
			retried++
		}
		if rc.Status == 503 && (rc.Fault != evidence.ReceiptFaultError || rc.RecvNs < faults[0].BeginNs || rc.RecvNs > faults[1].EndNs) {
			t.Errorf("503 receipt %+v outside the window or without its fault", rc)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Every 503 of backend-1 was retried on another endpoint; the clients
	// saw only 200s.
	if perEndpoint["backend-1"][503] == 0 || perEndpoint["backend-0"][503] != 0 || perEndpoint["backend-2"][503] != 0 ||
		retried != perEndpoint["backend-1"][503] || perEndpoint["backend-1"][200] == 0 {
		t.Fatalf("receipts per endpoint and status %v, %d retried", perEndpoint, retried)
	}
	var s evidence.Scenario
	b, err := os.ReadFile(filepath.Join(dir, evidence.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Faults != 2 {
		t.Fatalf("scenario faults %d", s.Faults)
	}
}

// A set with for: the runner writes its clear when the time is up or when
// the attack step ends.
func TestPlanTimedBackendFault(t *testing.T) {
	plan := `
scenarios:
 - name: window
   lab: {proxies: 1}
   steps:
    - fault: {action: set, target: backend, faults: {error_status: 500}, for: 1h}
    - attack: {ids: 2}
    - attack: {ids: 2}
   expect: {admitted: 2, receipts_equal_admitted: false}
`
	p, err := ParsePlan("w.yaml", []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	runDir, err := Run(context.Background(), p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(runDir, "01-window", "1")
	var faults []evidence.Fault
	_ = evidence.ReadFile(filepath.Join(dir, evidence.FaultsFile), func(_ int, f *evidence.Fault) error {
		faults = append(faults, *f)
		return nil
	})
	var codes []int
	_ = evidence.ReadFile(filepath.Join(dir, evidence.RequestsFile), func(_ int, r *evidence.Request) error {
		codes = append(codes, r.Code)
		return nil
	})
	if len(faults) != 2 || faults[1].Action != "clear" || faults[1].Target != "backend" || len(codes) != 4 {
		t.Fatalf("faults %+v codes %v", faults, codes)
	}
	n500 := 0
	for _, c := range codes {
		if c == 500 {
			n500++
		}
	}
	if n500 != 2 {
		t.Fatalf("codes %v: the window must cover the first attack only", codes)
	}
}

func TestPlanBackendFaultErrors(t *testing.T) {
	for name, y := range map[string]string{
		"set without faults": "scenarios:\n - {name: a, lab: {}, steps: [{fault: {action: set, target: backend}}, {attack: {ids: 1}}]}\n",
		"wrong target":       "scenarios:\n - {name: a, lab: {}, steps: [{fault: {action: set, target: rls, faults: {error_status: 503}}}, {attack: {ids: 1}}]}\n",
		"no such endpoint":   "scenarios:\n - {name: a, lab: {backend: {endpoints: 2}}, steps: [{fault: {action: clear, target: backend, endpoints: [2]}}, {attack: {ids: 1}}]}\n",
		"bad faults":         "scenarios:\n - {name: a, lab: {}, steps: [{fault: {action: set, target: backend, faults: {error_status: 42}}}, {attack: {ids: 1}}]}\n",
		"bad latency":        "scenarios:\n - {name: a, lab: {}, steps: [{fault: {action: set, target: backend, faults: {latency: soon}}}, {attack: {ids: 1}}]}\n",
		"dangling for":       "scenarios:\n - {name: a, lab: {}, steps: [{attack: {ids: 1}}, {fault: {action: set, target: backend, faults: {error_status: 503}, for: 1s}}]}\n",
		"bad retry_on":       "scenarios:\n - {name: a, lab: {proxy: {retry_policy: {retry_on: sometimes}}}, attack: {ids: 1}}\n",
		"bad breaker field":  "scenarios:\n - {name: a, lab: {cluster: {circuit_breakers: {max_conns: 1}}}, attack: {ids: 1}}\n",
		"too many endpoints": "scenarios:\n - {name: a, lab: {backend: {endpoints: 65}}, attack: {ids: 1}}\n",
		"lab faults invalid": "scenarios:\n - {name: a, lab: {backend: {faults: {reset_probability: 2}}}, attack: {ids: 1}}\n",
		"descriptor dup":     "scenarios:\n - {name: a, lab: {local: {max_tokens: 1, fill_interval: 1s, descriptors: [{entries: [{key: u, value: a}], token_bucket: {max_tokens: 1, fill_interval: 1s}}, {entries: [{key: u, value: a}], token_bucket: {max_tokens: 1, fill_interval: 1s}}]}}, attack: {ids: 1}}\n",
	} {
		if _, err := ParsePlan("p.yaml", []byte(y)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
