package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// peakLimiter is one declared limiter with a model, as the arrival
// figures use it.
type peakLimiter struct {
	name    string
	targets []string // empty: every target
	// shared is true when one state serves every target; otherwise each
	// target has its own.
	shared bool
	spec   model.Spec
}

func (p peakLimiter) appliesTo(target string) bool {
	return len(p.targets) == 0 || slices.Contains(p.targets, target)
}

// peakLimiters returns the scenario's limiters that have a model: the
// declared limiters, else those of scenario.json's limits (the lab
// proxies' token buckets: Envoy's local_ratelimit, continuous refill from
// 1.31, the timer before; the RLS's fixed window).
func peakLimiters(in *Input) []peakLimiter {
	var out []peakLimiter
	for _, l := range in.Scenario.Limiters {
		if l.Model != nil {
			out = append(out, peakLimiter{name: l.Name, targets: l.Targets, shared: l.Key == evidence.KeyShared, spec: *l.Model})
		}
	}
	if len(out) > 0 {
		return out
	}
	for i, l := range in.Scenario.Limits {
		spec, err := decl.Legacy(l).Spec()
		switch {
		case err != nil:
		case l.Kind == evidence.LimitTokenBucket:
			out = append(out, peakLimiter{name: fmt.Sprintf("limits[%d] token bucket", i), shared: l.Buckets == 1, spec: spec})
		default: // evidence.LimitFixedWindow
			out = append(out, peakLimiter{name: fmt.Sprintf("limits[%d] fixed window", i), shared: true, spec: spec})
		}
	}
	return out
}

// arrivalWindows are ArrivalWindows plus the windows the expectations
// name, sorted, without repeats.
func arrivalWindows(ex *evidence.Expectation) []time.Duration {
	ws := slices.Clone(report.ArrivalWindows)
	for _, p := range ex.BackendPeak {
		if w := time.Duration(p.Window); w > 0 && !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)
	return ws
}

// arrivalStats computes the figures of times, which it sorts in place.
func arrivalStats(times []int64, windows []time.Duration) report.ArrivalStats {
	slices.Sort(times)
	st := report.ArrivalStats{Count: len(times), Peaks: make([]report.WindowPeak, 0, len(windows))}
	if len(times) == 0 {
		return st
	}
	st.FirstNs, st.LastNs = times[0], times[len(times)-1]
	for _, w := range windows {
		n, at := model.PeakAt(times, w)
		st.Peaks = append(st.Peaks, report.WindowPeak{WindowNs: int64(w), Peak: n, AtNs: at, RatePerSec: float64(n) / w.Seconds()})
	}
	var acc latencyAcc
	for i := 1; i < len(times); i++ {
		acc.record(times[i] - times[i-1])
	}
	g := acc.summary("")
	st.InterArrival = report.GapStats{Count: g.Count, MinNs: acc.min, P50Ns: g.P50Ns, P90Ns: g.P90Ns, P99Ns: g.P99Ns, P999Ns: g.P999Ns,
		MaxNs: g.MaxNs, MeanNs: g.MeanNs}
	return st
}

// arrivalsSection is the backend's arrival peaks (ScenarioReport.Arrivals).
var arrivalsSection = section{name: "arrivals", needs: []string{"receipts"}, compute: func(in *Input) {
	in.Report.Arrivals = arrivalsOf(in)
}}

