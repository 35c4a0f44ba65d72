package analyze

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// vacuous is a declared expectation that cannot fail given what was sent:
// whatever the limiter did, the value it bounds lies in its range
// ("admitted: 0..1000000000" of 20 requests: the admitted count is 0..20).
// Such an expectation counts as nothing checked: its check is
// CheckNotChecked, and a scenario that declares nothing else is NOT_RUN
// "nothing to check".
type vacuous struct {
	// name is the check's name ("admitted", "class local_429").
	name string
	// want is the declared bound as the check shows it ("0..1000000000").
	want string
	// why says which values the bounded count can take.
	why string
}

// String is "admitted 0..1000000000 cannot fail: 20 requests were sent, so it is 0..20".
func (v *vacuous) String() string { return v.name + " " + v.want + " cannot fail: " + v.why }

// got is the Got of the CheckNotChecked check: the observed value, then why
// it was not checked.
func (v *vacuous) got(observed string) string {
	return observed + " (not checked: " + v.want + " cannot fail: " + v.why + ")"
}

// notChecked adds v as a CheckNotChecked check with the observed value.
func (r *Result) notChecked(v *vacuous, observed string) {
	r.add(v.name, report.CheckNotChecked, v.want, v.got(observed))
}

// sentRange is the values a count over the scenario's requests can take:
// 0..the number of requests in requests.jsonl.
func sentRange(in *Input) evidence.Range {
	return evidence.Range{Min: 0, Max: in.Evidence.Requests.Len()}
}

// admittedVacuous returns expect.admitted when it cannot fail: it covers
// 0..n, n the requests sent (Totals.Passed and PassedMax lie there).
func admittedVacuous(in *Input) *vacuous {
	want := in.Scenario.Expect.Admitted
	if want == nil {
		return nil
	}
	can := sentRange(in)
	if want.Model || !want.Range.Covers(can) {
		return nil
	}
	return &vacuous{name: "admitted", want: want.String(), why: fmt.Sprintf("%d requests were sent, so it is %s", can.Max, can)}
}

// classVacuous returns the class expectation when it cannot fail: a class
// count lies in 0..n, and "sent" is n whatever happened.
func classVacuous(in *Input, class string, want evidence.Range) *vacuous {
	n := in.Evidence.Requests.Len()
	if _, ok := in.Report.Totals.Get(class); !ok {
		return nil // an unknown class fails
	}
	can, why := sentRange(in), fmt.Sprintf("%d requests were sent, so it is %s", n, sentRange(in))
	if class == "sent" {
		can, why = evidence.Exact(n), fmt.Sprintf("%d requests were sent, whatever the limiter did", n)
	}
	if !want.Covers(can) {
		return nil
	}
	return &vacuous{name: "class " + class, want: want.String(), why: why}
}

// intendedVacuous returns the intended limit when it cannot fail: at least
// as many as the requests sent.
func intendedVacuous(in *Input) *vacuous {
	il := in.Scenario.IntendedLimit
	n := in.Evidence.Requests.Len()
	if il == nil || il.Requests < n { // no window holds more than every request sent
		return nil
	}
	return &vacuous{name: "admitted within intended limit", want: fmt.Sprintf("<= %d", il.Requests),
		why: fmt.Sprintf("%d requests were sent, so at most %d can be admitted", n, n)}
}

// intendedJudged reports whether the intended limit is the expectation of
// admissions: no expect.admitted, or one that cannot fail.
func intendedJudged(in *Input) bool {
	return in.Scenario.IntendedLimit != nil && (in.Scenario.Expect.Admitted == nil || admittedVacuous(in) != nil)
}

// limitReqVacuous returns a limit_req_status expectation when it cannot
// fail: it covers 0..the nginx records on file (each is counted under one
// status). Nil without nginx evidence (the check is then unknown), and
// while a proxy that answered requests has no access log (its records,
// unknown, may count too).
func limitReqVacuous(in *Input, status string, want evidence.Range) *vacuous {
	if in.nginx == nil || in.nginx.unloggedNote() != "" {
		return nil
	}
	records := 0
	for _, p := range in.nginx.report.Proxies {
		records += p.Records
	}
	can := evidence.Range{Min: 0, Max: records}
	if !want.Covers(can) {
		return nil
	}
	return &vacuous{name: "limit_req_status " + status, want: want.String(), why: fmt.Sprintf("nginx logged %d records, so it is %s", records, can)}
}

// peakMinVacuous returns a backend_peak min that cannot fail: 0 (the
// fullest window never holds fewer than 0 receipts).
func peakMinVacuous(p *evidence.PeakExpectation, name string) *vacuous {
	if p.Min == nil || *p.Min > 0 {
		return nil
	}
	return &vacuous{name: name, want: ">= " + strconv.Itoa(*p.Min), why: "no window holds fewer than 0 receipts"}
}

// amplificationVacuous returns expect.amplification when it cannot fail:
// no max and a min of at most 0 (attempts per passed request are never
// negative).
func amplificationVacuous(ex *evidence.FactorRange) *vacuous {
	if ex == nil || ex.Max != nil || ex.Min != nil && *ex.Min > 0 {
		return nil
	}
	return &vacuous{name: "upstream attempts per passed request", want: ex.String(), why: "attempts per passed request are never below 0"}
}

// declared says whether the scenario's expectation (with the intended
// limit, when that is judged) asks something that can fail, and lists what
// it declares that cannot. Expectations without a range (receipts = admitted,
// stats_agree true, not_limited, shadow, starved, a backend_peak max or
// model) can always fail.
func declared(in *Input) (real bool, vac []*vacuous) {
	ex := &in.Scenario.Expect
	add := func(v *vacuous) {
		if v == nil {
			real = true
		} else {
			vac = append(vac, v)
		}
	}
	if ex.Admitted != nil {
		add(admittedVacuous(in))
	}
	for _, k := range sortedKeys(ex.Classes) {
		add(classVacuous(in, k, ex.Classes[k]))
	}
	if ex.ReceiptsEqualAdmitted || ex.StatsAgree != nil && *ex.StatsAgree || ex.NotLimited || ex.Shadow != nil || ex.Starved != nil {
		real = true
	}
	for i := range ex.BackendPeak {
		p := &ex.BackendPeak[i]
		if p.Max != nil || p.Model {
			real = true
		}
		if p.Min != nil {
			add(peakMinVacuous(p, "backend peak per "+time.Duration(p.Window).String()))
		}
	}
	if ex.Amplification != nil {
		add(amplificationVacuous(ex.Amplification))
	}
	for _, k := range sortedKeys(ex.LimitReqStatus) {
		add(limitReqVacuous(in, k, ex.LimitReqStatus[k]))
	}
	thresholdsDeclared(ex, add)
	if intendedJudged(in) {
		add(intendedVacuous(in))
	}
	return real, vac
}

// vacuousText joins what cannot fail, for "nothing to check: ...".
func vacuousText(vac []*vacuous) string {
	s := make([]string, len(vac))
	for i, v := range vac {
		s[i] = v.String()
	}
	return strings.Join(s, "; ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
