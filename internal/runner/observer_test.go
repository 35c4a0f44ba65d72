package runner

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
)

// recObserver records what the runner tells an Observer.
type recObserver struct {
	mu      sync.Mutex
	runID   string
	attacks []string
	stopped int
	live    []attack.LiveSnapshot
	faults  []evidence.Fault
}

func (o *recObserver) SetRunID(id string) { o.mu.Lock(); o.runID = id; o.mu.Unlock() }

func (o *recObserver) Attack(sc string, rep int, p *attack.Progress, cls *evidence.Classifier) func() {
	p.CountLive(cls)
	o.mu.Lock()
	o.attacks = append(o.attacks, sc)
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		o.stopped++
		o.live = append(o.live, p.Live())
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
// clear a timed backend fault writes when its window ends.
func TestObserverFollowsRun(t *testing.T) {
	obs := &recObserver{}
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
`, Options{Observer: obs})
	if obs.runID != filepath.Base(dir) {
		t.Errorf("run ID %q, run directory %s", obs.runID, dir)
	}
	if len(obs.attacks) != 2 || obs.stopped != 2 || obs.attacks[0] != "observed" {
		t.Fatalf("attacks %v, %d stopped", obs.attacks, obs.stopped)
	}
	for i, want := range []int64{4, 3} {
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
