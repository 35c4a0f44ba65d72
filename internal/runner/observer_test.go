package runner

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
)

// recObserver records what the runner tells an Observer.
type recObserver struct {
	mu      sync.Mutex
	runID   string
	attacks []string
	stopped int
	live    []attack.ProgressSnapshot
	faults  []evidence.Fault
}

func (o *recObserver) SetRunID(id string) { o.mu.Lock(); o.runID = id; o.mu.Unlock() }

func (o *recObserver) Attack(sc string, rep int, p *attack.Progress) func() {
	o.mu.Lock()
	o.attacks = append(o.attacks, sc)
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		o.stopped++
		o.live = append(o.live, p.Snapshot())
		o.mu.Unlock()
	}
}

func (o *recObserver) Fault(sc string, rep int, f evidence.Fault) {
	o.mu.Lock()
	o.faults = append(o.faults, f)
	o.mu.Unlock()
}

// TestObserverFollowsRun: the observer learns the run directory's name,
// each attack (before it runs: its live counters count every response,
// with the scenario's classify rules) and each fault record, including the
// clear a timed backend fault writes when its window ends; an event stream
// follows the same run at once (--events with --remote-write), its last
// progress event of each attack carrying the same counts.
func TestObserverFollowsRun(t *testing.T) {
	obs := &recObserver{}
	var stream bytes.Buffer
	sink := events.NewSink(&stream, nil)
	dir, rep := runPlanTextWith(t, "obs.yaml", `
name: obs
scenarios:
  - name: observed
    lab: {proxies: 1}
    classify: [{status: "200", class: backend_4xx}]
    steps:
      - fault: {action: set, target: backend, faults: {max_concurrent: 1000}, for: 1h}
      - attack: {ids: 4}
      - attack: {ids: 3}
`, Options{Observer: obs, Events: sink})
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if obs.runID != filepath.Base(dir) {
		t.Errorf("run ID %q, run directory %s", obs.runID, dir)
	}
	if len(obs.attacks) != 2 || obs.stopped != 2 || obs.attacks[0] != "observed" {
		t.Fatalf("attacks %v, %d stopped", obs.attacks, obs.stopped)
	}
	for i, want := range []int{4, 3} {
		l := obs.live[i]
		if len(l.Targets) != 1 || l.Targets[0].Classes[evidence.ClassBackend4xx] != want {
			t.Errorf("attack %d: live %+v, want %d classified backend_4xx by the rule", i, l, want)
		}
	}
	var actions []string
	for _, f := range obs.faults {
		actions = append(actions, f.Action)
	}
	if strings.Join(actions, ",") != "set,clear" {
		t.Errorf("faults %v, want set then its clear", actions)
	}
	var done []events.Progress
	faultEvents := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(stream.Bytes()), []byte("\n")) {
		var e events.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("event %s: %v", line, err)
		}
		if e.RunID != obs.runID {
			t.Errorf("event run_id %q, the observer's %q", e.RunID, obs.runID)
		}
		switch {
		case e.Progress != nil && e.Progress.Done:
			done = append(done, *e.Progress)
		case e.Fault != nil:
			faultEvents[e.Type+" "+e.Fault.Action]++
		}
	}
	if len(done) != 2 {
		t.Fatalf("%d final progress events, want one per attack", len(done))
	}
	for i, want := range []int{4, 3} {
		if len(done[i].Targets) != 1 || done[i].Targets[0].Classes[evidence.ClassBackend4xx.String()] != want {
			t.Errorf("attack %d: progress event %+v, want %d backend_4xx as the observer saw", i, done[i], want)
		}
	}
	for _, k := range []string{"fault_begin set", "fault_end set", "fault_begin clear", "fault_end clear"} {
		if faultEvents[k] != 1 {
			t.Errorf("fault events %v: want one %s", faultEvents, k)
		}
	}
	if rep.Scenarios[0].Totals.Sent != 7 {
		t.Errorf("sent %d", rep.Scenarios[0].Totals.Sent)
	}
}

// TestRemoteWritePlan: remote_write: parses, and a bad URL or interval is
// an error naming the line, the URL redacted.
func TestRemoteWritePlan(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte("remote_write: {url: 'http://127.0.0.1:9090/api/v1/write', interval: 250ms}\nscenarios:\n - {name: a, lab: {}, attack: {ids: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.RemoteWrite == nil || p.RemoteWrite.URL != "http://127.0.0.1:9090/api/v1/write" || p.RemoteWrite.Interval.String() != "250ms" {
		t.Errorf("remote_write %+v", p.RemoteWrite)
	}
	for _, y := range []string{
		"remote_write: {url: 'ftp://user:secret@h/x'}\nscenarios:\n - {name: a, lab: {}, attack: {ids: 1}}\n",
		"remote_write: {url: 'http://h/x', interval: -1s}\nscenarios:\n - {name: a, lab: {}, attack: {ids: 1}}\n",
		"remote_write: {interval: 1s}\nscenarios:\n - {name: a, lab: {}, attack: {ids: 1}}\n",
	} {
		_, err := ParsePlan("p.yaml", []byte(y))
		if err == nil || !strings.HasPrefix(err.Error(), "p.yaml: line 1: remote_write.") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: %v", y, err)
		}
	}
}
