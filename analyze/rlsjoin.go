package analyze

import (
	"sort"
	"strings"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
)

// maxJoinPairs bounds the (decision, descriptor) candidate pairs of one
// join; maxJoinSteps the augmenting-path search. Beyond them the join is
// not made and nothing is called late.
const (
	maxJoinPairs = 4 << 20
	maxJoinSteps = 32 << 20
)

// rlsJoin joins each RLS decision (OK or OVER_LIMIT) to the call it
// answered: a request's descriptor (a "unit"; Envoy sends all of a
// request's descriptors in one call and the RLS logs a decision per
// descriptor). No RLS log names a request, so a decision can belong to any
// unit with the same descriptor whose request was in flight when the
// decision was made ([send, response], widened by the log's time
// resolution and by the clock offset bound between the clients' hosts and
// the RLS, widenNs on each side: the same bound the model replay widens
// its intervals by) and whose outcome agrees with the code (see
// compatible). A decision whose domain the RLS log does not tell (Domain
// "": a no-limit decision of a configuration with several domains, or
// decisions.jsonl of an earlier release) joins a unit with the same
// descriptor in any domain.
// Each unit gets at most one decision: the join is a maximum matching of
// that bipartite graph (greedy earliest-end first, then augmenting paths),
// so that one unrelated request in flight cannot hide many late decisions.
// A decision no unit can take is late (a "zombie": the RLS executed the
// call after its client had given up, envoyproxy/ratelimit
// src/redis/fixed_cache_impl.go): it counted in its window but admitted
// no one.
type rlsJoin struct {
	ds  []evidence.Decision
	res int64
	// widen is the clock offset bound applied on each side, ns.
	widen int64
	// unitStart[i]..unitStart[i+1] are request i's units; unitKey their
	// descriptor keys (descriptor.CacheKeyPrefix; "": unknown, matches any
	// decision); unit2dec the decision joined to each (-1: none).
	unitStart []int32
	unitKey   []string
	unit2dec  []int32
	// unitDesc is each unit's key without its domain (its descriptor
	// part, descriptor.CacheKeyPrefix("", ...)); "" for an unknown key.
	unitDesc []string
	// dec2req is, per decision, the request joined (-1: none).
	dec2req []int32
	// zombieIdx are the OK/OVER_LIMIT decisions joined to no request.
	zombieIdx []int
	// Skipped says why the join was not made ("" when it was).
	skipped string
}

func (j *rlsJoin) decision(k int) *evidence.Decision { return &j.ds[k] }

// joinDecisions joins ev's decisions to the requests' units: units(i)
// gives request i's descriptor keys (nil: it did not call the RLS; a ""
// key matches any decision) and the domain they begin with. res is the
// decisions' time resolution and widenNs the clock offset bound, ns.
func joinDecisions(ev *evidence.ScenarioEvidence, res, widenNs int64, units func(int) ([]string, string)) *rlsJoin {
	reqs := &ev.Requests
	j := &rlsJoin{ds: ev.Decisions, res: max(res, 1), widen: max(widenNs, 0), dec2req: make([]int32, len(ev.Decisions)),
		unitStart: make([]int32, reqs.Len()+1)}
	for i := range j.dec2req {
		j.dec2req[i] = -1
	}
	jn := &joiner{j: j, reqs: reqs}
	rq := jn.addUnits(units)
	jn.decisions()
	sort.SliceStable(jn.dec, func(a, b int) bool { return ev.Decisions[jn.dec[a]].TimeNs < ev.Decisions[jn.dec[b]].TimeNs })
	sort.SliceStable(rq, func(a, b int) bool { return reqs.SentNs.At(rq[a]) < reqs.SentNs.At(rq[b]) })
	if !jn.candidates(rq) {
		j.skipped = "too many requests in flight per decision to join them"
		return j
	}
	jn.dec2unit = make([]int32, len(ev.Decisions))
	for k := range jn.dec2unit {
		jn.dec2unit[k] = -1
	}
	jn.greedy()
	if !jn.augment() {
		j.skipped = "joining the decisions to their requests took too long"
		j.zombieIdx = nil
		return j
	}
	for _, k := range jn.dec {
		if u := jn.dec2unit[k]; u >= 0 {
			j.dec2req[k] = jn.unitReq[u]
		} else {
			j.zombieIdx = append(j.zombieIdx, k)
		}
	}
	sort.Ints(j.zombieIdx)
	return j
}

