package analyze

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/evidence"
)

// rlsSection summarises the RLS decisions (ScenarioReport.RLS; the lab's
// reconciliation, before the real RLS's is attached, stays in in.labRLS).
var rlsSection = section{name: "rls", needs: []string{"limiters"}, compute: func(in *Input) {
	in.Report.RLS = rlsCheck(in.Evidence, in.limiters.shadowRule)
	in.labRLS = in.Report.RLS
}}

// rlsCheck summarises the rate limit service's decisions of the scenario
// (rls/decisions.jsonl) per counter window (cache key): how many were OK
// against the window's limit. envoyproxy/ratelimit answers OVER_LIMIT iff the
// counter after increment exceeds the limit, so a window's OK count above its
// limit means the RLS itself over-admitted. The limit is the largest one the
// window's decisions applied (a configuration reload may raise it
// mid-window); the OKs of a shadow_mode rule over its limit are shadow,
// not admissions. Nil without decisions.
//
// A start or restart of the rls or redis target (faults.jsonl) may reset the
// counters (the lab RLS keeps them in memory; Redis without persistence
// loses them), so decisions after such a fault are judged as a new counter
// epoch, named "<key> after <fault>".
func rlsCheck(ev *evidence.ScenarioEvidence, shadowRule func(*evidence.Decision) bool) *report.RLSCheck {
	if len(ev.Decisions) == 0 {
		return nil
	}
	type boundary struct {
		at   int64
		name string
	}
	var resets []boundary
	for _, f := range ev.Faults {
		if (f.Target == "rls" || f.Target == "redis") && (f.Action == evidence.ActionStart || f.Action == evidence.ActionRestart) {
			resets = append(resets, boundary{f.EndNs, f.Name})
		}
	}
	sort.Slice(resets, func(i, j int) bool { return resets[i].at < resets[j].at })
	epochKey := func(key string, t int64) string {
		i := sort.Search(len(resets), func(i int) bool { return resets[i].at > t })
		if i == 0 {
			return key
		}
		return fmt.Sprintf("%s after %s", key, resets[i-1].name)
	}
	rc := &report.RLSCheck{ByCode: map[string]int{}, Windows: []report.RLSWindow{}}
	idx := map[string]int{}
	for _, d := range ev.Decisions {
		rc.Decisions++
		rc.ByCode[d.Code]++
		if d.Key == "" {
			continue
		}
		key := epochKey(d.Key, d.TimeNs)
		i, ok := idx[key]
		if !ok {
			rc.Windows = append(rc.Windows, report.RLSWindow{Key: key, Limit: int(d.Limit)})
			i = len(rc.Windows) - 1
			idx[key] = i
		}
		w := &rc.Windows[i]
		w.Limit = max(w.Limit, int(d.Limit))
		switch {
		case d.Code == "OK" && (d.Shadow || d.Limit > 0 && d.Current > uint64(d.Limit) && shadowRule(&d)):
			w.Shadow++
		case d.Code == "OK":
			w.OK++
		case d.Code == "OVER_LIMIT":
			w.Over++
		}
	}
	sort.Slice(rc.Windows, func(i, j int) bool { return rc.Windows[i].Key < rc.Windows[j].Key })
	return rc
}

