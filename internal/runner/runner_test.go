package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestParsePlanErrors(t *testing.T) {
	cases := map[string]string{
		"unknown field":   "name: x\nscenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1}\n   expectt: {}\n",
		"no scenarios":    "name: x\n",
		"duplicate":       "scenarios:\n - {name: a, lab: {}, attack: {ids: 1}}\n - {name: A, lab: {}, attack: {ids: 1}}\n",
		"bad duration":    "scenarios:\n - {name: a, lab: {local: {max_tokens: 1, fill_interval: soon}}, attack: {ids: 1}}\n",
		"bad range":       "scenarios:\n - {name: a, lab: {}, attack: {ids: 1}, expect: {admitted: \"9..3\"}}\n",
		"no attack":       "scenarios:\n - {name: a, lab: {}, steps: [{fault: {action: stop, target: rls}}]}\n",
		"both targets":    "scenarios:\n - {name: a, lab: {}, external: {proxies: [{name: p, url: 'http://127.0.0.1:1'}]}, attack: {ids: 1}}\n",
		"bad fault":       "scenarios:\n - {name: a, lab: {}, steps: [{fault: {action: explode, target: rls}}, {attack: {ids: 1}}]}\n",
		"dangling at":     "scenarios:\n - {name: a, lab: {}, steps: [{attack: {ids: 1}}, {fault: {action: stop, target: rls, at: 1s}}]}\n",
		"global no rls":   "scenarios:\n - {name: a, lab: {global: {domain: d, descriptors: []}}, attack: {ids: 1}}\n",
		"zero ids":        "scenarios:\n - {name: a, lab: {}, attack: {ids: 0}}\n",
		"exec no command": "scenarios:\n - {name: a, lab: {}, steps: [{fault: {action: exec, target: x}}, {attack: {ids: 1}}]}\n",
		// The lab's own rules (lab.Options.Validate), at load time:
		"27 proxies":     "scenarios:\n - {name: a, lab: {proxies: 27}, attack: {ids: 1}}\n",
		"short fill":     "scenarios:\n - {name: a, lab: {local: {max_tokens: 1, fill_interval: 10ms}}, attack: {ids: 1}}\n",
		"no tokens":      "scenarios:\n - {name: a, lab: {local: {max_tokens: 0, fill_interval: 1s}}, attack: {ids: 1}}\n",
		"bad percentage": "scenarios:\n - {name: a, lab: {local: {max_tokens: 1, fill_interval: 1s, filter_enabled: 150}}, attack: {ids: 1}}\n",
		"no descriptors": "scenarios:\n - {name: a, lab: {global: {domain: d, descriptors: []}, rls: {config: 'domain: d'}}, attack: {ids: 1}}\n",
		"bad window":     "scenarios:\n - {name: a, lab: {rls: {config: 'domain: d', window_start: sliding}}, attack: {ids: 1}}\n",
		"bad rate":       "scenarios:\n - {name: a, lab: {}, attack: {ids: 1, rate: fast}}\n",
	}
	for name, y := range cases {
		_, err := ParsePlan("p.yaml", []byte(y))
		if err == nil || !strings.HasPrefix(err.Error(), "p.yaml: ") {
			t.Errorf("%s: err = %v, want an error naming p.yaml", name, err)
		}
	}
	if _, err := ParsePlan("p.yaml", []byte(cases["unknown field"])); err == nil || err.Error() != `p.yaml: line 6: unknown field "expectt"` {
		t.Errorf("unknown field error %v, want the line", err)
	}
	if _, err := ParsePlan("p.yaml", []byte(cases["bad duration"])); err == nil || err.Error() != `p.yaml: line 2: scenarios[0].lab.local.fill_interval: time: invalid duration "soon"` {
		// the field path too: a value its own decoder refused is named as any other
		t.Errorf("bad duration error %v, want the line and the field", err)
	}
	p, err := ParsePlan("ok.yaml", []byte("scenarios:\n - {name: A b, lab: {}, attack: {ids: 3}, expect: {admitted: \"2..3\", classes: {local_429: 0}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Scenarios[0]
	if s.Repeat != 1 || s.Lab.Proxies != 2 || len(s.Steps) != 1 || s.Steps[0].Name != "attack" || s.Expect.Admitted.Range.Min != 2 || s.Expect.Admitted.Range.Max != 3 {
		t.Fatalf("defaults not applied: %+v", s)
	}
}

// TestPlanRates: a plan's attack.rate is read by attack.ParseRate, the
// function behind `rlbench attack --rate`: strings and numbers, and a bad
// rate is a plan error naming the line.
func TestPlanRates(t *testing.T) {
	p, err := ParsePlan("r.yaml", []byte("scenarios:\n - name: a\n   lab: {}\n   steps:\n    - attack: {ids: 1, rate: 50/1s}\n    - attack: {ids: 1, rate: 5}\n    - attack: {ids: 1, rate: 60/m}\n    - attack: {ids: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []vegeta.Rate{{Freq: 50, Per: time.Second}, {Freq: 5, Per: time.Second}, {Freq: 60, Per: time.Minute}, {}}
	for i, st := range p.Scenarios[0].Steps {
		if got := vegeta.Rate(st.Attack.Rate); got != want[i] {
			t.Errorf("steps[%d] rate %+v, want %+v", i, got, want[i])
		}
	}
	for y, want := range map[string][]string{
		"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1, rate: fast}\n":          {"p.yaml: line 4: ", `rate "fast": want N/duration`},
		"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 1\n     rate: 5/zz\n": {"p.yaml: line 6: ", `rate "5/zz": bad duration`},
	} {
		_, err := ParsePlan("p.yaml", []byte(y))
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("err %v, want %q", err, w)
			}
		}
	}
}

func TestNewRunDirIsUnique(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 30, 10, 15, 0, 0, time.UTC)
	a, err := NewRunDir(root, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRunDir(root, now)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(a) != "20261130T101500Z-1" || filepath.Base(b) != "20261130T101500Z-2" {
		t.Fatalf("%s %s", a, b)
	}
}

// TestFaultAtOffsetInsideAttack stops the lab RLS 300 ms into a paced attack
// (30 IDs at 30/s, 1 s) with failure_mode_deny: requests before the stop
// are decided by the RLS, those after get 500s, and the fault window holds
// exactly the 500s. The margins are a loaded host's: the stop falls inside
// the attack unless the host stalls the process for about 270 ms at its
// start (the first ID is due at 33 ms, the stop at 300 ms) or the stop
// takes about 700 ms; with 100 ms into 400 ms an 80 ms stall, which a host
// with 30 runnable threads on 2 cores can give, sent the first request
// after the stop. The RLS answers get 30 s (a late answer is not a
// refusal).
func TestFaultAtOffsetInsideAttack(t *testing.T) {
	dir, rep := runPlanText(t, "offset.yaml", `
name: offset
scenarios:
  - name: stop during attack
    lab:
      proxies: 1
      global:
        domain: inventory
        descriptors: [{generic_key: {descriptor_key: tenant, descriptor_value: lab}}]
        timeout: 30s
        failure_mode_deny: true
      rls:
        config: |
          domain: inventory
          descriptors:
            - {key: tenant, value: lab, rate_limit: {unit: hour, requests_per_unit: 100}}
    steps:
      - fault: {action: stop, target: rls, at: 300ms}
      - attack: {ids: 30, rate: 30/1s}
`)
	s := rep.Scenarios[0]
	if s.Totals.Sent != 30 || s.Totals.N[evidence.ClassAdmitted]+s.Totals.N[evidence.ClassRLSError]+s.Totals.N[evidence.ClassNoResponse] != 30 {
		t.Fatalf("totals %+v reasons %v", s.Totals, s.Reasons)
	}
	if s.Totals.N[evidence.ClassAdmitted] == 0 || s.Totals.N[evidence.ClassRLSError] == 0 {
		t.Fatalf("the stop did not fall inside the attack: %+v", s.Totals)
	}
	if len(s.FaultWindows) != 1 || !s.FaultWindows[0].Open {
		t.Fatalf("windows %+v", s.FaultWindows)
	}
	w := s.FaultWindows[0]
	// The window opens when the stop begins; the RLS may still answer while
	// it shuts down, so only requests sent after the stop ended are sure to
	// be refused: none of them may be admitted or reach the backend.
	if w.Inside.N[evidence.ClassRLSError]+w.Straddling.N[evidence.ClassRLSError] != s.Totals.N[evidence.ClassRLSError] {
		t.Fatalf("window inside %+v straddling %+v; totals %+v", w.Inside, w.Straddling, s.Totals)
	}
	sd := filepath.Join(dir, "01-stop-during-attack", "1")
	var stopEnd int64
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(evidence.ReadFile(filepath.Join(sd, evidence.FaultsFile), func(_ int, f *evidence.Fault) error {
		if f.Action == "stop" {
			stopEnd = f.EndNs
		}
		return nil
	}))
	late := 0
	must(evidence.ReadFile(filepath.Join(sd, evidence.RequestsFile), func(_ int, r *evidence.Request) error {
		if r.SentNs > stopEnd {
			late++
			if r.Code != 500 {
				t.Errorf("%s sent %d ns after the RLS stopped: code %d, want 500", r.ID, r.SentNs-stopEnd, r.Code)
			}
		}
		return nil
	}))
	if stopEnd == 0 || late == 0 {
		t.Fatalf("stop end %d, %d requests after it", stopEnd, late)
	}
	b, err := os.ReadFile(filepath.Join(dir, "01-stop-during-attack", "1", "faults.jsonl"))
	if err != nil || !strings.Contains(string(b), `"action":"stop"`) {
		t.Fatalf("faults.jsonl: %v %s", err, b)
	}
}

// runPlanText parses the plan text, runs it under a temporary root and
// analyses the run directory.
func runPlanText(t *testing.T, name, text string) (string, *report.Report) {
	t.Helper()
	return runPlanTextWith(t, name, text, Options{})
}

// runPlanTextWith is runPlanText with options (Root is set here).
func runPlanTextWith(t *testing.T, name, text string, opts Options) (string, *report.Report) {
	t.Helper()
	plan, err := ParsePlan(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	opts.Root = t.TempDir()
	dir, err := Run(context.Background(), plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(context.Background(), dir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, rep
}
