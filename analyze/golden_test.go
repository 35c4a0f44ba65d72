package analyze

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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

// TestJUnitShape reads the JUnit output back with a JUnit reader
// (github.com/joshdk/go-junit, as CI plugins parse it): one suite for the
// run, one test per scenario run with its classname and time, FAIL as
// failed with the reasons, NOT_RUN as skipped with the reason.
func TestJUnitShape(t *testing.T) {
	rep, _ := judgeFixture(t, "manual", false)
	var buf bytes.Buffer
	must(t, report.WriteJUnit(&buf, rep))
	if !bytes.HasPrefix(buf.Bytes(), []byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n<testsuites ")) {
		t.Fatalf("not a <testsuites> document:\n%.200s", buf.String())
	}
	suites, err := junit.Ingest(buf.Bytes())
	must(t, err)
	if len(suites) != 1 || suites[0].Name != "manual" || len(suites[0].Tests) != len(rep.Scenarios) {
		t.Fatalf("suites %+v", suites)
	}
	var failed, skipped int
	for i, tc := range suites[0].Tests {
		s := rep.Scenarios[i]
		if tc.Name != s.Name && !strings.HasPrefix(tc.Name, s.Name+" #") || tc.Classname != "rlbench.manual" {
			t.Errorf("test %d: name %q classname %q, scenario %q", i, tc.Name, tc.Classname, s.Name)
		}
		switch s.Status {
		case evidence.Fail:
			failed++
			if tc.Status != junit.StatusFailed || tc.Error == nil || !strings.Contains(tc.Error.Error(), s.Reasons[0]) {
				t.Errorf("%s: status %s error %v", s.Name, tc.Status, tc.Error)
			}
		case evidence.NotRun:
			skipped++
			if tc.Status != junit.StatusSkipped || tc.Message != strings.Join(s.Reasons, "; ") {
				t.Errorf("%s: status %s message %q", s.Name, tc.Status, tc.Message)
			}
		default:
			if tc.Status != junit.StatusPassed {
				t.Errorf("%s: status %s", s.Name, tc.Status)
			}
		}
	}
	if failed == 0 || skipped == 0 || suites[0].Totals.Failed != failed || suites[0].Totals.Skipped != skipped {
		t.Errorf("failed %d skipped %d, totals %+v", failed, skipped, suites[0].Totals)
	}
	// The suite's attributes carry the counts CI shows.
	for _, attr := range []string{`tests="` + strconv.Itoa(len(rep.Scenarios)) + `"`, `failures="` + strconv.Itoa(failed) + `"`, `skipped="` + strconv.Itoa(skipped) + `"`} {
		if !strings.Contains(buf.String(), "<testsuite name=\"manual\" "+attr) && !regexp.MustCompile(`<testsuite [^>]*`+regexp.QuoteMeta(attr)).MatchString(buf.String()) {
			t.Errorf("testsuite lacks %s", attr)
		}
	}
}

// TestPrometheusParsesBack parses the textfile with prometheus/common's
// text parser and finds the report's verdicts and figures in it.
func TestPrometheusParsesBack(t *testing.T) {
	for _, fx := range goldenFixtures {
		rep, _ := judgeFixture(t, fx, false)
		var buf bytes.Buffer
		must(t, report.WritePrometheus(&buf, rep))
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(&buf)
		if err != nil {
			t.Fatalf("%s: the textfile does not parse: %v", fx, err)
		}
		value := func(name string, labels map[string]string) (float64, bool) {
			f := fams[name]
			if f == nil {
				return 0, false
			}
		next:
			for _, m := range f.Metric {
				got := map[string]string{}
				for _, l := range m.Label {
					got[l.GetName()] = l.GetValue()
				}
				for k, v := range labels {
					if got[k] != v {
						continue next
					}
				}
				switch f.GetType() {
				case dto.MetricType_GAUGE:
					return m.GetGauge().GetValue(), true
				case dto.MetricType_SUMMARY:
					return float64(m.GetSummary().GetSampleCount()), true
				}
			}
			return 0, false
		}
		if v, ok := value(report.MetricStatus, map[string]string{"status": rep.Status}); !ok || v != 1 {
			t.Errorf("%s: %s{status=%s} = %v %v", fx, report.MetricStatus, rep.Status, v, ok)
		}
		for _, s := range rep.Scenarios {
			sc := map[string]string{"scenario": s.Name, "repeat": strconv.Itoa(s.Repeat)}
			with := func(k, v string) map[string]string {
				m := map[string]string{k: v}
				for a, b := range sc {
					m[a] = b
				}
				return m
			}
			for _, st := range []string{evidence.Pass, evidence.Fail, evidence.NotRun} {
				want := 0.0
				if st == s.Status {
					want = 1
				}
				if v, ok := value(report.MetricScenarioStatus, with("status", st)); !ok || v != want {
					t.Errorf("%s/%s: status %s = %v %v, want %v", fx, s.Name, st, v, ok, want)
				}
			}
			if v, _ := value(report.MetricSent, sc); int(v) != s.Totals.Sent {
				t.Errorf("%s/%s: sent %v, report %d", fx, s.Name, v, s.Totals.Sent)
			}
			if v, _ := value(report.MetricAdmitted, sc); int(v) != s.Totals.Admitted {
				t.Errorf("%s/%s: admitted %v, report %d", fx, s.Name, v, s.Totals.Admitted)
			}
			if o := s.OverAdmission; o != nil {
				if v, ok := value(report.MetricOverAdmission, with("bound", "min")); !ok || int(v) != o.Min {
					t.Errorf("%s/%s: over-admission %v, report %d", fx, s.Name, v, o.Min)
				}
			}
			if s.Bound != nil {
				if v, ok := value(report.MetricBound, sc); !ok || int(v) != s.Bound.Allowed {
					t.Errorf("%s/%s: bound %v, report %d", fx, s.Name, v, s.Bound.Allowed)
				}
			}
			if s.Latency != nil {
				for _, l := range s.Latency.Classes {
					if v, ok := value(report.MetricLatency, with("class", l.Class)); !ok || int(v) != l.Count {
						t.Errorf("%s/%s: latency count of %s %v, report %d", fx, s.Name, l.Class, v, l.Count)
					}
				}
			}
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
		wantAdmitted += s.Totals.Admitted
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
