package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/model"
	"github.com/rlbench/rlbench/evidence"
)

// ArrivalWindows are the sliding windows every arrival section reports a
// peak for: 1 ms, 10 ms, 100 ms and 1 s.
var ArrivalWindows = []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second}

// Arrivals is what the backend really saw, in time: the receipts' arrival
// peaks per sliding window and their inter-arrival distribution, the same
// for the admissions the clients saw, and, for each declared limiter with a
// model, the peak its semantic predicts for the clients' sends and the most
// it lets through in a window over every schedule. A limit can hold on
// average and still let a burst through at once: a token bucket that sat
// idle forwards its capacity in one go, a leaky bucket (nginx limit_req
// without nodelay) at its rate.
type Arrivals struct {
	// Receipts are every receipt's recv_ns (the backend's clock).
	Receipts ArrivalStats `json:"receipts"`
	// Admissions are the admitted (2xx) responses as the clients saw them:
	// each at its send time plus its latency (the clients' clock).
	Admissions ArrivalStats `json:"admissions"`
	// Targets splits both by the attack target the requests were sent to
	// (a receipt by its ID's target), sorted by target; empty with one target.
	Targets []TargetArrivals `json:"targets"`
	// Endpoints splits the receipts by the backend endpoint that received
	// them (Receipt.Endpoint), sorted; empty unless receipts name several.
	Endpoints []EndpointArrivals `json:"endpoints"`
	// Expected has one entry per declared limiter whose model bounds its
	// peaks (see model.PeakBound).
	Expected []ExpectedPeaks `json:"expected"`
}

// ArrivalStats are the arrival figures of one set of times.
type ArrivalStats struct {
	// Count is the number of arrivals.
	Count int `json:"count"`
	// FirstNs and LastNs are the first and last arrival, unix ns (0 when none).
	FirstNs int64 `json:"first_ns"`
	LastNs  int64 `json:"last_ns"`
	// Peaks has one entry per window (ArrivalWindows, then the windows the
	// expectations name), in increasing window order.
	Peaks []WindowPeak `json:"peaks"`
	// InterArrival is the distribution of the gaps between consecutive
	// arrivals (in time order); Count is one less than the arrivals.
	InterArrival GapStats `json:"inter_arrival"`
}

// WindowPeak is the fullest half-open sliding window [t, t+window) of a
// set of arrivals, computed exactly (model.PeakAt over the sorted times).
type WindowPeak struct {
	// WindowNs is the window's length, ns.
	WindowNs int64 `json:"window_ns"`
	// Peak is the most arrivals in any such window.
	Peak int `json:"peak"`
	// AtNs is the first arrival of the first fullest window, unix ns.
	AtNs int64 `json:"at_ns"`
	// RatePerSec is Peak over the window: the instant rate the peak implies,
	// per second.
	RatePerSec float64 `json:"rate_per_sec"`
}

// GapStats summarises inter-arrival gaps, ns. Quantiles come from the same
// HDR histogram as the latency (1 µs resolution, 3 significant digits,
// clamped to the exact minimum and maximum); Min, Max and Mean are exact.
type GapStats struct {
	Count  int   `json:"count"`
	MinNs  int64 `json:"min_ns"`
	P50Ns  int64 `json:"p50_ns"`
	P90Ns  int64 `json:"p90_ns"`
	P99Ns  int64 `json:"p99_ns"`
	P999Ns int64 `json:"p999_ns"`
	MaxNs  int64 `json:"max_ns"`
	MeanNs int64 `json:"mean_ns"`
}

// TargetArrivals are the arrivals of the requests sent to one target.
type TargetArrivals struct {
	Target     string       `json:"target"`
	Receipts   ArrivalStats `json:"receipts"`
	Admissions ArrivalStats `json:"admissions"`
}

// EndpointArrivals are the receipts of one backend endpoint.
type EndpointArrivals struct {
	Endpoint string       `json:"endpoint"`
	Receipts ArrivalStats `json:"receipts"`
}

// ExpectedPeaks is what one declared limiter predicts for the backend's
// peaks (analyze/model): a leaky bucket smooths, a token bucket does not.
type ExpectedPeaks struct {
	// Limiter names the declared limiter; Model says its semantic.
	Limiter string `json:"limiter"`
	Model   string `json:"model"`
	// Targets are the attack targets whose requests meet it (empty: all).
	Targets []string `json:"targets"`
	// Instances is the number of independent states (one per target for a
	// per-proxy bucket, 1 when shared): bounds add up over them.
	Instances int `json:"instances"`
	// Windows has one entry per window of ArrivalStats.Peaks.
	Windows []ExpectedWindow `json:"windows"`
}

