package schemagen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/schemas"
)

// regenerate is the command a failing freshness check asks for.
const regenerate = "run go generate ./schemas (or go generate ./...) and commit schemas/"

// stale compares generated files with the directory dir and returns one
// problem per file that differs, is missing or is left over.
func stale(dir string, files []File) []string {
	var out []string
	want := map[string]bool{}
	for _, f := range files {
		want[f.Name] = true
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		switch {
		case err != nil:
			out = append(out, f.Name+": not committed ("+err.Error()+")")
		case !bytes.Equal(got, f.Data):
			out = append(out, f.Name+": differs from the Go types at "+firstDiff(got, f.Data))
		}
	}
	extra, _ := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	for _, p := range extra {
		if !want[filepath.Base(p)] && !schemas.IsFrozen(filepath.Base(p)) {
			out = append(out, filepath.Base(p)+": no Go type generates it any more")
		}
	}
	return out
}

// firstDiff names the first line where committed and generated differ.
func firstDiff(committed, generated []byte) string {
	c, g := strings.Split(string(committed), "\n"), strings.Split(string(generated), "\n")
	for i := 0; i < max(len(c), len(g)); i++ {
		var cl, gl string
		if i < len(c) {
			cl = c[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if cl != gl {
			return "line " + itoa(i+1) + ":\n\tcommitted: " + strings.TrimSpace(cl) + "\n\tgenerated: " + strings.TrimSpace(gl)
		}
	}
	return "(same lines, different bytes)"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func generate(t *testing.T) []File {
	t.Helper()
	files, err := Generate(testfix.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCommittedSchemasAreGenerated is the schema-generation test: it
// generates every schema from the Go types into a temporary directory and
// compares it byte for byte with schemas/. A field added to (or removed
// from, or documented differently in) a type of the JSON files without
// regenerating fails here.
func TestCommittedSchemasAreGenerated(t *testing.T) {
	files := generate(t)
	tmp := t.TempDir()
	if err := Write(tmp, files); err != nil {
		t.Fatal(err)
	}
	var written []File
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(tmp, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, File{Name: f.Name, Data: b})
	}
	if p := stale(filepath.Join(testfix.RepoRoot(t), "schemas"), written); len(p) > 0 {
		t.Fatalf("schemas/ is out of date with the Go types: %s\n%s", regenerate, strings.Join(p, "\n"))
	}
	// The embedded files are the committed ones.
	for _, f := range files {
		b, err := schemas.FS.ReadFile(f.Name)
		if err != nil || !bytes.Equal(b, f.Data) {
			t.Fatalf("schemas.FS %s differs from the generated file (%v): %s", f.Name, err, regenerate)
		}
	}
}

// TestAddedFieldIsCaught proves the freshness check on a type that gains a
// field: the generated schema gets the property, and the comparison with
// the committed files reports the file, the line and the command to run.
func TestAddedFieldIsCaught(t *testing.T) {
	type Fault struct {
		evidence.Fault
		// Retries is a field the committed schema does not know.
		Retries int `json:"retries"`
	}
	g := &gen{comments: map[string]string{}, used: map[string]bool{}}
	base, err := g.file(spec{id: evidence.FaultSchema, what: "one line of faults.jsonl", root: typeOf[evidence.Fault]()})
	if err != nil {
		t.Fatal(err)
	}
	grown, err := g.file(spec{id: evidence.FaultSchema, what: "one line of faults.jsonl", root: reflect.TypeFor[Fault]()})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(grown, []byte(`"retries"`)) || bytes.Contains(base, []byte(`"retries"`)) {
		t.Fatalf("the added field is not in the generated schema:\n%s", grown)
	}
	dir := t.TempDir()
	if err := Write(dir, []File{{Name: schemas.Fault, Data: base}}); err != nil {
		t.Fatal(err)
	}
	p := stale(dir, []File{{Name: schemas.Fault, Data: grown}})
	if len(p) != 1 || !strings.Contains(p[0], schemas.Fault+": differs from the Go types at line ") {
		t.Fatalf("stale = %q, want one difference in %s", p, schemas.Fault)
	}
	// A schema no type generates is reported too.
	if err := os.WriteFile(filepath.Join(dir, "gone.v1.schema.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := stale(dir, []File{{Name: schemas.Fault, Data: base}}); len(p) != 1 || !strings.Contains(p[0], "gone.v1.schema.json: no Go type") {
		t.Fatalf("stale = %q, want the left-over file", p)
	}
}

// TestWriteRemovesStaleSchemas: Write replaces changed files and removes
// *.schema.json files that are no longer generated, and nothing else.
func TestWriteRemovesStaleSchemas(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"old.v1.schema.json": "{}", "keep.v1.schema.json": "x", "README.md": "doc"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(dir, []File{{Name: "keep.v1.schema.json", Data: []byte("y\n")}}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "README.md keep.v1.schema.json" {
		t.Fatalf("files after Write: %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.v1.schema.json")); string(b) != "y\n" {
		t.Fatalf("keep.v1.schema.json = %q", b)
	}
}

// TestGenerateIsDeterministic generates twice and compares.
func TestGenerateIsDeterministic(t *testing.T) {
	a, b := generate(t), generate(t)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of Generate differ")
	}
}

// TestFileNames: every generated file has its constant in package schemas,
// named after its ID, and every schema is valid JSON Schema that compiles.
func TestFileNames(t *testing.T) {
	consts := map[string]string{
		schemas.Report: report.ReportSchema, schemas.Diff: report.DiffSchema, schemas.Plan: runner.PlanSchema, schemas.Matrix: report.MatrixSchema,
		schemas.Request: evidence.RequestSchema, schemas.Receipt: evidence.ReceiptSchema,
		schemas.Fault: evidence.FaultSchema, schemas.Decision: evidence.DecisionSchema,
		schemas.Scenario: evidence.ScenarioSchema, schemas.Attack: evidence.AttackSchema,
		schemas.AttackV1: evidence.AttackSummarySchema, schemas.Manifest: evidence.ManifestSchema,
		schemas.EnvoyStats: envoyrec.SnapshotSchema, schemas.RLSMetrics: evidence.RLSMetricsSchema,
		schemas.RLSLog: evidence.RLSLogSchema, schemas.NginxAccess: evidence.NginxAccessSchema, schemas.HAProxyLog: evidence.HAProxyLogSchema,
		schemas.NginxLimitReq: evidence.NginxLimitReqSchema, schemas.NginxStubStatus: evidence.NginxStubStatusSchema,
		schemas.FileState: evidence.StateSchema, schemas.Merge: evidence.MergeSchema, schemas.Harness: evidence.HarnessSchema,
		schemas.Event: events.Schema,
	}
	var got, want []string
	for _, f := range generate(t) {
		got = append(got, f.Name)
		if _, err := schemas.Compile(f.Name); err != nil {
			t.Errorf("%s does not compile: %v", f.Name, err)
		}
		var doc struct {
			ID    string `json:"$id"`
			Title string `json:"title"`
		}
		if err := json.Unmarshal(f.Data, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.ID != schemas.BaseURL+f.Name || !strings.HasPrefix(doc.Title, f.ID+": ") {
			t.Errorf("%s: $id %q, title %q", f.Name, doc.ID, doc.Title)
		}
	}
	for name, id := range consts {
		if schemas.FileName(id) != name {
			t.Errorf("schemas constant %q is not FileName(%q) = %q", name, id, schemas.FileName(id))
		}
		want = append(want, name)
	}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("generated files %v, constants %v", got, want)
	}
}

func TestTidy(t *testing.T) {
	in := "Request is one line\nof requests.jsonl.\n\nIt has:\n  - a code\n    that wraps\n  - a body\n\n\tcode block\n\tline two\n"
	want := "Request is one line of requests.jsonl.\n\nIt has:\n- a code that wraps\n- a body\n\ncode block\nline two"
	if got := tidy(in); got != want {
		t.Fatalf("tidy:\n%s\nwant:\n%s", got, want)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct {
		text, name string
		want       bool
	}{
		{"Method and URI are $request_method and $request_uri.", "URI", true},
		{"OK and OverLimit exclude zombies; ZombieOK counts them.", "OK", true},
		{"ZombieOK counts them.", "OK", false},
		{"OKAY", "OK", false},
		{"see ZombieOK, then OK.", "OK", true},
	} {
		if got := names(c.text, c.name); got != c.want {
			t.Errorf("names(%q, %q) = %v", c.text, c.name, got)
		}
	}
}

func TestUnescapeHTML(t *testing.T) {
	in := `{"a":"\u003cproxy\u003e \u0026 \\u003c \"q\" \n"}`
	want := `{"a":"<proxy> & \\u003c \"q\" \n"}`
	if got := string(unescapeHTML([]byte(in))); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestRuleForMissingFieldFails: a rule whose field was renamed or removed
// stops the generator instead of constraining nothing.
func TestRuleForMissingFieldFails(t *testing.T) {
	fieldRules["evidence.Request.Renamed"] = minimum(0)
	defer delete(fieldRules, "evidence.Request.Renamed")
	_, err := Generate(testfix.RepoRoot(t))
	if err == nil || !strings.Contains(err.Error(), "evidence.Request.Renamed") {
		t.Fatalf("Generate = %v, want an error naming the rule", err)
	}
}
