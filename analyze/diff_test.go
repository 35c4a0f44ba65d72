package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
)

// diffRun writes a run directory under dir (relative to the working
// directory) holding a manifest with planDigest and one scenario directory
// per ev, NN-<i>/1 with repeat 1.
func diffRun(t *testing.T, dir, planDigest string, evs ...*ev) string {
	t.Helper()
	var sub []string
	var names []string
	for i, e := range evs {
		d := fmt.Sprintf("%02d-s%d/1", i+1, i+1)
		e.dir = filepath.Join(dir, d)
		must(t, os.MkdirAll(e.dir, 0o755))
		e.scenario.Repeat = 1
		e.write()
		sub = append(sub, d)
		names = append(names, e.scenario.Name)
	}
	m := evidence.Manifest{Schema: evidence.ManifestSchema, Plan: "diff", PlanDigest: planDigest, Scenarios: names, ScenarioDirs: sub}
	b, err := json.Marshal(m)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, evidence.ManifestFile), b, 0o644))
	return dir
}

// diffSide judges dir and builds its diff side.
func diffSide(t *testing.T, dir string) *report.DiffSide {
	t.Helper()
	b, err := evidence.Load(context.Background(), dir)
	must(t, err)
	rep := Judge(b, Options{Now: func() time.Time { return time.Unix(0, t0) }})
	side, err := DiffSide(context.Background(), dir, b, rep)
	must(t, err)
	return side
}

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// diffPair writes the PASS run A and the FAIL run B of one plan, in the
// working directory as runs/a and runs/b:
//   - "two local buckets" passes in A; in B two more requests of proxy-a
//     were admitted (12 of 20, receipts too): FAIL, and its admitted
//     latency went from 1ms to 3ms;
//   - "steady" passes on both sides, B's description differs (a config
//     change), its limits' start_ns and its target URL's loopback port
//     differ too (not configuration);
//   - "retired" runs in A only, "added" in B only.
func diffPair(t *testing.T) (a, b string) {
	t.Helper()
	t.Chdir(t.TempDir())
	mk := func(name string, startNs int64, port int, desc string) *ev {
		e := newEv(t).demo()
		e.scenario.Name, e.scenario.Description = name, desc
		e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Hour), StartNs: startNs}}
		e.attack["schema"] = evidence.AttackSchema
		e.attack["phases"] = []any{map[string]any{"complete": true, "config": map[string]any{"rate": "0", "ids": 20, "fd_open": port,
			"targets": []any{map[string]any{"name": "proxy-a", "url": fmt.Sprintf("http://127.0.0.1:%d", port)}}}}}
		return e
	}
	passA := mk("two local buckets", t0, 1000, "")
	steadyA := mk("steady", t0, 1000, "each proxy has its own bucket")
	retired := mk("retired", t0, 1000, "")
	a = diffRun(t, filepath.Join("runs", "a"), digestA, passA, steadyA, retired)

	failB := mk("two local buckets", t0+5, 2000, "")
	for _, i := range []int{10, 12} { // proxy-a's: admitted, with receipts
		r := &failB.requests[i]
		r.Code, r.Body, r.BytesIn = 200, "", 10
		failB.receipts = append(failB.receipts, evidence.Receipt{ID: sp(r.ID), RecvNs: r.SentNs + 500})
	}
	for i := range failB.requests {
		if failB.requests[i].Code == 200 {
			failB.requests[i].LatencyNs = 3_000_000
		}
	}
	steadyB := mk("steady", t0+7, 3000, "each proxy has a bucket of its own")
	added := mk("added", t0, 1000, "")
	b = diffRun(t, filepath.Join("runs", "b"), digestB, failB, steadyB, added)
	return a, b
}

func findScenario(d *report.Diff, name string) *report.ScenarioDiff {
	for i := range d.Scenarios {
		if d.Scenarios[i].Name == name {
			return &d.Scenarios[i]
		}
	}
	return nil
}

