package analyze

import (
	"fmt"
	"slices"

	"github.com/rlbench/rlbench/evidence/nginxrec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// findingsSection computes the limiters' findings that need no
// expectation: the end-to-end model bound (ScenarioReport.Model, or why
// none in in.noModel), the fail-open admissions (RLSFailures), the
// engagement and the shadow-mode counts.
var findingsSection = section{name: "findings", needs: []string{"receipts", "stats", "faults", "limiters"}, compute: limiterFindings}

// limiterFindings computes findingsSection.
func limiterFindings(in *Input) {
	ev, sr, ls := in.Evidence, in.Report, in.limiters
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
}

// failures computes rls_failures: the fail-open admissions and where they lie.
func (ls *limiterSet) failures(in *Input, received []bool) *report.RLSFailures {
	ev := in.Evidence
	reqs := &ev.Requests
	f := &report.RLSFailures{FailOpenIDs: []string{}, OutsideIDs: []string{}}
	for _, d := range ev.Decisions {
		if d.Code == evidence.CodeError {
			f.ErrorDecisions++
		}
	}
	stats := int(ls.failOpen)
	acting := ls.actingWindows(in.Report)
	perRequest := ev.HasDecisions && ls.join != nil && ls.join.skipped == ""
	var ids, outside []string
	admittedIn, admittedOut := 0, 0
	for i := 0; i < reqs.Len(); i++ {
		if !ls.throughGlobal[i] || !(reqs.Class[i].Passed() || received[i]) {
			continue
		}
		inside := acting.overlaps(reqs.SentNs.At(i), reqs.EndNs.At(i))
		if inside {
			admittedIn++
		} else {
			admittedOut++
		}
		if perRequest && !ls.joinedOK(i) && !ls.callUnknown[i] { // a request whose call is unknown may have made none
			ids = append(ids, reqs.IDs.ID(i))
			if !inside {
				outside = append(outside, reqs.IDs.ID(i))
			}
		}
	}
	f.FailOpen = max(stats, len(ids))
	f.FailOpenIDs = sampleOf(ids)
	switch {
	case f.FailOpen == 0:
		f.OutsideFaults = 0
	case perRequest && len(ids) >= stats:
		f.OutsideFaults, f.OutsideIDs = len(outside), sampleOf(outside)
	case f.FailOpen > admittedIn:
		f.OutsideFaults = f.FailOpen - admittedIn
	case admittedOut == 0:
		f.OutsideFaults = 0
	default:
		f.OutsideFaults = -1
	}
	return f
}

// actingWindows are the fault windows (with their recovery lag) that act
// on some RLS limiter.
func (ls *limiterSet) actingWindows(sr *report.ScenarioReport) intervals {
	var iv intervals
	for _, w := range sr.FaultWindows {
		if len(w.ActsOn) == 0 {
			continue
		}
		for _, name := range w.ActsOn {
			if r := ls.byName(name); r != nil && r.decl.Stage == evidence.StageGlobal {
				iv = append(iv, [2]int64{w.BeginNs, w.EndNs + w.RecoveryLagNs})
				break
			}
		}
	}
	return iv.merged()
}

func (ls *limiterSet) byName(name string) *limiterRun {
	for _, r := range ls.runs {
		if r.decl.Name == name {
			return r
		}
	}
	return nil
}

// merged sorts and merges the intervals.
func (iv intervals) merged() intervals {
	sort.Slice(iv, func(a, b int) bool { return iv[a][0] < iv[b][0] })
	out := intervals{}
	for _, x := range iv {
		if n := len(out); n > 0 && x[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], x[1])
			continue
		}
		out = append(out, x)
	}
	return out
}

// applyFaults decides, for every fault window, the limiters it acts on
// (a fault on a part a limiter depends on; an exec marker acts on none)
// and its recovery lag, the time after the window's end until the RLS
// answered again: the last RLS failure (an rls_error response, an ERROR
// decision, a fail-open admission) before the first RLS answer after the
// window. Each limiter's checks are suspended inside its windows plus
// their lag; a fault on a part that keeps a limiter's state (Resets)
// starts a new epoch of its counters.
func (ls *limiterSet) applyFaults(in *Input, received []bool) {
	sr := in.Report
	for wi := range sr.FaultWindows {
		w := &sr.FaultWindows[wi]
		if ls.actsOn(w) {
			ls.recoveryLag(in, w, received)
		}
	}
	for _, r := range ls.runs {
		var iv intervals
		for _, w := range sr.FaultWindows {
			if slices.Contains(w.ActsOn, r.decl.Name) {
				iv = append(iv, [2]int64{w.BeginNs, w.EndNs + w.RecoveryLagNs})
			}
		}
		r.suspend = iv.merged()
		sort.Slice(r.resets, func(a, b int) bool { return r.resets[a].lo < r.resets[b].lo })
	}
}

