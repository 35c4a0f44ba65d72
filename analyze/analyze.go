package analyze

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
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
// NOT_RUN, and so is the run's manifest when it does not decode
// (Bundle.Problems: one NOT_RUN entry named after the file); a bundle
// without any scenario gives one NOT_RUN scenario.
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
	for _, p := range b.Problems {
		// The run's manifest is unreadable: which scenarios it should
		// hold is unknown, so the run is not shown complete.
		rep.Scenarios = append(rep.Scenarios, missingScenario(p.File,
			fmt.Sprintf("incomplete: %s: the run's list of scenario directories is unknown", p.Msg)))
	}
	if len(rep.Scenarios) == 0 {
		rep.Scenarios = append(rep.Scenarios, missingScenario(".", "no scenario evidence ("+evidence.ScenarioFile+", "+
			evidence.RequestsFile+" or "+evidence.NotRunFile+") under "+b.Dir))
	}
	rep.Groups = groups(rep.Scenarios)
	rep.Status = overall(rep.Scenarios)
	rep.Matrix = report.BuildMatrix(rep)
	return rep
}

// missingScenario is the NOT_RUN report of a scenario directory that is absent.
func missingScenario(dir, reason string) report.ScenarioReport {
	name := dir
	if i := strings.IndexByte(dir, '-'); i > 0 && i < 4 { // NN-<slug>/<repeat>
		name = dir[i+1:]
	}
	sr := newScenarioReport(name, dir)
	sr.Status, sr.Incomplete, sr.Reasons = evidence.NotRun, true, []string{reason}
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
		return evidence.NotRun
	}
	st := evidence.Pass
	for _, s := range srs {
		switch s.Status {
		case evidence.Fail:
			return evidence.Fail
		case evidence.NotRun:
			st = evidence.NotRun
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
	// Limiters, Model, Arrivals, Flows, Latency, ...) is computed, each by
	// its family's section step (sections), before the first checker runs;
	// Checks, Reasons and Status are set from the checkers' results after
	// the last one.
	Report *report.ScenarioReport
	// AccessLogs is the join of the access logs with the requests; nil
	// without access log entries.
	AccessLogs *AccessLogJoin
	// labRLS is the decisions' reconciliation before the real RLS's is attached.
	labRLS *report.RLSCheck
	// limiters are the scenario's limiters as the model checks judged them.
	limiters *limiterSet
	// received tells, per request, whether the backend has its receipt;
	// firstRecv is the index in Evidence.Receipts of its earliest receipt
	// (-1: none; 4 bytes a request, not its time's 8: ReceiptNs).
	received  []bool
	firstRecv []int32
	// targetReceipts counts the requests with a receipt per target index
	// (receiptsSection).
	targetReceipts []int
	// latency are the latency accumulators (latencySection), for Series.
	latency *latencyAccs
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
		sr.Labels = ev.Scenario.Labels
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
	observe(in)
	if opts.Series {
		sr.Series = seriesOf(in, in.latency)
	}
	if why := nothingToCheck(in, opts); why != "" && !sr.Incomplete {
		sr.Status = evidence.NotRun
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
		return "no " + evidence.ScenarioFile + " (no expectation, no configured limit): " + whatToCheck
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
	return evidence.ScenarioFile + " has neither an expectation nor an intended limit nor a configured limiter: " + whatToCheck
}

// whatToCheck names what gives a scenario something to check, for the
// "nothing to check" reasons: Options.Admitted and Options.IntendedLimit
// (rlbench analyze's flags), or scenario.json's keys (a plan scenario's
// expect, intended_limit and lab limiters, which `rlbench run` writes
// there).
const whatToCheck = "give --expect-admitted N or --intended-limit N, or declare expect, intended_limit or limiters in " + evidence.ScenarioFile +
	" (in a plan: a scenario's expect, intended_limit, lab.local or lab.global)"

// Received tells whether the backend has a receipt of request i (an index
// of Evidence.Requests); false for an index out of range.
func (in *Input) Received(i int) bool { return i >= 0 && i < len(in.received) && in.received[i] }

// ReceiptNs is the time of request i's earliest receipt, unix ns; 0 when
// the backend has none (or i is out of range).
func (in *Input) ReceiptNs(i int) int64 {
	if i < 0 || i >= len(in.firstRecv) || in.firstRecv[i] < 0 {
		return 0
	}
	return in.Evidence.Receipts.RecvNs.At(int(in.firstRecv[i]))
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
		sr.Status = evidence.NotRun
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
		sr.Status = evidence.NotRun
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
	problems(evidence.HAProxyDir)
	return false
}

// section is one step of observe: it computes part of a scenario's report
// (or a join the checkers read, an unexported field of Input) from the
// evidence and from the sections it needs. Each family's file owns its
// sections (stats.go statsSection, rls.go rlsSection, ...); sections lists
// them in dependency order.
type section struct {
	// name names the section in needs.
	name string
	// needs are the sections whose results compute reads: they come
	// earlier in sections (TestSectionsInDependencyOrder).
	needs []string
	// compute sets the section's fields of in.Report and in.
	compute func(*Input)
}

// sections are the report's sections in the order observe computes them:
// the nginx join and the receipts first (they tell who answered and what
// was received), then the totals every later section counts with, the
// per-family sections, the limiters (which need the joins, the stats and
// the fault windows) and what is computed from the limiters.
var sections = []section{
	nginxSection,
	receiptsSection,
	totalsSection,
	boundSection,
	statsSection,
	faultsSection,
	amplificationSection,
	arrivalsSection,
	accessLogSection,
	senderLandingsSection,
	limitersSection,
	flowsSection,
	findingsSection,
	headersSection,
	overAdmissionSection,
	rlsSection,
	realRLSSection,
	latencySection,
}

// observe computes every section of the report from the evidence, in the
// order of sections, before the first checker runs: a checker (also one of
// Options.ExtraCheckers) sees all of them.
func observe(in *Input) {
	for _, s := range sections {
		s.compute(in)
	}
}

// totalsSection counts the classes of the whole run, per target and per
// phase, and the run's span (ScenarioReport.Totals, Targets, Phases,
// StartNs, EndNs).
var totalsSection = section{name: "totals", needs: []string{"receipts"}, compute: totals}

// totals computes totalsSection.
func totals(in *Input) {
	ev, sr := in.Evidence, in.Report
	reqs := &ev.Requests
	n := reqs.Len()
	targetReceipts := in.targetReceipts
	perTarget := make([]report.Classes, len(reqs.Targets))
	perPhase := make([]report.Classes, len(reqs.Phases))
	var total report.Classes
	var start, end int64
	notSent := reqs.NotSent // increasing
	for i := 0; i < n; i++ {
		c, got := reqs.Class[i], in.received[i]
		ns := len(notSent) > 0 && int(notSent[0]) == i
		if ns {
			notSent = notSent[1:]
		}
		total.Add(c, got, ns)
		perTarget[reqs.Target[i]].Add(c, got, ns)
		perPhase[reqs.PhaseAt(i)].Add(c, got, ns)
		if s := reqs.SentNs.At(i); start == 0 || s < start {
			start = s
		}
		if e := reqs.EndNs.At(i); e > end {
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
}

// plural is "1 receipt" or "5 receipts".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