// arrivalsOf computes the scenario's Arrivals; nil when it has neither
// receipts nor admissions.
func arrivalsOf(in *Input) *report.Arrivals {
	ev := in.Evidence
	reqs, recs := &ev.Requests, &ev.Receipts
	windows := arrivalWindows(&in.Scenario.Expect)
	nt := len(reqs.Targets)
	// Exact-size columns: a million receipts are a few MB per split.
	nAdm, admPer, recPer := 0, make([]int, nt), make([]int, nt)
	for i := 0; i < reqs.Len(); i++ {
		if reqs.Class[i] == evidence.ClassAdmitted {
			nAdm++
			admPer[reqs.Target[i]]++
		}
	}
	if recs.RecvNs.Len() == 0 && nAdm == 0 {
		return nil
	}
	for _, r := range recs.Request {
		if r >= 0 && int(r) < reqs.Len() {
			recPer[reqs.Target[r]]++
		}
	}
	// One buffer, reused group after group (arrivalStats sorts in place
	// and keeps nothing): the receipts, the admissions, then each split
	// laid out by a counting sort, 8 bytes a receipt in all.
	buf := make([]int64, max(recs.RecvNs.Len(), nAdm))
	a := &report.Arrivals{Receipts: arrivalStats(recs.RecvNs.AppendTo(buf[:0]), windows), Targets: []report.TargetArrivals{},
		Endpoints: []report.EndpointArrivals{}, Expected: []report.ExpectedPeaks{}}
	adm := buf[:0]
	for i := 0; i < reqs.Len(); i++ {
		if reqs.Class[i] == evidence.ClassAdmitted {
			adm = append(adm, reqs.EndNs.At(i))
		}
	}
	a.Admissions = arrivalStats(adm, windows)
	if nt > 1 {
		recStats := splitStats(buf, recPer, windows, func(add func(g int, ns int64)) {
			for i, r := range recs.Request {
				if r >= 0 && int(r) < reqs.Len() {
					add(int(reqs.Target[r]), recs.RecvNs.At(i))
				}
			}
		})
		admStats := splitStats(buf, admPer, windows, func(add func(g int, ns int64)) {
			for i := 0; i < reqs.Len(); i++ {
				if reqs.Class[i] == evidence.ClassAdmitted {
					add(int(reqs.Target[i]), reqs.EndNs.At(i))
				}
			}
		})
		for _, t := range targetOrder(reqs) {
			a.Targets = append(a.Targets, report.TargetArrivals{Target: reqs.Targets[t], Receipts: recStats[t], Admissions: admStats[t]})
		}
	}
	if len(recs.Endpoints) > 2 { // by Receipts.Endpoint index; index 0 names none
		per := make([]int, len(recs.Endpoints))
		for _, e := range recs.Endpoint {
			per[e]++
		}
		stats := splitStats(buf, per, windows, func(add func(g int, ns int64)) {
			for i, e := range recs.Endpoint {
				add(int(e), recs.RecvNs.At(i))
			}
		})
		order := make([]int, 0, len(per)-1)
		for e := 1; e < len(per); e++ {
			order = append(order, e)
		}
		sort.Slice(order, func(x, y int) bool { return recs.Endpoints[order[x]] < recs.Endpoints[order[y]] })
		for _, e := range order {
			a.Endpoints = append(a.Endpoints, report.EndpointArrivals{Endpoint: recs.Endpoints[e], Receipts: stats[e]})
		}
	}
	for _, l := range peakLimiters(in) {
		if e, ok := expectedPeaks(reqs, l, windows); ok {
			a.Expected = append(a.Expected, e)
		}
	}
	a.Forwards = forwardArrivals(in, windows)
	a.Senders = senderArrivals(in, windows)
	return a
}

// senderRange is the requests of one sender: lines [from, from+n) of
// requests.jsonl.
type senderRange struct {
	shard, from, n int
	phase          string
}

// senderRanges are the senders of a sharded attack and their lines, when
// the evidence says them exactly:
//   - a merged shard set (evidence.MergeRecord with two or more shards):
//     merge writes requests.jsonl shard by shard, in shard order,
//     MergeShard.Requests lines each (evidence/merge: the lines of IDs sent
//     again are removed);
//   - else a plan's attack steps with senders: the runner appends each
//     sender's lines in turn, one attack.json phase per sender (with its
//     shard) in the same order, so phase p's lines follow the Recorded
//     lines of the phases before it.
//
// nil when the counts do not cover the requests exactly (the ranges would
// then be guesses), or when there are fewer than two senders.
func senderRanges(ev *evidence.ScenarioEvidence) []senderRange {
	var out []senderRange
	at := 0
	if m := ev.Merge; m != nil && len(m.Shards) >= 2 {
		for _, sh := range m.Shards {
			out = append(out, senderRange{shard: sh.Index, from: at, n: sh.Requests})
			at += sh.Requests
		}
	} else if a := ev.Attack; a != nil {
		for i := range a.Phases {
			p := &a.Phases[i]
			if p.Shard != nil {
				out = append(out, senderRange{shard: p.Shard.Index, from: at, n: p.Recorded, phase: p.Config.Name})
			}
			at += p.Recorded
		}
	}
	if len(out) < 2 || at != ev.Requests.Len() {
		return nil
	}
	return out
}

// senderOfLine is the index in ranges (senderRanges: in order, covering
// every request) of the sender of request line r, len(ranges) past them.
func senderOfLine(ranges []senderRange, r int) int {
	return sort.Search(len(ranges), func(k int) bool { return ranges[k].from+ranges[k].n > r })
}