// ExpectedWindow is a limiter's prediction for one window length.
type ExpectedWindow struct {
	WindowNs int64 `json:"window_ns"`
	// Simulated is the peak of the model's forward times (model.Simulate,
	// ForwardTimes, PeakCount) with every request decided at its send time:
	// what the backend would see if forwarding took no time.
	Simulated int `json:"simulated"`
	// Bound is model.PeakBound times Instances: the most the limiter lets
	// through in such a window over every arrival schedule.
	Bound int `json:"bound"`
}

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
		switch l.Kind {
		case evidence.LimitTokenBucket:
			tpf := uint32(max(l.TokensPerFill, 1))
			spec := model.Spec{Kind: model.KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: uint32(max(l.MaxTokens, 0)),
				TokensPerFill: &tpf, FillInterval: model.Duration(l.FillInterval)}
			if l.Refill != evidence.RefillContinuous {
				spec.EnvoyVersion = "1.30"
				if l.StartNs > 0 {
					spec.TimerStart = time.Unix(0, l.StartNs).UTC().Format(time.RFC3339Nano)
				}
			}
			out = append(out, peakLimiter{name: fmt.Sprintf("limits[%d] token bucket", i), shared: l.Buckets == 1, spec: spec})
		case evidence.LimitFixedWindow:
			spec := model.Spec{Kind: model.KindFixedWindow, Limit: uint64(max(l.Limit, 0)), Unit: l.Unit, Align: model.AlignEpoch}
			if l.WindowStart == evidence.WindowFirstHit {
				spec.Align = model.AlignFirstHit
			}
			out = append(out, peakLimiter{name: fmt.Sprintf("limits[%d] fixed window", i), shared: true, spec: spec})
		}
	}
	return out
}

// arrivalWindows are ArrivalWindows plus the windows the expectations
// name, sorted, without repeats.
func arrivalWindows(ex *evidence.Expectation) []time.Duration {
	ws := slices.Clone(ArrivalWindows)
	for _, p := range ex.BackendPeak {
		if w := time.Duration(p.Window); w > 0 && !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)
	return ws
}

// arrivalStats computes the figures of times, which it sorts in place.
func arrivalStats(times []int64, windows []time.Duration) ArrivalStats {
	slices.Sort(times)
	st := ArrivalStats{Count: len(times), Peaks: make([]WindowPeak, 0, len(windows))}
	if len(times) == 0 {
		return st
	}
	st.FirstNs, st.LastNs = times[0], times[len(times)-1]
	for _, w := range windows {
		n, at := model.PeakAt(times, w)
		st.Peaks = append(st.Peaks, WindowPeak{WindowNs: int64(w), Peak: n, AtNs: at, RatePerSec: float64(n) / w.Seconds()})
	}
	var acc latencyAcc
	for i := 1; i < len(times); i++ {
		acc.record(times[i] - times[i-1])
	}
	g := acc.summary("")
	st.InterArrival = GapStats{Count: g.Count, MinNs: acc.min, P50Ns: g.P50Ns, P90Ns: g.P90Ns, P99Ns: g.P99Ns, P999Ns: g.P999Ns,
		MaxNs: g.MaxNs, MeanNs: g.MeanNs}
	return st
}

// peakOf returns the peak of st for window w.
func (st *ArrivalStats) peakOf(w time.Duration) (WindowPeak, bool) {
	for _, p := range st.Peaks {
		if p.WindowNs == int64(w) {
			return p, true
		}
	}
	return WindowPeak{}, false
}

