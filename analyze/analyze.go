package analyze

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// Options configure Judge and Analyze.
type Options struct {
	// Now stamps the report; time.Now when nil.
	Now func() time.Time
	// Admitted, when set, is the expected admitted range of every scenario,
	// overriding scenario.json (for evidence recorded by hand).
	Admitted *evidence.Range
	// IntendedLimit, when set, overrides scenario.json's intended_limit with
	// a limit of that many admissions per run.
	IntendedLimit *int
	// Checkers replaces the checker table (DefaultCheckers) when not nil.
	Checkers []Checker
	// ExtraCheckers run after the table (DefaultCheckers or Checkers): a
	// program adds its own checks this way, and they take part in the
	// verdict like the table's (a failed check is FAIL, an unknown one
	// NOT_RUN; a panicking checker is an unknown check named after it).
	ExtraCheckers []Checker
	// Series, when true, adds each scenario's time series for plots
	// (ScenarioReport.Series; the HTML report needs them).
	Series bool
}

// Analyze loads the evidence directory dir (evidence.Load) and judges every
// scenario in it (Judge). Missing or malformed evidence is not an error: it
// makes the scenario NOT_RUN with the file and line. Errors are returned only
// when dir itself cannot be read.
func Analyze(ctx context.Context, dir string, opts Options) (*report.Report, error) {
	b, err := evidence.Load(ctx, dir)
	if err != nil {
		return nil, err
	}
	return Judge(b, opts), nil
}

// Judge judges every scenario of the bundle from its data alone (it reads no
// file). A scenario the run directory's manifest lists but that is absent is
// NOT_RUN; a bundle without any scenario gives one NOT_RUN scenario.
func Judge(b *evidence.Bundle, opts Options) *report.Report {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	rep := &report.Report{Schema: report.ReportSchema, Dir: b.Dir, GeneratedAt: now().UTC().Format(time.RFC3339), Scenarios: []report.ScenarioReport{}, Groups: []report.Group{}}
	for _, s := range b.Scenarios {
		rep.Scenarios = append(rep.Scenarios, JudgeScenario(s, opts))
	}
	for _, d := range b.Missing {
		rep.Scenarios = append(rep.Scenarios, missingScenario(d,
			fmt.Sprintf("incomplete: %s: missing, but %s lists it", filepath.Join(b.Dir, d), evidence.ManifestFile)))
	}
	if len(rep.Scenarios) == 0 {
		rep.Scenarios = append(rep.Scenarios, missingScenario(".", "no scenario evidence ("+evidence.ScenarioFile+", "+
			evidence.RequestsFile+" or "+evidence.NotRunFile+") under "+b.Dir))
	}
	rep.Groups = groups(rep.Scenarios)
	rep.Status = overall(rep.Scenarios)
	return rep
}

// missingScenario is the NOT_RUN report of a scenario directory that is absent.
func missingScenario(dir, reason string) report.ScenarioReport {
	name := dir
	if i := strings.IndexByte(dir, '-'); i > 0 && i < 4 { // NN-<slug>/<repeat>
		name = dir[i+1:]
	}
	sr := newScenarioReport(name, dir)
	sr.Status, sr.Incomplete, sr.Reasons = NotRun, true, []string{reason}
	return sr
}

// newScenarioReport returns a report whose lists are empty, not null: the
// JSON schema requires arrays.
func newScenarioReport(name, dir string) report.ScenarioReport {
	return report.ScenarioReport{Name: name, Dir: dir, Reasons: []string{}, Checks: []report.Check{}, Targets: []report.TargetReport{},
		Phases: []report.PhaseReport{}, Stats: []report.ProxyStats{}, FaultWindows: []report.FaultWindow{}, Limiters: []report.LimiterReport{},
		Receipts: report.Receipts{LostIDs: []string{}, LeakedIDs: []string{}, DuplicateIDs: []string{}, ResentIDs: []string{}, PhantomIDs: []string{}}}
}

func overall(srs []report.ScenarioReport) string {
	if len(srs) == 0 {
		return NotRun
	}
	st := Pass
	for _, s := range srs {
		switch s.Status {
		case Fail:
			return Fail
		case NotRun:
			st = NotRun
		}
	}
	return st
}

// AnalyzeScenario loads and judges one scenario directory on its own (its
// report's Dir is dir). It never fails: unreadable evidence makes the
// scenario NOT_RUN with the reason.
func AnalyzeScenario(dir string) report.ScenarioReport {
	return JudgeScenario(evidence.LoadScenario(context.Background(), dir, false), Options{})
}

// Classify returns the class name of a client outcome (evidence.Classify).
func Classify(r *evidence.Request) string { return r.Classify().String() }