// senderArrivals are the figures of each sender of a sharded attack
// (senderRanges): its first and last send and the receipts of its
// requests; nil when the senders' lines are not known exactly.
func senderArrivals(in *Input, windows []time.Duration) []report.SenderArrivals {
	ev := in.Evidence
	reqs, recs := &ev.Requests, &ev.Receipts
	ranges := senderRanges(ev)
	if ranges == nil {
		return nil
	}
	// A sender's requests are lines [from, from+n), the ranges in order
	// and covering every request: a receipt's sender is found by a search,
	// and its receipts are laid out in one buffer (splitStats).
	senderOf := func(r int) int { return senderOfLine(ranges, r) }
	out := make([]report.SenderArrivals, len(ranges))
	ns := 0 // reqs.NotSent (increasing) before i
	for k, sr := range ranges {
		out[k] = report.SenderArrivals{Shard: sr.shard, Phase: sr.phase, Requests: sr.n}
		for i := sr.from; i < sr.from+sr.n; i++ {
			for ns < len(reqs.NotSent) && int(reqs.NotSent[ns]) < i {
				ns++
			}
			if ns < len(reqs.NotSent) && int(reqs.NotSent[ns]) == i {
				continue
			}
			sent := reqs.SentNs.At(i)
			if out[k].FirstSendNs == 0 || sent < out[k].FirstSendNs {
				out[k].FirstSendNs = sent
			}
			out[k].LastSendNs = max(out[k].LastSendNs, sent)
		}
		out[k].SendWidthNs = out[k].LastSendNs - out[k].FirstSendNs
	}
	count, total := make([]int, len(ranges)), 0
	for _, r := range recs.Request {
		if r >= 0 && int(r) < reqs.Len() {
			count[senderOf(int(r))]++
			total++
		}
	}
	stats := splitStats(make([]int64, total), count, windows, func(add func(g int, ns int64)) {
		for i, r := range recs.Request {
			if r >= 0 && int(r) < reqs.Len() {
				add(senderOf(int(r)), recs.RecvNs.At(i))
			}
		}
	})
	for k := range out {
		out[k].Receipts = stats[k]
		if st := out[k].Receipts; st.Count > 1 {
			out[k].LandedWidthNs = st.LastNs - st.FirstNs
		}
	}
	return out
}

// splitStats computes the arrivalStats of each group g of times that
// fill calls add with (count[g] of them), laid out group after group in
// buf (at least the sum of count long).
func splitStats(buf []int64, count []int, windows []time.Duration, fill func(add func(g int, ns int64))) []report.ArrivalStats {
	next := make([]int, len(count)+1)
	for g, n := range count {
		next[g+1] = next[g] + n
	}
	start := slices.Clone(next)
	fill(func(g int, ns int64) {
		buf[next[g]] = ns
		next[g]++
	})
	out := make([]report.ArrivalStats, len(count))
	for g := range count {
		out[g] = arrivalStats(buf[start[g]:next[g]], windows)
	}
	return out
}

// forwardArrivals are the figures of the limiter times per target
// (limiterForwards), sorted by target.
func forwardArrivals(in *Input, windows []time.Duration) []report.ForwardArrivals {
	fw := in.limiterForwards()
	var out []report.ForwardArrivals
	for _, t := range slices.Sorted(maps.Keys(fw)) {
		lt := fw[t]
		var f []int64
		for _, ns := range lt.forwardNs {
			if ns >= 0 {
				f = append(f, ns)
			}
		}
		lag := pathLagOf(in, fw, []string{t})
		out = append(out, report.ForwardArrivals{Target: t, Source: lt.source, ResolutionNs: int64(lt.resolution), Forwards: arrivalStats(f, windows),
			Unplaced: lt.unplaced, PathJoined: lag.joined, PathLagMinNs: lag.minNs, PathLagMaxNs: lag.maxNs})
	}
	return out
}

// simulation is one limiter's model run on the clients' send times.
type simulation struct {
	m model.Model
	// fwd are the model's forward times (model.ForwardTimes) per target,
	// sorted.
	fwd map[string][]int64
	// instances is the number of independent states.
	instances int
}

// simulate runs the limiter on the send times of its targets' requests,
// each target its own state unless shared (model.Request.Key); ok is false
// when the spec does not build or no request met the limiter.
func (l peakLimiter) simulate(reqs *evidence.Requests) (simulation, bool) {
	m, err := model.New(l.spec)
	if err != nil {
		return simulation{}, false
	}
	keys := make([]string, len(reqs.Targets)) // per target index; "" when the limiter does not apply
	for t, name := range reqs.Targets {
		if !l.appliesTo(name) {
			continue
		}
		keys[t] = "target " + name
		if l.shared {
			keys[t] = "shared"
		}
	}
	var order []int32
	seen := make([]bool, len(reqs.Targets)) // per target index
	for i := 0; i < reqs.Len(); i++ {
		if t := reqs.Target[i]; keys[t] != "" {
			order = append(order, int32(i))
			seen[t] = true
		}
	}
	if len(order) == 0 {
		return simulation{}, false
	}
	used := map[string]bool{}
	for t, k := range keys {
		if seen[t] {
			used[k] = true
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(reqs.SentNs.At(int(a)), reqs.SentNs.At(int(b))) })
	sim := simulation{m: m, fwd: map[string][]int64{}, instances: len(used)}
	s := m.NewSimulator(1)
	fwd := make([][]int64, len(reqs.Targets)) // per target index
	for _, i := range order {
		t := reqs.Target[i]
		if d := s.Offer(model.Request{At: reqs.SentNs.At(int(i)), Key: keys[t]}); d.Admit {
			fwd[t] = append(fwd[t], reqs.SentNs.At(int(i))+int64(d.Delay))
		}
	}
	for t, f := range fwd {
		if f != nil {
			slices.Sort(f)
			sim.fwd[reqs.Targets[t]] = f
		}
	}
	return sim, true
}

