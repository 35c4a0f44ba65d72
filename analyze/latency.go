package analyze

import (
	"sort"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/evidence"
)

// Latency is the client-side latency of a scenario's requests by response
// class: over all targets, per target, per attack phase when the scenario
// has more than one, and per named flow of multi-flow attacks. A request's latency is requests.jsonl's
// latency_ns (evidence.Request.LatencyNs: from the send until the body was
// read, or until the error), taken from the Bundle's columns as EndNs − SentNs.
//
// Quantiles come from an HDR histogram (github.com/HdrHistogram/hdrhistogram-go)
// recording microseconds from 1 µs to 1 h with 3 significant digits, so a
// quantile is within 0.1% (or 1 µs) of the exact value; a latency above 1 h
// counts as 1 h in the quantiles. Max and mean are exact.
type Latency struct {
	// Classes holds one entry per class with requests, all targets together,
	// in class order (evidence.Class).
	Classes []ClassLatency `json:"classes"`
	// Targets holds the classes per target, sorted by target.
	Targets []TargetLatency `json:"targets"`
	// Phases holds the classes per attack phase, in send order; empty when
	// the scenario has a single phase.
	Phases []PhaseLatency `json:"phases"`
	// Flows holds the classes per named flow (evidence.Request.Flow), in
	// first-seen order; empty when no request names a flow.
	Flows []FlowLatency `json:"flows"`
	// RLS is the rate limit service call latency where the evidence gives it
	// (see RLSLatency); empty otherwise.
	RLS []RLSLatency `json:"rls"`
}

// ClassLatency summarises the latency of the requests of one class, in ns.
type ClassLatency struct {
	// Class is a class name (see the Class constants).
	Class string `json:"class"`
	// Count is the number of requests of the class.
	Count int `json:"count"`
	// P50Ns, P90Ns, P99Ns and P999Ns are the 50th, 90th, 99th and 99.9th
	// percentiles, ns (HDR histogram, 3 significant digits).
	P50Ns  int64 `json:"p50_ns"`
	P90Ns  int64 `json:"p90_ns"`
	P99Ns  int64 `json:"p99_ns"`
	P999Ns int64 `json:"p999_ns"`
	// MaxNs is the largest latency, exact, ns.
	MaxNs int64 `json:"max_ns"`
	// MeanNs is the mean latency, exact (rounded down), ns.
	MeanNs int64 `json:"mean_ns"`
}

// TargetLatency is the latency by class of the requests sent to one target.
type TargetLatency struct {
	// Target is the target (proxy) name.
	Target string `json:"target"`
	// Classes holds one entry per class with requests, in class order.
	Classes []ClassLatency `json:"classes"`
}

// PhaseLatency is the latency by class of the requests one attack phase sent.
type PhaseLatency struct {
	// Phase is the attack phase (plan step) name.
	Phase string `json:"phase"`
	// Classes holds one entry per class with requests, in class order.
	Classes []ClassLatency `json:"classes"`
}

// FlowLatency is the latency by class of the requests of one named flow.
type FlowLatency struct {
	// Flow is the flow's name.
	Flow string `json:"flow"`
	// Classes holds one entry per class with requests, in class order.
	Classes []ClassLatency `json:"classes"`
}

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

func (a *latencyAcc) summary(class string) ClassLatency {
	cl := ClassLatency{Class: class, Count: a.count, MaxNs: a.max}
	if a.count > 0 {
		cl.MeanNs = a.sumNs / int64(a.count)
		cl.P50Ns, cl.P90Ns, cl.P99Ns, cl.P999Ns = a.quantileNs(50), a.quantileNs(90), a.quantileNs(99), a.quantileNs(99.9)
	}
	return cl
}

// classAccs is one accumulator per class.
type classAccs [evidence.NumClasses]latencyAcc

func (c *classAccs) summaries() []ClassLatency {
	out := []ClassLatency{}
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

// accumulateLatency records every request's latency by class, target, phase
// and flow.
func accumulateLatency(reqs *evidence.Requests) *latencyAccs {
	a := &latencyAccs{targets: make([]classAccs, len(reqs.Targets)), phases: make([]classAccs, len(reqs.Phases)),
		flows: make([]classAccs, len(reqs.Flows))}
	flows := len(reqs.Flow) == reqs.Len()
	for i, n := 0, reqs.Len(); i < n; i++ {
		ns, c := reqs.EndNs[i]-reqs.SentNs[i], reqs.Class[i]
		a.all[c].record(ns)
		a.targets[reqs.Target[i]][c].record(ns)
		a.phases[reqs.Phase[i]][c].record(ns)
		if flows {
			a.flows[reqs.Flow[i]][c].record(ns)
		}
	}
	return a
}

// latencyOf is the scenario's Latency section (RLS call latency included).
func latencyOf(ev *evidence.ScenarioEvidence, sr *ScenarioReport, a *latencyAccs) *Latency {
	reqs := &ev.Requests
	l := &Latency{Classes: a.all.summaries(), Targets: []TargetLatency{}, Phases: []PhaseLatency{}, Flows: []FlowLatency{}, RLS: rlsLatency(ev, sr)}
	order := targetOrder(reqs)
	for _, t := range order {
		l.Targets = append(l.Targets, TargetLatency{Target: reqs.Targets[t], Classes: a.targets[t].summaries()})
	}
	if len(reqs.Phases) >= 2 {
		for p, name := range reqs.Phases {
			l.Phases = append(l.Phases, PhaseLatency{Phase: name, Classes: a.phases[p].summaries()})
		}
	}
	for f, name := range reqs.Flows {
		if name != "" {
			l.Flows = append(l.Flows, FlowLatency{Flow: name, Classes: a.flows[f].summaries()})
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
