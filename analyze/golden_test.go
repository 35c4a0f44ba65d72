package analyze

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.golden from the current output")

// goldenFixtures are runs of the previous release's evidence: e06 (every
// scenario PASS, fault windows, phases) and manual (FAIL, NOT_RUN,
// incomplete, a missing scenario, a real RLS).
var goldenFixtures = []string{"e06", "manual"}

// goldenFormats render one judged run; b is the bundle it was judged from.
var goldenFormats = map[string]func(w io.Writer, rep *report.Report, b *evidence.Bundle) error{
	"table":      func(w io.Writer, rep *report.Report, _ *evidence.Bundle) error { return report.WriteTable(w, rep) },
	"json":       func(w io.Writer, rep *report.Report, _ *evidence.Bundle) error { return report.WriteJSON(w, rep) },
	"markdown":   func(w io.Writer, rep *report.Report, _ *evidence.Bundle) error { return report.WriteMarkdown(w, rep) },
	"junit":      func(w io.Writer, rep *report.Report, _ *evidence.Bundle) error { return report.WriteJUnit(w, rep) },
	"csv":        report.WriteCSV,
	"html":       func(w io.Writer, rep *report.Report, _ *evidence.Bundle) error { return report.WriteHTML(w, rep) },
	"prometheus": func(w io.Writer, rep *report.Report, _ *evidence.Bundle) error { return report.WritePrometheus(w, rep) },
}

// judgeFixture loads and judges a previous-release run with a fixed clock;
// series for the HTML.
func judgeFixture(t *testing.T, name string, series bool) (*report.Report, *evidence.Bundle) {
	t.Helper()
	b, err := evidence.Load(context.Background(), filepath.Join("testdata", "v1-release", name))
	must(t, err)
	return Judge(b, Options{Now: fixedNow, Series: series}), b
}

// TestGoldenFormats renders each fixture in every format and compares the
// output with testdata/golden/<fixture>.<format>.golden (go test -update
// rewrites them). The HTML golden has the embedded uPlot build replaced by
// its VERSION line (scripts/fetch-chart-lib.sh checks that file).
func TestGoldenFormats(t *testing.T) {
	for _, fx := range goldenFixtures {
		for format, render := range goldenFormats {
			t.Run(fx+"."+format, func(t *testing.T) {
				rep, b := judgeFixture(t, fx, format == "html")
				var buf bytes.Buffer
				must(t, render(&buf, rep, b))
				got := buf.String()
				if format == "html" {
					uplotJS, uplotVersion := readAsset(t, "uPlot.iife.min.js"), readAsset(t, "VERSION")
					if !strings.Contains(got, uplotJS) {
						t.Fatal("the page does not inline uPlot")
					}
					got = strings.Replace(got, uplotJS, "/* "+strings.TrimSpace(uplotVersion)+" */", 1)
				}
				path := filepath.Join("testdata", "golden", fx+"."+format+".golden")
				if *update {
					must(t, os.MkdirAll(filepath.Dir(path), 0o755))
					must(t, os.WriteFile(path, []byte(got), 0o644))
					return
				}
				want, err := os.ReadFile(path)
				must(t, err)
				if got != string(want) {
					t.Fatalf("%s differs (go test ./analyze -run TestGoldenFormats -update rewrites it):\n%s", path, firstDiff(got, string(want)))
				}
			})
		}
	}
}

// TestCSVRows: one row per request loaded, with the header's columns, the
// class, code and receipt of each request.
func TestCSVRows(t *testing.T) {
	rep, b := judgeFixture(t, "e06", false)
	var buf bytes.Buffer
	must(t, report.WriteCSV(&buf, rep, b))
	rows, err := csv.NewReader(&buf).ReadAll()
	must(t, err)
	n := 0
	for _, ev := range b.Scenarios {
		n += ev.Requests.Len()
	}
	if len(rows) != n+1 || strings.Join(rows[0], ",") != strings.Join(report.CSVHeader, ",") {
		t.Fatalf("%d rows for %d requests, header %v", len(rows), n, rows[0])
	}
	admitted, received := 0, 0
	for _, r := range rows[1:] {
		if len(r) != len(report.CSVHeader) {
			t.Fatalf("row %v", r)
		}
		if r[5] == evidence.ClassAdmitted.String() {
			admitted++
			if r[6] != "200" {
				t.Errorf("admitted with code %s", r[6])
			}
		}
		if r[9] == "yes" {
			received++
		}
	}
	wantAdmitted, wantReceipts := 0, 0
	for _, s := range rep.Scenarios {
		wantAdmitted += s.Totals.N[evidence.ClassAdmitted]
		wantReceipts += s.Receipts.AdmittedWithReceipt + s.Receipts.RejectedWithReceipt + s.Receipts.IndeterminateWithReceipt
	}
	if admitted != wantAdmitted || received != wantReceipts {
		t.Errorf("csv: %d admitted, %d with receipt; report %d, %d", admitted, received, wantAdmitted, wantReceipts)
	}
	if err := report.WriteCSV(io.Discard, rep, nil); err == nil {
		t.Error("csv without the bundle: no error")
	}
	other, _ := judgeFixture(t, "manual", false)
	if err := report.WriteCSV(io.Discard, other, b); err == nil {
		t.Error("csv of a report judged from other evidence: no error")
	}
}

// readAsset reads the file name of the uPlot build the HTML report embeds
// (report/assets/uplot).
func readAsset(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("report", "assets", "uplot", name))
	must(t, err)
	return string(b)
}
