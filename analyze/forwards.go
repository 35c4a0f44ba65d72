package analyze

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/model"
)

// limiterTimes are the times a limiter's own log gives the requests sent to
// one attack target: when each reached the limiter and when the limiter
// forwarded it, by the limiter's clock. The checks judge a limiter by these
// where the evidence has them (the times its algorithm used), and the path
// from it to the backend separately.
type limiterTimes struct {
	// target is the attack target (proxy) whose limiter logged them; source
	// the file read, relative to the scenario directory.
	target, source string
	// resolution is the resolution of the logged times (nginx: 1 ms).
	resolution time.Duration
	// One entry per record of a request the limiter did not reject, in file
	// order: acceptNs is when it reached the limiter (-1: unknown),
	// forwardNs when the limiter forwarded it (-1: not forwarded or
	// unknown), both unix ns on the limiter's clock; request its index in
	// Requests (-1: joins none); line its line in source; limited whether
	// the limiter's decision applied (nginx: $limit_req_status PASSED or
	// DELAYED); vars the zone keys as logged (zone name → key; nil when
	// not logged).
	acceptNs, forwardNs []int64
	request             []int32
	line                []int
	limited             []bool
	vars                []map[string]string
	// unplaced counts the target's requests the backend received that have
	// no forward time here: while any has, the forwards are incomplete.
	unplaced int
}

// add appends one record's entry (see the fields).
func (lt *limiterTimes) add(acceptNs, forwardNs int64, request int32, line int, limited bool, vars map[string]string) {
	lt.acceptNs = append(lt.acceptNs, acceptNs)
	lt.forwardNs = append(lt.forwardNs, forwardNs)
	lt.request = append(lt.request, request)
	lt.line = append(lt.line, line)
	lt.limited = append(lt.limited, limited)
	lt.vars = append(lt.vars, vars)
}

// finish counts unplaced: the requests to lt's target the backend received
// that no entry joins with a forward time. It reports whether lt has any
// forward time at all (a source without one gives nothing for the target).
func (lt *limiterTimes) finish(in *Input) bool {
	if !slices.ContainsFunc(lt.forwardNs, func(f int64) bool { return f >= 0 }) {
		return false
	}
	reqs := &in.Evidence.Requests
	placed := make([]bool, reqs.Len())
	for k, ri := range lt.request {
		if ri >= 0 && lt.forwardNs[k] >= 0 {
			placed[ri] = true
		}
	}
	for i := 0; i < reqs.Len(); i++ {
		if in.received[i] && reqs.Targets[reqs.Target[i]] == lt.target && !placed[i] {
			lt.unplaced++
		}
	}
	return true
}

// forwardSource reads, from a scenario's evidence, the limiter times of the
// targets it covers (none when its evidence is absent or has no times).
type forwardSource func(in *Input) []*limiterTimes

// forwardSources are the evidence that holds limiters' own forward times,
// in order of preference (the first with times for a target wins): nginx's
// JSON access log, HAProxy's log (haproxyLimiterTimes), then the lab
// proxies' access logs (local_ns and upstream_start_ns,
// evidence/envoyrec.AccessLogEntry).
var forwardSources = []forwardSource{nginxLimiterTimes, haproxyLimiterTimes, labProxyLimiterTimes}

// labProxyLimiterTimes reads the lab proxies' own times from their access
// logs: a request reached the limiter at local_ns (the very time its token
// buckets decided with; start_ns when no local filter ran) and was
// forwarded at upstream_start_ns, both in ns on the proxy's clock. Entries
// the local filter rejected (no forward) are left out, as nginx's
// REJECTED records are; a log without any forward time gives nothing.
func labProxyLimiterTimes(in *Input) []*limiterTimes {
	reqs := &in.Evidence.Requests
	var out []*limiterTimes
	for _, l := range in.Evidence.AccessLogs {
		lt := &limiterTimes{target: l.Proxy, source: l.File, resolution: time.Microsecond}
		for _, e := range l.Entries {
			if e.UpstreamStartNs <= 0 && e.StartNs <= 0 {
				continue
			}
			acc, fwd := e.StartNs, e.UpstreamStartNs
			if e.LocalNs > 0 {
				acc = e.LocalNs
			}
			if acc <= 0 {
				acc = -1
			}
			if fwd <= 0 {
				if e.LocalNs > 0 && envoyrec.Producer(e) == envoyrec.ProducerLocalLimiter {
					continue // rejected by the local bucket: not a forward
				}
				fwd = -1
			}
			if fwd >= 0 && (acc >= 0 && fwd < acc || e.StartNs > 0 && fwd < e.StartNs) {
				fwd = -1 // a forward before the proxy had the request: not a time to judge by
			}
			ri := int32(-1)
			if i, ok := reqs.IDs.Lookup(e.RlbenchID); e.RlbenchID != "" && ok {
				ri = int32(i)
				if end := reqs.EndNs.At(i); fwd >= 0 && (fwd < reqs.SentNs.At(i) || end > 0 && fwd > end) {
					fwd = -1 // outside the request's own send and response
				}
			}
			lt.add(acc, fwd, ri, e.Line, e.LocalNs > 0, nil)
		}
		if lt.finish(in) {
			out = append(out, lt)
		}
	}
	return out
}

