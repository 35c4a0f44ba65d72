package analyze

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/haproxyrec"
	"github.com/rlbench/rlbench/model"
)

// harnessProbed adds the runner's host probe (harness.json): the latest and 99th
// percentile wake-up lateness, the steal time as a share of all CPUs' time
// over the probe's window, and the load at its end.
func harnessProbed(h *report.HarnessReport, e *evidence.Harness) {
	if e.Probe.Samples == 0 {
		return // the probe never woke: nothing measured
	}
	h.Probed = true
	h.StallMaxNs, h.StallP99Ns = e.Probe.MaxLateNs, e.Probe.P99LateNs
	if span := e.EndNs - e.StartNs; e.StealNs >= 0 && span > 0 && e.CPUs > 0 {
		h.StealPercent = 100 * float64(e.StealNs) / (float64(span) * float64(e.CPUs))
	}
	h.Load1 = e.Load1End
}

// harnessLateness is the largest lateness the harness measured of itself, with
// what it was: the clients' burst send spread, their largest pacing error,
// the host probe's largest stall. Without any it is
// evidence.DefaultPeakTolerance and measured is false.
func harnessLateness(h *report.HarnessReport) (d time.Duration, why string, measured bool) {
	if h != nil {
		for _, c := range []struct {
			ns   int64
			ok   bool
			what string
		}{{h.BurstSpreadNs, h.BurstSpreadNs > 0, "the attack's burst send spread"},
			{h.PacingErrorMaxNs, h.PacingErrorMaxNs > 0, "the attack's largest pacing error"},
			{h.StallMaxNs, h.Probed, "the host probe's largest stall"}} {
			if c.ok && (!measured || time.Duration(c.ns) > d) {
				d, why, measured = time.Duration(c.ns), c.what, true
			}
		}
	}
	if !measured {
		return evidence.DefaultPeakTolerance, "timing tolerance (the default: the evidence measured no lateness)", false
	}
	return d, why + " (measured lateness)", true
}

// harnessLine is the scenario's HarnessReport in one line ("" without one).
func harnessLine(in *Input) string { return in.Report.Harness.String() }

// seenTimes are the times the limiters saw the requests, by their own
// clocks: per request, an interval [lo, hi] that holds the limiter's
// decision (lo = 0: none), read from the proxy's own log.
type seenTimes struct {
	lo, hi []int64
	// own marks an interval on the limiter's own clock grid (HAProxy's now_ms moved onto the system date by a
	// whole number of ms), which the model replays as is instead of narrowing the client's interval with it.
	own []bool
	// proxy is the target whose log gave the times.
	proxy []uint16
	n     int
}

// has reports whether request i has times from the log of target t.
func (s *seenTimes) has(i int, t uint16) bool {
	return s != nil && s.lo[i] != 0 && s.proxy[i] == t
}

