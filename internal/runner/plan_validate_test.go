package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanValidatedAtLoad (issue 10, "validation"): values the run would
// refuse only after starting the lab are refused by ParsePlan, naming the
// file, the line and the field; `rlbench run` maps them to exit 2
// (internal/cli TestRunRefusesBadPlanBeforeStarting).
func TestPlanValidatedAtLoad(t *testing.T) {
	for name, c := range map[string]struct{ plan, want string }{
		"rate 0/1s": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 1\n     rate: 0/1s\n",
			`p.yaml: line 6: `},
		"negative concurrency": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 4\n     concurrency: -1\n",
			`p.yaml: line 6: scenarios[0] (a): attack.concurrency must be >= 0, not -1`},
		"negative timeout": {"scenarios:\n - name: a\n   lab: {}\n   steps:\n    - attack: {ids: 1}\n    - attack:\n        ids: 1\n        timeout: -1s\n",
			`p.yaml: line 8: scenarios[0] (a): steps[1]: attack.timeout must be >= 0, not -1s`},
		"counts not summing": {"scenarios:\n - name: a\n   lab: {proxies: 2}\n   attack:\n     ids: 5\n     split: counts=1,1\n",
			`p.yaml: line 6: scenarios[0] (a): assign: split counts=1,1 sums to 2 but there are 5 ids`},
		"counts for other targets": {"scenarios:\n - name: a\n   lab: {proxies: 3}\n   attack:\n     ids: 2\n     split: counts=1,1\n",
			`p.yaml: line 6: scenarios[0] (a): assign: split counts=1,1 has 2 counts for 3 targets`},
		"senders over max": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 100\n     senders: 65\n",
			`p.yaml: line 6: scenarios[0] (a): attack.senders must be 0..64, not 65`},
		"pipeline over max": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 100\n     pipeline: 1025\n",
			`p.yaml: line 6: scenarios[0] (a): attack.pipeline must be 0..1024, not 1025`},
		"pipeline with a rate": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 100\n     rate: 10/1s\n     pipeline: 8\n",
			`p.yaml: line 7: scenarios[0] (a): attack.pipeline: pipelined requests are written together on keep-alive connections, not with a rate or no_keepalive`},
		"pipeline without keep-alive": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 100\n     no_keepalive: true\n     pipeline: 8\n",
			`p.yaml: line 7: scenarios[0] (a): attack.pipeline: pipelined`},
		"pipeline to two proxies": {"scenarios:\n - name: a\n   lab: {proxies: 2}\n   attack:\n     ids: 100\n     pipeline: 8\n",
			`p.yaml: line 6: scenarios[0] (a): attack.pipeline: consecutive IDs share a connection, so every request goes to one target: not with the scenario's 2 targets`},
		"senders with flows": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     senders: 2\n     flows:\n      - {name: x, ids: 4}\n",
			`p.yaml: line 5: scenarios[0] (a): attack.senders: not with flows`},
		"repeat -2": {"scenarios:\n - name: a\n   lab: {}\n   repeat: -2\n   attack: {ids: 1}\n",
			`p.yaml: line 4: scenarios[0] (a): repeat must be 1..1000 (or absent), not -2`},
		// The tester's plan: repeat 99999999999 allocated scenario directories until OOM.
		"repeat huge": {"scenarios: [{name: s, repeat: 99999999999, lab: {proxies: 1}, attack: {ids: 3}, expect: {admitted: 3}}]\n",
			`p.yaml: line 1: scenarios[0] (s): repeat must be 1..1000 (or absent), not 99999999999`},
		"repeat 1001": {"scenarios:\n - name: a\n   lab: {}\n   repeat: 1001\n   attack: {ids: 1}\n",
			`p.yaml: line 4: scenarios[0] (a): repeat must be 1..1000 (or absent), not 1001`},
		"runs over max": {"scenarios:\n" + manyScenarios(10, 1000) + " - name: k\n   lab: {}\n   repeat: 1\n   attack: {ids: 1}\n",
			`p.yaml: line 14: scenarios[10] (k): the plan's scenarios and repeats add up to more than 10000 scenario runs`},
		// Tester report 1, item 4: a misspelt class ran the lab, then FAILed "got unknown class".
		"unknown class": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     admitted: 3\n     classes: {local429: 0}\n",
			`p.yaml: line 7: scenarios[0] (a): expect.classes.local429: unknown class "local429"; want one of no_response, admitted, local_429,`},
		"sent and passed are classes": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     classes: {sent: 3, passed: 3, nosuch: 1}\n",
			`p.yaml: line 6: scenarios[0] (a): expect.classes.nosuch: unknown class`},
		"negative class": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     classes:\n       local_429: -3..-1\n",
			`p.yaml: line 7: scenarios[0] (a): expect.classes.local_429 -3..-1: want 0 <= min <= max`},
		"negative admitted": {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 3}\n   expect:\n     admitted: {min: -5, max: -1}\n",
			`p.yaml: line 6: scenarios[0] (a): expect.admitted -5..-1: want 0 <= min <= max`},
		// The tester's panic: makeslice in attack.IDs, after the lab had started.
		"ids maxint": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 9223372036854775807\n",
			`p.yaml: line 5: scenarios[0] (a): attack.ids 9223372036854775807: more than 10000000 ids, the most one attack sends`},
		"ids over max": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 10000001\n",
			`p.yaml: line 5: scenarios[0] (a): attack.ids 10000001: more than 10000000 ids`},
		"flow ids over max": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - name: x\n        ids: 9223372036854775807\n",
			`p.yaml: line 7: scenarios[0] (a): attack.flows[0] (x): more than 10000000 ids`},
		"flow rate x duration over max": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - name: x\n        rate: 1000000000/1s\n        duration: 10000h\n",
			`p.yaml: line 8: scenarios[0] (a): attack.flows[0] (x): more than 10000000 ids`},
		"flows sum over max": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - {name: x, ids: 6000000}\n      - {name: y, ids: 6000000}\n",
			`p.yaml: line 7: scenarios[0] (a): attack.flows[0..1]: more than 10000000 ids`},
		"negative proxies": {"scenarios:\n - name: a\n   lab:\n     proxies: -1\n   attack: {ids: 1}\n",
			`p.yaml: line 4: scenarios[0] (a): lab.proxies must be >= 1`},
		"negative intended limit": {"scenarios:\n - name: a\n   intended_limit: -5\n   lab: {}\n   attack: {ids: 1}\n",
			`p.yaml: line 3: scenarios[0] (a): intended_limit must be >= 0, not -5`},
		"bad method": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 1\n     method: G T\n",
			`p.yaml: line 6: scenarios[0] (a): attack: invalid attack options: method "G T" is not an HTTP token`},
		"crlf in header": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 1\n     headers:\n       x-a: \"1\\r\\nx-b: 2\"\n",
			`p.yaml: line 6: scenarios[0] (a): attack: invalid attack options: the value of x-a holds a control character`},
		"flow counts": {"scenarios:\n - name: a\n   lab: {proxies: 2}\n   attack:\n     flows:\n      - {name: x, ids: 2}\n      - name: z\n        ids: 3\n        split: counts=1,1\n",
			`p.yaml: line 9: scenarios[0] (a): attack.flows[1] (z): assign: split counts=1,1 sums to 2 but there are 3 ids`},
		"flow concurrency": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows:\n      - name: x\n        ids: 2\n        concurrency: -2\n",
			`p.yaml: line 8: scenarios[0] (a): attack.flows[0] (x): concurrency must be >= 0, not -2`},
		"negative at": {"scenarios:\n - name: a\n   lab: {rls: {config: 'domain: d'}}\n   steps:\n    - fault: {action: stop, target: rls, at: -1s}\n    - attack: {ids: 1}\n",
			`p.yaml: line 5: scenarios[0] (a): steps[0]: at must be >= 0, not -1s`},
	} {
		_, err := ParsePlan("p.yaml", []byte(c.plan))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err %v, want prefix %q", name, err, c.want)
		}
	}
}

