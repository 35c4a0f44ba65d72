package analyze

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/schemas"
)

// matrixRun writes a run of four scenario directories: three labelled
// (bucket × burst over-admits against its model: FAIL; bucket × idle
// passes; nginx × burst did not run, nginx missing) and one without
// labels, which stays out of the matrix.
func matrixRun(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	sub := func(e *ev, rel string) *ev {
		e.dir = filepath.Join(root, rel)
		must(t, os.MkdirAll(e.dir, 0o755))
		return e
	}
	eight := model.Spec{Kind: model.KindTokenBucket, Capacity: 8}
	fail := sub(newEv(t).demo(), "01-bucket-burst/1")
	fail.scenario.Name = "bucket × burst"
	fail.scenario.Labels = &evidence.Labels{Limiter: "bucket", Shape: "burst"}
	fail.scenario.IntendedLimit = nil
	fail.scenario.Expect = evidence.Expectation{Label: "the model's admissions", Admitted: evidence.AdmittedByModel(), ReceiptsEqualAdmitted: true}
	fail.scenario.Limiters = []evidence.Limiter{{Name: "bucket", Stage: evidence.StageLocal, Key: evidence.KeyShared, Model: &eight}}
	fail.write()

	pass := sub(newEv(t).demo(), "02-bucket-idle/1")
	pass.scenario.Name = "bucket × idle"
	pass.scenario.Labels = &evidence.Labels{Limiter: "bucket", Shape: "idle"}
	twenty := 20
	pass.scenario.Expect.BackendPeak = evidence.PeakExpectations{{Window: model.Duration(10 * time.Millisecond), Max: &twenty}}
	pass.write()

	nr := filepath.Join(root, "03-nginx-burst/1")
	must(t, os.MkdirAll(nr, 0o755))
	writeJSONFile(t, filepath.Join(nr, evidence.ScenarioFile), evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "nginx × burst",
		Repeat: 1, Labels: &evidence.Labels{Limiter: "nginx", Shape: "burst"}})
	must(t, evidence.WriteNotRun(evidence.Dir(nr), "nginx: not installed: run scripts/install-real-parts.sh"))

	plain := sub(newEv(t).demo(), "04-plain/1")
	plain.scenario.Name = "plain"
	plain.write()
	return root
}

// scenarioOf returns rep's scenario named name.
func scenarioOf(rep *report.Report, name string) *report.ScenarioReport {
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Name == name {
			return &rep.Scenarios[i]
		}
	}
	return nil
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	must(t, evidence.WriteJSONFile(path, v))
}