// limiterForwards returns the limiter times per attack target, from the
// first of forwardSources that has times for it; computed once per Input.
func (in *Input) limiterForwards() map[string]*limiterTimes {
	if in.forwards != nil {
		return in.forwards
	}
	in.forwards = map[string]*limiterTimes{}
	for _, src := range forwardSources {
		for _, lt := range src(in) {
			if _, ok := in.forwards[lt.target]; !ok {
				in.forwards[lt.target] = lt
			}
		}
	}
	return in.forwards
}

// stateTimes are the forwards of one limiter state (a boundPart) by the
// limiter's clock, and the earliest its model allows them (sorted both).
type stateTimes struct {
	forwards, earliest []int64
}

// backlog is how many forwards the limiter had due before t (by the
// model's earliest) and had not made: those it may still make at t
// together, a stalled limiter (its timers fire late) included.
func (s *stateTimes) backlog(t int64) int {
	due := sort.Search(len(s.earliest), func(k int) bool { return s.earliest[k] >= t })
	made := sort.Search(len(s.forwards), func(k int) bool { return s.forwards[k] >= t })
	return max(due-made, 0)
}

// backlogs sums the states' backlogs at t.
func backlogs(states []stateTimes, t int64) int {
	n := 0
	for k := range states {
		n += states[k].backlog(t)
	}
	return n
}

// partTimes computes, for the parts of a peak bound, the limiter's
// forwards and their model lower bounds (model.EarliestForwards replayed on
// the limiter's accept times; the requests its decision did not apply to,
// and a model that cannot say, at their accept times; a forward without an
// accept time is due from the start). ok is false when a part's target has
// no limiter times.
func partTimes(pb peakBound, fw map[string]*limiterTimes) ([]stateTimes, bool) {
	out := make([]stateTimes, 0, len(pb.parts))
	for _, p := range pb.parts {
		var st stateTimes
		var mreqs []model.Request
		for _, t := range p.targets {
			lt := fw[t]
			if lt == nil {
				return nil, false
			}
			key := "target " + t
			if p.shared {
				key = "shared"
			}
			for k := range lt.forwardNs {
				if f := lt.forwardNs[k]; f >= 0 {
					st.forwards = append(st.forwards, f)
				}
				switch a := lt.acceptNs[k]; {
				case a < 0:
					if lt.forwardNs[k] >= 0 {
						st.earliest = append(st.earliest, math.MinInt64)
					}
				case lt.limited[k]:
					mreqs = append(mreqs, model.Request{At: a, Key: key, Vars: zoneVars(p.m.Spec(), lt.vars[k])})
				case lt.forwardNs[k] >= 0:
					st.earliest = append(st.earliest, a)
				}
			}
		}
		if e, ok := model.EarliestForwards(p.m, mreqs); ok {
			st.earliest = append(st.earliest, e...)
		} else {
			for _, r := range mreqs {
				st.earliest = append(st.earliest, r.At)
			}
		}
		slices.Sort(st.forwards)
		slices.Sort(st.earliest)
		out = append(out, st)
	}
	return out, true
}

// zoneVars maps the nginx zone key variables of spec to a record's logged
// keys (zone name → key), as model.Request.Vars; nil when none applies.
func zoneVars(s model.Spec, logged map[string]string) map[string]string {
	if s.Kind != model.KindNginxLimitReq || len(logged) == 0 {
		return nil
	}
	var vars map[string]string
	for _, z := range s.Zones {
		if v, ok := logged[z.Name]; ok && z.Key != "" {
			if vars == nil {
				vars = map[string]string{}
			}
			vars[z.Key] = v
		}
	}
	return vars
}

// pathLag is the lag from a limiter's forwards to the backend's receipts:
// receipt minus forward time per request, joined by ID (the earliest
// receipt; the clocks' offset included: only the spread matters).
type pathLag struct {
	joined       int
	minNs, maxNs int64
}

// pathLagOf measures the lag over the limiter times of targets.
func pathLagOf(in *Input, fw map[string]*limiterTimes, targets []string) pathLag {
	var p pathLag
	seen := map[int32]bool{}
	for _, t := range targets {
		lt := fw[t]
		if lt == nil {
			continue
		}
		for k, r := range lt.request {
			f := lt.forwardNs[k]
			if r < 0 || f < 0 || !in.received[r] || seen[r] {
				continue
			}
			seen[r] = true
			lag := in.ReceiptNs(int(r)) - f
			if p.joined == 0 || lag < p.minNs {
				p.minNs = lag
			}
			if p.joined == 0 || lag > p.maxNs {
				p.maxNs = lag
			}
			p.joined++
		}
	}
	return p
}