// actsOn sets w.ActsOn to the limiters that depend on w's target, adds a
// closed w as a state reset to the limiters whose state it keeps, and
// reports whether w acts on a global limiter.
func (ls *limiterSet) actsOn(w *report.FaultWindow) (global bool) {
	w.ActsOn = []string{}
	for _, r := range ls.runs {
		if slices.Contains(r.decl.Dependencies(), w.Target) {
			w.ActsOn = append(w.ActsOn, r.decl.Name)
			global = global || r.decl.Stage == evidence.StageGlobal
		}
		if slices.Contains(r.decl.Resets, w.Target) && !w.Open {
			r.resets = append(r.resets, epochBoundary{lo: w.BeginNs, hi: w.EndNs, name: w.Name})
		}
	}
	return global
}

// firstRLSAnswer is the first RLS answer after end (unix ns): a global
// 429 sent after it, or an OK or OVER_LIMIT decision that reached a
// request; MaxInt64 when none.
func (ls *limiterSet) firstRLSAnswer(ev *evidence.ScenarioEvidence, end int64) int64 {
	reqs := &ev.Requests
	first := int64(1<<63 - 1)
	for i := 0; i < reqs.Len(); i++ {
		if ls.throughGlobal[i] && reqs.Class[i] == evidence.ClassGlobal429 && reqs.SentNs.At(i) > end {
			first = min(first, reqs.SentNs.At(i))
		}
	}
	for k, d := range ev.Decisions {
		if (d.Code == evidence.CodeOK || d.Code == evidence.CodeOverLimit) && d.TimeNs > end && !ls.join.isZombie(k) {
			first = min(first, d.TimeNs)
		}
	}
	return first
}

// recoveryLag sets w's recovery lag and the fail-open admissions sent
// after it: the last RLS failure after w's end and before the first RLS
// answer (firstRLSAnswer).
func (ls *limiterSet) recoveryLag(in *Input, w *report.FaultWindow, received []bool) {
	ev := in.Evidence
	reqs := &ev.Requests
	res := int64(1)
	if ls.join != nil {
		res = ls.join.res
	}
	first := ls.firstRLSAnswer(ev, w.EndNs)
	lagEnd := w.EndNs
	failOpenAfter := 0
	perRequest := ev.HasDecisions && ls.join != nil && ls.join.skipped == ""
	for i := 0; i < reqs.Len(); i++ {
		if !ls.throughGlobal[i] || reqs.EndNs.At(i) <= w.EndNs || reqs.SentNs.At(i) >= first {
			continue
		}
		switch {
		case reqs.Class[i] == evidence.ClassRLSError:
			lagEnd = max(lagEnd, reqs.EndNs.At(i))
		case perRequest && (reqs.Class[i].Passed() || received[i]) && !ls.joinedOK(i) && !ls.callUnknown[i]:
			lagEnd = max(lagEnd, reqs.EndNs.At(i))
			if reqs.SentNs.At(i) > w.EndNs {
				failOpenAfter++
			}
		}
	}
	for _, d := range ev.Decisions {
		if d.Code == evidence.CodeError && d.TimeNs > w.EndNs && d.TimeNs < first {
			lagEnd = max(lagEnd, d.TimeNs+res-1)
		}
	}
	w.RecoveryLagNs = lagEnd - w.EndNs
	w.FailOpenAfter = failOpenAfter
}