// forwards returns the simulated forward times of the requests to targets,
// sorted: the targets' sorted times merged.
func (s simulation) forwards(targets []string) []int64 {
	var out []int64
	for _, t := range targets {
		out = mergeSorted(out, s.fwd[t])
	}
	return out
}

// mergeSorted returns the sorted a and b merged, in a new slice unless one
// of them is empty.
func mergeSorted(a, b []int64) []int64 {
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return slices.Clone(b)
	}
	out := make([]int64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if b[j] < a[i] {
			out = append(out, b[j])
			j++
		} else {
			out = append(out, a[i])
			i++
		}
	}
	return append(append(out, a[i:]...), b[j:]...)
}

// expectedPeaks is a limiter's prediction for every window: the peak of
// its simulated forwards and its bound; ok is false when the model has no
// bound or no request met the limiter.
func expectedPeaks(reqs *evidence.Requests, l peakLimiter, windows []time.Duration) (report.ExpectedPeaks, bool) {
	sim, ok := l.simulate(reqs)
	if !ok {
		return report.ExpectedPeaks{}, false
	}
	fwd := sim.forwards(reqs.Targets)
	e := report.ExpectedPeaks{Limiter: l.name, Model: specLabel(sim.m.Spec()), Targets: append([]string{}, l.targets...), Instances: sim.instances,
		Windows: make([]report.ExpectedWindow, 0, len(windows))}
	for _, w := range windows {
		b, ok := model.PeakBound(sim.m, w)
		if !ok {
			return report.ExpectedPeaks{}, false
		}
		e.Windows = append(e.Windows, report.ExpectedWindow{WindowNs: int64(w), Simulated: model.PeakCount(fwd, w), Bound: b * e.Instances})
	}
	return e, true
}

// specLabel names a model spec for people: its JSON form.
func specLabel(s model.Spec) string {
	switch s.Kind {
	case model.KindNginxLimitReq:
		if len(s.Zones) == 1 {
			z := s.Zones[0]
			l := fmt.Sprintf("nginx limit_req rate=%s burst=%d", z.Rate, z.Burst)
			switch {
			case z.NoDelay:
				l += " nodelay"
			case z.Delay > 0:
				l += fmt.Sprintf(" delay=%d", z.Delay)
			}
			if s.DryRun {
				l += " (dry run)"
			}
			return l
		}
		return fmt.Sprintf("nginx limit_req, %d zones", len(s.Zones))
	case model.KindEnvoyLocal:
		return fmt.Sprintf("Envoy %s local token bucket max_tokens %d, tokens_per_fill %d every %v", s.EnvoyVersion, s.MaxTokens,
			*s.TokensPerFill, time.Duration(s.FillInterval))
	case model.KindTokenBucket:
		return fmt.Sprintf("token bucket capacity %g at %g/s", s.Capacity, s.RatePerSec)
	case model.KindFixedWindow:
		return fmt.Sprintf("fixed window %d per %s", s.Limit, s.Unit)
	case model.KindGCRA:
		return fmt.Sprintf("GCRA %d per %v, burst %d", s.RatePerPeriod, time.Duration(s.Period), s.Burst)
	case model.KindSlidingCounter:
		if s.Align == model.AlignFreqCtr {
			return fmt.Sprintf("HAProxy freq_ctr %d per %v (sc_http_req_rate, every request counted)", s.Limit, time.Duration(s.Window))
		}
	}
	return s.Kind
}

