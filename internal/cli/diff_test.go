package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
)

func TestNewDiffCmd(t *testing.T) {
	testCmd(t, NewDiffCmd, []cmdCase[DiffOptions]{
		{name: "defaults", argv: argv("a b"), want: &DiffOptions{IO: tio, A: "a", B: "b", Format: "table"}},
		{name: "every flag", argv: argv("--format markdown --out diff.md --wide a.json runs/latest"),
			want: &DiffOptions{IO: tio, A: "a.json", B: "runs/latest", Format: "markdown", Out: "diff.md", Wide: true}},
		{name: "json", argv: argv("--format json a b"), want: &DiffOptions{IO: tio, A: "a", B: "b", Format: "json"}},
		{name: "no argument", argv: nil, err: "accepts 2 arg(s), received 0"},
		{name: "one argument", argv: argv("a"), err: "accepts 2 arg(s), received 1"},
		{name: "three arguments", argv: argv("a b c"), err: "accepts 2 arg(s), received 3"},
		{name: "bad format", argv: argv("--format junit a b"), err: `--format must be table, markdown or json, not "junit"`},
	})
}

// runDemoOnce runs the demo plan once under a new root and returns its run
// directory (resolved, not the latest link).
func runDemoOnce(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--quiet", "--root", root); code != ExitOK {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	run, err := filepath.EvalSymlinks(filepath.Join(root, evidence.LatestLink))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// failCopy copies the run directory run and removes two receipts of
// admitted requests from its one scenario directory (rewritten and sealed
// as the backend writes it): the same plan, judged FAIL (admitted without
// receipt).
func failCopy(t *testing.T, run string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "fail")
	if err := os.CopyFS(dst, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	scen, err := filepath.Glob(filepath.Join(dst, "*", "*", evidence.ReceiptsFile))
	if err != nil || len(scen) != 1 {
		t.Fatalf("receipts files %v (%v)", scen, err)
	}
	f, err := os.Open(scen[0])
	if err != nil {
		t.Fatal(err)
	}
	var recs []evidence.Receipt
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r evidence.Receipt
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	f.Close()
	if len(recs) != 10 {
		t.Fatalf("the demo has %d receipts, want 10", len(recs))
	}
	w, err := evidence.Create(scen[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs[2:] {
		if err := w.Write(&recs[2+i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestDiffDemoRuns (issue 26, Done when): the demo plan run once, and a
// copy of its evidence with two receipts lost: `rlbench diff A B` names
// the flipped scenario and the changed counts in every format, exits 3
// (a verdict worse); B against A and A against itself exit 0; a saved
// JSON report works as a side; the JSON validates against its schema.
func TestDiffDemoRuns(t *testing.T) {
	a := runDemoOnce(t)
	b := failCopy(t, a)
	code, out, errOut := runCLI(t, "diff", a, b)
	if code != ExitFail {
		t.Fatalf("diff A B: exit %d, want %d\n%s\n%s", code, ExitFail, out, errOut)
	}
	for _, want := range []string{"Verdict flips", "two local buckets  PASS  FAIL  worse", "receipts", "admitted_without_receipt", "10  8", "Diff: 1 verdict worse"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, `verdict worse in B: "two local buckets" PASS → FAIL`) {
		t.Errorf("stderr %q", errOut)
	}
	md := filepath.Join(t.TempDir(), "diff.md")
	if code, _, errOut := runCLI(t, "diff", "--format", "markdown", "--out", md, a, b); code != ExitFail || !strings.Contains(errOut, "diff: wrote "+md) {
		t.Fatalf("markdown: exit %d: %s", code, errOut)
	}
	body := string(readFile(t, md))
	if !strings.HasPrefix(body, "**rlbench diff: 1 verdict worse") || !strings.Contains(body, "| two local buckets | ✅ PASS | ❌ FAIL | worse  |") {
		t.Errorf("markdown:\n%s", body)
	}
	code, out, errOut = runCLI(t, "diff", "--format", "json", a, b)
	if code != ExitFail {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	if err := schemas.Validate(schemas.Diff, []byte(out)); err != nil {
		t.Fatalf("the JSON does not match its schema: %v", err)
	}
	var d report.Diff
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if !d.Worse || len(d.Flips) != 1 || d.Flips[0].Name != "two local buckets" || len(d.Scenarios) != 1 {
		t.Fatalf("diff %+v", d)
	}
	var rec *report.CountChange
	for i, c := range d.Scenarios[0].Counts {
		if c.Name == "receipts" && c.Target == "" {
			rec = &d.Scenarios[0].Counts[i]
		}
	}
	if rec == nil || rec.A != 10 || rec.B != 8 || rec.Delta != -2 || len(d.Scenarios[0].Config) != 0 || len(d.Config) != 0 {
		t.Fatalf("counts %+v config %+v %+v", d.Scenarios[0].Counts, d.Scenarios[0].Config, d.Config)
	}
	// Better, or the same: exit 0.
	if code, out, errOut := runCLI(t, "diff", b, a); code != ExitOK || !strings.Contains(out, "1 verdict better") ||
		!strings.Contains(out, "two local buckets (was FAIL): admitted without receipt (lost)") {
		t.Fatalf("diff B A: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "diff", a, a); code != ExitOK || !strings.Contains(out, "no verdict changed") {
		t.Fatalf("diff A A: exit %d\n%s\n%s", code, out, errOut)
	}
	// A saved report as A.
	saved := filepath.Join(t.TempDir(), "a.json")
	code, out, _ = runCLI(t, "analyze", "--format", "json", "--status-file", "-", a)
	if code != ExitOK {
		t.Fatalf("analyze: exit %d", code)
	}
	if err := os.WriteFile(saved, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "diff", saved, b); code != ExitFail || !strings.Contains(out, "not known for a saved report") ||
		!strings.Contains(out, "A: "+saved+" (report, PASS, 1 scenario)") {
		t.Fatalf("diff saved B: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestDiffBadInput: a side that does not exist is a usage error naming it;
// a report file cut short or of another schema is an error naming the
// file and line; nothing is printed on stdout.
func TestDiffBadInput(t *testing.T) {
	dir := t.TempDir()
	good := copyDemo(t)
	cut := filepath.Join(dir, "cut.json")
	if err := os.WriteFile(cut, []byte("{\n  \"schema\": \"rlbench.report/v2\",\n  \"scenarios\": [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte("{\n\n  \"schema\": \"rlbench.diff/v1\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope")
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, ExitUsage, "diff needs two evidence or run directories (or saved JSON reports), A before B, e.g. rlbench diff runs/20261130T101500Z-1 "},
		{[]string{missing, good}, ExitUsage, "stat " + missing + ": no such file or directory"},
		{[]string{good, missing}, ExitUsage, "stat " + missing + ": no such file or directory"},
		{[]string{cut, good}, ExitError, cut + ": line 4: unexpected end of JSON input"},
		// Neither a run nor a scenario: not searched for scenarios below it,
		// which would make a wrong path a comparison that passes.
		{[]string{good, empty}, ExitUsage, "diff: " + empty + " is not a run directory (no manifest.json) nor a scenario directory"},
		{[]string{dir, good}, ExitUsage, "diff: " + dir + " is not a run directory"},
		{[]string{good, other}, ExitError, other + `: line 3: schema "rlbench.diff/v1": not a report of rlbench.report/v2`},
	} {
		code, out, errOut := runCLI(t, append([]string{"diff"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.msg) || out != "" {
			t.Errorf("diff %v: exit %d, stderr %q, stdout %q; want %d and %q", c.args, code, errOut, out, c.code, c.msg)
		}
	}
}
