package analyze

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/rlbench/rlbench/analyze/model"
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

// forwardSource reads, from a scenario's evidence, the limiter times of the
// targets it covers (none when its evidence is absent or has no times).
type forwardSource func(in *Input) []*limiterTimes

// forwardSources are the evidence that holds limiters' own forward times,
// in order of preference (the first with times for a target wins): nginx's
// JSON access log. The lab proxy's access log joins them when its entries
// carry the forward time (collect/envoy.AccessLogEntry.UpstreamStartNs): a
// source here that reads it for the lab proxies' targets.
var forwardSources = []forwardSource{nginxLimiterTimes}

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

// jitter is the lag's spread: how far apart the path may put two forwards.
func (p pathLag) jitter() time.Duration { return time.Duration(p.maxNs - p.minNs) }

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
			lag := in.recvNs[r] - f
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
