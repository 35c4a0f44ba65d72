package analyze

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

func fixed(name string, statuses ...string) Checker {
	return Checker{Name: name, Check: func(*Input) (r Result) {
		for _, s := range statuses {
			r.add(name, s, "w", "g")
		}
		return r
	}}
}

// TestComposeMergesByPriority: fail over unknown over pass; results without
// checks take no part; nothing checked at all is unknown, never pass.
func TestComposeMergesByPriority(t *testing.T) {
	in := &Input{Report: &report.ScenarioReport{}}
	none := Checker{Name: "none", Check: func(*Input) Result { return Result{} }}
	cases := []struct {
		checkers []Checker
		want     model.Validity
	}{
		{[]Checker{fixed("a", report.CheckPass), fixed("b", report.CheckPass)}, model.Valid},
		{[]Checker{fixed("a", report.CheckPass), fixed("b", report.CheckUnknown)}, model.UnknownValidity},
		{[]Checker{fixed("a", report.CheckUnknown), fixed("b", report.CheckFail), fixed("c", report.CheckPass)}, model.Invalid},
		{[]Checker{fixed("a", report.CheckPass, report.CheckFail)}, model.Invalid},
		{[]Checker{none, fixed("a", report.CheckPass)}, model.Valid},
		{[]Checker{none}, model.UnknownValidity},
		{nil, model.UnknownValidity},
	}
	for i, c := range cases {
		got := Compose(in, c.checkers)
		if got.Valid != c.want || len(got.Results) != len(c.checkers) {
			t.Errorf("case %d: %s (%d results), want %s", i, got.Valid, len(got.Results), c.want)
		}
	}
	if model.Merge(model.Valid, model.NotChecked) != model.Valid || model.Merge(model.UnknownValidity, model.Valid) != model.UnknownValidity || model.Merge(model.Invalid, model.UnknownValidity) != model.Invalid {
		t.Error("Merge priorities")
	}
}

// TestPanickingCheckerIsUnknown: a checker that panics yields an unknown
// check with the panic; the scenario is then NOT_RUN, not PASS, and the
// other checkers still run.
func TestPanickingCheckerIsUnknown(t *testing.T) {
	dir := newEv(t).demo().write()
	boom := Checker{Name: "boom", Check: func(*Input) Result { panic("index out of range") }}
	checkers := append([]Checker{boom}, DefaultCheckers...)
	rep, err := Analyze(context.Background(), dir, Options{Checkers: checkers})
	must(t, err)
	s := rep.Scenarios[0]
	c := checkNamed(s, "boom")
	if c == nil || c.Status != report.CheckUnknown || !strings.Contains(c.Got, "index out of range") {
		t.Fatalf("boom check %+v", c)
	}
	if s.Status != evidence.NotRun || len(s.Checks) < 5 {
		t.Fatalf("status %s with %d checks, reasons %v", s.Status, len(s.Checks), s.Reasons)
	}
	// Without it, the same evidence passes.
	if s := run(t, dir).Scenarios[0]; s.Status != evidence.Pass {
		t.Fatalf("status %s reasons %v", s.Status, s.Reasons)
	}
}

// TestNothingCheckedIsNotPass: an empty checker table judges nothing, so a
// scenario with complete evidence is NOT_RUN, with the reason.
func TestNothingCheckedIsNotPass(t *testing.T) {
	dir := newEv(t).demo().write()
	rep, err := Analyze(context.Background(), dir, Options{Checkers: []Checker{}})
	must(t, err)
	s := rep.Scenarios[0]
	if s.Status != evidence.NotRun || len(s.Checks) != 0 || !strings.Contains(strings.Join(s.Reasons, ";"), "nothing was checked") {
		t.Fatalf("status %s reasons %v", s.Status, s.Reasons)
	}
}

// TestJudgeReadsNoFiles: Judge works on a Bundle built in memory, without
// any directory.
func TestJudgeReadsNoFiles(t *testing.T) {
	five := 10
	s := &evidence.ScenarioEvidence{Dir: "mem", Path: "/nonexistent/mem", HasScenario: true, HasRequests: true,
		Scenario: evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "in memory", Expect: evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 1, Max: 1})}, IntendedLimit: evidence.IntendedPerRun(five)},
		Attack:   evidence.NewAttack(&evidence.AttackSummary{Sent: 2, Recorded: 2, Complete: true})}
	s.Requests.Add(&evidence.Request{ID: "a", Target: "p", Code: 200, SentNs: 10, LatencyNs: 5})
	s.Requests.Add(&evidence.Request{ID: "b", Target: "p", Code: 429, Body: "local_rate_limited", SentNs: 11, LatencyNs: 5})
	id := "a"
	s.Receipts.Add(&s.Requests, &evidence.Receipt{ID: &id, RecvNs: 12})
	rep := Judge(&evidence.Bundle{Dir: "mem", Scenarios: []*evidence.ScenarioEvidence{s}}, Options{})
	sr := rep.Scenarios[0]
	if sr.Status != evidence.Pass || sr.Totals.N[evidence.ClassAdmitted] != 1 || sr.Totals.N[evidence.ClassLocal429] != 1 || sr.Receipts.AdmittedWithReceipt != 1 || sr.Dir != "mem" {
		t.Fatalf("%s %+v %+v reasons %v", sr.Status, sr.Totals, sr.Receipts, sr.Reasons)
	}
}

// TestExtraCheckersJoinTheTable: a checker written against Input's exported
// fields and passed in Options.ExtraCheckers runs after the table, its
// checks are listed after the table's, a pass keeps the verdict and a fail
// makes it FAIL with the check as reason.
func TestExtraCheckersJoinTheTable(t *testing.T) {
	dir := newEv(t).demo().write()
	received := func(fail bool) Checker {
		return Checker{Name: "received", Check: func(in *Input) Result {
			n := 0
			for i := 0; i < in.Evidence.Requests.Len(); i++ {
				if in.Received(i) && in.ReceiptNs(i) > 0 {
					n++
				}
			}
			want := in.Report.Receipts.AdmittedWithReceipt
			st := report.CheckPass
			if fail {
				st = report.CheckFail
			}
			return Result{Checks: []report.Check{{Name: "requests received", Status: st, Want: strconv.Itoa(want), Got: strconv.Itoa(n)}}}
		}}
	}
	base := run(t, dir).Scenarios[0]
	for _, fail := range []bool{false, true} {
		rep, err := Analyze(context.Background(), dir, Options{ExtraCheckers: []Checker{received(fail)}})
		must(t, err)
		s := rep.Scenarios[0]
		if len(s.Checks) != len(base.Checks)+1 {
			t.Fatalf("fail=%v: %d checks, want the table's %d and one more", fail, len(s.Checks), len(base.Checks))
		}
		c := s.Checks[len(s.Checks)-1]
		if c.Name != "requests received" || c.Want != c.Got || c.Got == "0" {
			t.Fatalf("fail=%v: last check %+v", fail, c)
		}
		want := evidence.Pass
		if fail {
			want = evidence.Fail
		}
		if s.Status != want || fail != strings.Contains(strings.Join(s.Reasons, ";"), "requests received: want") {
			t.Fatalf("fail=%v: status %s reasons %v", fail, s.Status, s.Reasons)
		}
	}
	if (&Input{}).Received(-1) || (&Input{}).ReceiptNs(3) != 0 {
		t.Error("an index out of range is received")
	}
}