func findCount(s *report.ScenarioDiff, target, name string) *report.CountChange {
	for i := range s.Counts {
		if s.Counts[i].Target == target && s.Counts[i].Name == name {
			return &s.Counts[i]
		}
	}
	return nil
}

// TestDiffNamesFlipAndCounts (issue 26, Done when): the diff of a PASS run
// and a FAIL run of the same plan names the flipped scenario, with the
// counts, ranges and checks that changed, the latency deltas per class,
// the scenarios of one side only and the configuration that differs.
func TestDiffNamesFlipAndCounts(t *testing.T) {
	a, b := diffPair(t)
	sa, sb := diffSide(t, a), diffSide(t, b)
	if sa.Report.Status != evidence.Pass || sb.Report.Status != evidence.Fail {
		t.Fatalf("the fixtures: A %s, B %s", sa.Report.Status, sb.Report.Status)
	}
	d := report.Compare(sa, sb)
	if !d.Worse || len(d.Flips) != 1 {
		t.Fatalf("worse %v flips %+v", d.Worse, d.Flips)
	}
	f := d.Flips[0]
	if f.Name != "two local buckets" || f.Repeat != 1 || f.A != evidence.Pass || f.B != evidence.Fail || f.Change != report.ChangeWorse ||
		!strings.Contains(strings.Join(f.Reasons, "\n"), "admitted") {
		t.Fatalf("flip %+v", f)
	}
	if len(d.OnlyA) != 1 || d.OnlyA[0].Name != "retired" || len(d.OnlyB) != 1 || d.OnlyB[0].Name != "added" {
		t.Fatalf("only A %+v, only B %+v", d.OnlyA, d.OnlyB)
	}
	if len(d.Config) != 1 || d.Config[0].Name != "plan" || d.Config[0].A != digestA || d.Config[0].B != digestB || d.Config[0].Source != report.DigestRecorded {
		t.Fatalf("run config %+v", d.Config)
	}
	s := findScenario(d, "two local buckets")
	if s == nil || s.Change != report.ChangeWorse {
		t.Fatalf("scenario %+v", s)
	}
	for _, w := range []struct {
		target, name string
		a, b         int
	}{
		{"", "admitted", 10, 12}, {"", "local_429", 10, 8}, {"", "passed", 10, 12}, {"", "receipts", 10, 12},
		{"", "admitted_with_receipt", 10, 12}, {"proxy-a", "admitted", 5, 7}, {"proxy-a", "local_429", 5, 3},
	} {
		c := findCount(s, w.target, w.name)
		if c == nil || c.A != w.a || c.B != w.b || c.Delta != w.b-w.a {
			t.Errorf("count %s %s: %+v, want %d → %d", w.target, w.name, c, w.a, w.b)
		}
	}
	if c := findCount(s, "", "sent"); c != nil {
		t.Errorf("sent did not change, yet listed: %+v", c)
	}
	if c := findCount(s, "proxy-b", "admitted"); c != nil {
		t.Errorf("proxy-b did not change, yet listed: %+v", c)
	}
	ranges := map[string]report.RangeChange{}
	for _, r := range s.Ranges {
		ranges[r.Name] = r
	}
	if r := ranges["admitted"]; r.A == nil || r.B == nil || *r.A != evidence.Exact(10) || *r.B != evidence.Exact(12) {
		t.Errorf("admitted range %+v", r)
	}
	if r := ranges["over_admission"]; r.A == nil || r.B == nil || *r.A != evidence.Exact(5) || *r.B != evidence.Exact(7) {
		t.Errorf("over-admission range %+v", r)
	}
	var admittedCheck *report.CheckChange
	for i, c := range s.Checks {
		if c.A != nil && c.B != nil && c.A.Status == report.CheckPass && c.B.Status == report.CheckFail && strings.Contains(c.Name, "admitted") {
			admittedCheck = &s.Checks[i]
			break
		}
	}
	if admittedCheck == nil || admittedCheck.A.Got == admittedCheck.B.Got || !strings.Contains(admittedCheck.B.Got, "12") {
		t.Fatalf("no admitted check pass → fail with both measured values: %+v", s.Checks)
	}
	var lat *report.LatencyChange
	for i := range s.Latency {
		if s.Latency[i].Class == evidence.ClassAdmitted.String() {
			lat = &s.Latency[i]
		}
	}
	if lat == nil || lat.A == nil || lat.B == nil || lat.DeltaP50Ns < 1_990_000 || lat.DeltaP50Ns > 2_010_000 ||
		lat.DeltaMaxNs != 2_000_000 || lat.A.Count != 10 || lat.B.Count != 12 {
		t.Fatalf("admitted latency %+v", lat)
	}
	if len(s.Config) != 0 {
		t.Errorf("start_ns, a loopback port and fd_open are no configuration: %+v", s.Config)
	}
	steady := findScenario(d, "steady")
	if steady == nil || steady.Change != report.ChangeSame || len(steady.Counts) != 0 {
		t.Fatalf("steady %+v", steady)
	}
	if len(steady.Config) != 1 || steady.Config[0].Name != evidence.ScenarioFile || steady.Config[0].Source != report.DigestComputed ||
		strings.Join(steady.Config[0].Keys, ",") != "description" || steady.Config[0].A == steady.Config[0].B {
		t.Fatalf("steady config %+v", steady.Config)
	}
	// The other way round the flip is better and nothing is worse.
	back := report.Compare(sb, sa)
	if back.Worse || len(back.Flips) != 1 || back.Flips[0].Change != report.ChangeBetter || back.Flips[0].B != evidence.Pass {
		t.Fatalf("B → A: worse %v flips %+v", back.Worse, back.Flips)
	}
}