// Input is what a Checker judges: one scenario's evidence, its scenario.json
// with the Options' overrides applied, and the report's computed sections
// (totals, targets, receipts, stats, fault windows, RLS, access log join).
//
// A checker of another program reads Evidence (the requests' columns,
// receipts, decisions, stats snapshots, faults), Scenario (the
// expectation, the limiters) and the sections of Report, plus Received and
// ReceiptNs; it returns its checks in a Result and must not modify Input:
// the other checkers read it too. Options.ExtraCheckers adds such a checker
// to the table.
type Input struct {
	// Evidence is the scenario's evidence as evidence.LoadScenario read it;
	// its requests are indexed 0..Evidence.Requests.Len()-1 in file order.
	Evidence *evidence.ScenarioEvidence
	// Scenario is scenario.json with Options.Admitted and
	// Options.IntendedLimit applied.
	Scenario evidence.Scenario
	// Report is the scenario's report as the checkers see it: every section
	// (Totals, Targets, Phases, Receipts, Stats, FaultWindows, RLS,
	// Limiters, Model, Arrivals, Flows, Latency, ...) is computed before the
	// first checker runs; Checks, Reasons and Status are set from the
	// checkers' results after the last one.
	Report *report.ScenarioReport
	// AccessLogs is the join of the access logs with the requests; nil
	// without access log entries.
	AccessLogs *AccessLogJoin
	// labRLS is the decisions' reconciliation before the real RLS's is attached.
	labRLS *report.RLSCheck
	// limiters are the scenario's limiters as the model checks judged them.
	limiters *limiterSet
	// received tells, per request, whether the backend has its receipt;
	// recvNs is its earliest receipt time (0: none).
	received []bool
	recvNs   []int64
	// nginx is the join of the nginx access logs with the requests; nil
	// without nginx evidence.
	nginx *nginxJoin
	// retries splits the repeated receipts into proxy retries and re-sends.
	retries *retrySplit
	// seen are the times the limiters saw the requests by their own logs;
	// nil when no log tells them.
	seen *seenTimes
	// forwards are the limiter times per attack target (limiterForwards).
	forwards map[string]*limiterTimes
	// noModel says why Report.Model is nil (no limiter declared, a limiter
	// not checked, ...), for "admitted: model".
	noModel string
}

// JudgeScenario judges one scenario's evidence. It never fails: unreadable
// evidence makes the scenario NOT_RUN with the reason.
func JudgeScenario(ev *evidence.ScenarioEvidence, opts Options) report.ScenarioReport {
	sr := newScenarioReport(filepath.Base(ev.Path), ev.Path)
	if ev.Dir != "" {
		sr.Dir = ev.Dir
	}
	in := &Input{Evidence: ev, Scenario: ev.Scenario, Report: &sr}
	if ev.HasScenario {
		sr.Name = ev.Scenario.Name
	}
	if opts.Admitted != nil {
		in.Scenario.Expect.Admitted = evidence.AdmittedIn(*opts.Admitted)
		if in.Scenario.Expect.Label == "" {
			in.Scenario.Expect.Label = "admitted " + opts.Admitted.String()
		}
	}
	if opts.IntendedLimit != nil {
		in.Scenario.IntendedLimit = evidence.IntendedPerRun(*opts.IntendedLimit)
	}
	sr.Repeat = in.Scenario.Repeat
	sr.Expectation = in.Scenario.Expect.Label

	if notRun := completeness(in); notRun {
		return sr
	}
	acc := observe(in)
	if opts.Series {
		sr.Series = seriesOf(in, acc)
	}
	if why := nothingToCheck(in, opts); why != "" && !sr.Incomplete {
		sr.Status = NotRun
		sr.Reasons = append(sr.Reasons, "nothing to check: "+why)
		return sr
	}
	checkers := DefaultCheckers
	if opts.Checkers != nil {
		checkers = opts.Checkers
	}
	if len(opts.ExtraCheckers) > 0 {
		checkers = append(slices.Clip(checkers), opts.ExtraCheckers...)
	}
	verdict(in, Compose(in, checkers))
	return sr
}

// nothingToCheck says why a scenario asks nothing that could fail: no
// requests, no scenario.json (and no expectation given in Options),
// neither an expectation nor an intended limit nor a configured limiter,
// or only expectations that cannot fail given what was sent ("admitted
// 0..1000000000 cannot fail: 20 requests were sent, so it is 0..20").
// Such a scenario is NOT_RUN, never PASS.
func nothingToCheck(in *Input, opts Options) string {
	ev := in.Evidence
	switch {
	case ev.Requests.Len() == 0:
		return "no requests in " + evidence.RequestsFile
	case !ev.HasScenario && opts.Admitted == nil && opts.IntendedLimit == nil:
		return "no " + evidence.ScenarioFile + " (no expectation, no configured limit)"
	case in.limiters != nil && len(in.limiters.runs) > 0:
		return ""
	}
	real, vac := declared(in)
	switch {
	case real:
		return ""
	case len(vac) > 0:
		return vacuousText(vac)
	}
	return evidence.ScenarioFile + " has neither an expectation nor an intended limit nor a configured limiter"
}

// Received tells whether the backend has a receipt of request i (an index
// of Evidence.Requests); false for an index out of range.
func (in *Input) Received(i int) bool { return i >= 0 && i < len(in.received) && in.received[i] }

// ReceiptNs is the time of request i's earliest receipt, unix ns; 0 when
// the backend has none (or i is out of range).
func (in *Input) ReceiptNs(i int) int64 {
	if i < 0 || i >= len(in.recvNs) {
		return 0
	}
	return in.recvNs[i]
}

// incomplete records a reason the evidence is incomplete.
func (in *Input) incomplete(format string, a ...any) {
	in.Report.Incomplete = true
	in.Report.Reasons = append(in.Report.Reasons, "incomplete: "+fmt.Sprintf(format, a...))
}