// joiner is the join of joinDecisions while it is made: a bipartite graph
// of decisions and units, matched.
type joiner struct {
	j    *rlsJoin
	reqs *evidence.Requests
	// unitReq is each unit's request.
	unitReq []int32
	// dec are the OK/OVER_LIMIT decisions (indices in j.ds, in time
	// order); dkey a decision's key (its domain and descriptor); anyDom
	// marks one whose domain is unknown, whose dkey is then the
	// descriptor part.
	dec    []int
	dkey   []string
	anyDom []bool
	// adj[start[m]:start[m+1]] are decision dec[m]'s candidate units.
	start []int
	adj   []int32
	// dec2unit is, per decision, the unit matched (-1: none).
	dec2unit []int32
}

// addUnits records every request's units (units(i)) and returns the
// requests that have some.
func (jn *joiner) addUnits(units func(int) ([]string, string)) (rq []int) {
	j, n := jn.j, jn.reqs.Len()
	for i := 0; i < n; i++ {
		ks, dom := units(i)
		j.unitKey = append(j.unitKey, ks...)
		for _, k := range ks {
			desc := ""
			if k != "" && strings.HasPrefix(k, dom) {
				desc = k[len(dom):]
			}
			j.unitDesc = append(j.unitDesc, desc)
		}
		j.unitStart[i+1] = int32(len(j.unitKey))
		if len(ks) > 0 {
			rq = append(rq, i)
		}
	}
	j.unit2dec = make([]int32, len(j.unitKey))
	for u := range j.unit2dec {
		j.unit2dec[u] = -1
	}
	jn.unitReq = make([]int32, len(j.unitKey))
	for i := 0; i < n; i++ {
		for u := j.unitStart[i]; u < j.unitStart[i+1]; u++ {
			jn.unitReq[u] = int32(i)
		}
	}
	return rq
}

// decisions lists the decisions to join (OK and OVER_LIMIT) with their keys.
func (jn *joiner) decisions() {
	ds := jn.j.ds
	jn.dkey = make([]string, len(ds))
	jn.anyDom = make([]bool, len(ds))
	for k := range ds {
		d := &ds[k]
		if d.Code != evidence.CodeOK && d.Code != evidence.CodeOverLimit {
			continue
		}
		jn.dec = append(jn.dec, k)
		if len(d.Descriptor) > 0 {
			jn.dkey[k] = descriptor.CacheKeyPrefix(d.Domain, d.Descriptor)
			jn.anyDom[k] = d.Domain == ""
		}
	}
}

// matches reports whether decision k's key may be unit u's.
func (jn *joiner) matches(k int, u int32) bool {
	switch {
	case jn.dkey[k] == "" || jn.j.unitKey[u] == "":
		return true
	case jn.anyDom[k]:
		return jn.j.unitDesc[u] == jn.dkey[k]
	}
	return jn.dkey[k] == jn.j.unitKey[u]
}

// candidates finds the candidate units of each decision by a sweep over
// the send times of the requests rq (sorted by send time); false when
// there are too many to join them (maxJoinPairs).
func (jn *joiner) candidates(rq []int) bool {
	j, reqs := jn.j, jn.reqs
	jn.start = make([]int, len(jn.dec)+1)
	var active []int
	next, scanned := 0, 0
	for m, k := range jn.dec {
		d := &j.ds[k]
		lo, hi := d.TimeNs-j.widen, d.TimeNs+j.res-1+j.widen
		for ; next < len(rq) && reqs.SentNs.At(rq[next]) <= hi; next++ {
			active = append(active, rq[next])
		}
		kept := active[:0]
		scanned += len(active)
		for _, i := range active {
			if reqs.EndNs.At(i) < lo {
				continue // ended before this decision, and before every later one
			}
			kept = append(kept, i)
			multi := j.unitStart[i+1]-j.unitStart[i] > 1
			if !compatible(d.Code, reqs.Class[i], multi) {
				continue
			}
			for u := j.unitStart[i]; u < j.unitStart[i+1]; u++ {
				if jn.matches(k, u) {
					jn.adj = append(jn.adj, u)
				}
			}
		}
		active = kept
		jn.start[m+1] = len(jn.adj)
		if len(jn.adj) > maxJoinPairs || scanned > 4*maxJoinPairs {
			return false
		}
	}
	return true
}