// TestMatrixFromLabels: the labelled scenarios make the matrix, rows and
// columns in report order; each cell has its verdict, its admitted check
// against the model and why it did not pass: the failed check and the
// model's explanation, or the NOT_RUN reason naming what is missing.
func TestMatrixFromLabels(t *testing.T) {
	rep := run(t, matrixRun(t))
	m := rep.Matrix
	if m == nil {
		t.Fatal("no matrix")
	}
	if strings.Join(m.Limiters, ",") != "bucket,nginx" || strings.Join(m.Shapes, ",") != "burst,idle" || len(m.Cells) != 3 || m.Status != evidence.Fail {
		t.Fatalf("matrix %+v", m)
	}
	if c := m.Cell("nginx", "idle"); c != nil {
		t.Errorf("a cell without a scenario: %+v", c)
	}
	c := m.Cell("bucket", "burst")
	if c.Status != evidence.Fail || c.Admitted == nil || c.Admitted.Status != report.CheckFail || c.Admitted.Want != "model 7..8" || c.Admitted.Got != "10" {
		t.Fatalf("bucket × burst %+v admitted %+v", c, c.Admitted)
	}
	why := strings.Join(c.Why, "\n")
	if !strings.Contains(why, "admitted: want model 7..8, got 10") || !strings.Contains(why, "model of bucket: 2 admitted that it must have rejected, e.g. id-08: ") {
		t.Errorf("why:\n%s", why)
	}
	if c := m.Cell("bucket", "idle"); c.Status != evidence.Pass || len(c.Why) != 0 || c.Admitted == nil || c.Admitted.Status != report.CheckPass ||
		len(c.Forwards) != 1 || c.ForwardsText() != "10 (1000/s) (want <= 20)" {
		t.Errorf("bucket × idle %+v", c)
	}
	if c := m.Cell("nginx", "burst"); c.Status != evidence.NotRun || len(c.Why) == 0 || !strings.Contains(c.Why[0], "nginx: not installed") {
		t.Errorf("nginx × burst %+v", c)
	}
	// The matrix validates against its schema on its own and inside the report.
	var buf bytes.Buffer
	must(t, report.WriteMatrixJSON(&buf, m))
	if err := schemas.Validate(schemas.Matrix, buf.Bytes()); err != nil {
		t.Errorf("matrix JSON: %v\n%s", err, buf.String())
	}
	buf.Reset()
	must(t, report.WriteJSON(&buf, rep))
	if err := schemas.Validate(schemas.Report, buf.Bytes()); err != nil {
		t.Errorf("report JSON: %v", err)
	}
	// A hole in the grid is not a pass: bucket × idle alone PASSes; with a
	// passing nginx × burst beside it (and no nginx × idle, no bucket ×
	// burst) the matrix is NOT_RUN.
	idle := *scenarioOf(rep, "bucket × idle")
	other := idle
	other.Name, other.Labels = "nginx × burst", &evidence.Labels{Limiter: "nginx", Shape: "burst"}
	alone := report.BuildMatrix(&report.Report{Scenarios: []report.ScenarioReport{idle}})
	holed := report.BuildMatrix(&report.Report{Scenarios: []report.ScenarioReport{idle, other}})
	if alone.Status != evidence.Pass || holed.Status != evidence.NotRun || len(holed.Cells) != 2 {
		t.Errorf("alone %s, with holes %s", alone.Status, holed.Status)
	}
	// A report without labels has no matrix.
	if rep := run(t, newEv(t).demo().write()); rep.Matrix != nil {
		t.Errorf("matrix of an unlabelled run: %+v", rep.Matrix)
	}
}

// TestMatrixGolden renders the matrix of matrixRun as a fitted table (100
// columns), wide, as Markdown and as JSON, compared with
// testdata/golden/matrix.<format>.golden (go test -update rewrites them),
// and the HTML page links every cell to its scenario.
func TestMatrixGolden(t *testing.T) {
	rep := run(t, matrixRun(t))
	for format, render := range map[string]func(*bytes.Buffer) error{
		"table": func(b *bytes.Buffer) error {
			return report.WriteMatrixTable(b, rep.Matrix, report.TableOptions{Width: 100})
		},
		"wide": func(b *bytes.Buffer) error {
			return report.WriteMatrixTable(b, rep.Matrix, report.TableOptions{Wide: true})
		},
		"markdown": func(b *bytes.Buffer) error { return report.WriteMatrixMarkdown(b, rep.Matrix) },
		"json":     func(b *bytes.Buffer) error { return report.WriteMatrixJSON(b, rep.Matrix) },
	} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			must(t, render(&buf))
			path := filepath.Join("testdata", "golden", "matrix."+format+".golden")
			if *update {
				must(t, os.WriteFile(path, buf.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			must(t, err)
			if buf.String() != string(want) {
				t.Errorf("%s differs from %s (go test -run TestMatrixGolden -update):\n%s", format, path, buf.String())
			}
		})
	}
	var buf bytes.Buffer
	must(t, report.WriteTableWith(&buf, rep, report.TableOptions{Width: 100}))
	for _, l := range strings.Split(buf.String(), "\n") {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if !strings.Contains(buf.String(), "Conformance: FAIL") {
		t.Errorf("the text report has no matrix:\n%s", buf.String())
	}
	buf.Reset()
	must(t, report.WriteHTML(&buf, rep))
	page := buf.String()
	for _, want := range []string{`id="conformance-matrix" data-status="FAIL"`, `data-limiter="bucket" data-shape="burst" data-status="FAIL"><a href="#s1-bucket-burst">`,
		`data-limiter="nginx" data-shape="burst" data-status="NOT_RUN"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}