// engagement counts, over the RLS limiters, the requests no limit engaged for.
func (ls *limiterSet) engagement(in *Input, received []bool) *report.Engagement {
	ev := in.Evidence
	reqs := &ev.Requests
	e := &report.Engagement{IDs: []string{}}
	found := false
	var ids []string
	for k, r := range ls.runs {
		if r.decl.Stage != evidence.StageGlobal {
			continue
		}
		found = true
		if r.entries == nil {
			continue // no actions known (a previous release's limits): decisions only
		}
		for i := 0; i < reqs.Len(); i++ {
			if !ls.reaches(k, i, reqs, received) {
				continue
			}
			e.Requests++
			set := r.set(i)
			switch {
			case set.keyUnknown() && (set.rule == nil || set.limited == 0):
				e.UnknownKey++
				e.UnknownKeyHeaders = appendNew(e.UnknownKeyHeaders, set.unknownHeaders...)
			case set == nil || len(set.descs) == 0:
				e.NoDescriptor++
				ids = append(ids, reqs.IDs.ID(i))
			case set.rule == nil:
			case set.limited > 0:
				e.Limited++
			case slices.Contains(set.rule, -2):
				e.Unlimited++
				ids = append(ids, reqs.IDs.ID(i))
			default:
				e.NoRule++
				ids = append(ids, reqs.IDs.ID(i))
			}
		}
	}
	for k, d := range ev.Decisions {
		if d.Code != evidence.CodeOK && d.Code != evidence.CodeOverLimit {
			continue
		}
		switch zombie := ls.join.isZombie(k); {
		case zombie && d.Applied():
			e.UnmatchedLimitedDecisions++
		case zombie:
			e.UnmatchedNoLimitDecisions++
		case d.Applied():
			e.LimitedDecisions++
		default:
			e.NoLimitDecisions++
		}
		found = true
	}
	if !found {
		return nil
	}
	e.IDs = sampleOf(ids)
	sort.Strings(e.UnknownKeyHeaders)
	return e
}

// decisionsComplete reports whether the RLS decisions are on file and
// were joined to the requests (rls/decisions.jsonl, not empty).
func (ls *limiterSet) decisionsComplete(ev *evidence.ScenarioEvidence) bool {
	return ls != nil && ev.HasDecisions && ls.join != nil && ls.join.skipped == ""
}

// unknownWhy says what leaves the engagement of some requests or decisions
// untold, "" when nothing does; limited tells which unmatched decisions
// matter: those that applied a limit (not_limited) or those that applied
// none (limit engaged).
func unknownWhy(e *report.Engagement, limited bool) string {
	var parts []string
	if e.UnknownKey > 0 {
		parts = append(parts, fmt.Sprintf("%d requests with an unknown descriptor (header %s sent, its value not recorded)", e.UnknownKey,
			strings.Join(e.UnknownKeyHeaders, ", ")))
	}
	if n := e.UnmatchedNoLimitDecisions; n > 0 && !limited {
		parts = append(parts, fmt.Sprintf("%d RLS decisions that applied no limit matched no request", n))
	}
	if n := e.UnmatchedLimitedDecisions; n > 0 && limited {
		parts = append(parts, fmt.Sprintf("%d RLS decisions that applied a limit matched no request", n))
	}
	return strings.Join(parts, "; ")
}

// unlimited is the number of requests (or, without descriptors, decisions)
// for which no limit engaged.
func unlimited(e *report.Engagement) int {
	return max(e.NoDescriptor+e.NoRule+e.Unlimited, e.NoLimitDecisions)
}

// shadowCounts sums the would-have-rejected requests the evidence shows.
func (ls *limiterSet) shadowCounts(in *Input) *report.ShadowCounts {
	ev := in.Evidence
	sc := &report.ShadowCounts{Observed: -1}
	src := false
	for k, d := range ev.Decisions {
		if d.Code != evidence.CodeOK || ls.join.isZombie(k) {
			continue
		}
		if d.Shadow || (d.Limit > 0 && d.Current > uint64(d.Limit) && ls.shadowRule(&d)) {
			sc.RLS++
		}
	}
	if ev.HasDecisions {
		src = true
	}
	for _, ps := range in.Report.Stats {
		if ps.Status != "ok" {
			continue
		}
		if _, ok := ps.Deltas[DeltaLocalRateLimited]; ok {
			src = true
			sc.Local += int(max(ps.Deltas[DeltaLocalRateLimited]-ps.Deltas[DeltaLocalEnforced], 0))
		}
	}
	for _, st := range ev.LimitReq {
		src = true
		if st == nginxrec.LimitReqRejectedDryRun {
			sc.Local++ // nginx limit_req_dry_run: would have rejected
		}
	}
	for _, r := range ls.runs {
		sc.Model += r.report.ShadowCount
	}
	if src {
		sc.Observed = sc.RLS + sc.Local
	}
	return sc
}

// shadowRule reports whether the decision's descriptor matches a
// shadow_mode rule of an RLS limiter (decisions written before
// Decision.Shadow do not say).
func (ls *limiterSet) shadowRule(d *evidence.Decision) bool {
	for _, r := range ls.runs {
		if r.cfg == nil || r.decl.RLS.Domain != d.Domain || len(d.Descriptor) == 0 {
			continue
		}
		if m, _ := r.cfg.Match(d.Descriptor); m != nil && m.ShadowMode {
			return true
		}
	}
	return false
}

