package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesBadPlanBeforeStarting (issue 10, "validation": plans with
// negative concurrency, counts= not summing to the ids, repeat: -2 started
// the lab before failing): `rlbench run` exits 2 naming the file, line and
// field, and creates no run directory.
func TestRunRefusesBadPlanBeforeStarting(t *testing.T) {
	for name, c := range map[string]struct{ plan, want string }{
		"concurrency": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 2\n     concurrency: -3\n", "line 6: scenarios[0] (a): attack.concurrency must be >= 0"},
		"counts":      {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     ids: 2\n     split: counts=5,5\n", "line 6: scenarios[0] (a): assign: split counts=5,5 sums to 10 but there are 2 ids"},
		"repeat":      {"scenarios:\n - name: a\n   lab: {}\n   repeat: -2\n   attack: {ids: 1}\n", "line 4: scenarios[0] (a): repeat must be 1..1000"},
		"huge repeat": {"scenarios: [{name: s, repeat: 99999999999, lab: {proxies: 1}, attack: {ids: 3}, expect: {admitted: 3}}]\n", "line 1: scenarios[0] (s): repeat must be 1..1000 (or absent), not 99999999999"},
		"huge ids":    {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 9223372036854775807}\n", "line 4: scenarios[0] (a): attack.ids 9223372036854775807: more than 10000000 ids"},
		"ids type":    {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: three}\n", `line 4: scenarios[0].attack.ids: want a whole number, not the string "three"`},
		"rate":        {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1, rate: 0/1s}\n", "line 4: "},
		// Values refused by their own decoder name the field and line too.
		"rate 1e300":    {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1, rate: 1e300}\n", `line 4: scenarios[0].attack.rate: rate "1e+300": want N/duration`},
		"latency":       {"scenarios:\n - name: a\n   lab: {backend: {faults: {latency: fast}}}\n   attack: {ids: 1}\n", `line 3: scenarios[0].lab.backend.faults.latency: latency "fast"`},
		"range":         {"scenarios:\n - name: a\n   lab: {}\n   attack: {ids: 1}\n   expect: {admitted: {min: many}}\n", `line 5: scenarios[0].expect.admitted: want N, "MIN..MAX", {min, max} or "model", not {"min":"many"}`},
		"flow duration": {"scenarios:\n - name: a\n   lab: {}\n   attack:\n     flows: [{name: x, rate: 5/1s, duration: 5y}]\n", `line 5: scenarios[0].attack.flows[0].duration: time: unknown unit "y"`},
	} {
		dir := t.TempDir()
		plan := filepath.Join(dir, "plan.yaml")
		if err := os.WriteFile(plan, []byte(c.plan), 0o644); err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(dir, "ev")
		code, _, stderr := runCLI(t, "run", "--root", root, "-q", plan)
		if code != ExitUsage || !strings.Contains(stderr, plan+": "+c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", name, code, stderr, ExitUsage, c.want)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("%s: %s exists: the plan ran", name, root)
		}
		// simulate loads plans the same way: the same exit and message.
		if code, _, stderr := runCLI(t, "simulate", plan); code != ExitUsage || !strings.Contains(stderr, plan+": "+c.want) {
			t.Errorf("simulate %s: exit %d, stderr %q; want exit %d and %q", name, code, stderr, ExitUsage, c.want)
		}
	}
}

// TestAnalyzeReportsWhenStatusUnwritable (issue 10, "a read-only evidence
// directory gives no report at all"): when status.txt cannot be written,
// analyze warns on stderr, still prints the report, and exits with the
// verdict's code (0 PASS, 3 FAIL). The test stands a directory where
// status.txt goes, which refuses the write even to root.
func TestAnalyzeReportsWhenStatusUnwritable(t *testing.T) {
	scenario := func(admitted string) string {
		dir := t.TempDir()
		files := map[string]string{
			"scenario.json":  `{"schema":"rlbench.scenario/v1","name":"s","expect":{"admitted":` + admitted + `,"receipts_equal_admitted":true}}`,
			"attack.json":    `{"complete":true,"sent":1}`,
			"requests.jsonl": `{"id":"a","target":"p","code":200,"sent_ns":1,"latency_ns":1}` + "\n",
			"receipts.jsonl": `{"id":"a","recv_ns":1}` + "\n",
		}
		for n, b := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(dir, "status.txt"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for admitted, want := range map[string]struct {
		code    int
		verdict string
	}{"1": {ExitOK, "Verdict: PASS"}, "5": {ExitFail, "Verdict: FAIL"}} {
		code, stdout, stderr := runCLI(t, "analyze", scenario(admitted))
		if code != want.code || !strings.Contains(stdout, want.verdict) || !strings.Contains(stderr, "warning: status.txt not written") {
			t.Errorf("admitted %s: exit %d (want %d)\nstdout %s\nstderr %s", admitted, code, want.code, stdout, stderr)
		}
	}
}
