package analyze

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// Thresholds: the k6-style bounds of expect.latency and expect.ratios
// (evidence.LatencyThreshold, evidence.RatioBound), judged like every
// other check: PASS or FAIL with the measured value, not checked when the
// bound cannot fail, and inconclusive (NOT_RUN) when the measurement is
// missing or the harness's own lateness could explain a breach.

// latencyStall is the most the harness's own lateness may have added to one
// request's measured latency: the host probe's largest stall (a client
// stalled between send and response measures the stall as latency; steal
// time shows there too), or, when the host was not probed,
// evidence.DefaultPeakTolerance. why says which.
func latencyStall(h *report.HarnessReport) (d time.Duration, why string) {
	if h == nil || !h.Probed {
		return evidence.DefaultPeakTolerance, "the default timing tolerance " + evidence.DefaultPeakTolerance.String() + " (the host was not probed)"
	}
	why = "the host probe's largest stall " + fmtNs(h.StallMaxNs)
	if h.StealPercent > 0 {
		why += fmt.Sprintf(" (steal %.1f%%)", h.StealPercent)
	}
	return time.Duration(h.StallMaxNs), why
}

// classLatencyOf returns the latency summary of class at target ("" for
// every target), nil when no request of that class was answered there.
func classLatencyOf(l *report.Latency, class, target string) *report.ClassLatency {
	if l == nil {
		return nil
	}
	list := l.Classes
	if target != "" {
		list = nil
		for i := range l.Targets {
			if l.Targets[i].Target == target {
				list = l.Targets[i].Classes
			}
		}
	}
	for i := range list {
		if list[i].Class == class && list[i].Count > 0 {
			return &list[i]
		}
	}
	return nil
}

// latencyStatNs is the statistic name (LatencyStat.Name) of c, ns.
func latencyStatNs(c *report.ClassLatency, name string) int64 {
	switch name {
	case "p50":
		return c.P50Ns
	case "p90":
		return c.P90Ns
	case "p99":
		return c.P99Ns
	case "p999":
		return c.P999Ns
	case "max":
		return c.MaxNs
	default: // mean
		return c.MeanNs
	}
}

// checkLatencyThresholds judges expect.latency: one check per bounded
// statistic, named "latency CLASS[ at TARGET] STAT" (e.g. "latency
// admitted p99"). A class without answered requests (at the target) is
// inconclusive; an upper bound broken by no more than latencyStall is
// inconclusive too: the harness's own lateness could explain the breach.
func checkLatencyThresholds(in *Input) (r Result) {
	ths := in.Scenario.Expect.Latency
	if len(ths) == 0 {
		return r
	}
	stall, stallWhy := latencyStall(in.Report.Harness)
	for i := range ths {
		th := &ths[i]
		where, scope := "", ""
		if th.Target != "" {
			where, scope = " at "+th.Target, " to "+th.Target
		}
		cl := classLatencyOf(in.Report.Latency, th.Class, th.Target)
		for _, st := range th.Stats() {
			name := "latency " + th.Class + where + " " + st.Name
			want := st.Bound.String()
			if cl == nil {
				if st.Bound.CannotFail() {
					r.notChecked(&vacuous{name: name, want: want, why: "a latency is never below 0"}, "no requests")
					continue
				}
				r.add(name, report.CheckUnknown, want, fmt.Sprintf("no %s responses%s: nothing measured", th.Class, scope))
				continue
			}
			ns := latencyStatNs(cl, st.Name)
			got := fmt.Sprintf("%s (%s)", fmtNs(ns), plural(cl.Count, "request", "requests"))
			switch {
			case st.Bound.CannotFail():
				r.notChecked(&vacuous{name: name, want: want, why: "a latency is never below 0"}, got)
			case st.Bound.Holds(time.Duration(ns)):
				r.add(name, report.CheckPass, want, got)
			case st.Bound.Upper() && time.Duration(ns)-st.Bound.D <= stall:
				r.add(name, report.CheckUnknown, want, fmt.Sprintf("%s: %s over the bound, within %s: the harness's own lateness could explain it",
					got, fmtNs(ns-int64(st.Bound.D)), stallWhy))
			default:
				r.add(name, report.CheckFail, want, got)
			}
		}
	}
	return r
}

// checkRatios judges expect.ratios: one check per name, "ratio NAME", of
// its count over the requests sent. "passed" lies between the sure
// admissions and those plus the requests without response that may have
// passed: a bound that holds for one end and not the other is
// inconclusive. A breach that follows from the admitted count's missed
// timing premise is inconclusive, as for expect.classes.
func checkRatios(in *Input) (r Result) {
	ex := in.Scenario.Expect.Ratios
	t := in.Report.Totals
	for _, k := range sortedKeys(ex) {
		b := ex[k]
		name, want := "ratio "+k, b.String()
		lo, ok := t.Get(k)
		if !ok {
			r.add(name, report.CheckFail, want, "unknown class")
			continue
		}
		hi := lo
		if k == "passed" {
			hi = t.PassedMax(in.Report.Receipts.IndeterminateWithReceipt)
		}
		if t.Sent == 0 {
			if b.CannotFail() {
				r.notChecked(&vacuous{name: name, want: want, why: "a ratio lies in 0..100%"}, "no requests sent")
				continue
			}
			r.add(name, report.CheckUnknown, want, "no requests sent: nothing measured")
			continue
		}
		got := ratioText(lo, hi, t.Sent)
		okLo, okHi := b.Holds(float64(lo)/float64(t.Sent)), b.Holds(float64(hi)/float64(t.Sent))
		switch {
		case b.CannotFail():
			r.notChecked(&vacuous{name: name, want: want, why: "a ratio lies in 0..100%"}, got)
		case okLo && okHi:
			r.add(name, report.CheckPass, want, got)
		case okLo != okHi:
			r.add(name, report.CheckUnknown, want, got+": the requests without response decide it")
		default:
			st := report.CheckFail
			if why := timingPremise(in); why != "" {
				st, got = report.CheckUnknown, got+", "+why
			}
			r.add(name, st, want, got)
		}
	}
	return r
}

// ratioText is "0.05% (1 of 2000)", or for a range "0.05%..0.10% (1..2 of 2000)".
func ratioText(lo, hi, sent int) string {
	pct := func(n int) string { return strconv.FormatFloat(100*float64(n)/float64(sent), 'g', 4, 64) + "%" }
	if lo == hi {
		return fmt.Sprintf("%s (%d of %d)", pct(lo), lo, sent)
	}
	return fmt.Sprintf("%s..%s (%d..%d of %d)", pct(lo), pct(hi), lo, hi, sent)
}

// thresholdsDeclared adds the thresholds to declared: each bounded
// statistic or ratio that can fail is a real expectation, one that cannot
// is vacuous.
func thresholdsDeclared(ex *evidence.Expectation, add func(*vacuous)) {
	for i := range ex.Latency {
		th := &ex.Latency[i]
		for _, st := range th.Stats() {
			if st.Bound.CannotFail() {
				add(&vacuous{name: "latency " + th.Class + " " + st.Name, want: st.Bound.String(), why: "a latency is never below 0"})
			} else {
				add(nil)
			}
		}
	}
	for _, k := range sortedKeys(ex.Ratios) {
		if b := ex.Ratios[k]; b.CannotFail() {
			add(&vacuous{name: "ratio " + k, want: b.String(), why: "a ratio lies in 0..100%"})
		} else {
			add(nil)
		}
	}
}