// limiterSeen reads the limiters' own times of the requests: an access log
// entry's %START_TIME% to %START_TIME% + %DURATION% (Envoy's access log
// operators, https://www.envoyproxy.io/docs/envoy/latest/configuration/observability/access_log/usage;
// ms, so up to 1 ms later), nginx's $msec - $request_time to the next ms.
// Only entries of the proxy the client sent the request to count, and only
// where the interval meets the client's [send, response] (give or take the
// log's 1 ms resolution): another clock's times are not mixed in.
func limiterSeen(in *Input) (*seenTimes, *report.HarnessReport) {
	ev := in.Evidence
	reqs := &ev.Requests
	n := reqs.Len()
	h := &report.HarnessReport{Parts: in.Scenario.HarnessParts, StealPercent: -1, Load1: -1}
	r := &seenReader{reqs: reqs, h: h, targetIdx: map[string]uint16{}, sources: map[string]bool{},
		s: &seenTimes{lo: make([]int64, n), hi: make([]int64, n), own: make([]bool, n), proxy: make([]uint16, n)}}
	for t, name := range reqs.Targets {
		r.targetIdx[name] = uint16(t)
	}
	for k := range ev.AccessLogs {
		r.accessLog(&ev.AccessLogs[k])
	}
	for k := range ev.Nginx {
		r.nginxLog(&ev.Nginx[k])
	}
	for k := range ev.HAProxy {
		r.haproxyLog(&ev.HAProxy[k])
	}
	s := r.s
	h.Seen = s.n
	for src := range r.sources {
		h.SeenSources = append(h.SeenSources, src)
	}
	slices.Sort(h.SeenSources)
	h.BurstSpreadNs = sendersWindow(ev.Attack)
	eachSendTiming(ev.Attack, func(b *evidence.AttackBurst, p *evidence.AttackPacing) {
		if b != nil && p == nil {
			h.BurstSpreadNs = max(h.BurstSpreadNs, b.SpreadNs)
		}
		if p != nil {
			h.PacingErrorP99Ns = max(h.PacingErrorP99Ns, p.ErrorNs.P99)
			h.PacingErrorMaxNs = max(h.PacingErrorMaxNs, p.ErrorNs.Max)
		}
	})
	if s.n == 0 {
		return nil, h
	}
	r.readLags()
	return s, h
}

// seenReader fills seenTimes from the proxies' logs.
type seenReader struct {
	reqs *evidence.Requests
	s    *seenTimes
	h    *report.HarnessReport
	// targetIdx indexes the attack's targets by name; sources names the
	// logs that gave times.
	targetIdx map[string]uint16
	sources   map[string]bool
	// land is the requests' arrivals at the limiters (the harness line's
	// seen spread).
	land landing
}

// seenMs is the logs' time resolution, ns.
const seenMs = int64(time.Millisecond)

// set gives request i, sent to target t, the limiter's interval [lo, hi]
// from source, unless it has one or was sent elsewhere; an interval that
// misses the client's [send, response] by more than a ms is inconsistent.
func (r *seenReader) set(i int, t uint16, lo, hi int64, source string) {
	r.setSlop(i, t, lo, hi, source, seenMs, false, lo)
}

// setSlop is set with the slop allowed around the client's [send, response]; own marks an interval on the
// limiter's own clock grid (seenTimes.own). The request landed at the limiter in [lo, landHi] (the landed width
// counts it to landHi): landHi is lo for an exact time, the end of its ms for a log record to the ms.
func (r *seenReader) setSlop(i int, t uint16, lo, hi int64, source string, slop int64, own bool, landHi int64) {
	reqs, s := r.reqs, r.s
	if reqs.Target[i] != t || s.lo[i] != 0 {
		return
	}
	end := reqs.EndNs.At(i)
	if end == 0 {
		end = reqs.SentNs.At(i) + 1<<62
	}
	if hi < reqs.SentNs.At(i)-slop || lo > end+slop {
		r.h.Inconsistent++
		return
	}
	s.lo[i], s.hi[i], s.proxy[i], s.own[i] = lo, hi, t, own
	s.n++
	r.land.add(lo, landHi)
	r.sources[source] = true
}