// completeness turns the evidence's problems, and what the evidence shows of
// itself (an attack that did not complete, fewer requests than sent, a
// fault that did not take effect), into reasons, in layout order. It returns
// true when the scenario did not run (NOT_RUN marker, no requests.jsonl):
// the report is then final.
func completeness(in *Input) bool {
	ev, sr := in.Evidence, in.Report
	d := evidence.Dir(ev.Path)
	problems := func(file string) {
		for _, p := range ev.Problems {
			if p.File == file {
				in.incomplete("%s", p.Msg)
			}
		}
	}
	problems(evidence.ScenarioFile)
	if ev.NotRun {
		sr.Status = NotRun
		sr.Reasons = append(sr.Reasons, ev.NotRunReason)
		return true
	}
	problems(evidence.AttackFile)
	problems(evidence.MergeFile)
	if a := ev.Attack; a != nil {
		for i, ph := range a.Phases {
			if !ph.Complete && a.Complete {
				in.incomplete("%s: phase %d did not complete %s", d.Attack(), i+1, ph.Error)
			}
		}
		if !a.Complete {
			why := "complete=false"
			if a.Interrupted {
				why = "interrupted"
			}
			if a.Error != "" {
				why += ": " + a.Error
			}
			in.incomplete("%s: attack did not complete (%s)", d.Attack(), why)
		}
	}
	problems(evidence.RequestsFile)
	if !ev.HasRequests {
		sr.Status = NotRun
		sr.Reasons = append(sr.Reasons, fmt.Sprintf("%s: missing: the attack did not run", d.Requests()))
		sr.Incomplete = true
		return true
	}
	if a := ev.Attack; a != nil && a.Sent > 0 && ev.Requests.Len() < a.Sent {
		in.incomplete("%s: %d requests recorded, attack.json says %d sent", d.Requests(), ev.Requests.Len(), a.Sent)
	}
	problems(evidence.ReceiptsFile)
	problems(evidence.FaultsFile)
	// A fault that did not take effect, or fewer faults than planned, means
	// the scenario's premise (e.g. "the RLS is down") was not established.
	for i, f := range ev.Faults {
		if why := faultTimes(f, ev.Attack); why != "" {
			in.incomplete("%s:%d: fault %q (%s %s): %s: contradictory evidence", d.Faults(), i+1, f.Name, f.Action, f.Target, why)
		}
		if !f.OK {
			why := f.Error
			if why == "" {
				why = "ok is false"
			}
			in.incomplete("%s:%d: fault %q (%s %s) did not take effect: %s", d.Faults(), i+1, f.Name, f.Action, f.Target, why)
		}
	}
	if n := in.Scenario.Faults; len(ev.Faults) < n {
		in.incomplete("%s: %d fault(s) recorded, scenario.json plans %d", d.Faults(), len(ev.Faults), n)
	}
	problems(evidence.DecisionsFile)
	if !ev.HasDecisions && in.Scenario.RLSDecisions {
		in.incomplete("%s: missing: scenario.json says the RLS decisions were recorded", d.Decisions())
	}
	problems(evidence.HarnessFile)
	problems(evidence.StatsDir)
	problems(evidence.AccessLogDir)
	problems(evidence.NginxDir)
	return false
}

// observe computes the report's sections from the evidence: classes per
// target and phase, the reconciliation with receipts, over-admission, the
// configured bound, the proxies' counter deltas, fault windows, the RLS
// decisions, the access log join and the latency. It returns the latency
// accumulators (for Series).
func observe(in *Input) *latencyAccs {
	ev, sr := in.Evidence, in.Report
	reqs := &ev.Requests
	// nginx's log says who answered: its limit_req rejections become local_429.
	in.nginx = joinNginx(ev)
	if in.nginx != nil {
		sr.Nginx = in.nginx.report
	}
	n := reqs.Len()
	targetReceipts := reconcile(in)
	perTarget := make([]report.Classes, len(reqs.Targets))
	perPhase := make([]report.Classes, len(reqs.Phases))
	var total report.Classes
	var start, end int64
	for i := 0; i < n; i++ {
		c, got := reqs.Class[i], in.received[i]
		total.Add(c, got)
		perTarget[reqs.Target[i]].Add(c, got)
		perPhase[reqs.Phase[i]].Add(c, got)
		if s := reqs.SentNs[i]; start == 0 || s < start {
			start = s
		}
		if e := reqs.EndNs[i]; e > end {
			end = e
		}
	}
	sr.StartNs, sr.EndNs = start, end
	sr.Totals = total
	if len(reqs.Phases) >= 2 {
		for p, name := range reqs.Phases {
			sr.Phases = append(sr.Phases, report.PhaseReport{Phase: name, Classes: perPhase[p]})
		}
	}
	order := targetOrder(reqs)
	for _, t := range order {
		sr.Targets = append(sr.Targets, report.TargetReport{Target: reqs.Targets[t], Classes: perTarget[t], Receipts: targetReceipts[t]})
	}

	sr.Bound = configuredBound(in.Scenario.Limits, start, end)
	sr.Stats = proxyStats(in)
	sr.FaultWindows = faultWindows(ev, in.received)
	sr.Amplification = amplificationOf(in, in.retries)
	sr.Arrivals = arrivalsOf(in)
	if j := JoinAccessLogs(ev.AccessLogs, reqs, &ev.Receipts); j.Entries > 0 {
		in.AccessLogs = j
		sr.ProducerCounts = j.Producers
	}
	judgeLimiters(in)
	sr.OverAdmission = overAdmissionOf(in) // after the shards' clocks are known
	sr.RLS = rlsCheck(ev, in.limiters.shadowRule)
	in.labRLS = sr.RLS
	if ev.RLSLog || ev.RLSParsedLog {
		if sr.RLS == nil {
			sr.RLS = &report.RLSCheck{ByCode: map[string]int{}, Windows: []report.RLSWindow{}}
		}
		sr.RLS.Real = reconcileReal(in)
	}
	acc := accumulateLatency(reqs)
	sr.Latency = latencyOf(ev, sr, acc)
	return acc
}

