package analyze

import (
	"sort"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// Latency histogram range: microseconds from 1 µs to 1 hour, 3 significant digits.
const (
	latencyUnitNs   = 1000
	latencyMaxUnits = 3600 * 1000 * 1000
	latencySigFigs  = 3
)

// latencyAcc accumulates the latency of one group of requests.
type latencyAcc struct {
	hist            *hdrhistogram.Histogram
	count           int
	sumNs, min, max int64
}

func (a *latencyAcc) record(ns int64) {
	if a.hist == nil {
		a.hist = hdrhistogram.New(1, latencyMaxUnits, latencySigFigs)
	}
	ns = max(ns, 0)
	if a.count == 0 || ns < a.min {
		a.min = ns
	}
	a.count++
	a.sumNs += ns
	a.max = max(a.max, ns)
	// Out of range only above 1 h: record the highest trackable value.
	_ = a.hist.RecordValue(min(ns/latencyUnitNs, latencyMaxUnits))
}

// quantileNs returns the q-th percentile (0..100) in ns: the exact minimum
// and maximum at 0 and 100.
func (a *latencyAcc) quantileNs(q float64) int64 {
	switch {
	case a.hist == nil:
		return 0
	case q <= 0:
		return a.min
	case q >= 100:
		return a.max
	}
	// The histogram's highest equivalent value is at most 0.1% high; never
	// report more than the exact maximum nor less than the minimum.
	return min(max(a.hist.ValueAtQuantile(q)*latencyUnitNs, a.min), a.max)
}

func (a *latencyAcc) summary(class string) report.ClassLatency {
	cl := report.ClassLatency{Class: class, Count: a.count, MaxNs: a.max}
	if a.count > 0 {
		cl.MeanNs = a.sumNs / int64(a.count)
		cl.P50Ns, cl.P90Ns, cl.P99Ns, cl.P999Ns = a.quantileNs(50), a.quantileNs(90), a.quantileNs(99), a.quantileNs(99.9)
	}
	return cl
}

// classAccs is one accumulator per class.
type classAccs [evidence.NumClasses]latencyAcc

func (c *classAccs) summaries() []report.ClassLatency {
	out := []report.ClassLatency{}
	for cl := range c {
		if c[cl].count > 0 {
			out = append(out, c[cl].summary(evidence.Class(cl).String()))
		}
	}
	return out
}

// latencyAccs are the accumulators of a scenario: all targets, per target
// index, per phase index and per flow index (Requests.Targets,
// Requests.Phases and Requests.Flows).
type latencyAccs struct {
	all     classAccs
	targets []classAccs
	phases  []classAccs
	flows   []classAccs
}

// latencySection is the latency by class, target, phase and flow, RLS
// calls included (ScenarioReport.Latency; the accumulators stay in
// in.latency for Series).
var latencySection = section{name: "latency", compute: func(in *Input) {
	in.latency = accumulateLatency(&in.Evidence.Requests)
	in.Report.Latency = latencyOf(in.Evidence, in.Report, in.latency)
}}

// accumulateLatency records every request's latency by class, target, phase
// and flow.
func accumulateLatency(reqs *evidence.Requests) *latencyAccs {
	a := &latencyAccs{targets: make([]classAccs, len(reqs.Targets)), phases: make([]classAccs, len(reqs.Phases)),
		flows: make([]classAccs, len(reqs.Flows))}
	flows := len(reqs.Flows) > 0 // every request has a flow ("" when unnamed)
	for i, n := 0, reqs.Len(); i < n; i++ {
		ns, c := reqs.EndNs.At(i)-reqs.SentNs.At(i), reqs.Class[i]
		a.all[c].record(ns)
		a.targets[reqs.Target[i]][c].record(ns)
		a.phases[reqs.PhaseAt(i)][c].record(ns)
		if flows {
			a.flows[reqs.FlowAt(i)][c].record(ns)
		}
	}
	return a
}

// latencyOf is the scenario's Latency section (RLS call latency included).
func latencyOf(ev *evidence.ScenarioEvidence, sr *report.ScenarioReport, a *latencyAccs) *report.Latency {
	reqs := &ev.Requests
	l := &report.Latency{Classes: a.all.summaries(), Targets: []report.TargetLatency{}, Phases: []report.PhaseLatency{}, Flows: []report.FlowLatency{}, RLS: rlsLatency(ev, sr)}
	order := targetOrder(reqs)
	for _, t := range order {
		l.Targets = append(l.Targets, report.TargetLatency{Target: reqs.Targets[t], Classes: a.targets[t].summaries()})
	}
	if len(reqs.Phases) >= 2 {
		for p, name := range reqs.Phases {
			l.Phases = append(l.Phases, report.PhaseLatency{Phase: name, Classes: a.phases[p].summaries()})
		}
	}
	for f, name := range reqs.Flows {
		if name != "" {
			l.Flows = append(l.Flows, report.FlowLatency{Flow: name, Classes: a.flows[f].summaries()})
		}
	}
	return l
}

// targetOrder returns the target indexes of reqs (Requests.Targets) sorted
// by target name: the order of every per-target section.
func targetOrder(reqs *evidence.Requests) []int {
	order := make([]int, len(reqs.Targets))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(x, y int) bool { return reqs.Targets[order[x]] < reqs.Targets[order[y]] })
	return order
}
