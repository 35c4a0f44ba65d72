package analyze

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// Result is what a Checker returns.
type Result struct {
	// Checks are the judged properties, in report order.
	Checks []report.Check
	// Incomplete lists why the evidence cannot support a verdict (each
	// becomes an "incomplete: " reason and makes the scenario NOT_RUN).
	Incomplete []string
}

// Validity merges the checks' statuses (report.CheckPass is model.Valid,
// CheckFail model.Invalid, CheckUnknown model.UnknownValidity);
// model.NotChecked without checks (a CheckNotChecked check takes no part).
func (r Result) Validity() model.Validity {
	v := model.NotChecked
	for _, c := range r.Checks {
		switch c.Status {
		case report.CheckPass:
			v = model.Merge(v, model.Valid)
		case report.CheckFail:
			v = model.Merge(v, model.Invalid)
		case report.CheckNotChecked:
		default:
			v = model.Merge(v, model.UnknownValidity)
		}
	}
	return v
}

func (r *Result) add(name, status, want, got string) {
	r.Checks = append(r.Checks, report.Check{Name: name, Status: status, Want: want, Got: got})
}

// Checker is one named check of the table: Check returns the checks it
// judged (none when it does not apply to the scenario).
type Checker struct {
	// Name names the checker in the unknown check a panic gives.
	Name string
	// Check judges one scenario. Each report.Check it returns is listed in
	// ScenarioReport.Checks with its Status (report.CheckPass, CheckFail,
	// CheckUnknown or CheckNotChecked), Want and Got.
	Check func(*Input) Result
}

// Composed is the result of a checker table on one scenario.
type Composed struct {
	// Valid is the merge of every result; Unknown when nothing was checked.
	Valid model.Validity
	// Results are the checkers' results, in table order.
	Results []Result
}

// Compose runs every checker on in and merges their results. A checker that
// panics gives an unknown check named after it with the panic as its value.
func Compose(in *Input, checkers []Checker) Composed {
	out := Composed{Valid: model.NotChecked, Results: make([]Result, 0, len(checkers))}
	for _, c := range checkers {
		r := runChecker(c, in)
		out.Valid = model.Merge(out.Valid, r.Validity())
		out.Results = append(out.Results, r)
	}
	if out.Valid == model.NotChecked {
		out.Valid = model.UnknownValidity
	}
	return out
}

func runChecker(c Checker, in *Input) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Checks: []report.Check{{Name: c.Name, Status: report.CheckUnknown, Want: "a verdict", Got: fmt.Sprintf("checker panicked: %v", p)}}}
		}
	}()
	return c.Check(in)
}

// verdict records the composed checks in the report and sets its status:
// incomplete evidence is NOT_RUN (it wins over a failed check: checks on
// partial evidence are not conclusive), then a failed check is FAIL, an
// undecidable one (a counter reset, requests without response deciding a
// range) or nothing checked is NOT_RUN: inconclusive is never PASS.
func verdict(in *Input, c Composed) {
	sr := in.Report
	for _, r := range c.Results {
		for _, why := range r.Incomplete {
			in.incomplete("%s", why)
		}
		sr.Checks = append(sr.Checks, r.Checks...)
	}
	for _, ch := range sr.Checks {
		switch ch.Status {
		case report.CheckFail:
			sr.Reasons = append(sr.Reasons, fmt.Sprintf("%s: want %s, got %s", ch.Name, ch.Want, ch.Got))
		case report.CheckUnknown:
			sr.Reasons = append(sr.Reasons, fmt.Sprintf("inconclusive: %s: want %s, got %s", ch.Name, ch.Want, ch.Got))
		}
	}
	for _, ps := range sr.Stats {
		if ps.Status == report.StatsReset && !statsOff(in) {
			sr.Reasons = append(sr.Reasons, fmt.Sprintf("inconclusive: %s: %s (%s)", ps.Proxy, ps.Detail, strings.Join(ps.Resets, "; ")))
		}
	}
	switch {
	case sr.Incomplete:
		sr.Status = evidence.NotRun
	case c.Valid == model.Invalid:
		sr.Status = evidence.Fail
	case c.Valid == model.Valid:
		sr.Status = evidence.Pass
	default:
		sr.Status = evidence.NotRun
		if !slices.ContainsFunc(sr.Checks, func(ch report.Check) bool { return ch.Status != report.CheckNotChecked }) {
			sr.Reasons = append(sr.Reasons, "inconclusive: nothing was checked")
		}
	}
}

func passIf(ok bool) string {
	if ok {
		return report.CheckPass
	}
	return report.CheckFail
}

// DefaultCheckers is the checker table, in report order. Integrity checks
// (receipts, duplicates, phantoms) always apply: a rate limit whose rejected
// requests still reach the backend does not hold.
var DefaultCheckers = []Checker{
	{"access logs", checkAccessLogs},
	{"nginx logs", checkNginx},
	{"haproxy logs", checkHAProxy},
	{"admitted", checkAdmitted},
	{"classes", checkClasses},
	{"receipts", checkReceipts},
	{"receipts = admitted", checkReceiptsEqualAdmitted},
	{"RLS 500s in fault windows", checkRLSErrorsInFaultWindows},
	{"intended limit", checkIntendedLimit},
	{"receipts without id", checkWithoutID},
	{"limiter models", checkLimiters},
	{"fail-open leak", checkLeak},
	{"limit engaged", checkEngaged},
	{"not limited", checkNotLimited},
	{"shadow", checkShadow},
	{"starved", checkStarved},
	{"rate-limit headers", checkRateHeaders},
	{"backend peak", checkBackendPeak},
	{"burst landed", checkLanded},
	{"admission timing", checkAdmissionTiming},
	{"amplification", checkAmplification},
	{"latency thresholds", checkLatencyThresholds},
	{"ratios", checkRatios},
	{"proxy stats", checkStats},
	{"rls decisions", checkRLSDecisions},
	{"rls decisions logged", checkRLSLogged},
	{"real rls", checkRealRLS},
}