// accessLog reads the times of an Envoy (or lab proxy) access log's
// entries that name a request.
func (r *seenReader) accessLog(l *evidence.AccessLog) {
	const ms = seenMs
	reqs := r.reqs
	t, ok := r.targetIdx[l.Proxy]
	if !ok {
		return
	}
	for _, e := range l.Entries {
		if e.RlbenchID == "" || e.Time.IsZero() {
			continue
		}
		i, ok := reqs.IDs.Lookup(e.RlbenchID)
		if !ok {
			continue
		}
		// %START_TIME% and %DURATION% are both cut to the ms: the
		// entry's end is before START_TIME + DURATION + 2 ms
		lo := e.Time.UnixNano()
		hi := lo + 2*ms - 1
		if e.DurationMs != nil {
			hi += *e.DurationMs * ms
		} else if end := reqs.EndNs.At(i); end > lo {
			hi = end
		}
		src := "access log"
		if e.StartNs > 0 {
			lo, src = e.StartNs, "access log ns"
		}
		if e.LocalNs > 0 {
			// the lab proxy's local_ns: the time its token buckets
			// refilled to for this request. It is not the instant the
			// request took its token: concurrent requests take the
			// bucket's lock in their own order, so a later local_ns may
			// take the last token first. The request took it between
			// local_ns and its forward (upstream_start_ns), or the end of
			// its entry. local_ns lies after the read and the send and
			// before the response, or the entry is not used.
			if end := reqs.EndNs.At(i); e.LocalNs < lo || e.LocalNs < reqs.SentNs.At(i) || end > 0 && e.LocalNs > end {
				r.h.Inconsistent++
				continue
			}
			if e.UpstreamStartNs >= e.LocalNs {
				hi = e.UpstreamStartNs
			}
			r.set(i, t, e.LocalNs, max(hi, e.LocalNs), "lab proxy local_ns")
			continue
		}
		r.set(i, t, lo, hi, src)
	}
}

// nginxLog reads the accept times of an nginx access log's records that
// name a request. One worker decides in the order of its cached clock, so
// a record's ms holds its decision. Several workers each stamp by their own
// cached clock, which lags while the worker decides a batch: a later
// decision may carry an earlier ms than another worker's, and limit_req
// then counts no time between them (a negative elapsed time is 0:
// ngx_http_limit_req_module.c ngx_http_limit_req_lookup). That is nginx
// deciding at the latest stamp before it, somewhere between the record's
// own ms and the request's response: the stamp bounds the decision from
// below only, and the client's response from above (nginxWorkers says
// which case a log is).
func (r *seenReader) nginxLog(ng *evidence.NginxEvidence) {
	const ms = seenMs
	t, ok := r.targetIdx[ng.Proxy]
	if !ok {
		return
	}
	workers, how := nginxWorkers(ng)
	src := "nginx log"
	if workers != 1 {
		src = "nginx log (" + how + ": from below only)"
	}
	for _, a := range ng.Records {
		acc, ok := a.AcceptMs()
		if !ok || a.ID == "" {
			continue
		}
		if i, ok := r.reqs.IDs.Lookup(a.ID); ok {
			hi := acc*ms + ms - 1
			if workers != 1 {
				hi = math.MaxInt64
			}
			// the record's ms is where the request landed, whatever the
			// decision's bound
			r.setSlop(i, t, acc*ms, hi, src, ms, false, acc*ms+ms-1)
		}
	}
}

// haproxyLog reads the times of an HAProxy log's records that name a request: the ms its stick-table rule ran by
// HAProxy's internal clock (evidence/haproxyrec.LogRecord.NowMs), the clock its freq_ctr read, to the next ms. That
// clock follows the system date but for an offset HAProxy changes when it detects a clock jump (src/clock.c
// clock_update_date), so its ms are moved onto the system date by a whole, even number of ms (haproxyRuleMs): the
// model replays them as they are (seenTimes.own), on HAProxy's grid and with its parity (freq_ctr rounds its
// period starts down to an even ms), up to a ms and a half off the system date. Where the offset changed by more
// (a clock jump during the run), the moved times miss the clients' by over 2 ms and are not used. A log without
// now_ms gives the system date's ms the rule ran at (LogRecord.DecideMs), which the client's interval narrows.
func (r *seenReader) haproxyLog(h *evidence.HAProxyEvidence) {
	const ms = seenMs
	t, ok := r.targetIdx[h.Proxy]
	if !ok {
		return
	}
	ruleMs, own := haproxyRuleMs(h)
	for _, a := range h.Records {
		at, ok := ruleMs(a)
		if !ok || a.ID == "" {
			continue
		}
		if i, ok := r.reqs.IDs.Lookup(a.ID); ok {
			r.setSlop(i, t, at*ms, at*ms+ms-1, "haproxy log", 2*ms, own, at*ms+ms-1)
		}
	}
}