// judgeLimiters resolves the scenario's limiters, joins the RLS decisions
// to their requests, places the faults, runs each limiter's model check
// and the findings that need no expectation.
func judgeLimiters(in *Input) {
	ev, sr := in.Evidence, in.Report
	ls := resolveLimiters(in)
	in.limiters = ls
	in.seen, sr.Harness = limiterSeen(in)
	if h := ev.Harness; h != nil {
		harnessProbed(sr.Harness, h)
	}
	impossibleFaults(in, ls)
	applyShardClocks(in)
	ls.failOpen = failOpen(sr)
	if ev.HasDecisions && len(ev.Decisions) > 0 {
		ls.join = joinDecisions(ev, decisionResolution(ev.Decisions), ls.joinWidenNs(), ls.rlsUnits())
	}
	if namedFlows(&ev.Requests) {
		ls.keys = newKeyUse(len(ls.runs), ev.Requests.Len())
	}
	ls.applyFaults(in, in.received)
	if why := requestsIncomplete(in); why != "" {
		for _, r := range ls.runs {
			r.err = why
		}
	}
	ls.checkModels(in, in.received, in.recvNs)
	sr.Limiters = make([]report.LimiterReport, 0, len(ls.runs))
	for _, r := range ls.runs {
		sr.Limiters = append(sr.Limiters, *r.report)
	}
	flowTables(in)
	if b, why := ls.endToEnd(&ev.Requests); why == "" {
		sr.Model = &b
	} else {
		in.noModel = why
	}
	if ls.global || ls.failOpen > 0 {
		sr.RLSFailures = ls.failures(in, in.received)
	}
	sr.Engagement = ls.engagement(in, in.received)
	if len(ls.runs) > 0 || ev.HasDecisions {
		sr.Shadow = ls.shadowCounts(in)
	}
	sr.RateLimitHeaders = ls.rateHeaders(in, in.received)
}

// requestsIncomplete says why requests.jsonl lacks requests that may have
// reached the limiters (a model replay needs all of them), or "".
func requestsIncomplete(in *Input) string {
	ev := in.Evidence
	if a := ev.Attack; a != nil && a.Sent > ev.Requests.Len() {
		return fmt.Sprintf("%s holds %d of the %d requests sent: a replay needs every one", evidence.RequestsFile, ev.Requests.Len(), a.Sent)
	}
	for _, p := range ev.Problems {
		if p.File == evidence.RequestsFile {
			return evidence.RequestsFile + " is incomplete: a replay needs every request"
		}
	}
	return ""
}

// rlsUnits gives the join each request's RLS descriptor keys (the RLS
// counter keys, domain and descriptor without the window) at the first RLS
// limiter that computes them; one unknown key ("") for a request that
// called the RLS with descriptors no limiter computes; none for a request
// that did not call it.
func (ls *limiterSet) rlsUnits() func(int) ([]string, string) {
	unknown := []string{""}
	return func(i int) ([]string, string) {
		if ls.global && !ls.throughGlobal[i] {
			return nil, ""
		}
		for _, r := range ls.runs {
			if set := r.set(i); r.decl.RLS != nil && set != nil {
				return set.units, r.decl.RLS.Domain
			}
		}
		return unknown, ""
	}
}