// manyScenarios is n one-line scenarios s0, s1, ... of repeat each.
func manyScenarios(n, repeat int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, " - {name: s%d, lab: {}, repeat: %d, attack: {ids: 1}}\n", i, repeat)
	}
	return b.String()
}

// TestPlanNamesThatBecomePaths (issue 10, "path traversal": plan proxy
// names were used in file names unchecked, `../../..` wrote outside the
// evidence directory): an external proxy name is an evidence.CheckName
// name, refused at load with its line; a scenario name is a label whose
// directory is its slug, which never leaves the run directory.
func TestPlanNamesThatBecomePaths(t *testing.T) {
	for _, bad := range []string{"../../..", "../x", "/etc/x", "a/b", `a\\b`, "a\\0b", "be.fore"} {
		y := "scenarios:\n - name: a\n   external:\n     proxies:\n      - name: \"" + bad + "\"\n        url: http://127.0.0.1:1\n   attack: {ids: 1}\n"
		_, err := ParsePlan("p.yaml", []byte(y))
		if err == nil || !strings.HasPrefix(err.Error(), "p.yaml: line 5: scenarios[0] (a): external.proxies[0].name") || !strings.Contains(err.Error(), "must be a simple name") {
			t.Errorf("proxy name %q: %v", bad, err)
		}
	}
	y := "scenarios:\n - name: a\n   external:\n     proxies:\n      - {name: p, url: http://127.0.0.1:1}\n      - {name: p, url: http://127.0.0.1:2}\n   attack: {ids: 2}\n"
	if _, err := ParsePlan("p.yaml", []byte(y)); err == nil || !strings.Contains(err.Error(), `line 6: scenarios[0] (a): external.proxies[1].name "p": duplicate`) {
		t.Errorf("duplicate proxy: %v", err)
	}
	if _, err := ParsePlan("p.yaml", []byte("scenarios:\n - name: \"a\\0b\"\n   lab: {}\n   attack: {ids: 1}\n")); err == nil || !strings.Contains(err.Error(), "line 2: scenarios[0]: name") {
		t.Errorf("NUL in a scenario name: %v", err)
	}
	if _, err := ParsePlan("p.yaml", []byte("scenarios:\n - name: \"../..\"\n   lab: {}\n   attack: {ids: 1}\n")); err == nil || !strings.Contains(err.Error(), "want a label with letters or digits") {
		t.Errorf("scenario name without letters: %v", err)
	}
	// Scenario names with separators run in a directory of the run.
	p, err := ParsePlan("p.yaml", []byte("root: ROOT\nscenarios:\n - name: ../../escape\n   lab: {proxies: 1}\n   attack: {ids: 1}\n - name: /etc/abs\n   lab: {proxies: 1}\n   attack: {ids: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	p.Root = root
	dir, err := Run(t.Context(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"01-escape/1/requests.jsonl", "02-etc-abs/1/requests.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("%v", err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(root))
	if len(entries) != 1 {
		t.Errorf("the run wrote beside its root: %v", entries)
	}
}