// excuse turns the failed checks from index from on into inconclusive ones
// with why appended to their got, when why is not "".
func (r *Result) excuse(from int, why string) {
	if why == "" {
		return
	}
	for k := max(from, 0); k < len(r.Checks); k++ {
		if c := &r.Checks[k]; c.Status == report.CheckFail {
			c.Status, c.Got = report.CheckUnknown, c.Got+"; "+why
		}
	}
}

// labRLSStall says why the RLS limiter's counts are the harness's, or "":
// rlbench's own lab RLS (evidence.HarnessRLS) missed the proxies' timeout
// with no fault injected, so the proxies failed open (their
// failure_mode_allowed counters, or admissions without an OK decision) while
// the lab RLS may still have counted the calls it answered late. What the
// global limiter admitted then depends on the host's stalls, not on the
// system under test.
func labRLSStall(in *Input) string {
	f, ls := in.Report.RLSFailures, in.limiters
	if f == nil || f.FailOpen == 0 || ls == nil || !in.Scenario.HasHarnessPart(evidence.HarnessRLS) ||
		len(ls.actingWindows(in.Report)) > 0 {
		return ""
	}
	why := fmt.Sprintf("the lab RLS (rlbench's own part) missed the proxies' timeout on %d calls that failed open", f.FailOpen)
	if h := harnessLine(in); h != "" {
		why += " (" + h + ")"
	}
	return why
}

// checkLeak: admissions the RLS did not decide (fail open) need a fault to
// explain them: none without a fault window acting on the RLS ("leak"),
// and none outside the windows and their recovery lag.
func checkLeak(in *Input) (r Result) {
	f := in.Report.RLSFailures
	if f == nil || f.FailOpen == 0 {
		return r
	}
	ids := f.OutsideIDs
	if len(ids) == 0 && f.OutsideFaults == f.FailOpen {
		ids = f.FailOpenIDs
	}
	noFault := len(in.limiters.actingWindows(in.Report)) == 0
	switch {
	case noFault && in.Scenario.HasHarnessPart(evidence.HarnessRLS):
		// The RLS is rlbench's own lab part: nothing of the system under
		// test makes it miss the proxies' timeout, the host does.
		r.add(fmt.Sprintf("fail-open: %d admitted without an RLS decision, with no fault injected", f.FailOpen), report.CheckUnknown,
			"0 fail-open admissions, or a lab RLS that answered in time", labRLSLate(in, f))
	case noFault:
		r.add(fmt.Sprintf("leak: %d admitted while the RLS failed, with no fault injected", f.FailOpen), report.CheckFail, "0 fail-open admissions",
			report.IDsGot(f.FailOpen, f.FailOpenIDs))
	case f.OutsideFaults < 0:
		r.add("fail-open admissions inside fault windows", report.CheckUnknown, "0 outside the fault windows",
			fmt.Sprintf("%d fail-open admissions; the RLS decisions are needed to place them", f.FailOpen))
	default:
		r.add("fail-open admissions inside fault windows", passIf(f.OutsideFaults == 0), "0 outside the fault windows and their recovery lag",
			report.IDsGot(f.OutsideFaults, ids))
	}
	return r
}

// checkEngaged: a limit that was meant to hold must engage: every request
// that went to an RLS produced a descriptor that matched a finite rule
// (unless the expectation is not_limited).
func checkEngaged(in *Input) (r Result) {
	e := in.Report.Engagement
	if e == nil || in.Scenario.Expect.NotLimited || e.Requests+e.NoLimitDecisions+e.LimitedDecisions+e.UnmatchedNoLimitDecisions == 0 {
		return r
	}
	n := unlimited(e)
	got := strconv.Itoa(n)
	if n > 0 {
		var parts []string
		for _, p := range []struct {
			n    int
			what string
		}{{e.NoDescriptor, "produced no descriptor"}, {e.NoRule, "matched no rule"}, {e.Unlimited, "matched an unlimited rule"},
			{e.NoLimitDecisions, "RLS decisions applied no limit"}} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
			}
		}
		got = strings.Join(parts, ", ")
		if len(e.IDs) > 0 {
			got += " (" + strings.Join(e.IDs, ",")
			if e.NoDescriptor+e.NoRule+e.Unlimited > len(e.IDs) {
				got += ",…"
			}
			got += ")"
		}
	}
	name := "limit engaged for every request to the RLS"
	if n > 0 && e.Limited == 0 && e.LimitedDecisions == 0 {
		name = "limit never engaged"
	}
	st := passIf(n == 0)
	if why := unknownWhy(e, false); n == 0 && why != "" {
		// they may be the requests no limit engaged for
		st, got = report.CheckUnknown, got+"; "+why
	}
	r.add(name, st, "0 requests unlimited", got)
	return r
}

