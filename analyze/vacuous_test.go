package analyze

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// TestVacuousExpectationIsNothingChecked (issue 21): an expectation that
// cannot fail given what was sent ("admitted: 0..1000000000" of 20
// requests) PASSed; with nothing else declared it is NOT_RUN "nothing to
// check", naming what cannot fail and why.
func TestVacuousExpectationIsNothingChecked(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	zero, twenty := 0, 20
	for _, tc := range []struct {
		name   string
		expect evidence.Expectation
		limit  *evidence.IntendedLimit
		why    string
	}{
		{"admitted covers 0..sent", evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 0, Max: 1000000000})},
			nil, "admitted 0..1000000000 cannot fail: 20 requests were sent, so it is 0..20"},
		{"admitted exactly 0..sent", evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 0, Max: 20})},
			nil, "admitted 0..20 cannot fail"},
		{"a class covering 0..sent", evidence.Expectation{Classes: map[string]evidence.Range{"local_429": {Min: 0, Max: 20}}},
			nil, "class local_429 0..20 cannot fail: 20 requests were sent, so it is 0..20"},
		{"the sent class", evidence.Expectation{Classes: map[string]evidence.Range{"sent": evidence.Exact(20)}},
			nil, "class sent 20 cannot fail: 20 requests were sent, whatever the limiter did"},
		{"an intended limit of every request", evidence.Expectation{}, evidence.IntendedPerRun(twenty),
			"admitted within intended limit <= 20 cannot fail: 20 requests were sent, so at most 20 can be admitted"},
		{"amplification min 0", evidence.Expectation{Amplification: &evidence.FactorRange{Min: f(0)}},
			nil, "upstream attempts per passed request >= 0 cannot fail"},
		{"backend peak min 0", evidence.Expectation{BackendPeak: evidence.PeakExpectations{{Window: 10e6, Min: &zero}}},
			nil, "backend peak per 10ms >= 0 cannot fail: no window holds fewer than 0 receipts"},
		{"two of them", evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 0, Max: 50}),
			Classes: map[string]evidence.Range{"admitted": {Min: 0, Max: 20}}}, nil,
			"admitted 0..50 cannot fail: 20 requests were sent, so it is 0..20; class admitted 0..20 cannot fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEv(t).demo()
			e.scenario.Expect, e.scenario.IntendedLimit = tc.expect, tc.limit
			s := run(t, e.write()).Scenarios[0]
			if s.Status != evidence.NotRun || !strings.Contains(reasons(s), "nothing to check: "+tc.why) {
				t.Fatalf("status %s, reasons %s", s.Status, reasons(s))
			}
		})
	}
	// A range that leaves out one possible count can fail: it is judged.
	e := newEv(t).demo()
	e.scenario.Expect, e.scenario.IntendedLimit = evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 0, Max: 19})}, nil
	if s := run(t, e.write()).Scenarios[0]; s.Status != evidence.Pass || check(t, s, "admitted").Status != report.CheckPass {
		t.Fatalf("admitted 0..19 of 20: status %s, checks %+v, reasons %s", s.Status, s.Checks, reasons(s))
	}
	// The same holds for an expectation given as an option (--admitted).
	e = newEv(t).demo()
	e.scenario.Expect, e.scenario.IntendedLimit = evidence.Expectation{}, nil
	rep, err := Analyze(context.Background(), e.write(), Options{Now: func() time.Time { return time.Unix(0, t0) },
		Admitted: &evidence.Range{Min: 0, Max: 1000}})
	must(t, err)
	if s := rep.Scenarios[0]; s.Status != evidence.NotRun || !strings.Contains(reasons(s), "nothing to check: admitted 0..1000 cannot fail") {
		t.Fatalf("--admitted 0..1000: status %s, reasons %s", s.Status, reasons(s))
	}
}

// TestVacuousCheckBesideRealChecks: a vacuous expectation beside real ones
// is reported as not checked, saying why, and takes no part in the
// verdict: the real checks decide, PASS or FAIL. A vacuous admitted range
// counts as none, so the intended limit becomes the expectation.
func TestVacuousCheckBesideRealChecks(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{Label: "receipts match", Admitted: evidence.AdmittedIn(evidence.Range{Min: 0, Max: 1000000000}), ReceiptsEqualAdmitted: true}
	dir := e.write()
	rep := run(t, dir)
	s := rep.Scenarios[0]
	c := check(t, s, "admitted")
	if s.Status != evidence.Pass || c.Status != report.CheckNotChecked || c.Want != "0..1000000000" ||
		c.Got != "10 (not checked: 0..1000000000 cannot fail: 20 requests were sent, so it is 0..20)" {
		t.Fatalf("status %s, admitted check %+v, reasons %s", s.Status, c, reasons(s))
	}
	// status.txt counts the checks that passed and names what was not checked.
	if l := report.StatusLines(rep)[0]; !strings.HasSuffix(l, "PASS receipts match ("+strconv.Itoa(len(s.Checks)-1)+" checks passed); not checked, cannot fail: admitted 0..1000000000") ||
		strings.Contains(l, strconv.Itoa(len(s.Checks))+" checks passed") {
		t.Fatalf("status line %q", l)
	}
	if r := (Result{Checks: []report.Check{c}}).Validity(); r != model.NotChecked {
		t.Fatalf("validity of a not-checked check: %v", r)
	}
	// A real check that fails decides.
	e.receipts = e.receipts[1:]
	e.write()
	if s = run(t, dir).Scenarios[0]; s.Status != evidence.Fail || check(t, s, "admitted").Status != report.CheckNotChecked ||
		!strings.Contains(reasons(s), "receipts = admitted") {
		t.Fatalf("a lost receipt: status %s, reasons %s", s.Status, reasons(s))
	}
	// The intended limit, judged when admitted cannot fail: 10 admitted of 5.
	e = newEv(t).demo()
	e.scenario.Expect = evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 0, Max: 1000000000})}
	if s = run(t, e.write()).Scenarios[0]; s.Status != evidence.Fail || !strings.Contains(reasons(s), "admitted within intended limit: want <= 5, got 10") {
		t.Fatalf("intended limit 5: status %s, reasons %s", s.Status, reasons(s))
	}
	// A backend_peak min of 0 beside a real max: the max decides.
	zero, ten := 0, 10
	e = newEv(t).demo()
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{BackendPeak: evidence.PeakExpectations{{Window: 10e6, Min: &zero, Max: &ten}}}
	s = run(t, e.write()).Scenarios[0]
	var st []string
	for _, c := range s.Checks {
		if strings.HasPrefix(c.Name, "backend peak") {
			st = append(st, c.Status+" "+c.Want)
		}
	}
	if s.Status != evidence.Pass || strings.Join(st, ",") != "pass <= 10,not_checked >= 0" {
		t.Fatalf("status %s, peak checks %v, reasons %s", s.Status, st, reasons(s))
	}
}
