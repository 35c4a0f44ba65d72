package analyze

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// faultsSection places the faults in time (ScenarioReport.FaultWindows).
var faultsSection = section{name: "faults", needs: []string{"receipts"}, compute: func(in *Input) {
	in.Report.FaultWindows = faultWindows(in.Evidence, in.received)
}}

// faultWindows builds one window per fault: a stop (or a set of backend
// faults) opens a window on its target at the stop's begin that the next
// start (clear) of the same target closes at the start's end (the component
// is back only once the start finished); a
// restart or an exec is a window from its begin to its end. A window left open
// runs to the end of the evidence. Requests are tallied inside the window when
// both their send and their end fall in it, and as straddling when they
// overlap an edge.
func faultWindows(ev *evidence.ScenarioEvidence, received []bool) []report.FaultWindow {
	faults := append([]evidence.Fault(nil), ev.Faults...)
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].BeginNs < faults[j].BeginNs })
	reqs, recs := &ev.Requests, &ev.Receipts
	if len(faults) == 0 {
		return []report.FaultWindow{}
	}
	var lastEnd int64
	for _, e := range reqs.EndNs.All() {
		lastEnd = max(lastEnd, e)
	}
	for _, t := range recs.RecvNs.All() {
		lastEnd = max(lastEnd, t)
	}
	out := []report.FaultWindow{}
	open := map[string]int{} // target -> index in out
	for _, f := range faults {
		switch f.Action {
		case evidence.ActionStop, evidence.ActionSet:
			if _, ok := open[f.Target]; ok {
				continue // already down
			}
			out = append(out, report.FaultWindow{Name: f.Name, Target: f.Target, BeginNs: f.BeginNs, Open: true, ActsOn: []string{}})
			open[f.Target] = len(out) - 1
		case evidence.ActionStart, evidence.ActionClear:
			if i, ok := open[f.Target]; ok {
				out[i].EndNs = f.EndNs
				out[i].Open = false
				delete(open, f.Target)
			}
		case evidence.ActionRestart, evidence.ActionExec:
			out = append(out, report.FaultWindow{Name: f.Name, Target: f.Target, BeginNs: f.BeginNs, EndNs: f.EndNs, ActsOn: []string{}})
		}
	}
	for i := range out {
		if out[i].Open {
			out[i].EndNs = max(lastEnd, out[i].BeginNs)
		}
		w := &out[i]
		for j, s := range reqs.SentNs.All() {
			e := reqs.EndNs.At(j)
			switch {
			case s >= w.BeginNs && e <= w.EndNs:
				w.Inside.Add(reqs.Class[j], received[j], reqs.IsNotSent(j))
			case s <= w.EndNs && e >= w.BeginNs:
				w.Straddling.Add(reqs.Class[j], received[j], reqs.IsNotSent(j))
			}
		}
		for _, t := range recs.RecvNs.All() {
			if t >= w.BeginNs && t <= w.EndNs {
				w.Receipts++
			}
		}
	}
	return out
}

// FaultSlack bounds how long before an attack's start_ns, or after its
// end_ns (attack.json), a fault action may begin or end: a plan's steps
// around an attack (stop the RLS, wait, attack, start it again) take
// seconds to minutes; a fault recorded an hour away from its scenario's
// attack is no part of it.
const FaultSlack = time.Hour

// faultTimes says why a fault's begin_ns..end_ns is not a time of its
// scenario: not a time span (begin_ns <= 0, end_ns before begin_ns), or
// more than FaultSlack away from the attack's span; "" when it is.
func faultTimes(f evidence.Fault, a *evidence.Attack) string {
	switch {
	case f.BeginNs <= 0:
		return fmt.Sprintf("begin_ns %d is not a time", f.BeginNs)
	case f.EndNs < f.BeginNs:
		return fmt.Sprintf("end_ns %d is before begin_ns %d", f.EndNs, f.BeginNs)
	case a == nil || a.StartNs <= 0 || a.EndNs < a.StartNs:
		return ""
	case f.BeginNs < a.StartNs-int64(FaultSlack) || f.EndNs > a.EndNs+int64(FaultSlack):
		return fmt.Sprintf("begin_ns..end_ns %d..%d lies more than %v outside the attack's start_ns..end_ns %d..%d (%s)",
			f.BeginNs, f.EndNs, FaultSlack, a.StartNs, a.EndNs, evidence.AttackFile)
	}
	return ""
}

// impossibleFaults makes the evidence incomplete for every fault on Redis
// in a scenario whose RLS keeps its counters in memory (a global limiter
// whose state the RLS's restart loses: the lab RLS) and where no declared
// limiter depends on Redis or keeps its counters there
// (evidence.Limiter.Dependencies, Resets): that RLS has no Redis, so the
// line cannot have happened; it suspends no check either way. (A fault on
// a part no limiter uses, the RLS of a scenario of local limiters, is
// possible: it acts on none and suspends nothing.)
func impossibleFaults(in *Input, ls *limiterSet) {
	inMemory, redis := false, false
	for _, r := range ls.runs {
		inMemory = inMemory || r.decl.Stage == evidence.StageGlobal && slices.Contains(r.decl.Resets, evidence.FaultTargetRLS)
		redis = redis || slices.Contains(r.decl.Dependencies(), evidence.FaultTargetRedis) || slices.Contains(r.decl.Resets, evidence.FaultTargetRedis)
	}
	if !inMemory || redis {
		return
	}
	d := evidence.Dir(in.Evidence.Path)
	for i, f := range in.Evidence.Faults {
		if f.Target == evidence.FaultTargetRedis {
			in.incomplete("%s:%d: fault %q (%s %s): the scenario has no redis (its RLS keeps the counters in memory, no limiter depends on redis): impossible evidence",
				d.Faults(), i+1, f.Name, f.Action, f.Target)
		}
	}
}