// checkNotLimited: expect.not_limited holds exactly when no limiter
// rejected anything and no limit engaged.
func checkNotLimited(in *Input) (r Result) {
	if !in.Scenario.Expect.NotLimited {
		return r
	}
	reqs := &in.Evidence.Requests
	var rejected []string
	rejects := []evidence.Class{evidence.ClassLocal429, evidence.ClassGlobal429}
	if ls := in.limiters; ls != nil {
		for _, run := range ls.runs {
			rejects = append(rejects, run.rejects...)
		}
	}
	for i := 0; i < reqs.Len(); i++ {
		if slices.Contains(rejects, reqs.Class[i]) {
			rejected = append(rejected, reqs.IDs.ID(i))
		}
	}
	r.add("not limited: no limiter rejection", passIf(len(rejected) == 0), "0", report.IDsGot(len(rejected), sampleOf(rejected)))
	if e := in.Report.Engagement; e != nil {
		got := fmt.Sprintf("%d requests matched a rule, %d RLS decisions applied a limit", e.Limited, e.LimitedDecisions)
		st := passIf(e.Limited == 0 && e.LimitedDecisions == 0)
		u := *e
		if in.limiters.decisionsComplete(in.Evidence) && e.UnmatchedLimitedDecisions == 0 {
			// every RLS decision is on file and none applied a limit: a
			// request whose descriptor is unknown was not limited either
			u.UnknownKey = 0
		}
		if why := unknownWhy(&u, true); st == report.CheckPass && why != "" {
			st, got = report.CheckUnknown, got+"; "+why
		}
		r.add("not limited: no limit engaged", st, "0 requests and 0 decisions limited", got)
	}
	return r
}

// checkShadow: would-have-rejected requests (shadow_mode, filter_enforced
// below 100 %) against expect.shadow.
func checkShadow(in *Input) (r Result) {
	want := in.Scenario.Expect.Shadow
	sc := in.Report.Shadow
	if want == nil {
		return r
	}
	if sc == nil || sc.Observed < 0 {
		r.add("shadow (would-have-rejected)", report.CheckUnknown, want.String(), "no RLS decisions nor local rate limit stats to count them")
		return r
	}
	got := strconv.Itoa(sc.Observed)
	if sc.RLS > 0 && sc.Local > 0 {
		got += fmt.Sprintf(" (%d RLS shadow_mode, %d local not enforced)", sc.RLS, sc.Local)
	}
	r.add("shadow (would-have-rejected)", passIf(want.Contains(sc.Observed)), want.String(), got)
	return r
}

// labRLSLate says why fail-open admissions behind rlbench's own lab RLS are
// the harness's: how many of its decisions came after the proxy had given
// up (a zombie: decided, but joined to no request), the proxies' RLS
// timeout, and how late the host was (harnessLateness).
func labRLSLate(in *Input, f *report.RLSFailures) string {
	late := 0
	if ls := in.limiters; ls != nil && ls.join != nil {
		for k := range in.Evidence.Decisions {
			if ls.join.isZombie(k) {
				late++
			}
		}
	}
	var timeout int64
	if ls := in.limiters; ls != nil {
		for _, r := range ls.runs {
			if r.decl.Stage == evidence.StageGlobal && r.decl.TimeoutNs > 0 {
				timeout = r.decl.TimeoutNs
			}
		}
	}
	got := fmt.Sprintf("%d fail-open admissions (%s)", f.FailOpen, strings.Join(f.FailOpenIDs, ","))
	if late > 0 {
		got += fmt.Sprintf("; the lab RLS decided %d calls after the proxy had given up", late)
	}
	if timeout > 0 {
		got += "; RLS timeout " + time.Duration(timeout).String()
	}
	got += ": the lab RLS is rlbench's own part, so its lateness is the harness's, not the system under test's"
	if h := harnessLine(in); h != "" {
		got += " (" + h + ")"
	}
	return got
}
