package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/testfix"
)

// planLineRE matches an error naming a line of plan.yaml: the plan's
// "plan.yaml: line N: " and yamlguard's "plan.yaml:N: ".
var planLineRE = regexp.MustCompile(`^plan\.yaml:(?: line )?(\d+): `)

// FuzzParsePlan: whatever ParsePlan accepts is a valid plan (validate's
// invariants hold, with defaults applied), and its JSON rendering, which is
// YAML too, parses back to the same plan. Errors name the file, and a line
// of it when they name one. Seeds: the shipped example plans and the
// plans of the unit tests.
func FuzzParsePlan(f *testing.F) {
	root := testfix.RepoRoot(f)
	for _, p := range []string{"examples/demo/plan.yaml", "examples/e06/plan.yaml", "examples/real-rls/plan.yaml", "examples/envoy/rlbench/plan.yaml", "examples/conformance/plan.yaml", "examples/haproxy/plan.yaml", "examples/istio/plan.yaml", "examples/gateway/plan.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("scenarios:\n - {name: A b, lab: {}, attack: {ids: 3}, expect: {admitted: \"2..3\", classes: {local_429: 0}}}\n"))
	f.Add([]byte("scenarios:\n - {name: a, lab: {local: {max_tokens: 1, fill_interval: 1s}}, steps: [{fault: {action: stop, target: rls, at: 1s}}, {attack: {ids: 1}}]}\n"))
	f.Add([]byte(realPlanYAML))
	f.Add([]byte(conformancePlanYAML))
	f.Add([]byte("conformance: {limiters: [{name: a, lab: {}, skip: [classes]}], shapes: [{name: b, attack: {ids: 2}, expect: {admitted: model}}]}\n"))
	// lab.gateway (its Lua script relative to the plan, here the test's directory).
	f.Add([]byte("scenarios: [{name: s, lab: {gateway: {key: \"header:x-user\", xrate: {rate: 100, burst: 50, per_key: true}}}, attack: {ids: 3}, expect: {admitted: model}}]\n"))
	f.Add([]byte("scenarios: [{name: s, lab: {gateway: {lua: {script: ../../examples/gateway/token-bucket-gateway.lua, keys: [\"{key}\"], args: [2000, 1000, \"{now}\"], now: {unit: s, decimals: 3}, claim: {token_bucket: {capacity: 2000, rate: 1000}}}}}, attack: {ids: 3}}]\n"))
	f.Add([]byte("scenarios: [{name: s, lab: {gateway: {key: route, gcra: {rate: 10, burst: 5, period: 1m}}}, attack: {ids: 3}}]\n"))
	// Bounds (tester report 1, items 1 and 2): counts that exhausted memory or panicked.
	f.Add([]byte("scenarios: [{name: s, repeat: 99999999999, lab: {proxies: 1}, attack: {ids: 3}, expect: {admitted: 3}}]\n"))
	f.Add([]byte("scenarios: [{name: s, lab: {}, attack: {ids: 9223372036854775807}}]\n"))
	f.Add([]byte("scenarios: [{name: s, lab: {}, attack: {flows: [{name: x, rate: 1000000000/1s, duration: 10000h}]}}]\n"))
	f.Add([]byte("scenarios: [{name: s, lab: {}, attack: {flows: [{name: x, ids: 6000000}, {name: y, ids: 6000000}]}}]\n"))
	// Type errors (item 3): named by line and plan path.
	f.Add([]byte("scenarios: [{name: s, lab: {proxies: [1]}, attack: {ids: \"three\"}}]\n"))
	f.Add([]byte("scenarios:\n - name: s\n   lab: {local: {max_tokens: 1e30, fill_interval: 1s}}\n   attack: {ids: 99999999999999999999}\n"))
	f.Add([]byte("x: &a [1, *a]\nscenarios: *a\n"))
	// A second YAML document is an error at its line; a lone trailing "---" is not.
	f.Add([]byte("scenarios: [{name: s, lab: {}, attack: {ids: 3}}]\n---\nscenarios: [{name: t, lab: {}, attack: {ids: 3}}]\n"))
	f.Add([]byte("scenarios: [{name: s, lab: {}, attack: {ids: 3}}]\n---\n# end\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan("plan.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plan.yaml: ") && !strings.HasPrefix(err.Error(), "plan.yaml:") {
				t.Fatalf("error %q does not name the file", err)
			}
			if m := planLineRE.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[1])
				// YAML's line breaks: CR LF, LF and a lone CR (YAML 1.2, 5.4).
				lines := strings.Count(strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n"), "\n") + 1
				if n < 1 || n > lines {
					t.Fatalf("error %q names line %d of a %d-line plan", err, n, lines)
				}
			}
			return
		}
		checkPlan(t, p)
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("plan does not marshal: %v", err)
		}
		again, err := ParsePlan("again.yaml", b)
		if err != nil {
			t.Fatalf("rendering does not parse: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(again, p) {
			t.Fatalf("re-parse differs:\n%+v\n%+v", p, again)
		}
	})
}