// reconcile joins receipts to requests by ID (sr.Receipts), sets
// in.received and in.recvNs, and returns the number of requests with a
// receipt per target index.
func reconcile(in *Input) []int {
	ev, sr := in.Evidence, in.Report
	reqs, recs := &ev.Requests, &ev.Receipts
	rc := &sr.Receipts
	rc.Total = recs.Len()
	count := make([]int32, reqs.Len())
	in.received = make([]bool, reqs.Len())
	in.recvNs = make([]int64, reqs.Len())
	phantom := map[string]int{}
	pi := 0
	for k, r := range recs.Request {
		switch {
		case r >= 0:
			count[r]++
			in.received[r] = true
			if t := recs.RecvNs[k]; in.recvNs[r] == 0 || t < in.recvNs[r] {
				in.recvNs[r] = t
			}
		case r == evidence.NoID:
			rc.WithoutID++
		default:
			phantom[recs.PhantomIDs[pi]]++
			pi++
		}
	}
	sample := func(l *[]string, id string) {
		if len(*l) < report.SampleIDs {
			*l = append(*l, id)
		}
	}
	in.retries = splitRetries(reqs, recs, in.nginx)
	perTarget := make([]int, len(reqs.Targets))
	var dups []string
	for i, n := range count {
		c := reqs.Class[i]
		if n > 0 {
			perTarget[reqs.Target[i]]++
		}
		if n > 1 {
			rc.Duplicates += int(n) - 1
			rc.ProxyRetries += int(in.retries.retries[i])
			rc.Resent += int(in.retries.resent[i])
			dups = append(dups, reqs.IDs.ID(i))
		}
		rejected := c.ProxyRejected() || in.nginx != nil && in.nginx.rejected[i]
		switch {
		case c.FromBackend() && n > 0:
			rc.AdmittedWithReceipt++
		case c.FromBackend():
			rc.AdmittedWithoutReceipt++
			sample(&rc.LostIDs, reqs.IDs.ID(i))
		case rejected && n > 0:
			rc.RejectedWithReceipt++
			sample(&rc.LeakedIDs, reqs.IDs.ID(i))
		case c == evidence.ClassNoResponse:
			rc.Indeterminate++
			if n > 0 {
				rc.IndeterminateWithReceipt++
			}
		}
	}
	phantoms := make([]string, 0, len(phantom))
	for id, n := range phantom {
		phantoms = append(phantoms, id)
		rc.Phantom += n
		if n > 1 {
			rc.Duplicates += n - 1
			rc.Resent += n - 1
			dups = append(dups, id)
		}
	}
	sort.Strings(dups)
	sort.Strings(phantoms)
	for _, id := range dups {
		sample(&rc.DuplicateIDs, id)
	}
	rc.ResentIDs = resentIDs(reqs, in.retries)
	for _, id := range phantoms {
		if phantom[id] > 1 && len(rc.ResentIDs) < report.SampleIDs {
			rc.ResentIDs = append(rc.ResentIDs, id)
		}
	}
	for _, id := range phantoms {
		sample(&rc.PhantomIDs, id)
	}
	return perTarget
}

// Validity is a checker's verdict, in the Jepsen checker model: valid
// (pass), invalid (fail) or unknown. Merging takes the highest priority:
// fail over unknown over pass.
type Validity int

// Validities, by increasing priority. NotChecked is a result without checks:
// it takes no part in a merge, and a composition of nothing but NotChecked
// results is Unknown, never Pass.
const (
	NotChecked Validity = iota
	Valid
	Unknown
	Invalid
)

// String returns "not checked", "pass", "unknown" or "fail".
func (v Validity) String() string {
	switch v {
	case Valid:
		return report.CheckPass
	case Unknown:
		return report.CheckUnknown
	case Invalid:
		return report.CheckFail
	}
	return "not checked"
}

// Merge returns the validity of a and b together: fail > unknown > pass.
func Merge(a, b Validity) Validity { return max(a, b) }

// Result is what a Checker returns.
type Result struct {
	// Checks are the judged properties, in report order.
	Checks []report.Check
	// Incomplete lists why the evidence cannot support a verdict (each
	// becomes an "incomplete: " reason and makes the scenario NOT_RUN).
	Incomplete []string
}