// receiptLag is one receipt of the path check: when the backend recorded
// it, and the lag from its request's forward (lo = hi), or the whole
// measured range when its request has no forward time (a phantom's, say).
type receiptLag struct{ at, lo, hi int64 }

// receiptLags are the receipts of the requests sent to targets, sorted,
// each with its lag from the limiter's forward of its request (the
// earliest forward when the log has several; a proxy retry's receipt lags
// by the tries before it).
func receiptLags(in *Input, fw map[string]*limiterTimes, targets []string, all pathLag) []receiptLag {
	reqs, recs := &in.Evidence.Requests, &in.Evidence.Receipts
	first := map[int32]int64{}
	for _, t := range targets {
		if lt := fw[t]; lt != nil {
			for k, q := range lt.request {
				if f := lt.forwardNs[k]; q >= 0 && f >= 0 {
					if g, ok := first[q]; !ok || f < g {
						first[q] = f
					}
				}
			}
		}
	}
	var out []receiptLag
	for k, q := range recs.Request {
		if q < 0 || int(q) >= reqs.Len() || !slices.Contains(targets, reqs.Targets[reqs.Target[q]]) {
			continue
		}
		at := recs.RecvNs.At(k)
		if f, ok := first[q]; ok {
			out = append(out, receiptLag{at, at - f, at - f})
		} else {
			out = append(out, receiptLag{at, all.minNs, all.maxNs})
		}
	}
	slices.SortFunc(out, func(a, b receiptLag) int { return cmp.Compare(a.at, b.at) })
	return out
}

// pathWindow is one window [at, at+W) of receipts in the path check: its
// count, the lag range lo..hi of its receipts, the bound over W widened by
// hi-lo (and the resolution), and the limiter's backlog at at-hi.
type pathWindow struct {
	at            int64
	count         int
	lo, hi        int64
	bound, behind int
}

// pathVerdict is pathScan's finding: the worst window beyond its widened
// bound (violated), else the window that fits only by a jitter allowance
// that leaves nothing to judge (unjudged: beyond the bound itself, or
// lifting a bound below the receipts' count to it), else the fullest.
type pathVerdict struct {
	worst, unjudged, fullest pathWindow
	violated, inconclusive   bool
}

// pathScan checks every window [t, t+w) of the receipts (rs sorted) that
// starts at a receipt. Its receipts came from forwards in [t-hi, t+w-lo),
// lo..hi the lags of its own receipts: at most the bound over w + (hi-lo)
// + res, plus the forwards the limiter had due at t-hi and had not made
// (backlogs). A window within b0 (the bound over w + res) plus that backlog
// needs no jitter and is judged whatever the lags.
func pathScan(rs []receiptLag, w, res time.Duration, b0 int, pb peakBound, states []stateTimes) pathVerdict {
	v := pathVerdict{fullest: pathWindow{count: -1}}
	bounds := map[time.Duration]int{}
	boundAt := func(d time.Duration) int {
		b, ok := bounds[d]
		if !ok {
			b, _ = pb.at(d)
			bounds[d] = b
		}
		return b
	}
	// sliding minimum of lo and maximum of hi over [i, j): monotonic deques of indexes
	var mins, maxs []int
	j := 0
	for i := range rs {
		for j < len(rs) && rs[j].at-rs[i].at < int64(w) {
			for len(mins) > 0 && rs[mins[len(mins)-1]].lo >= rs[j].lo {
				mins = mins[:len(mins)-1]
			}
			mins = append(mins, j)
			for len(maxs) > 0 && rs[maxs[len(maxs)-1]].hi <= rs[j].hi {
				maxs = maxs[:len(maxs)-1]
			}
			maxs = append(maxs, j)
			j++
		}
		for mins[0] < i {
			mins = mins[1:]
		}
		for maxs[0] < i {
			maxs = maxs[1:]
		}
		pw := pathWindow{at: rs[i].at, count: j - i, lo: rs[mins[0]].lo, hi: rs[maxs[0]].hi}
		pw.behind = backlogs(states, pw.at-pw.hi)
		pw.bound = boundAt(w + time.Duration(pw.hi-pw.lo) + res)
		switch {
		case pw.count <= b0+pw.behind:
			pw.bound = b0 // judged without the jitter
		case pw.count > pw.bound+pw.behind:
			if !v.violated || pw.count-pw.bound-pw.behind > v.worst.count-v.worst.bound-v.worst.behind {
				v.worst, v.violated = pw, true
			}
		case pw.bound-b0 > b0 || b0 < len(rs) && pw.bound >= len(rs):
			if !v.inconclusive || pw.bound > v.unjudged.bound {
				v.unjudged, v.inconclusive = pw, true
			}
		}
		if pw.count > v.fullest.count || pw.count == v.fullest.count && pw.bound+pw.behind < v.fullest.bound+v.fullest.behind {
			v.fullest = pw
		}
	}
	return v
}
