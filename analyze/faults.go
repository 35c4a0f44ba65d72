package analyze

import (
	"sort"

	"github.com/rlbench/rlbench/evidence"
)

// Fault actions recorded in faults.jsonl (evidence.Fault.Action).
const (
	ActionStop    = evidence.ActionStop
	ActionStart   = evidence.ActionStart
	ActionRestart = evidence.ActionRestart
	ActionExec    = evidence.ActionExec
)

// faultWindows builds one window per fault: a stop (or a set of backend
// faults) opens a window on its target at the stop's begin that the next
// start (clear) of the same target closes at the start's end (the component
// is back only once the start finished); a
// restart or an exec is a window from its begin to its end. A window left open
// runs to the end of the evidence. Requests are tallied inside the window when
// both their send and their end fall in it, and as straddling when they
// overlap an edge.
func faultWindows(ev *evidence.ScenarioEvidence, received []bool) []FaultWindow {
	faults := append([]evidence.Fault(nil), ev.Faults...)
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].BeginNs < faults[j].BeginNs })
	reqs, recs := &ev.Requests, &ev.Receipts
	if len(faults) == 0 {
		return []FaultWindow{}
	}
	var lastEnd int64
	for _, e := range reqs.EndNs {
		lastEnd = max(lastEnd, e)
	}
	for _, t := range recs.RecvNs {
		lastEnd = max(lastEnd, t)
	}
	out := []FaultWindow{}
	open := map[string]int{} // target -> index in out
	for _, f := range faults {
		switch f.Action {
		case ActionStop, evidence.ActionSet:
			if _, ok := open[f.Target]; ok {
				continue // already down
			}
			out = append(out, FaultWindow{Name: f.Name, Target: f.Target, BeginNs: f.BeginNs, Open: true, ActsOn: []string{}})
			open[f.Target] = len(out) - 1
		case ActionStart, evidence.ActionClear:
			if i, ok := open[f.Target]; ok {
				out[i].EndNs = f.EndNs
				out[i].Open = false
				delete(open, f.Target)
			}
		case ActionRestart, ActionExec:
			out = append(out, FaultWindow{Name: f.Name, Target: f.Target, BeginNs: f.BeginNs, EndNs: f.EndNs, ActsOn: []string{}})
		}
	}
	for i := range out {
		if out[i].Open {
			out[i].EndNs = max(lastEnd, out[i].BeginNs)
		}
		w := &out[i]
		for j, s := range reqs.SentNs {
			e := reqs.EndNs[j]
			switch {
			case s >= w.BeginNs && e <= w.EndNs:
				w.Inside.add(reqs.Class[j], received[j])
			case s <= w.EndNs && e >= w.BeginNs:
				w.Straddling.add(reqs.Class[j], received[j])
			}
		}
		for _, t := range recs.RecvNs {
			if t >= w.BeginNs && t <= w.EndNs {
				w.Receipts++
			}
		}
	}
	return out
}