// checkRLSErrorsInFaultWindows: with faults, an RLS-error 500 should fall in
// (or straddle) a fault window or its recovery lag; one entirely outside
// every window is unexplained.
func checkRLSErrorsInFaultWindows(in *Input) (r Result) {
	sr := in.Report
	if len(sr.FaultWindows) == 0 || sr.Totals.N[evidence.ClassRLSError] == 0 {
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
		if reqs.Class[i] == evidence.ClassRLSError && !iv.overlaps(reqs.SentNs.At(i), reqs.EndNs.At(i)) {
			outside++
		}
	}
	r.add("RLS 500s outside fault windows (unexplained)", passIf(outside <= 0), "0", strconv.Itoa(max(outside, 0)))
	return r
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
		why := unrepresentable(&ps, DeltaGlobalOK, DeltaGlobalOverLimit)
		for _, v := range []int64{ps.Deltas[DeltaGlobalOK], ps.Deltas[DeltaGlobalOverLimit]} {
			if v > 0 && received > math.MaxInt64-v || v < 0 && received < math.MinInt64-v {
				why = "the proxies' ratelimit.ok + over_limit sum past the int64 range"
			}
			received += v
		}
		if why != "" && comparable {
			r.add("rls decisions logged = decisions the proxies received", report.CheckUnknown,
				"ratelimit.ok + over_limit", ps.Proxy+": unknown: "+why)
			return r
		}
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

// checkRealRLS judges rls.real of a scenario that ran on the real RLS (RealRLSLog or RealRLSParsedLog present).
func checkRealRLS(in *Input) (res Result) {
	sr := in.Report
	if sr.RLS == nil || sr.RLS.Real == nil {
		return res
	}
	add := res.add
	rr := sr.RLS.Real

	for _, w := range rr.Windows {
		name := "rls real " + w.Key
		if w.Epoch != "" {
			name += " " + w.Epoch
		}
		got := fmt.Sprintf("%d decisions, max current %d", w.Decisions, w.MaxCurrent)
		if len(w.DuplicateCurrents) > 0 {
			got = fmt.Sprintf("%d decisions, duplicated current %v", w.Decisions, w.DuplicateCurrents)
		}
		add(name+": current values unique", passIf(len(w.DuplicateCurrents) == 0), "unique", got)
		if w.Limit > 0 {
			add(name+": OK iff current <= limit", passIf(w.Inconsistent == 0), "0 inconsistent",
				strconv.Itoa(w.Inconsistent))
		}
		if w.Reloaded != nil {
			add(name+": limit change explained by a config reload", passIf(*w.Reloaded), "a config-load line between",
				fmt.Sprintf("limits %v", w.Limits))
		}
	}
	if globalInLoop(in) {
		realDescriptorChecks(in, add)
	}
	if e := rr.Errors; e.Total > 0 {
		add("rls real: Redis errors joined to Redis fault windows", passIf(e.Unexplained == 0), "0 unexplained",
			fmt.Sprintf("%d inside, %d after recovery, %d unexplained", e.Inside, e.AfterRecovery, e.Unexplained))
	}
	for _, id := range rr.Identities {
		st := report.CheckFail
		switch id.Status {
		case rls.IdentityPass, IdentityExplained:
			st = report.CheckPass
		case IdentityUnknown:
			st = report.CheckUnknown
		}
		add(fmt.Sprintf("rls real stats (process %d) %s: total_hits = within_limit + over_limit (+ errors, hanging)", id.Process, id.Key),
			st, "identity", id.Detail)
	}
	return res
}

// realDescriptorChecks adds rls.real's checks of the OK decisions per descriptor against the admissions through
// the RLS (RealDescriptor: per value, or summed over values).
func realDescriptorChecks(in *Input, add func(name, status, want, got string)) {
	rr := in.Report.RLS.Real
	var sum report.RealDescriptor
	for _, d := range rr.Descriptors {
		if d.Uncarried && d.OK == 0 {
			continue // another client's descriptor: counted as unmatched decisions by the engagement checks
		}
		if d.Summed != "" {
			sum.Descriptor, sum.AdmittedMin = d.Summed, d.AdmittedMin
			sum.OK, sum.ZombieOK = sum.OK+d.OK, sum.ZombieOK+d.ZombieOK
			continue
		}
		name := "rls real " + d.Descriptor + ": OK decisions (zombies excluded) = admissions through the RLS"
		want := evidence.Range{Min: d.AdmittedMin, Max: d.AdmittedMax}.String()
		st := passIf(d.OK >= d.AdmittedMin && d.OK <= d.AdmittedMax)
		if len(rr.Descriptors) > 1 && !d.PerValue {
			// A request with several descriptors is admitted only when all are OK; an OK of one descriptor
			// may belong to a request another one rejected.
			want = ">= " + strconv.Itoa(d.AdmittedMin)
			st = passIf(d.OK >= d.AdmittedMin)
		}
		st, got := realOKResult(in, st, d)
		add(name, st, want, got)
	}
	if sum.Descriptor != "" {
		name := "rls real " + sum.Descriptor + ": OK decisions summed over values (zombies excluded) >= admissions through the RLS"
		st, got := realOKResult(in, passIf(sum.OK >= sum.AdmittedMin), sum)
		add(name, st, ">= "+strconv.Itoa(sum.AdmittedMin), got)
	}
}

// realOKResult is the status st and the got text of an OK-decisions check of descriptor d: unknown when the
// RLS had errors, admissions passed and neither proxy stats nor the per-call join tell the fail-open ones.
func realOKResult(in *Input, st string, d report.RealDescriptor) (string, string) {
	sr := in.Report
	rr := sr.RLS.Real
	got := strconv.Itoa(d.OK)
	if d.ZombieOK > 0 {
		got += fmt.Sprintf(" (+%d zombie)", d.ZombieOK)
	}
	joined := sr.RLSFailures != nil && sr.RLSFailures.FailOpen == 0 && rr.JoinSkipped == "" && in.Evidence.HasDecisions
	if len(sr.Stats) == 0 && rr.Errors.Total > 0 && sr.Totals.Passed > 0 && !joined {
		st, got = report.CheckUnknown, got+"; fail-open admissions unknown without proxy stats"
	}
	return st, got
}
