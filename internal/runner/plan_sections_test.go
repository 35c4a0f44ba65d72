package runner

import (
	"fmt"
	"testing"

	"github.com/rlbench/rlbench/internal/lab"
)

// TestPlanSectionErrors: each plan section refuses its own bad values when
// the plan loads (ParsePlan), and the scenario refuses references across
// sections (a backend fault without a lab, an rls fault with lab.nginx, a
// timed fault without an attack after it); the error names the file, the
// line, the scenario and step, and the field. When a plan has several
// errors the first in plan order is reported: a scenario's own fields,
// then its steps, then its lab, expect, classify, limiters and simulate.
func TestPlanSectionErrors(t *testing.T) {
	for _, c := range []struct{ name, plan, want string }{
		{"no scenarios",
			"name: x\n",
			"p.yaml: no scenarios"},
		{"scenario name required",
			"scenarios:\n - lab: {}\n   attack: {ids: 1}\n",
			"p.yaml: line 2: scenarios[0]: name is required"},
		{"duplicate scenario",
			"scenarios:\n - {name: a, lab: {}, attack: {ids: 1}}\n - {name: A, lab: {}, attack: {ids: 1}}\n",
			"p.yaml: line 3: scenarios[1] (A): duplicate scenario name"},
		{"lab and external",
			"scenarios:\n - name: a\n   lab: {}\n   external: {proxies: [{name: p, url: 'http://127.0.0.1:1'}]}\n   attack: {ids: 1}\n",
			"p.yaml: line 2: scenarios[0] (a): exactly one of lab or external is required"},
		{"neither lab nor external",
			"scenarios:\n - name: a\n   attack: {ids: 1}\n",
			"p.yaml: line 2: scenarios[0] (a): exactly one of lab or external is required"},
		{"attack and steps",
			"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1}\n   steps: [{attack: {ids: 1}}]\n",
			"p.yaml: line 4: scenarios[0] (a): give attack or steps, not both"},
		{"step with neither",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - name: x\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: exactly one of attack or fault"},
		{"step with both",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - attack: {ids: 1}\n      fault: {action: exec, command: 'true', target: x}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: exactly one of attack or fault"},
		{"fault target",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: stop, target: backend}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: fault target must be rls or redis, not \"backend\""},
		{"exec without command",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: exec, target: x}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: exec needs a command"},
		{"set on rls",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: set, target: rls, faults: {error_status: 503, error_probability: 1}}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: set applies to target backend, not \"rls\""},
		{"backend fault external",
			"scenarios:\n - name: a\n   external: {proxies: [{name: p, url: 'http://127.0.0.1:1'}]}\n   steps:\n    - fault: {action: clear, target: backend}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: backend faults need a lab scenario"},
		{"set without faults",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: set, target: backend}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: set needs faults"},
		{"clear with faults",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: clear, target: backend, faults: {error_status: 503}}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: clear takes no faults or for"},
		{"clear with for",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: clear, target: backend, for: 1s}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: clear takes no faults or for"},
		{"bad faults",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault:\n        action: set\n        target: backend\n        faults: {error_probability: 2}\n    - attack: {ids: 1}\n",
			"p.yaml: line 8: scenarios[0] (a): steps[0]: backend faults: error_probability 2: want 0..1"},
		{"no endpoint",
			"scenarios:\n - name: a\n   lab: {backend: {endpoints: 2}}\n   steps:\n    - fault:\n        action: set\n        target: backend\n        endpoints: [0, 2]\n        faults: {error_status: 503, error_probability: 1}\n    - attack: {ids: 1}\n",
			"p.yaml: line 8: scenarios[0] (a): steps[0]: no backend endpoint 2 (the lab has 2)"},
		{"no endpoint default",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: clear, target: backend, endpoints: [-1]}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: no backend endpoint -1 (the lab has 1)"},
		{"fault action",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: pause, target: rls}\n    - attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): steps[0]: fault action must be stop, start, restart, exec, set or clear, not \"pause\""},
		{"negative for",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault:\n        action: stop\n        target: redis\n        for: -2s\n    - attack: {ids: 1}\n",
			"p.yaml: line 8: scenarios[0] (a): steps[0]: for must be >= 0, not -2s"},
		{"no attack",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - fault: {action: exec, target: x, command: 'true'}\n",
			"p.yaml: line 2: scenarios[0] (a): no attack"},
		{"at without attack after",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - attack: {ids: 1}\n    - fault: {action: exec, target: x, command: 'true'}\n    - fault: {action: exec, target: y, command: 'true', at: 1s}\n",
			"p.yaml: line 7: scenarios[0] (a): steps[2]: a fault with at: needs an attack step after it"},
		{"for without attack after",
			"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - attack: {ids: 1}\n    - fault: {action: clear, target: backend}\n    - fault:\n        action: set\n        target: backend\n        for: 1s\n        faults: {error_status: 503, error_probability: 1}\n",
			"p.yaml: line 10: scenarios[0] (a): steps[2]: a fault with for: needs an attack step after it"},
		{"nginx with proxies",
			"scenarios:\n - name: a\n   lab:\n     proxies: 2\n     nginx: {rate: 10r/s}\n   attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): lab.nginx replaces the lab proxies: leave out proxies, local, global, rls, proxy and cluster"},
		{"nginx fault on rls",
			"scenarios:\n - name: a\n   lab:\n     nginx: {rate: 10r/s}\n   steps:\n    - attack: {ids: 1}\n    - fault: {action: stop, target: rls}\n    - attack: {ids: 1}\n",
			"p.yaml: line 7: scenarios[0] (a): steps[1]: a scenario with lab.nginx has no rls"},
		{"global without rls",
			"scenarios:\n - name: a\n   lab:\n     global: {domain: d}\n   attack: {ids: 1}\n",
			"p.yaml: line 4: scenarios[0] (a): lab.global needs lab.rls"},
		{"rls kind",
			"scenarios:\n - name: a\n   lab:\n     rls:\n       kind: fake\n       config: 'domain: d'\n   attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): lab.rls.kind must be lab or real"},
		{"rls config",
			"scenarios:\n - name: a\n   lab:\n     rls:\n       config: 'domain: ['\n   attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): lab.rls.config:1: error loading config file: did not find expected node content"},
		{"lab options",
			"scenarios:\n - name: a\n   lab:\n     local: {max_tokens: 0, fill_interval: 1s}\n   attack: {ids: 1}\n",
			"p.yaml: line 4: scenarios[0] (a): lab: local rate limit: max_tokens: must be > 0 (Envoy's token_bucket.proto: max_tokens uint32 gt 0; a release that allows 0 rejects every request with it)"},
		{"backend peak",
			"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1}\n   expect:\n     limit_req_status: {nosuch: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): expect.limit_req_status.nosuch: want one of PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN, none"},
		{"classify",
			"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1}\n   classify:\n    - {status: 503, class: nosuch}\n",
			"p.yaml: line 5: scenarios[0] (a): classify[0]: class \"nosuch\": want one of admitted, local_429, global_429, rls_error, other_4xx, other_5xx, other, backend_4xx, backend_429, backend_5xx, circuit_breaker (not no_response)"},
		{"limiters",
			"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1}\n   limiters:\n    - {name: x, stage: local, key: shared}\n",
			"p.yaml: line 6: scenarios[0] (a): limiters[0].model, rls: give exactly one"},
		{"simulate",
			"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1}\n   simulate: {row: r}\n",
			"p.yaml: line 5: scenarios[0] (a): simulate: give row and column together"},
		{"external empty",
			"scenarios:\n - name: a\n   external: {proxies: []}\n   attack: {ids: 1}\n",
			"p.yaml: line 3: scenarios[0] (a): external.proxies is empty"},
		{"external url",
			"scenarios:\n - name: a\n   external:\n     proxies:\n      - {name: p, url: 'ftp://u:secret@h/'}\n   attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): external.proxies[0].url \"ftp://u:xxxxx@h/\": want http(s)://host[:port][/prefix]"},
		{"external admin",
			"scenarios:\n - name: a\n   external:\n     proxies:\n      - name: p\n        url: http://127.0.0.1:1\n        admin: 127.0.0.1:2\n   attack: {ids: 1}\n",
			"p.yaml: line 7: scenarios[0] (a): external.proxies[0].admin \"127.0.0.1:2\": want http(s)://host[:port][/prefix]"},
		{"external receipts",
			"scenarios:\n - name: a\n   external:\n     proxies: [{name: p, url: 'http://127.0.0.1:1'}]\n     receipts_url: /r\n   attack: {ids: 1}\n",
			"p.yaml: line 5: scenarios[0] (a): external.receipts_url \"/r\": want http(s)://host[:port]/_rlbench/receipts"},
		{"ids zero",
			"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 0}\n",
			"p.yaml: line 4: scenarios[0] (a): attack.ids must be > 0"},
		{"flows with ids",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 2\n     flows: [{name: x, ids: 1}]\n",
			"p.yaml: line 4: scenarios[0] (a): attack: with flows, set ids, split, seed, concurrency, rate, method, path and body in each flow"},
		{"flow name",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - ids: 1\n",
			"p.yaml: line 6: scenarios[0] (a): attack.flows[0]: name is required"},
		{"flow duplicate",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - {name: x, ids: 1}\n      - {name: x, ids: 1}\n",
			"p.yaml: line 7: scenarios[0] (a): attack.flows[1] (x): duplicate flow name"},
		{"flow negative",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - {name: x, ids: -1}\n",
			"p.yaml: line 6: scenarios[0] (a): attack.flows[0] (x): ids and duration must be positive"},
		{"flow both",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - {name: x, ids: 1, rate: 1/1s, duration: 1s}\n",
			"p.yaml: line 6: scenarios[0] (a): attack.flows[0] (x): give ids or duration (with rate), not both or neither"},
		{"flow duration without rate",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - name: x\n        duration: 1s\n",
			"p.yaml: line 7: scenarios[0] (a): attack.flows[0] (x): duration needs a rate (the IDs are rate x duration)"},
		{"flow no request",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - {name: x, rate: 1/1h, duration: 1s}\n",
			"p.yaml: line 6: scenarios[0] (a): attack.flows[0] (x): rate 1/1h0m0s over 1s is no request"},
		{"flow path",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - name: x\n        ids: 1\n        path: 'no slash'\n",
			"p.yaml: line 8: scenarios[0] (a): attack.flows[0] (x): attack: invalid attack options: path \"no slash\" must start with '/'"},
		{"flow split",
			"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - name: x\n        ids: 1\n        split: nosuch\n",
			"p.yaml: line 8: scenarios[0] (a): attack.flows[0] (x): split \"nosuch\": want even, sticky, counts=N,N,... or weights=W,W,..."},
		{"order: repeat before steps",
			"scenarios:\n - name: a\n   lab: {}\n   repeat: -1\n   steps:\n    - name: x\n",
			"p.yaml: line 4: scenarios[0] (a): repeat must be 1..1000 (or absent), not -1"},
		{"order: steps before lab",
			"scenarios:\n - name: a\n   lab:\n     global: {domain: d}\n   steps:\n    - name: x\n",
			"p.yaml: line 6: scenarios[0] (a): steps[0]: exactly one of attack or fault"},
		{"order: lab before expect",
			"scenarios:\n - name: a\n   lab:\n     global: {domain: d}\n   attack: {ids: 1}\n   expect: {admitted: -1}\n",
			"p.yaml: line 4: scenarios[0] (a): lab.global needs lab.rls"},
		{"order: first scenario first",
			"scenarios:\n - {name: a, lab: {}, attack: {ids: 0}}\n - {lab: {}, attack: {ids: 1}}\n",
			"p.yaml: line 2: scenarios[0] (a): attack.ids must be > 0"},
	} {
		_, err := ParsePlan("p.yaml", []byte(c.plan))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err %v\nwant %s", c.name, err, c.want)
		}
	}
}