// TestDiffSameRunIsEmpty: a run against itself has no flip, no count,
// range, check or configuration change, and no scenario of one side only.
func TestDiffSameRunIsEmpty(t *testing.T) {
	a, _ := diffPair(t)
	d := report.Compare(diffSide(t, a), diffSide(t, a))
	if d.Worse || len(d.Flips)+len(d.OnlyA)+len(d.OnlyB)+len(d.Config) != 0 || len(d.Scenarios) != 3 {
		t.Fatalf("%+v", d)
	}
	for _, s := range d.Scenarios {
		if len(s.Counts)+len(s.Ranges)+len(s.Checks)+len(s.Config) != 0 || len(s.Latency) == 0 {
			t.Fatalf("%s: %+v", s.Name, s)
		}
		for _, l := range s.Latency {
			if l.DeltaP50Ns != 0 || l.DeltaP99Ns != 0 || l.DeltaMaxNs != 0 {
				t.Fatalf("%s: latency %+v", s.Name, l)
			}
		}
	}
}

// TestDiffMatchesScenarioDirToRun: a scenario directory without a repeat
// is matched with the run's one repeat of its name; a saved report has no
// configuration digests, said in the output.
func TestDiffMatchesScenarioDirToRun(t *testing.T) {
	a, b := diffPair(t)
	e := newEv(t).demo()
	e.dir = filepath.Join("single")
	must(t, os.MkdirAll(e.dir, 0o755))
	e.write()
	single := diffSide(t, e.dir)
	if single.Kind != report.DiffScenario || diffSide(t, a).Kind != report.DiffRun {
		t.Fatalf("kinds %s", single.Kind)
	}
	d := report.Compare(single, diffSide(t, b))
	s := findScenario(d, "two local buckets")
	if s == nil || s.Repeat != 0 || len(d.OnlyA) != 0 || len(d.OnlyB) != 2 || !d.Worse {
		t.Fatalf("scenario %+v, only A %+v, only B %+v", s, d.OnlyA, d.OnlyB)
	}
	saved := &report.DiffSide{Path: "a.json", Kind: report.DiffSaved, Report: single.Report}
	d = report.Compare(saved, diffSide(t, b))
	if d.A.ConfigKnown || len(findScenario(d, "two local buckets").Config) != 0 {
		t.Fatalf("saved report: %+v", d.A)
	}
	var buf bytes.Buffer
	must(t, report.WriteDiffTable(&buf, d, report.TableOptions{}))
	if !strings.Contains(buf.String(), "configuration digests: not known for a saved report") {
		t.Fatalf("table:\n%s", buf.String())
	}
}

