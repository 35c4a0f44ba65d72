package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
)

// eventsPlan has a scenario that passes and one with faults around its
// attack (RLS stopped under failure_mode_deny: every request a 500).
const eventsPlan = `name: events
scenarios:
  - name: two local buckets
    intended_limit: 5
    lab:
      proxies: 2
      local: {max_tokens: 5, tokens_per_fill: 5, fill_interval: 1h}
    attack: {ids: 20, split: even, path: /inventory}
    expect: {admitted: 10, classes: {local_429: 10}}
  - name: RLS stopped, deny
    lab:
      proxies: 2
      global:
        domain: inventory
        descriptors: [{generic_key: {descriptor_key: tenant, descriptor_value: lab}}]
        timeout: 1s
        failure_mode_deny: true
      rls:
        config: |
          domain: inventory
          descriptors:
            - key: tenant
              value: lab
              rate_limit: {unit: hour, requests_per_unit: 5}
    steps:
      - fault: {action: stop, target: rls}
      - attack: {ids: 20, split: even, path: /inventory}
      - fault: {action: start, target: rls}
    expect: {admitted: 3, classes: {rls_error: 20}}
`

// readEvents validates every line of a real stream against
// schemas/event.v1.schema.json and decodes it.
func readEvents(t *testing.T, data []byte) []events.Event {
	t.Helper()
	if err := schemas.ValidateLines(schemas.Event, data); err != nil {
		t.Fatalf("event stream: %v\n%s", err, data)
	}
	var evs []events.Event
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var e events.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if e.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d", i+1, e.Seq)
		}
		evs = append(evs, e)
	}
	if len(evs) < 2 || evs[0].Type != events.TypeStarted || evs[len(evs)-1].Type != events.TypeFinished {
		t.Fatalf("stream does not run from started to finished:\n%s", data)
	}
	return evs
}

// TestRunEventsStdout: `rlbench run --events -` writes only the event
// stream to standard output (the report goes to standard error), every
// line valid: started with the scenarios, each attack's last progress
// exact, the faults' begin and end, one verdict per scenario (the second
// FAIL: 0 admitted, not 3) and finished with exit code 3 and status.txt.
func TestRunEventsStdout(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(eventsPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "run", "--root", filepath.Join(dir, "runs"), "--events", "-", "--format", "json", plan)
	if code != ExitFail {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitFail, errOut)
	}
	if !strings.Contains(errOut, `"schema": "rlbench.report/v2"`) {
		t.Errorf("the JSON report is not on standard error:\n%s", errOut)
	}
	evs := readEvents(t, []byte(out))
	st := evs[0].Started
	if st.Command != "run" || st.Plan != "events" || len(st.Scenarios) != 2 || evs[0].RunID == "" {
		t.Errorf("started %+v run_id %q", st, evs[0].RunID)
	}
	var done, faultBegin, faultEnd []events.Event
	verdicts := map[string]*events.Verdict{}
	for _, e := range evs {
		if e.RunID != evs[0].RunID {
			t.Errorf("event %d of run %q, not %q", e.Seq, e.RunID, evs[0].RunID)
		}
		switch e.Type {
		case events.TypeProgress:
			if e.Progress.Done {
				done = append(done, e)
			}
		case events.TypeFaultBegin:
			faultBegin = append(faultBegin, e)
		case events.TypeFaultEnd:
			faultEnd = append(faultEnd, e)
		case events.TypeVerdict:
			verdicts[e.Verdict.Scenario] = e.Verdict
		}
	}
	if len(done) != 2 {
		t.Fatalf("%d final progress events, want one per attack", len(done))
	}
	for _, e := range done {
		p := e.Progress
		if p.Sent != 20 || p.InFlight != 0 || len(p.Targets) != 2 {
			t.Errorf("final progress %+v", p)
		}
	}
	last := done[1].Progress
	if last.Scenario != "RLS stopped, deny" || last.Targets[0].Classes["rls_error"]+last.Targets[1].Classes["rls_error"] != 20 {
		t.Errorf("the deny scenario's progress %+v", last)
	}
	if len(faultBegin) != 2 || len(faultEnd) != 2 || faultBegin[0].Fault.Action != "stop" || faultEnd[0].Fault.OK == nil || !*faultEnd[0].Fault.OK ||
		faultEnd[0].Fault.EndNs < faultEnd[0].Fault.BeginNs || faultBegin[0].Seq > faultEnd[0].Seq || faultEnd[0].Seq > done[1].Seq {
		t.Errorf("fault events %+v %+v", faultBegin, faultEnd)
	}
	if v := verdicts["two local buckets"]; v == nil || v.Status != evidence.Pass || v.Admitted != 10 {
		t.Errorf("verdict %+v", v)
	}
	if v := verdicts["RLS stopped, deny"]; v == nil || v.Status != evidence.Fail || v.Admitted != 0 || len(v.Reasons) == 0 {
		t.Errorf("verdict %+v", v)
	}
	fin := evs[len(evs)-1].Finished
	if fin.Status != evidence.Fail || fin.ExitCode != ExitFail || fin.Error != "" {
		t.Errorf("finished %+v", fin)
	}
	if b, err := os.ReadFile(fin.StatusFile); err != nil || !bytes.Contains(b, []byte("FAIL")) {
		t.Errorf("status.txt %s: %v %q", fin.StatusFile, err, b)
	}
}

// TestAttackEventsFile: `rlbench attack --events FILE` writes a valid
// stream into the file (nothing on standard output): started, progress
// ending exact, finished with exit code 0.
func TestAttackEventsFile(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "events.jsonl")
	out := filepath.Join(dir, "ev")
	code, stdout, errOut := runCLI(t, "attack", "-q", "--target", "a="+srv.URL, "--ids", "6", "--out", out, "--events", file)
	if code != ExitOK || stdout != "" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, data)
	if evs[0].Started.Command != "attack" || evs[0].RunID != "ev" {
		t.Errorf("started %+v", evs[0])
	}
	p := evs[len(evs)-2].Progress
	if p == nil || !p.Done || p.Sent != 6 || len(p.Targets) != 1 || p.Targets[0].Target != "a" || p.Targets[0].Classes["admitted"] != 6 {
		t.Errorf("last progress %+v", p)
	}
	if f := evs[len(evs)-1].Finished; f.ExitCode != ExitOK || f.Status != "" || f.StatusFile != "" {
		t.Errorf("finished %+v", f)
	}
}

// TestEventsFlagChecked: an --events path that cannot be a file is a
// usage error before anything runs.
func TestEventsFlagChecked(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "attack", "--target", "http://127.0.0.1:1", "--ids", "1", "--out", filepath.Join(dir, "ev"), "--events", filepath.Join(dir, "no", "e.jsonl"))
	if code != ExitUsage || !strings.Contains(errOut, "--events") {
		t.Errorf("exit %d stderr %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "run", "--events", dir, "plan.yaml")
	if code != ExitUsage || !strings.Contains(errOut, "--events") {
		t.Errorf("exit %d stderr %s", code, errOut)
	}
}