// Validity merges the checks' statuses; NotChecked without checks (a
// CheckNotChecked check takes no part).
func (r Result) Validity() Validity {
	v := NotChecked
	for _, c := range r.Checks {
		switch c.Status {
		case report.CheckPass:
			v = Merge(v, Valid)
		case report.CheckFail:
			v = Merge(v, Invalid)
		case report.CheckNotChecked:
		default:
			v = Merge(v, Unknown)
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
	Valid Validity
	// Results are the checkers' results, in table order.
	Results []Result
}

// Compose runs every checker on in and merges their results. A checker that
// panics gives an unknown check named after it with the panic as its value.
func Compose(in *Input, checkers []Checker) Composed {
	out := Composed{Valid: NotChecked, Results: make([]Result, 0, len(checkers))}
	for _, c := range checkers {
		r := runChecker(c, in)
		out.Valid = Merge(out.Valid, r.Validity())
		out.Results = append(out.Results, r)
	}
	if out.Valid == NotChecked {
		out.Valid = Unknown
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
		sr.Status = NotRun
	case c.Valid == Invalid:
		sr.Status = Fail
	case c.Valid == Valid:
		sr.Status = Pass
	default:
		sr.Status = NotRun
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
	{"admission timing", checkAdmissionTiming},
	{"amplification", checkAmplification},
	{"proxy stats", checkStats},
	{"rls decisions", checkRLSDecisions},
	{"rls decisions logged", checkRLSLogged},
	{"real rls", checkRealRLS},
}

// checkAdmitted: the requests that passed every limiter within the
// expected range: a fixed one, or "model", the limiters' end-to-end model
// bound for this run (ScenarioReport.Model; without one the check is
// unknown: nothing to compare with is not a PASS). Requests without
// response that may have passed make the count a range; when they decide
// the check it is unknown.
func checkAdmitted(in *Input) (r Result) {
	ex, t := in.Scenario.Expect, in.Report.Totals
	if ex.Admitted == nil {
		return r
	}
	lo, hi := t.Passed, t.PassedMax(in.Report.Receipts.IndeterminateWithReceipt)
	got := strconv.Itoa(lo)
	if hi != lo {
		got = fmt.Sprintf("%d..%d (%d without response)", lo, hi, hi-lo)
	}
	if v := admittedVacuous(in); v != nil {
		r.notChecked(v, got)
		return r
	}
	want, wantText := ex.Admitted.Range, ex.Admitted.String()
	if ex.Admitted.Model {
		m := in.Report.Model
		if m == nil {
			why := in.noModel
			if why == "" {
				why = "no limiter model"
			}
			r.add("admitted", report.CheckUnknown, "model", got+"; admitted: model needs a limiter model ("+why+")")
			return r
		}
		want = evidence.Range{Min: m.Min, Max: m.Max}
		wantText = fmt.Sprintf("model %d..%d", m.Min, m.Max)
	}
	st := report.CheckFail
	switch {
	case want.Contains(lo) && want.Contains(hi):
		st = report.CheckPass
	case hi >= want.Min && lo <= want.Max:
		st = report.CheckUnknown // some no-response requests decide it
	}
	if why := premiseMissed(in, want, lo, hi); st == report.CheckFail && !ex.Admitted.Model && why != "" {
		st, got = report.CheckUnknown, got+", "+why
	}
	r.add("admitted", st, wantText, got)
	return r
}

// timingPremise says why a fixed count range that failed follows from the
// admitted count's missed premise (premiseMissed), or "".
func timingPremise(in *Input) string {
	ex, t := in.Scenario.Expect, in.Report.Totals
	if ex.Admitted == nil || ex.Admitted.Model {
		return ""
	}
	lo, hi := t.Passed, t.PassedMax(in.Report.Receipts.IndeterminateWithReceipt)
	if ex.Admitted.Range.Contains(lo) && ex.Admitted.Range.Contains(hi) {
		return ""
	}
	if why := premiseMissed(in, ex.Admitted.Range, lo, hi); why != "" {
		return fmt.Sprintf("follows from the admitted count %d, %s", lo, why)
	}
	return ""
}

func checkClasses(in *Input) (r Result) {
	ex := in.Scenario.Expect
	for _, k := range sortedKeys(ex.Classes) {
		want := ex.Classes[k]
		n, ok := in.Report.Totals.Get(k)
		switch v := classVacuous(in, k, want); {
		case !ok:
			r.add("class "+k, report.CheckFail, want.String(), "unknown class")
		case v != nil:
			r.notChecked(v, strconv.Itoa(n))
		default:
			st, got := passIf(want.Contains(n)), strconv.Itoa(n)
			if why := timingPremise(in); st == report.CheckFail && why != "" {
				st, got = report.CheckUnknown, got+", "+why
			}
			r.add("class "+k, st, want.String(), got)
		}
	}
	return r
}

func checkReceipts(in *Input) (r Result) {
	rc := in.Report.Receipts
	r.add("admitted without receipt (lost)", passIf(rc.AdmittedWithoutReceipt == 0), "0", report.IDsGot(rc.AdmittedWithoutReceipt, rc.LostIDs))
	r.add("rejected with receipt (leaked)", passIf(rc.RejectedWithReceipt == 0), "0", report.IDsGot(rc.RejectedWithReceipt, rc.LeakedIDs))
	resent := report.IDsGot(rc.Resent, rc.ResentIDs)
	if rc.ProxyRetries > 0 {
		resent += fmt.Sprintf("; %d more are proxy retries", rc.ProxyRetries)
	}
	r.add("duplicate receipts (re-sent)", passIf(rc.Resent == 0), "0", resent)
	r.add("phantom receipts (never sent)", passIf(rc.Phantom == 0), "0", report.IDsGot(rc.Phantom, rc.PhantomIDs))
	return r
}

// checkReceiptsEqualAdmitted: every admitted ID has a receipt and no
// rejected one has. It compares IDs, and its got says what it counted: the
// IDs with receipts and, when those hold more receipts than IDs, how many
// and why ("5 IDs with receipts (15 receipts: 10 proxy retries)"). The
// receipts beyond an ID's first are judged elsewhere: client re-sends by
// "duplicate receipts (re-sent)", proxy retries by expect.amplification
// (checkAmplification, which fails a retry storm nobody declared).
func checkReceiptsEqualAdmitted(in *Input) (r Result) {
	if !in.Scenario.Expect.ReceiptsEqualAdmitted {
		return r
	}
	t := in.Report.Totals
	rc, lo := in.Report.Receipts, t.Admitted+t.Backend4xx+t.Backend429+t.Backend5xx
	got := rc.AdmittedWithReceipt + rc.IndeterminateWithReceipt
	r.add("receipts = admitted", passIf(got == lo && rc.AdmittedWithoutReceipt == 0), strconv.Itoa(lo),
		receiptsCounted(in, rc.AdmittedWithReceipt+rc.IndeterminateWithReceipt+rc.RejectedWithReceipt))
	return r
}

// receiptsCounted describes ids IDs with receipts: their number when each
// has one receipt ("5"), else what their receipts are ("5 IDs with
// receipts (15 receipts: 10 proxy retries)"): the receipts beyond an ID's
// first split into proxy retries and client re-sends, and the rejected
// IDs among them.
func receiptsCounted(in *Input, ids int) string {
	s := in.retries
	var receipts, retries, resent int
	for i := range s.receipts {
		receipts += int(s.receipts[i])
		retries += int(s.retries[i])
		resent += int(s.resent[i])
	}
	if receipts == ids {
		return strconv.Itoa(ids)
	}
	var why []string
	if retries > 0 {
		why = append(why, plural(retries, "proxy retry", "proxy retries"))
	}
	if resent > 0 {
		why = append(why, plural(resent, "client re-send", "client re-sends"))
	}
	got := fmt.Sprintf("%s (%s", plural(ids, "ID with receipts", "IDs with receipts"), plural(receipts, "receipt", "receipts"))
	if len(why) > 0 {
		got += ": " + strings.Join(why, ", ")
	}
	if n := in.Report.Receipts.RejectedWithReceipt; n > 0 {
		got += fmt.Sprintf("; %d of the IDs rejected", n)
	}
	return got + ")"
}

// plural is "1 receipt" or "5 receipts".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// checkRLSErrorsInFaultWindows: with faults, an RLS-error 500 should fall in
// (or straddle) a fault window or its recovery lag; one entirely outside
// every window is unexplained.
func checkRLSErrorsInFaultWindows(in *Input) (r Result) {
	sr := in.Report
	if len(sr.FaultWindows) == 0 || sr.Totals.RLSError == 0 {
		return r
	}
	var iv intervals
	for _, w := range sr.FaultWindows {
		iv = append(iv, [2]int64{w.BeginNs, w.EndNs + w.RecoveryLagNs})
	}
	iv = iv.merged()
	reqs := &in.Evidence.Requests
	outside := 0
	for i := 0; i < reqs.Len(); i++ {
		if reqs.Class[i] == evidence.ClassRLSError && !iv.overlaps(reqs.SentNs[i], reqs.EndNs[i]) {
			outside++
		}
	}
	r.add("RLS 500s outside fault windows (unexplained)", passIf(outside <= 0), "0", strconv.Itoa(max(outside, 0)))
	return r
}

// checkWithoutID: a receipt without X-Rlbench-Id is a request the attack did
// not send (it bypassed the proxy, or lost the header on the way).
func checkWithoutID(in *Input) (r Result) {
	n := in.Report.Receipts.WithoutID
	r.add("receipts without id (unidentified)", passIf(n == 0), "0", strconv.Itoa(n))
	return r
}

// checkStats: proxy counters are compared whenever snapshots exist, unless
// scenario.json's stats_agree is false; a missing one of a pair (or of a
// proxy the scenario names), or none at all under stats_agree true, is
// incomplete evidence.
func checkStats(in *Input) (r Result) {
	sr := in.Report
	if statsOff(in) {
		return r
	}
	if in.Scenario.Expect.StatsAgree != nil && len(sr.Stats) == 0 {
		r.Incomplete = append(r.Incomplete, "stats_agree expected but no stats snapshots under "+evidence.StatsDir+"/")
	}
	for _, ps := range sr.Stats {
		if ps.Status == report.StatsMissing {
			r.Incomplete = append(r.Incomplete, ps.Detail)
			continue
		}
		for _, c := range ps.Checks {
			r.add(ps.Proxy+": "+c.Name, c.Status, c.Want, c.Got)
		}
	}
	return r
}

// statsOff reports whether scenario.json's stats_agree is false: the
// proxies' counters are then compared with nothing (checkStats,
// checkRLSLogged), only reported.
func statsOff(in *Input) bool {
	a := in.Scenario.Expect.StatsAgree
	return a != nil && !*a
}

// checkRLSDecisions: per counter window, the RLS's OK decisions within the
// limit, and every admission counted OK when the proxies asked the RLS.
func checkRLSDecisions(in *Input) (r Result) {
	rc := in.labRLS
	if rc == nil {
		return r
	}
	for _, w := range rc.Windows {
		if w.Limit > 0 {
			r.add("rls "+w.Key+": OK within limit", passIf(w.OK <= w.Limit), fmt.Sprintf("<= %d", w.Limit), strconv.Itoa(w.OK))
		}
	}
	if globalInLoop(in) {
		ok, need := okForAdmissions(in)
		r.add("every admitted request counted OK by the RLS", passIf(int64(ok) >= need), fmt.Sprintf(">= %d", need), strconv.Itoa(ok))
		r.excuse(len(r.Checks)-1, labRLSStall(in))
	}
	return r
}

// okForAdmissions returns the RLS's OK decisions that reached a request
// (late ones excluded) and the admissions that needed one: those that
// went to the RLS (their descriptor was produced) minus the proxies'
// fail-open admissions.
func okForAdmissions(in *Input) (int, int64) {
	ev, ls := in.Evidence, in.limiters
	reqs := &ev.Requests
	ok := 0
	for k, d := range ev.Decisions {
		if d.Code == evidence.CodeOK && !ls.join.isZombie(k) {
			ok++
		}
	}
	var need int64
	for i := 0; i < reqs.Len(); i++ {
		if (reqs.Class[i].FromBackend() || in.received[i]) && (!ls.global || ls.throughGlobal[i]) {
			need++
		}
	}
	return ok, need - failOpen(in.Report)
}

// checkRLSLogged: the lab RLS logs every decision it sends; the proxies count
// every decision they receive (cluster.<c>.ratelimit.ok + over_limit, Envoy's
// ratelimit filter). Both sides must agree. (The real RLS can decide late,
// after a proxy gave up; its log is judged by checkRealRLS instead.)
// Snapshots taken inside the attack window (ProxyStats.Timing) make a
// disagreement unknown, not FAIL.
func checkRLSLogged(in *Input) (r Result) {
	sr := in.Report
	if !in.Scenario.RLSDecisions || in.Evidence.RLSLog || !globalInLoop(in) || statsOff(in) {
		return r
	}
	var received int64
	var timing []string
	comparable := len(sr.Stats) > 0
	for _, ps := range sr.Stats {
		if ps.Status != report.StatsOK {
			comparable = false
		}
		if ps.Timing != "" {
			timing = append(timing, ps.Proxy+": "+ps.Timing)
		}
		received += ps.Deltas[DeltaGlobalOK] + ps.Deltas[DeltaGlobalOverLimit]
	}
	if !comparable {
		return r
	}
	// the proxies count calls; the RLS logs a decision per descriptor and
	// numbers the calls of several (Decision.Call)
	var answered []evidence.Decision
	for _, d := range in.Evidence.Decisions {
		if d.Code == evidence.CodeOK || d.Code == evidence.CodeOverLimit {
			answered = append(answered, d)
		}
	}
	logged := evidence.Calls(answered)
	got := strconv.Itoa(logged) + " in " + evidence.DecisionsFile
	if logged != len(answered) {
		got = fmt.Sprintf("%d calls (%d decisions) in %s", logged, len(answered), evidence.DecisionsFile)
	}
	st := passIf(int64(logged) == received)
	if st == report.CheckFail && len(timing) > 0 {
		// snapshots inside the attack window: the counters may miss decisions
		st, got = report.CheckUnknown, got+" ("+strings.Join(timing, "; ")+")"
	}
	r.add("rls decisions logged = decisions the proxies received", st,
		strconv.FormatInt(received, 10)+" (ratelimit.ok + over_limit)", got)
	r.excuse(0, labRLSStall(in))
	return r
}

// failOpen sums the proxies' ratelimit.failure_mode_allowed deltas: requests
// admitted without an RLS decision (Envoy ratelimit filter, failure_mode_deny false).
func failOpen(sr *report.ScenarioReport) int64 {
	var n int64
	for _, ps := range sr.Stats {
		n += ps.Deltas[DeltaGlobalFailOpen]
	}
	return n
}

// globalInLoop reports whether the proxies asked an RLS: scenario.json
// declares a global limiter (or a fixed-window limit), or (evidence
// recorded by hand, without limits) the proxies' stats show the global filter.
func globalInLoop(in *Input) bool {
	if ls := in.limiters; ls != nil && len(ls.runs) > 0 {
		return ls.global
	}
	for _, ps := range in.Report.Stats {
		if _, ok := ps.Deltas[DeltaGlobalOK]; ok {
			return true
		}
	}
	return false
}

// Verdicts of a scenario (evidence.Pass, evidence.Fail, evidence.NotRun).
// NOT_RUN covers both a scenario that did not execute and one whose evidence
// is missing or truncated: nothing incomplete is PASS.
const (
	Pass   = evidence.Pass
	Fail   = evidence.Fail
	NotRun = evidence.NotRun
)

// Response class names, as used in Classes and in scenario expectations
// (evidence.Class.String; see evidence.Marks.Classify for the rules).
var (
	ClassAdmitted   = evidence.ClassAdmitted.String()   // 2xx
	ClassLocal429   = evidence.ClassLocal429.String()   // 429 with body local_rate_limited (Envoy local_ratelimit filter)
	ClassGlobal429  = evidence.ClassGlobal429.String()  // 429 with x-envoy-ratelimited (Envoy ratelimit filter, OVER_LIMIT)
	ClassRLSError   = evidence.ClassRLSError.String()   // 500 with an empty body: Envoy ratelimit filter, RLS error and failure_mode_deny
	ClassOther4xx   = evidence.ClassOther4xx.String()   // any other 4xx of unknown origin (no upstream mark, no receipt)
	ClassOther5xx   = evidence.ClassOther5xx.String()   // any other 5xx of unknown origin
	ClassOther      = evidence.ClassOther.String()      // 1xx/3xx
	ClassNoResponse = evidence.ClassNoResponse.String() // code 0: indeterminate, it may have reached the backend
	// ClassBackend4xx, ClassBackend429 and ClassBackend5xx came from the
	// backend (x-envoy-upstream-service-time, the backend's own body, or a
	// receipt): the request passed every limiter.
	ClassBackend4xx = evidence.ClassBackend4xx.String()
	ClassBackend429 = evidence.ClassBackend429.String()
	ClassBackend5xx = evidence.ClassBackend5xx.String()
	// ClassCircuitBreaker is Envoy's 503 with x-envoy-overloaded (flag UO).
	ClassCircuitBreaker = evidence.ClassCircuitBreaker.String()
)
