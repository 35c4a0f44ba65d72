package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
)

// TestStickyAnyProxyCount: a sticky split sends every ID to proxy-a; the
// other proxies' stats show 0 requests, which is their clients' count, so
// the scenario is judged (PASS), not NOT_RUN for want of clients, on 1, 2,
// 3 and 5 proxies.
func TestStickyAnyProxyCount(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			_, rep := runPlanText(t, "sticky.yaml", fmt.Sprintf(`
scenarios:
  - name: sticky
    lab:
      proxies: %d
      local: {max_tokens: 4, fill_interval: 1h}
    attack: {ids: 10, split: sticky}
    expect: {admitted: 4}
`, n))
			s := rep.Scenarios[0]
			if s.Status != evidence.Pass || len(s.Stats) != n {
				t.Fatalf("%d proxies: status %s reasons %v stats %+v", n, s.Status, s.Reasons, s.Stats)
			}
			for _, ps := range s.Stats {
				for _, c := range ps.Checks {
					if c.Status != report.CheckPass {
						t.Errorf("%s: check %+v", ps.Proxy, c)
					}
				}
			}
		})
	}
}

// TestPlanFlows: a plan attack with flows runs them in one attack on the
// lab: every line names its flow, the per-flow counts are exact, the
// flows' headers and no_keepalive reach attack.json.
func TestPlanFlows(t *testing.T) {
	var labels []string
	var progs []*attack.Progress
	stopped := 0
	live := func(label string, p *attack.Progress) func() {
		labels, progs = append(labels, label), append(progs, p)
		return func() { stopped++ }
	}
	dir, rep := runPlanTextWith(t, "flows.yaml", `
scenarios:
  - name: users
    lab: {proxies: 2}
    attack:
      headers: {x-plan: free}
      no_keepalive: true
      flows:
        - {name: A, rate: 200/1s, duration: 100ms, headers: {x-user: A}, path: /ping}
        - {name: B, ids: 6, headers: {x-user: B}, path: /report, split: sticky, no_keepalive: true}
    expect: {admitted: 26}
`, Options{Live: live})
	// The live progress hook saw the attack, and its counters ended exact.
	if len(labels) != 1 || labels[0] != "  attack" || stopped != 1 {
		t.Fatalf("live labels %q, stopped %d", labels, stopped)
	}
	if s := progs[0].Snapshot(); !s.Done || s.Total != 26 || s.Answered != 26 {
		t.Fatalf("progress %+v", s)
	}
	if s := rep.Scenarios[0]; s.Status != evidence.Pass {
		t.Fatalf("status %s reasons %v", s.Status, s.Reasons)
	}
	sd := filepath.Join(dir, "01-users", "1")
	// The multi-flow evidence (flow on every line, attack.json flows)
	// matches the published schemas.
	if n, err := schemas.ValidateDir(sd); err != nil || n == 0 {
		t.Fatalf("schemas: %d files, %v", n, err)
	}
	perFlow := map[string]map[string]int{}
	if err := evidence.ReadFile(filepath.Join(sd, evidence.RequestsFile), func(_ int, r *evidence.Request) error {
		if perFlow[r.Flow] == nil {
			perFlow[r.Flow] = map[string]int{}
		}
		perFlow[r.Flow][r.Target]++
		if !strings.Contains(r.ID, "-"+strings.ToLower(r.Flow)+"-") {
			t.Errorf("%s: ID without its flow", r.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if perFlow["A"]["proxy-a"] != 10 || perFlow["A"]["proxy-b"] != 10 || perFlow["B"]["proxy-a"] != 6 || perFlow["B"]["proxy-b"] != 0 {
		t.Fatalf("lines per flow and target %v", perFlow)
	}
	b, err := os.ReadFile(evidence.Dir(sd).Attack())
	if err != nil {
		t.Fatal(err)
	}
	a, err := evidence.DecodeAttack(b)
	if err != nil {
		t.Fatal(err)
	}
	fl := a.Phases[0].Flows
	if len(fl) != 2 || fl[0].Config.Flow != "A" || !fl[0].Config.DisableKeepAlives || fl[0].Config.Rate != "200/1s" ||
		strings.Join(fl[0].Config.HeaderNames, ",") != "X-Plan,X-User" || fl[1].Config.Split != string(attack.SplitSticky) || fl[1].Sent != 6 {
		t.Fatalf("flows %+v", fl)
	}
}

func TestParsePlanFlowErrors(t *testing.T) {
	for name, y := range map[string]string{
		"flow without name": "scenarios:\n - {name: a, lab: {}, attack: {flows: [{ids: 1}]}}\n",
		"dup flow":          "scenarios:\n - {name: a, lab: {}, attack: {flows: [{name: x, ids: 1}, {name: x, ids: 2}]}}\n",
		"ids and flows":     "scenarios:\n - {name: a, lab: {}, attack: {ids: 3, flows: [{name: x, ids: 1}]}}\n",
		"duration no rate":  "scenarios:\n - {name: a, lab: {}, attack: {flows: [{name: x, duration: 1s}]}}\n",
		"ids and duration":  "scenarios:\n - {name: a, lab: {}, attack: {flows: [{name: x, ids: 2, duration: 1s, rate: 5}]}}\n",
		"bad flow split":    "scenarios:\n - {name: a, lab: {}, attack: {flows: [{name: x, ids: 2, split: thirds}]}}\n",
		"bad split":         "scenarios:\n - {name: a, lab: {}, attack: {ids: 2, split: thirds}}\n",
	} {
		if _, err := ParsePlan("p.yaml", []byte(y)); err == nil || !strings.HasPrefix(err.Error(), "p.yaml: ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestAttackLabel: a scenario's single attack is "attack" in the progress
// lines (not "attack attack"), a named step keeps its name.
func TestAttackLabel(t *testing.T) {
	for name, want := range map[string]string{"attack": "  attack", "": "  attack", "burst": "  attack burst"} {
		if got := attackLabel(Step{Name: name}); got != want {
			t.Errorf("attackLabel(%q) = %q, want %q", name, got, want)
		}
	}
}