// checkBackendPeak judges expect.backend_peak: for each expectation, the
// fullest window of the receipts (of its target, when given) against max
// and min, and, with model, what the declared limiters let through. Where
// the evidence holds the limiter's own forward times (limiterForwards),
// two checks: the limiter's forwards by its own clock (judgeForwards), then
// the path from it to the backend; otherwise the limiter simulated at the
// clients' send times (judgeFromSends). Proxy retries behind the limiter
// count: the backend receives them.
func checkBackendPeak(in *Input) (r Result) {
	ex := in.Scenario.Expect.BackendPeak
	if len(ex) == 0 {
		return r
	}
	a := in.Report.Arrivals
	reqs, recs := &in.Evidence.Requests, &in.Evidence.Receipts
	limiters := peakLimiters(in)
	sims := map[int]simulation{}
	for _, p := range ex {
		w := time.Duration(p.Window)
		name := "backend peak per " + w.String()
		st := report.ArrivalStats{}
		if a != nil {
			st = a.Receipts
		}
		targets := reqs.Targets
		if p.Target != "" {
			name += " (" + p.Target + ")"
			if !slices.Contains(reqs.Targets, p.Target) {
				r.add(name, report.CheckFail, "receipts of target "+p.Target, "no request was sent to "+p.Target)
				continue
			}
			targets = []string{p.Target}
			st = report.ArrivalStats{}
			if a != nil && len(reqs.Targets) == 1 {
				st = a.Receipts
			} else if a != nil {
				for _, t := range a.Targets {
					if t.Target == p.Target {
						st = t.Receipts
					}
				}
			}
		}
		peak, _ := st.PeakOf(w)
		got := peakGot(peak, st.Count)
		if p.Max != nil {
			r.add(name, passIf(peak.Peak <= *p.Max), "<= "+strconv.Itoa(*p.Max), got)
		}
		if v := peakMinVacuous(&p, name); v != nil {
			r.notChecked(v, got)
		} else if p.Min != nil {
			r.add(name, passIf(peak.Peak >= *p.Min), ">= "+strconv.Itoa(*p.Min), got)
		}
		if !p.Model {
			continue
		}
		pb, ok := modelPeakBound(limiters, sims, reqs, targets, w)
		if !ok {
			r.add(name+" within the model", report.CheckUnknown, "a declared limiter whose model bounds its peaks", "none applies to "+
				strings.Join(targets, ", "))
			continue
		}
		var recv []int64
		for k, q := range recs.Request {
			if q >= 0 && int(q) < reqs.Len() && slices.Contains(targets, reqs.Targets[reqs.Target[q]]) {
				recv = append(recv, recs.RecvNs.At(k))
			}
		}
		slices.Sort(recv)
		note, ok := judgeForwards(in, &r, name, p, pb, targets, recv)
		if !ok {
			judgeFromSends(in, &r, name, p, pb, sims, recv, note)
		}
	}
	return r
}