// TestPlanDefaults: validation fills the defaults the run relies on: the
// attack shorthand becomes one step named attack, unnamed steps are
// attack<N> and "<action> <target>", repeat 1, lab.DefaultProxies proxies
// and the lab RLS.
func TestPlanDefaults(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte("scenarios:\n - name: a\n   lab: {rls: {config: 'domain: d'}}\n   steps:\n    - fault: {action: stop, target: rls, at: 1s}\n    - attack: {ids: 1}\n    - {name: two, attack: {ids: 1}}\n    - attack: {ids: 1}\n - name: b\n   lab: {}\n   attack: {ids: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Scenarios[0], p.Scenarios[1]
	var names []string
	for _, st := range a.Steps {
		names = append(names, st.Name)
	}
	if got, want := fmt.Sprint(names), "[stop rls attack1 two attack3]"; got != want {
		t.Errorf("step names %s, want %s", got, want)
	}
	if a.Repeat != 1 || a.Lab.Proxies != lab.DefaultProxies || a.Lab.RLS.Kind != RLSLab {
		t.Errorf("defaults: repeat %d, proxies %d, rls kind %q", a.Repeat, a.Lab.Proxies, a.Lab.RLS.Kind)
	}
	if b.Attack != nil || len(b.Steps) != 1 || b.Steps[0].Name != "attack" || b.Steps[0].Attack.IDs != 1 {
		t.Errorf("attack shorthand: attack %v, steps %+v", b.Attack, b.Steps)
	}
}
