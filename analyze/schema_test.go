package analyze

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileReportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := schemas.FS.Open(schemas.Report)
	must(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	must(t, err)
	c := jsonschema.NewCompiler()
	must(t, c.AddResource(schemas.Report, doc))
	s, err := c.Compile(schemas.Report)
	must(t, err)
	return s
}

// TestReportMatchesSchema renders reports that exercise every optional part
// (over-admission, bound, fault windows, RLS decisions, NOT_RUN) and validates
// them against schemas/report.v1.schema.json, whose additionalProperties:false
// makes an undocumented field fail.
func TestReportMatchesSchema(t *testing.T) {
	sch := compileReportSchema(t)
	e := newEv(t).demo()
	e.scenario.Limits = []evidence.LimitSpec{{Kind: "fixed_window", Limit: 5, Unit: "HOUR"}}
	dir := e.write()
	writeLines(t, dir+"/"+evidence.FaultsFile, []evidence.Fault{{Name: "stop rls", Action: ActionStop, Target: "rls", BeginNs: t0, EndNs: t0 + 1}})
	must(t, mkdirAll(dir+"/rls"))
	writeLines(t, dir+"/"+evidence.DecisionsFile, []evidence.Decision{{TimeNs: t0, Domain: "inventory", Key: "inventory_tenant_lab_1796029200", Limit: 5, Code: "OK", Current: 1}})
	notRun := t.TempDir()
	must(t, os.WriteFile(filepath.Join(notRun, evidence.NotRunFile), []byte("target unreachable\n"), 0o644))
	reports := []*Report{run(t, dir), run(t, t.TempDir()), run(t, notRun)}
	for i, rep := range reports {
		var buf bytes.Buffer
		must(t, WriteJSON(&buf, rep))
		inst, err := jsonschema.UnmarshalJSON(&buf)
		must(t, err)
		if err := sch.Validate(inst); err != nil {
			t.Fatalf("report %d does not match the schema: %v", i, err)
		}
	}
	// The schema really constrains: an unknown field is rejected.
	bad := `{"schema":"rlbench.report/v1","dir":"x","generated_at":"2026-11-30T00:00:00Z","status":"PASS","scenarios":[],"groups":[],"extra":1}`
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
	must(t, err)
	if sch.Validate(inst) == nil {
		t.Fatal("schema accepted an undocumented field")
	}
}
