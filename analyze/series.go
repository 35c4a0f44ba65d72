package analyze

import (
	"sort"

	"github.com/tsenart/vegeta/v12/lib/lttb"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// binWidth returns the smallest 1, 2 or 5 × 10^k ns width that covers span in
// at most MaxBins bins.
func binWidth(span int64) int64 {
	for w := int64(1); ; w *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if span/(w*m) < report.MaxBins {
				return w * m
			}
		}
	}
}

// seriesOf computes the scenario's Series from its evidence and report
// sections (targets, fault windows, limits).
func seriesOf(in *Input, a *latencyAccs) *report.Series {
	ev, sr := in.Evidence, in.Report
	reqs, recs := &ev.Requests, &ev.Receipts
	lo, hi := sr.StartNs, sr.EndNs
	widen := func(t int64) {
		if t <= 0 {
			return
		}
		if lo == 0 || t < lo {
			lo = t
		}
		hi = max(hi, t)
	}
	for _, t := range recs.RecvNs.All() {
		widen(t)
	}
	for _, w := range sr.FaultWindows {
		widen(w.BeginNs)
		widen(w.EndNs)
	}
	bin := binWidth(hi - lo)
	start := lo / bin * bin
	bins := int((hi-start)/bin) + 1
	s := &report.Series{StartNs: start, BinNs: bin, Bins: bins, Targets: []report.TargetSeries{}, Receipts: make([]int, bins),
		AdmittedCumulative: make([]int, bins), Bounds: []report.BoundSeries{}, Latency: []report.LatencySeries{}, Distributions: []report.LatencyDistribution{}}
	binOf := func(t int64) int { return min(max(int((t-start)/bin), 0), bins-1) }

	order := targetOrder(reqs)
	pos := make([]int, len(reqs.Targets)) // target index -> index in s.Targets
	for k, t := range order {
		pos[t] = k
		s.Targets = append(s.Targets, report.TargetSeries{Target: reqs.Targets[t], Admitted: make([]int, bins),
			Rejected: make([]int, bins), Errors: make([]int, bins), Receipts: make([]int, bins)})
	}
	for i, n := 0, reqs.Len(); i < n; i++ {
		ts, b := &s.Targets[pos[reqs.Target[i]]], binOf(reqs.SentNs.At(i))
		switch c := reqs.Class[i]; {
		case c == evidence.ClassAdmitted:
			ts.Admitted[b]++
			s.AdmittedCumulative[b]++
		case c.ProxyRejected():
			ts.Rejected[b]++
		default:
			ts.Errors[b]++
		}
	}
	for k := 1; k < bins; k++ {
		s.AdmittedCumulative[k] += s.AdmittedCumulative[k-1]
	}
	for j, t := range recs.RecvNs.All() {
		b := binOf(t)
		s.Receipts[b]++
		if r := recs.Request[j]; r >= 0 {
			s.Targets[pos[reqs.Target[r]]].Receipts[b]++
		}
	}
	if sr.Bound != nil {
		line := report.BoundSeries{Name: report.BoundConfigured, Allowed: make([]int, bins)}
		from := sr.StartNs
		for k := range line.Allowed {
			end := start + int64(k+1)*bin
			if end <= from {
				continue // before the first send nothing was admitted or allowed
			}
			if b := configuredBound(in.Scenario.Limits, from, end); b != nil {
				line.Allowed[k] = b.Allowed
			}
		}
		s.Bounds = append(s.Bounds, line)
	}
	s.Latency = latencySeries(reqs, order, start)
	for _, t := range order {
		for cl := range a.targets[t] {
			acc := &a.targets[t][cl]
			if acc.count == 0 {
				continue
			}
			d := report.LatencyDistribution{Target: reqs.Targets[t], Class: evidence.Class(cl).String(), Count: acc.count,
				Percents: report.DistributionPercents, LatencyNs: make([]int64, len(report.DistributionPercents))}
			for k, p := range report.DistributionPercents {
				d.LatencyNs[k] = acc.quantileNs(p)
			}
			s.Distributions = append(s.Distributions, d)
		}
	}
	return s
}

// latencySeries returns per target (in order) and class the requests'
// (send offset, latency) points in send order, LTTB-downsampled to
// MaxLatencyPoints.
func latencySeries(reqs *evidence.Requests, order []int, start int64) []report.LatencySeries {
	groups := map[[2]int][]int{}
	for i, n := 0, reqs.Len(); i < n; i++ {
		k := [2]int{int(reqs.Target[i]), int(reqs.Class[i])}
		groups[k] = append(groups[k], i)
	}
	out := []report.LatencySeries{}
	for _, t := range order {
		for cl := 0; cl < int(evidence.NumClasses); cl++ {
			idx := groups[[2]int{t, cl}]
			if len(idx) == 0 {
				continue
			}
			sort.SliceStable(idx, func(x, y int) bool { return reqs.SentNs.At(idx[x]) < reqs.SentNs.At(idx[y]) })
			next := 0
			pts, _ := lttb.Downsample(len(idx), report.MaxLatencyPoints, func(count int) ([]lttb.Point, error) {
				ps := make([]lttb.Point, 0, count)
				for ; count > 0 && next < len(idx); count-- {
					i := idx[next]
					ps = append(ps, lttb.Point{X: float64(reqs.SentNs.At(i) - start), Y: float64(reqs.EndNs.At(i) - reqs.SentNs.At(i))})
					next++
				}
				return ps, nil
			})
			ls := report.LatencySeries{Target: reqs.Targets[t], Class: evidence.Class(cl).String(), Count: len(idx),
				OffsetNs: make([]int64, len(pts)), LatencyNs: make([]int64, len(pts))}
			for k, p := range pts {
				ls.OffsetNs[k], ls.LatencyNs[k] = int64(p.X), int64(p.Y)
			}
			out = append(out, ls)
		}
	}
	return out
}