func checkPlan(t *testing.T, p *Plan) {
	t.Helper()
	if len(p.Scenarios) == 0 {
		t.Fatal("plan without scenarios accepted")
	}
	seen := map[string]bool{}
	for _, s := range p.Scenarios {
		if s.Name == "" || seen[slug(s.Name)] {
			t.Fatalf("scenario name %q empty or duplicate", s.Name)
		}
		seen[slug(s.Name)] = true
		if (s.Lab == nil) == (s.External == nil) || s.Attack != nil || s.Repeat < 1 || s.Repeat > MaxRepeat {
			t.Fatalf("scenario %q: lab/external/attack/repeat invariants broken: %+v", s.Name, s)
		}
		checkPlanSteps(t, &s)
		// lab.nginx, lab.gateway and lab.haproxy replace the lab proxies (0 of them)
		if l := s.Lab; l != nil && (l.Nginx == nil && l.HAProxy == nil && l.Gateway == nil && (l.Proxies < 1 || l.Proxies > 26) ||
			(l.Nginx != nil || l.HAProxy != nil) && l.Proxies != 0 || (l.RLS != nil && l.RLS.Kind != "lab" && l.RLS.Kind != "real")) {
			t.Fatalf("scenario %q: lab %+v", s.Name, l)
		}
		if g := s.Lab.gatewayOrNil(); g != nil && (g.limiterKind() == "" || g.Lua != nil && g.Lua.Script == "") {
			t.Fatalf("scenario %q: lab.gateway %+v", s.Name, g)
		}
		if l := s.Lab; l != nil && l.HAProxy != nil {
			if h := l.HAProxy; h.Limit < 1 || time.Duration(h.Period) < time.Millisecond || time.Duration(h.Period)%time.Millisecond != 0 ||
				h.Instances < 0 || h.Instances > 26 {
				t.Fatalf("scenario %q: lab.haproxy %+v", s.Name, h)
			}
		}
		if e := s.External; e != nil {
			for _, px := range e.Proxies {
				if err := evidence.CheckName("proxy", px.Name); err != nil {
					t.Fatalf("scenario %q: %v", s.Name, err)
				}
			}
		}
		if a := s.Expect.Admitted; a != nil && !a.Model && (a.Range.Min < 0 || a.Range.Min > a.Range.Max) {
			t.Fatalf("scenario %q: admitted %v", s.Name, a)
		}
	}
}

// checkPlanSteps: every step of an accepted scenario is one attack or one
// fault and has a name, every attack has ids > 0 or flows (at most attack.MaxIDs
// with its flows), concurrency and timeout >= 0, and there is an attack.
func checkPlanSteps(t *testing.T, s *ScenarioPlan) {
	t.Helper()
	attacks := 0
	for _, st := range s.Steps {
		if (st.Attack == nil) == (st.Fault == nil) || st.Name == "" {
			t.Fatalf("scenario %q: bad step %+v", s.Name, st)
		}
		if st.Attack == nil {
			continue
		}
		attacks++
		if a := st.Attack; (a.IDs <= 0 && len(a.Flows) == 0) || a.Concurrency < 0 || a.Timeout < 0 {
			t.Fatalf("scenario %q: attack of %d ids, concurrency %d, timeout %s", s.Name, a.IDs, a.Concurrency, time.Duration(a.Timeout))
		}
		total := st.Attack.IDs
		for i := range st.Attack.Flows {
			total += st.Attack.Flows[i].ids()
		}
		if total > attack.MaxIDs {
			t.Fatalf("scenario %q: attack of %d ids accepted (attack.MaxIDs %d)", s.Name, total, attack.MaxIDs)
		}
	}
	if attacks == 0 {
		t.Fatalf("scenario %q without attack", s.Name)
	}
}