// judgeForwards judges a model backend_peak by the limiter's own forward
// times (limiterForwards), when every target has them for every request
// the backend received; otherwise it judges nothing and returns why (""
// when no target has them).
//
// The limiter check ("limiter forwards per W within the model"): the
// forwards in any window [t, t+W) of the limiter's clock are at most the
// model's bound over W plus the clock's resolution (model.PeakBound times
// the instances), plus the forwards the limiter had due before t by its
// model and had not made (stateTimes.backlog, from model.EarliestForwards
// replayed on its own accept times): timers that fire late, a worker that
// was not scheduled, release together what they held; a limiter that
// forwards a queued request early has no such backlog.
//
// The path check ("backend peak per W within the model", pathScan): each
// receipt lags its request's forward (joined by ID); a window of receipts
// [t, t+W) whose receipts lagged lo..hi holds forwards of [t-hi, t+W-lo),
// so it is held to the bound over W + (hi-lo) + resolution, plus the
// backlog at t-hi. A window within the bound without the jitter is judged
// whatever the lags; one that needs a jitter allowance exceeding the bound
// over W itself, or lifting a bound below the receipts' count to it, cannot
// be judged: unknown with the measured lag (the limiter's forwards were),
// never FAIL.
func judgeForwards(in *Input, r *Result, name string, p evidence.PeakExpectation, pb peakBound, targets []string, recv []int64) (string, bool) {
	fw := in.limiterForwards()
	res := time.Duration(0)
	var sources, gaps []string
	for _, t := range targets {
		lt := fw[t]
		switch {
		case lt == nil:
			continue
		case lt.unplaced > 0:
			gaps = append(gaps, fmt.Sprintf("%s has no forward time for %d received requests", lt.source, lt.unplaced))
		}
		res = max(res, lt.resolution)
		sources = append(sources, lt.source)
	}
	if len(gaps) > 0 || len(sources) < len(targets) {
		if len(sources) > 0 && len(gaps) == 0 {
			gaps = append(gaps, "no limiter forward times for "+strings.Join(missingTargets(fw, targets), ", "))
		}
		return strings.Join(gaps, "; "), false
	}
	states, ok := partTimes(pb, fw)
	if !ok {
		return "", false
	}
	w := time.Duration(p.Window)
	b0, ok0 := pb.at(w + res)
	if !ok0 {
		return "", false
	}
	var fwd []int64
	for _, s := range states {
		fwd = append(fwd, s.forwards...)
	}
	slices.Sort(fwd)
	who := strings.Join(targets, ", ")
	lname := "limiter forwards per " + w.String()
	if p.Target != "" {
		lname += " (" + p.Target + ")"
	}
	v := scanWindows(fwd, w, b0, func(_ int, t int64) int { return backlogs(states, t) })
	r.add(lname+" within the model", passIf(!v.violated), fmt.Sprintf("<= %d (%s over %v + %v resolution, by the clock of %s; plus the forwards it had due by the model and not yet made)",
		b0, pb.why, w, res, strings.Join(sources, ", ")), v.got(fwd))

	lag := pathLagOf(in, fw, targets)
	name += " within the model"
	if len(recv) == 0 {
		r.add(name, report.CheckPass, fmt.Sprintf("<= %d", b0), "0 (no receipts)")
		return "", true
	}
	if lag.joined == 0 {
		r.add(name, report.CheckUnknown, "receipts joined to the limiter's forwards (the path's lag)", fmt.Sprintf("none of the %d receipts joins a forward of %s",
			len(recv), strings.Join(sources, ", ")))
		return "", true
	}
	lagText := fmt.Sprintf("the path from %s to the backend lagged %s", who, msRange(lag.minNs, lag.maxNs))
	want := fmt.Sprintf("<= %d (%s over %v + %v resolution, the window widened by the lag spread of its receipts; plus the forwards the limiter had due and not yet made)",
		b0, pb.why, w, res)
	pv := pathScan(receiptLags(in, fw, targets, lag), w, res, b0, pb, states)
	at := func(pw pathWindow) string {
		s := fmt.Sprintf("%d at +%v, whose receipts lagged %s (bound %d", pw.count, time.Duration(pw.at-recv[0]).Round(time.Millisecond), msRange(pw.lo, pw.hi), pw.bound)
		if pw.behind > 0 {
			s += fmt.Sprintf(", and %d the limiter had due", pw.behind)
		}
		return s + ")"
	}
	switch {
	case pv.violated:
		r.add(name, report.CheckFail, want, at(pv.worst)+"; "+lagText)
	case pv.inconclusive:
		u := pv.unjudged
		r.add(name, report.CheckUnknown, want, fmt.Sprintf("%d receipts at +%v: the path from %s to the backend lagged %s: a receipt peak per %v cannot be judged (the jitter raises the bound from %d to %d, of %d receipts); the limiter's own forwards were",
			u.count, time.Duration(u.at-recv[0]).Round(time.Millisecond), who, msRange(u.lo, u.hi), w, b0, u.bound, len(recv)))
	default:
		r.add(name, report.CheckPass, want, at(pv.fullest)+"; "+lagText)
	}
	return "", true
}

// missingTargets are the targets without limiter times.
func missingTargets(fw map[string]*limiterTimes, targets []string) []string {
	var out []string
	for _, t := range targets {
		if fw[t] == nil {
			out = append(out, t)
		}
	}
	return out
}

// msRange renders a lag range in ms: "0.2..113 ms".
func msRange(lo, hi int64) string {
	f := func(ns int64) string {
		ms := float64(ns) / 1e6
		prec := 1
		if math.Abs(ms) >= 100 {
			prec = 0
		}
		return strconv.FormatFloat(ms, 'f', prec, 64)
	}
	return f(lo) + ".." + f(hi) + " ms"
}

