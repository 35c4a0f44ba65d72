package analyze

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
)

// validReport fails the test when the JSON form of rep does not match
// schemas/report.v2.schema.json.
func validReport(t *testing.T, rep *report.Report) {
	t.Helper()
	var buf bytes.Buffer
	must(t, report.WriteJSON(&buf, rep))
	if err := schemas.Validate(schemas.Report, buf.Bytes()); err != nil {
		t.Fatalf("report of %s does not match the schema: %v", rep.Dir, err)
	}
}

// TestReportMatchesSchema renders reports that exercise every optional part
// (over-admission, bound, fault windows, RLS decisions, NOT_RUN) and validates
// them against schemas/report.v2.schema.json, whose additionalProperties:false
// makes an undocumented field fail.
func TestReportMatchesSchema(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.Limits = []evidence.LimitSpec{{Kind: "fixed_window", Limit: 5, Unit: "HOUR"}}
	dir := e.write()
	writeLines(t, dir+"/"+evidence.FaultsFile, []evidence.Fault{{Name: "stop rls", Action: evidence.ActionStop, Target: "rls", BeginNs: t0, EndNs: t0 + 1}})
	must(t, mkdirAll(dir+"/rls"))
	writeLines(t, dir+"/"+evidence.DecisionsFile, []evidence.Decision{{TimeNs: t0, Domain: "inventory", Key: "inventory_tenant_lab_1796029200", Limit: 5, Code: "OK", Current: 1}})
	notRun := t.TempDir()
	must(t, os.WriteFile(filepath.Join(notRun, evidence.NotRunFile), []byte("target unreachable\n"), 0o644))
	for _, rep := range []*report.Report{run(t, dir), run(t, t.TempDir()), run(t, notRun)} {
		validReport(t, rep)
	}
	// The schema really constrains: an unknown field is rejected.
	bad := `{"schema":"rlbench.report/v2","dir":"x","generated_at":"2026-11-30T00:00:00Z","status":"PASS","scenarios":[],"groups":[],"extra":1}`
	if schemas.Validate(schemas.Report, []byte(bad)) == nil {
		t.Fatal("schema accepted an undocumented field")
	}
}

// TestPreviousReleaseMatchesSchemas: every JSON file of the evidence the
// previous release wrote (testdata/v1-release, attack.json in both v1
// shapes) matches its schema, but the requests.jsonl truncated on purpose
// in the hand-made manual directory, and the reports of that evidence match
// the report schema.
func TestPreviousReleaseMatchesSchemas(t *testing.T) {
	base := filepath.Join("testdata", "v1-release")
	for _, name := range []string{"e06", "demo", "real-rls", "manual", "bare"} {
		dir := filepath.Join(base, name)
		n, err := schemas.ValidateDir(dir)
		truncated := filepath.Join(dir, "02-truncated", "1", evidence.RequestsFile)
		if name == "manual" {
			// The truncated line is caught; every other scenario validates.
			if err == nil || !strings.Contains(err.Error(), truncated+" does not match") {
				t.Fatalf("%s: want the truncated %s to fail, got %v", name, truncated, err)
			}
			// (03-not-run/1/scenario.json, made by hand, has no "expect",
			// which rlbench always writes: it is not checked.)
			for _, sc := range []string{"01-default-format-log", "05-tampered", "06-collected-by-hand"} {
				if _, err := schemas.ValidateDir(filepath.Join(dir, sc)); err != nil {
					t.Error(err)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, evidence.ManifestFile))
			must(t, err)
			if err := schemas.Validate(schemas.Manifest, b); err != nil {
				t.Error(err)
			}
		} else if err != nil || n < 3 {
			t.Fatalf("%s: %d files valid, %v", name, n, err)
		}
		rep, err := Analyze(context.Background(), dir, Options{})
		must(t, err)
		validReport(t, rep)
	}
}