// match joins decision dec[m] and unit u.
func (jn *joiner) match(m int, u int32) {
	jn.dec2unit[jn.dec[m]] = u
	jn.j.unit2dec[u] = int32(jn.dec[m])
}

// greedy matches each decision, in time order, with its earliest-ending
// free candidate.
func (jn *joiner) greedy() {
	endOf := func(u int32) int64 { return jn.reqs.EndNs.At(int(jn.unitReq[u])) }
	for m := range jn.dec {
		best := int32(-1)
		for _, u := range jn.adj[jn.start[m]:jn.start[m+1]] {
			if jn.j.unit2dec[u] < 0 && (best < 0 || endOf(u) < endOf(best)) {
				best = u
			}
		}
		if best >= 0 {
			jn.match(m, best)
		}
	}
}

// augment matches the decisions the greedy pass left over along
// augmenting paths; false when that took more than maxJoinSteps.
func (jn *joiner) augment() bool {
	j := jn.j
	pos := make(map[int]int, len(jn.dec)) // decision index -> m
	for m, k := range jn.dec {
		pos[k] = m
	}
	seen := make([]int, len(j.unitKey))
	stamp, steps := 0, 0
	var try func(m int) bool
	try = func(m int) bool {
		for _, u := range jn.adj[jn.start[m]:jn.start[m+1]] {
			if steps++; steps > maxJoinSteps {
				return false
			}
			if seen[u] == stamp {
				continue
			}
			seen[u] = stamp
			if j.unit2dec[u] < 0 || try(pos[int(j.unit2dec[u])]) {
				jn.match(m, u)
				return true
			}
		}
		return false
	}
	for m, k := range jn.dec {
		if jn.dec2unit[k] >= 0 || jn.start[m] == jn.start[m+1] {
			continue
		}
		stamp++
		try(m)
		if steps > maxJoinSteps {
			return false
		}
	}
	return true
}

// compatible reports whether a decision with code reached a request whose
// client outcome is c: an OK one that passed the RLS (or whose outcome is
// unknown), an OVER_LIMIT one the RLS rejected (or unknown). A request
// with several descriptors (multi) that the RLS rejected had at least one
// OVER_LIMIT, its other descriptors may be OK. A request whose RLS call
// failed (rls_error) got no decision in time: a decision made during it
// reached no one.
func compatible(code string, c evidence.Class, multi bool) bool {
	switch c {
	case evidence.ClassRLSError:
		return false
	case evidence.ClassNoResponse, evidence.ClassOther4xx, evidence.ClassOther5xx, evidence.ClassOther:
		return true
	}
	if code == evidence.CodeOK {
		return c.Passed() || multi && c == evidence.ClassGlobal429
	}
	return c == evidence.ClassGlobal429
}

// carried reports whether some request's unit may carry d's descriptor:
// one with its key, or an unknown one; true when the join was not made.
func (j *rlsJoin) carried(d evidence.Decision) bool {
	if j == nil || j.skipped != "" || len(d.Descriptor) == 0 {
		return true
	}
	key, desc := descriptor.CacheKeyPrefix(d.Domain, d.Descriptor), descriptor.CacheKeyPrefix("", d.Descriptor)
	for u, k := range j.unitKey {
		if k == "" || k == key || d.Domain == "" && j.unitDesc[u] == desc {
			return true
		}
	}
	return false
}

// isZombie reports whether decision k reached no request (false when the
// join was not made).
func (j *rlsJoin) isZombie(k int) bool {
	if j == nil || j.skipped != "" {
		return false
	}
	d := &j.ds[k]
	return (d.Code == evidence.CodeOK || d.Code == evidence.CodeOverLimit) && j.dec2req[k] < 0
}