// judgeFromSends judges a model backend_peak without the limiter's own
// times: the limiter simulated at the clients' send times, every window of
// receipts against the bound over W + a tolerance plus the forwards a
// silence held back (heldBackScan). The tolerance is the plan's, else the
// harness's measured lateness (harnessLateness), else
// evidence.DefaultPeakTolerance for evidence that measured none. Receipts
// within the bound over W itself (no tolerance, a held-back allowance no
// larger than the bound) PASS whatever the lateness; otherwise the premise
// fails, unknown with the numbers, when the measured lateness more than
// doubles the bound, or when a window passes only by an allowance for
// held-back forwards larger than the bound itself (a stall and a limiter
// that does not smooth then look alike). note says why the limiter's own
// times were not used ("" when the evidence has none).
func judgeFromSends(in *Input, r *Result, name string, p evidence.PeakExpectation, pb peakBound, sims map[int]simulation, recv []int64, note string) {
	w := time.Duration(p.Window)
	tol, tolWhy, measured := time.Duration(p.Tolerance), "timing tolerance (the plan's)", false
	if tol <= 0 {
		tol, tolWhy, measured = harnessLateness(in.Report.Harness)
	}
	b, _ := pb.at(w + tol)
	b0, _ := pb.at(w)
	fwd := pb.simForwards(sims)
	v := heldBackScan(recv, fwd, w, tol, b)
	want := fmt.Sprintf("<= %d (%s over %v + %v %s; plus the model's forwards a silence held back)", b, pb.why, w, tol, tolWhy)
	wantTight := fmt.Sprintf("<= %d (%s over %v, the %v %s not needed; plus the model's forwards a silence held back)", b0, pb.why, w, tol, tolWhy)
	if note != "" {
		want += "; " + note
		wantTight += "; " + note
	}
	name += " within the model"
	tight := heldBackScan(recv, fwd, w, 0, b0)
	switch {
	case v.violated:
		r.add(name, report.CheckFail, want, v.got(recv))
	case !tight.violated && tight.leaned.backlog <= b0:
		// within the bound over W itself: judged whatever the lateness
		r.add(name, report.CheckPass, wantTight, tight.got(recv))
	case measured && b-b0 > b0:
		r.add(name, report.CheckUnknown, want, fmt.Sprintf("%s: the %v window widened to %v allows %d where the model bounds %d; the limiter's own forward times are not in the evidence",
			tolWhy, w, w+tol, b, b0))
	case v.leaned.backlog > b:
		r.add(name, report.CheckUnknown, want, fmt.Sprintf("%d at +%v after a silence that held back %d of the model's forwards, more than the bound %d itself: a stalled host and a limiter that does not smooth look alike",
			v.leaned.count, time.Duration(v.leaned.at-recv[0]).Round(time.Millisecond), v.leaned.backlog, b))
	default:
		r.add(name, report.CheckPass, want, v.got(recv))
	}
}

// peakGot renders an observed peak: "17 (1700/s)".
func peakGot(p report.WindowPeak, count int) string {
	if count == 0 {
		return "0 (no receipts)"
	}
	return fmt.Sprintf("%d (%.0f/s)", p.Peak, p.RatePerSec)
}

// peakWindow is one window of a scan: where it starts, how many times it
// holds, how many were allowed and the allowance beyond the bound.
type peakWindow struct {
	at             int64
	count, allowed int
	backlog        int
}

// windowScan is every window [t, t+w) starting at one of a sorted set of
// times, each against the bound plus an allowance.
type windowScan struct {
	// worst is the window with the largest count over allowed, when any
	// exceeds it (violated).
	worst    peakWindow
	violated bool
	// fullest is the fullest window (among equals, the least allowance);
	// leaned, of the windows above the bound, the one that needed the
	// largest allowance (zero when none did).
	fullest, leaned peakWindow
}

// result is the window to report: the worst violation, else the fullest.
func (v windowScan) result() peakWindow {
	if v.violated {
		return v.worst
	}
	return v.fullest
}

// got renders the window to report, its start relative to times[0]: "13
// at +1.2s after ... held back 11 (allowed 13)".
func (v windowScan) got(times []int64) string {
	pw := v.result()
	if len(times) == 0 {
		return "0"
	}
	s := strconv.Itoa(pw.count)
	if pw.backlog > 0 {
		s += fmt.Sprintf(" after a silence that held back %d of the model's forwards (allowed %d)", pw.backlog, pw.allowed)
	}
	if pw.count > 0 {
		s += fmt.Sprintf(" at +%v", time.Duration(pw.at-times[0]).Round(time.Millisecond))
	}
	return s
}

// scanWindows checks every window [t, t+w) starting at one of times
// (sorted) against bound plus allowance(i, t), i the index of t; allowance
// is called in increasing i.
func scanWindows(times []int64, w time.Duration, bound int, allowance func(i int, t int64) int) windowScan {
	v := windowScan{fullest: peakWindow{count: -1}}
	j := 0
	for i, t := range times {
		for j < len(times) && times[j]-t < int64(w) {
			j++
		}
		extra := allowance(i, t)
		pw := peakWindow{at: t, count: j - i, allowed: bound + extra, backlog: extra}
		if pw.count > pw.allowed && (!v.violated || pw.count-pw.allowed > v.worst.count-v.worst.allowed) {
			v.worst, v.violated = pw, true
		}
		if pw.count > v.fullest.count || pw.count == v.fullest.count && pw.backlog < v.fullest.backlog {
			v.fullest = pw
		}
		if pw.count > bound && pw.backlog > v.leaned.backlog {
			v.leaned = pw
		}
	}
	if v.fullest.count < 0 {
		v.fullest = peakWindow{allowed: bound}
	}
	return v
}