// haproxyRuleMs returns, for h's records, the ms HAProxy's rule ran on the system date's scale (see
// seenReader.haproxyLog): now_ms moved by the even number of ms nearest to the system date's lead over HAProxy's
// clock at the first record that has both (decide_us - now_ms, less half a ms for now_ms's truncation); own is
// true then. Without now_ms: the system date's ms (LogRecord.DecideMs). ok is false for a record without them.
func haproxyRuleMs(h *evidence.HAProxyEvidence) (ruleMs func(haproxyrec.LogRecord) (int64, bool), own bool) {
	for _, a := range h.Records {
		if a.DecideUs > 0 && a.NowMs > 0 {
			leadUs := a.DecideUs - a.NowMs*1000 - 500
			shift := 2 * int64(math.Round(float64(leadUs)/2000))
			return func(a haproxyrec.LogRecord) (int64, bool) { return a.NowMs + shift, a.NowMs > 0 }, true
		}
	}
	return haproxyrec.LogRecord.DecideMs, false
}

// readLags sets the harness report's read lags (a limiter's time less the
// send time, at least 0) and, without pacing, the spread of the times: the
// records' difference and, where the logs record to the ms, the landed
// width (landing.width, what expect.landed_within judges).
func (r *seenReader) readLags() {
	s, h, reqs := r.s, r.h, r.reqs
	lags := make([]int64, 0, s.n)
	for i := range reqs.Len() {
		if s.lo[i] == 0 {
			continue
		}
		lags = append(lags, max(s.lo[i]-reqs.SentNs.At(i), 0))
	}
	slices.Sort(lags)
	q := func(p float64) int64 { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	h.ReadLagP50Ns, h.ReadLagP99Ns, h.ReadLagMaxNs = q(0.50), q(0.99), lags[len(lags)-1]
	if h.PacingErrorMaxNs == 0 {
		h.SeenSpreadNs = r.land.recorded()
		if w := r.land.width(); w > h.SeenSpreadNs {
			h.SeenSpreadMaxNs = w
		}
	}
}

// sendersWindow is the send window of the bursts of sender processes
// released together (a plan's attack step with senders; attack --senders,
// merged): per step and host, the last send of any of its unpaced shards
// minus the first of any (one host, one clock), the largest over steps; 0
// without such shards. Each shard's own spread is smaller: the senders'
// bursts together are the attack's.
func sendersWindow(a *evidence.Attack) int64 {
	if a == nil {
		return 0
	}
	type key struct{ step, host, node string }
	first, last := map[key]int64{}, map[key]int64{}
	for i := range a.Phases {
		ph := &a.Phases[i]
		if ph.Shard == nil || ph.Burst == nil || ph.Pacing != nil || ph.FirstSendNs <= 0 {
			continue
		}
		k := key{ph.Config.Name, ph.Host, ph.Node}
		if f, ok := first[k]; !ok || ph.FirstSendNs < f {
			first[k] = ph.FirstSendNs
		}
		last[k] = max(last[k], ph.LastSendNs)
	}
	var w int64
	for k, f := range first {
		w = max(w, last[k]-f)
	}
	return w
}

// eachSendTiming calls fn with the burst and pacing figures of every phase
// of attack.json and every flow of it (either may be nil); nothing for a
// nil attack.
func eachSendTiming(a *evidence.Attack, fn func(*evidence.AttackBurst, *evidence.AttackPacing)) {
	if a == nil {
		return
	}
	for i := range a.Phases {
		ph := &a.Phases[i]
		fn(ph.Burst, ph.Pacing)
		for k := range ph.Flows {
			fn(ph.Flows[k].Burst, ph.Flows[k].Pacing)
		}
	}
}

// premiseMissed says why a fixed admitted range that failed is
// inconclusive rather than a FAIL: more were admitted than the range's
// maximum, but no more than the limiters' models allow for the times this
// run delivered (ScenarioReport.Model, replayed on the times the limiters
// saw where their logs tell them), and the same model admits within the
// maximum when the requests arrive at once (spreadAllowed): the range
// assumed a burst reaching the limiter together, and the harness did not
// deliver it. "" when the models are not known end to end, their check did
// not hold, the observation lies outside them, the count is below the
// range (arrival spread makes a bucket admit more, not fewer), or timing
// cannot be shown to matter (two buckets of 5 admit 10 at any spread:
// "want 5, got 10" FAILs).
func premiseMissed(in *Input, want evidence.Range, lo, hi int) string {
	m := in.Report.Model
	if m == nil || !m.Holds() || lo < m.Min || hi > m.Max || lo <= want.Max {
		return ""
	}
	if want.Contains(m.Min) && want.Contains(m.Max) {
		return ""
	}
	reqs := &in.Evidence.Requests
	span := int64(0)
	if h := in.Report.Harness; h != nil && h.SeenSpreadNs > 0 {
		span = h.SeenSpreadNs
	} else if reqs.Len() > 0 {
		span = in.Report.EndNs - in.Report.StartNs
	}
	s, ok := spreadAllowed(in, want, span)
	if !ok || s >= span {
		return ""
	}
	why := fmt.Sprintf("within the limiters' model %d..%d for the times this run delivered, which reaches outside %s: the range assumes timing this run did not deliver; the limiters saw the requests over %s, the range holds only if they arrive within %s",
		m.Min, m.Max, want.String(), time.Duration(span).Round(100*time.Microsecond), time.Duration(s).Round(100*time.Microsecond))
	if h := harnessLine(in); h != "" {
		why += " (" + h + ")"
	}
	return why
}

// spreadMaxRequests caps the requests spreadAllowed replays (it replays them
// about 20 times).
const spreadMaxRequests = 100_000

// spreadAllowed is the largest arrival spread, up to upTo ns, over which the
// requests may reach the limiter (in file order, evenly spread) and the
// admissions stay within want's maximum: what a fixed range assumes of the
// run's timing, to the millisecond. ok is false when the scenario is not
// one local limiter with a model and no descriptors (keyed by target or
// shared), when too many requests were sent, or when the maximum does not
// hold even for requests arriving at once.
func spreadAllowed(in *Input, want evidence.Range, upTo int64) (int64, bool) {
	ls, reqs := in.limiters, &in.Evidence.Requests
	n := reqs.Len()
	if ls == nil || len(ls.runs) != 1 || n == 0 || n > spreadMaxRequests {
		return 0, false
	}
	d := ls.runs[0].decl
	if d.Model == nil || d.Stage != evidence.StageLocal || len(d.RateLimits) > 0 || len(d.Model.Descriptors) > 0 ||
		(d.Key != evidence.KeyTarget && d.Key != evidence.KeyShared) {
		return 0, false
	}
	m, err := model.New(*d.Model)
	if err != nil {
		return 0, false
	}
	base := reqs.SentNs.At(0)
	for i := range n {
		base = min(base, reqs.SentNs.At(i))
	}
	admits := func(spread int64) int {
		sim, count := m.NewSimulator(1), 0
		for i := range n {
			key := "shared"
			if d.Key == evidence.KeyTarget {
				key = reqs.Targets[reqs.Target[i]]
			}
			if sim.Offer(model.Request{At: base + spread*int64(i)/int64(n), Key: key}).Admit {
				count++
			}
		}
		return count
	}
	fits := func(spread int64) bool { return admits(spread) <= want.Max }
	if !fits(0) {
		return 0, false
	}
	lo, hi := int64(0), upTo
	if fits(hi) {
		return hi, true
	}
	for hi-lo > int64(time.Millisecond) {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true
}