// arrivalsOf computes the scenario's Arrivals; nil when it has neither
// receipts nor admissions.
func arrivalsOf(in *Input) *Arrivals {
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
	if len(recs.RecvNs) == 0 && nAdm == 0 {
		return nil
	}
	for _, r := range recs.Request {
		if r >= 0 && int(r) < reqs.Len() {
			recPer[reqs.Target[r]]++
		}
	}
	all := slices.Clone(recs.RecvNs)
	adm := make([]int64, 0, nAdm)
	var byTarget, admByTarget [][]int64
	if nt > 1 {
		byTarget, admByTarget = make([][]int64, nt), make([][]int64, nt)
		for t := range nt {
			byTarget[t], admByTarget[t] = make([]int64, 0, recPer[t]), make([]int64, 0, admPer[t])
		}
	}
	for i := 0; i < reqs.Len(); i++ {
		if reqs.Class[i] == evidence.ClassAdmitted {
			adm = append(adm, reqs.EndNs[i])
			if nt > 1 {
				admByTarget[reqs.Target[i]] = append(admByTarget[reqs.Target[i]], reqs.EndNs[i])
			}
		}
	}
	var endpoints [][]int64 // by Receipts.Endpoint index; index 0 names none
	if len(recs.Endpoints) > 2 {
		per := make([]int, len(recs.Endpoints))
		for _, e := range recs.Endpoint {
			per[e]++
		}
		endpoints = make([][]int64, len(recs.Endpoints))
		for e := range endpoints {
			endpoints[e] = make([]int64, 0, per[e])
		}
	}
	for i, r := range recs.Request {
		if nt > 1 && r >= 0 && int(r) < reqs.Len() {
			t := reqs.Target[r]
			byTarget[t] = append(byTarget[t], recs.RecvNs[i])
		}
		if endpoints != nil {
			e := recs.Endpoint[i]
			endpoints[e] = append(endpoints[e], recs.RecvNs[i])
		}
	}
	a := &Arrivals{Receipts: arrivalStats(all, windows), Admissions: arrivalStats(adm, windows), Targets: []TargetArrivals{},
		Endpoints: []EndpointArrivals{}, Expected: []ExpectedPeaks{}}
	if nt > 1 {
		for _, t := range targetOrder(reqs) {
			a.Targets = append(a.Targets, TargetArrivals{Target: reqs.Targets[t], Receipts: arrivalStats(byTarget[t], windows),
				Admissions: arrivalStats(admByTarget[t], windows)})
		}
	}
	if endpoints != nil {
		order := make([]int, 0, len(endpoints)-1)
		for e := 1; e < len(endpoints); e++ {
			order = append(order, e)
		}
		sort.Slice(order, func(x, y int) bool { return recs.Endpoints[order[x]] < recs.Endpoints[order[y]] })
		for _, e := range order {
			a.Endpoints = append(a.Endpoints, EndpointArrivals{Endpoint: recs.Endpoints[e], Receipts: arrivalStats(endpoints[e], windows)})
		}
	}
	for _, l := range peakLimiters(in) {
		if e, ok := expectedPeaks(reqs, l, windows); ok {
			a.Expected = append(a.Expected, e)
		}
	}
	return a
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
	used := map[string]bool{}
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
	for i := 0; i < reqs.Len(); i++ {
		if k := keys[reqs.Target[i]]; k != "" {
			order = append(order, int32(i))
			used[k] = true
		}
	}
	if len(order) == 0 {
		return simulation{}, false
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(reqs.SentNs[a], reqs.SentNs[b]) })
	sim := simulation{m: m, fwd: map[string][]int64{}, instances: len(used)}
	s := m.NewSimulator(1)
	for _, i := range order {
		t := reqs.Target[i]
		if d := s.Offer(model.Request{At: reqs.SentNs[i], Key: keys[t]}); d.Admit {
			name := reqs.Targets[t]
			sim.fwd[name] = append(sim.fwd[name], reqs.SentNs[i]+int64(d.Delay))
		}
	}
	for _, f := range sim.fwd {
		slices.Sort(f)
	}
	return sim, true
}

// forwards returns the simulated forward times of the requests to targets, sorted.
func (s simulation) forwards(targets []string) []int64 {
	var out []int64
	for _, t := range targets {
		out = append(out, s.fwd[t]...)
	}
	slices.Sort(out)
	return out
}

// expectedPeaks is a limiter's prediction for every window: the peak of
// its simulated forwards and its bound; ok is false when the model has no
// bound or no request met the limiter.
func expectedPeaks(reqs *evidence.Requests, l peakLimiter, windows []time.Duration) (ExpectedPeaks, bool) {
	sim, ok := l.simulate(reqs)
	if !ok {
		return ExpectedPeaks{}, false
	}
	fwd := sim.forwards(reqs.Targets)
	e := ExpectedPeaks{Limiter: l.name, Model: specLabel(sim.m.Spec()), Targets: append([]string{}, l.targets...), Instances: sim.instances,
		Windows: make([]ExpectedWindow, 0, len(windows))}
	for _, w := range windows {
		b, ok := model.PeakBound(sim.m, w)
		if !ok {
			return ExpectedPeaks{}, false
		}
		e.Windows = append(e.Windows, ExpectedWindow{WindowNs: int64(w), Simulated: model.PeakCount(fwd, w), Bound: b * e.Instances})
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
	}
	return s.Kind
}