// TestDiffMatchesSchema: the JSON form of a diff with every part present
// validates against schemas/diff.v1.schema.json, which rejects an
// undocumented field.
func TestDiffMatchesSchema(t *testing.T) {
	a, b := diffPair(t)
	for _, d := range []*report.Diff{report.Compare(diffSide(t, a), diffSide(t, b)), report.Compare(diffSide(t, b), diffSide(t, a))} {
		var buf bytes.Buffer
		must(t, report.WriteDiffJSON(&buf, d))
		if err := schemas.Validate(schemas.Diff, buf.Bytes()); err != nil {
			t.Fatalf("diff does not match the schema: %v\n%s", err, buf.String())
		}
		var back report.Diff
		must(t, json.Unmarshal(buf.Bytes(), &back))
		if back.Schema != report.DiffSchema || len(back.Flips) != 1 || back.Flips[0].Name != "two local buckets" {
			t.Fatalf("read back: %+v", back)
		}
	}
	bad := `{"schema":"rlbench.diff/v1","a":{},"b":{},"worse":false,"flips":[],"only_a":[],"only_b":[],"scenarios":[],"config":[],"extra":1}`
	if schemas.Validate(schemas.Diff, []byte(bad)) == nil {
		t.Fatal("schema accepted an undocumented field")
	}
}

// TestDiffGolden renders the diff of diffPair as a table fitted to 80 and
// 120 columns and as markdown, and compares each with
// testdata/golden/diff.<format>.golden (go test -update rewrites them).
func TestDiffGolden(t *testing.T) {
	a, b := diffPair(t)
	d := report.Compare(diffSide(t, a), diffSide(t, b))
	wd, err := os.Getwd()
	must(t, err)
	for name, render := range map[string]func(*bytes.Buffer) error{
		"table-80":  func(w *bytes.Buffer) error { return report.WriteDiffTable(w, d, report.TableOptions{Width: 80}) },
		"table-120": func(w *bytes.Buffer) error { return report.WriteDiffTable(w, d, report.TableOptions{Width: 120}) },
		"markdown":  func(w *bytes.Buffer) error { return report.WriteDiffMarkdown(w, d) },
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			must(t, render(&buf))
			got := buf.String()
			if strings.Contains(got, wd) {
				t.Fatalf("the output holds the working directory %s:\n%s", wd, got)
			}
			for _, want := range []string{"two local buckets", "PASS", "FAIL", "retired", "added", "admitted", "description"} {
				if !strings.Contains(got, want) {
					t.Errorf("the output lacks %q", want)
				}
			}
			if strings.HasPrefix(name, "table") {
				width := 80
				if name == "table-120" {
					width = 120
				}
				for _, l := range strings.Split(got, "\n") {
					if n := len([]rune(l)); n > width {
						t.Errorf("line of %d runes past %d: %q", n, width, l)
					}
				}
			}
			path := filepath.Join(goldenDir(t), "diff."+name+".golden")
			if *update {
				must(t, os.WriteFile(path, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			must(t, err)
			if got != string(want) {
				t.Fatalf("%s differs (go test ./analyze -run TestDiffGolden -update rewrites it):\n%s", path, firstDiff(got, string(want)))
			}
		})
	}
}

// goldenAbs is testdata/golden as an absolute path, taken before a test
// changes the working directory.
var goldenAbs, _ = filepath.Abs(filepath.Join("testdata", "golden"))

func goldenDir(t *testing.T) string {
	t.Helper()
	if goldenAbs == "" {
		t.Fatal("testdata/golden: no absolute path")
	}
	return goldenAbs
}

// TestDiffPreviousReleaseReport: a report saved by the previous release
// (rlbench.report/v1, no passed count, no latency) diffs against the same
// evidence judged now: no flip, and neither "passed" nor the admitted
// range is reported changed for want of the old count.
func TestDiffPreviousReleaseReport(t *testing.T) {
	for _, fx := range []string{"e06", "manual"} {
		f, err := os.Open(filepath.Join("testdata", "v1-release", fx+".report.json"))
		must(t, err)
		old, err := report.ReadJSON(f, fx+".report.json")
		f.Close()
		must(t, err)
		if old.Schema != report.ReportSchemaV1 {
			t.Fatalf("%s: schema %s", fx, old.Schema)
		}
		now := diffSide(t, filepath.Join("testdata", "v1-release", fx))
		d := report.Compare(&report.DiffSide{Path: fx + ".report.json", Kind: report.DiffSaved, Report: old}, now)
		if d.Worse || len(d.Flips) != 0 || len(d.OnlyA)+len(d.OnlyB) != 0 || len(d.Scenarios) != len(old.Scenarios) {
			t.Fatalf("%s: worse %v flips %+v only %+v %+v", fx, d.Worse, d.Flips, d.OnlyA, d.OnlyB)
		}
		for _, s := range d.Scenarios {
			for _, c := range s.Counts {
				if c.Name == "passed" {
					t.Errorf("%s/%s: passed compared with a v1 report: %+v", fx, s.Name, c)
				}
			}
			for _, r := range s.Ranges {
				if r.Name == "admitted" {
					t.Errorf("%s/%s: admitted range compared with a v1 report: %+v", fx, s.Name, r)
				}
			}
		}
	}
}

// TestReadJSONRefuses: a document cut short, of a wrong type or of another
// schema is an error naming the file and the line.
func TestReadJSONRefuses(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"{\n  \"schema\": \"rlbench.report/v2\",\n  \"scenarios\": [\n", "r.json: line 4: unexpected end of JSON input"},
		{"{\n  \"schema\": \"rlbench.report/v2\",\n  \"status\": 3\n}", "r.json: line 3: json: cannot unmarshal number"},
		{"{\n  \"schema\": \"rlbench.diff/v1\"\n}", `r.json: line 2: schema "rlbench.diff/v1": not a report of rlbench.report/v2`},
		{"{}", `r.json: line 1: schema none: not a report of rlbench.report/v2`},
	} {
		_, err := report.ReadJSON(strings.NewReader(c.doc), "r.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.doc, err, c.want)
		}
	}
}

