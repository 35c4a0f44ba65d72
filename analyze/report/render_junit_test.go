package report

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"

	"github.com/rlbench/rlbench/evidence"
)

// TestJUnitShape reads the JUnit output back with a JUnit reader
// (github.com/joshdk/go-junit, as CI plugins parse it): one suite for the
// run, one test per scenario run with its classname and time, FAIL as
// failed with the reasons, NOT_RUN as skipped with the reason.
func TestJUnitShape(t *testing.T) {
	rep := goldenReport(t, "manual")
	var buf bytes.Buffer
	must(t, WriteJUnit(&buf, rep))
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