// heldBackScan checks every window [t, t+w) starting at a receipt (recv
// sorted) against bound (the model's bound over w plus the tolerance) plus
// what a silence held back: the model's forwards (fwd, sorted, simulated
// on the clients' send times) due before t - tol that had not been
// received before t, but never more than the model forwards by t + w +
// tol beyond the receipts before t. A limiter or backend that stalls (a
// loaded machine: a process not scheduled for a while) delivers the
// forwards it held back together when it runs again; those are allowed, in
// the window after the silence and the next ones. Forwards nothing held
// back are not: a limiter that lets a burst through where its model queues
// it has no backlog to explain it (a limiter that batches its forwards at
// its average rate is indistinguishable from one that stalls: the caller
// makes an allowance beyond the bound itself inconclusive).
func heldBackScan(recv, fwd []int64, w, tol time.Duration, bound int) windowScan {
	k, m := 0, 0
	return scanWindows(recv, w, bound, func(i int, t int64) int {
		for k < len(fwd) && fwd[k] <= t-int64(tol) {
			k++
		}
		for m < len(fwd) && fwd[m] < t+int64(w+tol) {
			m++
		}
		return min(max(k-i, 0), max(m-i-bound, 0))
	})
}

// boundPart is one limiter state behind a peak bound: the limiter (index
// in the peak limiters), its model, and the targets whose requests share
// the state (one target for a per-target bound).
type boundPart struct {
	limiter int
	m       model.Model
	targets []string
	shared  bool
}

// peakBound is the least bound the declared limiters give the requests of
// some targets: one part for a limiter shared by all of them, else one per
// target (its least bound), whose bounds add up. why names the limiter(s).
type peakBound struct {
	parts []boundPart
	why   string
}

// at is the bound over a window of length w: the parts' model.PeakBound
// summed; ok is false when a part has none.
func (b peakBound) at(w time.Duration) (int, bool) {
	n := 0
	for _, p := range b.parts {
		k, ok := model.PeakBound(p.m, w)
		if !ok {
			return 0, false
		}
		n += k
	}
	return n, true
}

// simForwards are the simulated forwards (at the clients' send times) of
// the parts' targets, sorted.
func (b peakBound) simForwards(sims map[int]simulation) []int64 {
	var out []int64
	for _, p := range b.parts {
		out = append(out, sims[p.limiter].forwards(p.targets)...)
	}
	slices.Sort(out)
	return out
}

// modelPeakBound is the least bound the limiters give the requests of
// targets in a window w: a limiter shared by all of them bounds them at
// once; otherwise each target's least per-target bound, summed. sims
// caches each limiter's simulation (by index in ls).
func modelPeakBound(ls []peakLimiter, sims map[int]simulation, reqs *evidence.Requests, targets []string, w time.Duration) (peakBound, bool) {
	type cand struct {
		n  int
		pb peakBound
	}
	var best *cand
	consider := func(c cand) {
		if best == nil || c.n < best.n {
			best = &c
		}
	}
	type targetBound struct {
		n     int
		part  boundPart
		label string
	}
	perTarget := make([]*targetBound, len(targets))
	for li, l := range ls {
		sim, ok := sims[li]
		if !ok {
			if sim, ok = l.simulate(reqs); !ok {
				continue
			}
			sims[li] = sim
		}
		b, ok := model.PeakBound(sim.m, w)
		if !ok {
			continue
		}
		label := specLabel(sim.m.Spec())
		all := true
		for ti, t := range targets {
			if !l.appliesTo(t) {
				all = false
				continue
			}
			if perTarget[ti] == nil || b < perTarget[ti].n {
				perTarget[ti] = &targetBound{b, boundPart{limiter: li, m: sim.m, targets: []string{t}}, label}
			}
		}
		if all && l.shared {
			consider(cand{b, peakBound{parts: []boundPart{{limiter: li, m: sim.m, targets: targets, shared: true}}, why: label}})
		}
	}
	sum := cand{}
	labels := map[string]bool{}
	complete := len(targets) > 0
	for _, c := range perTarget {
		if c == nil {
			complete = false
			break
		}
		sum.n += c.n
		sum.pb.parts = append(sum.pb.parts, c.part)
		labels[c.label] = true
	}
	if complete {
		names := make([]string, 0, len(labels))
		for l := range labels {
			names = append(names, l)
		}
		sort.Strings(names)
		sum.pb.why = strings.Join(names, "; ")
		if len(targets) > 1 {
			sum.pb.why = fmt.Sprintf("%d targets × %s", len(targets), sum.pb.why)
		}
		consider(sum)
	}
	if best == nil {
		return peakBound{}, false
	}
	return best.pb, true
}