// checkBackendPeak judges expect.backend_peak: for each expectation, the
// fullest window of the receipts (of its target, when given) against max
// and min, and, with model, every window against what the declared
// limiters let through (modelPeakWindows). Proxy retries behind the
// limiter count: the backend receives them.
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
		st := ArrivalStats{}
		if a != nil {
			st = a.Receipts
		}
		targets := reqs.Targets
		if p.Target != "" {
			name += " (" + p.Target + ")"
			if !slices.Contains(reqs.Targets, p.Target) {
				r.add(name, CheckFail, "receipts of target "+p.Target, "no request was sent to "+p.Target)
				continue
			}
			targets = []string{p.Target}
			st = ArrivalStats{}
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
		peak, _ := st.peakOf(w)
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
		tol := p.EffectiveTolerance()
		bound, why, fwd, ok := modelPeakBound(limiters, sims, reqs, targets, w+tol)
		if !ok {
			r.add(name+" within the model", CheckUnknown, "a declared limiter whose model bounds its peaks", "none applies to "+
				strings.Join(targets, ", "))
			continue
		}
		var recv []int64
		for k, q := range recs.Request {
			if q >= 0 && int(q) < reqs.Len() && slices.Contains(targets, reqs.Targets[reqs.Target[q]]) {
				recv = append(recv, recs.RecvNs[k])
			}
		}
		slices.Sort(recv)
		v := modelPeakWindows(recv, fwd, w, tol, bound)
		want := fmt.Sprintf("<= %d (%s over %v + %v timing tolerance; plus the model's forwards a silence held back)", bound, why, w, tol)
		gotm := fmt.Sprintf("%d", v.count)
		if v.backlog > 0 {
			gotm += fmt.Sprintf(" after a silence that held back %d of the model's forwards (allowed %d)", v.backlog, v.allowed)
		}
		if v.count > 0 && len(recv) > 0 {
			gotm += fmt.Sprintf(" at +%v", time.Duration(v.at-recv[0]).Round(time.Millisecond))
		}
		r.add(name+" within the model", passIf(v.count <= v.allowed), want, gotm)
	}
	return r
}

// peakGot renders an observed peak: "17 (1700/s)".
func peakGot(p WindowPeak, count int) string {
	if count == 0 {
		return "0 (no receipts)"
	}
	return fmt.Sprintf("%d (%.0f/s)", p.Peak, p.RatePerSec)
}

// peakWindow is the window modelPeakWindows reports: the worst violation,
// or the fullest window when none.
type peakWindow struct {
	at             int64
	count, allowed int
	backlog        int
}

// modelPeakWindows checks every window [t, t+w) starting at a receipt (recv
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
// its average rate is indistinguishable from one that stalls). It returns
// the window with the largest count over allowed, or the fullest window
// when every one fits.
func modelPeakWindows(recv, fwd []int64, w, tol time.Duration, bound int) peakWindow {
	best := peakWindow{count: -1}
	worst := peakWindow{}
	violated := false
	j, k, m := 0, 0, 0
	for i := range recv {
		for j < len(recv) && recv[j]-recv[i] < int64(w) {
			j++
		}
		for k < len(fwd) && fwd[k] <= recv[i]-int64(tol) {
			k++
		}
		for m < len(fwd) && fwd[m] < recv[i]+int64(w+tol) {
			m++
		}
		held := min(max(k-i, 0), max(m-i-bound, 0))
		pw := peakWindow{at: recv[i], count: j - i, allowed: bound + held, backlog: held}
		if pw.count > pw.allowed && (!violated || pw.count-pw.allowed > worst.count-worst.allowed) {
			worst, violated = pw, true
		}
		if pw.count > best.count || pw.count == best.count && pw.backlog < best.backlog {
			best = pw
		}
	}
	if violated {
		return worst
	}
	if best.count < 0 {
		return peakWindow{allowed: bound}
	}
	return best
}

// modelPeakBound is the least bound the limiters give the requests of
// targets in a window w, with the simulated forwards behind it: a limiter
// shared by all of them bounds them at once; otherwise each target's least
// per-target bound, summed. why names the limiter(s). sims caches each
// limiter's simulation (by index in ls).
func modelPeakBound(ls []peakLimiter, sims map[int]simulation, reqs *evidence.Requests, targets []string, w time.Duration) (bound int, why string, fwd []int64, ok bool) {
	type cand struct {
		n   int
		why string
		fwd []int64
	}
	var best *cand
	consider := func(c cand) {
		if best == nil || c.n < best.n {
			best = &c
		}
	}
	perTarget := make([]*cand, len(targets))
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
				perTarget[ti] = &cand{b, label, sim.fwd[t]}
			}
		}
		if all && l.shared {
			consider(cand{b, label, sim.forwards(targets)})
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
		sum.fwd = append(sum.fwd, c.fwd...)
		labels[c.why] = true
	}
	if complete {
		names := make([]string, 0, len(labels))
		for l := range labels {
			names = append(names, l)
		}
		sort.Strings(names)
		sum.why = strings.Join(names, "; ")
		if len(targets) > 1 {
			sum.why = fmt.Sprintf("%d targets × %s", len(targets), sum.why)
		}
		slices.Sort(sum.fwd)
		consider(sum)
	}
	if best == nil {
		return 0, "", nil, false
	}
	return best.n, best.why, best.fwd, true
}