// TestReadJSONRefusesUnknownStatus: a report whose scenario status is
// "MAYBE" or whose check status is "bogus" was compared as if it were a
// verdict. Each is an error naming the file, the line and the field; the
// release reports still read (TestDiff*).
func TestReadJSONRefusesUnknownStatus(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "v1-release", "e06.report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := report.ReadJSON(bytes.NewReader(b), "e06.report.json"); err != nil {
		t.Fatal(err)
	}
	doc := "{\n \"schema\": \"rlbench.report/v2\",\n \"status\": \"PASS\",\n \"scenarios\": [\n  {\"name\": \"a\", \"status\": \"PASS\", \"checks\": [{\"name\": \"x\", \"status\": \"pass\"}]},\n  {\"name\": \"b\",\n   \"status\": %q,\n   \"checks\": [{\"name\": \"y\",\n    \"status\": %q}]}]}"
	for _, c := range []struct{ scenario, check, want string }{
		{"MAYBE", "pass", `r.json: line 7: scenarios[1].status: "MAYBE" is not a verdict (want PASS, FAIL or NOT_RUN)`},
		{"PASS", "bogus", `r.json: line 9: scenarios[1].checks[0].status: "bogus" (check "y") is not a check status`},
		{"PASS", "pass", ""},
	} {
		_, err := report.ReadJSON(strings.NewReader(fmt.Sprintf(doc, c.scenario, c.check)), "r.json")
		if c.want == "" {
			if err != nil {
				t.Errorf("valid statuses: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s/%s: err %v, want %q", c.scenario, c.check, err, c.want)
		}
	}
}
