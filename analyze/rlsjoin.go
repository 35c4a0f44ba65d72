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
	n := reqs.Len()
	j := &rlsJoin{ds: ev.Decisions, res: max(res, 1), widen: max(widenNs, 0), dec2req: make([]int32, len(ev.Decisions)),
		unitStart: make([]int32, n+1)}
	for i := range j.dec2req {
		j.dec2req[i] = -1
	}
	var rq []int
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
	unitReq := make([]int32, len(j.unitKey))
	for i := 0; i < n; i++ {
		for u := j.unitStart[i]; u < j.unitStart[i+1]; u++ {
			unitReq[u] = int32(i)
		}
	}
	var dec []int
	// dkey is a decision's key (its domain and descriptor); anyDom marks
	// one whose domain is unknown, whose dkey is then the descriptor part.
	dkey := make([]string, len(ev.Decisions))
	anyDom := make([]bool, len(ev.Decisions))
	for k := range ev.Decisions {
		d := &ev.Decisions[k]
		if d.Code != evidence.CodeOK && d.Code != evidence.CodeOverLimit {
			continue
		}
		dec = append(dec, k)
		if len(d.Descriptor) > 0 {
			dkey[k] = descriptor.CacheKeyPrefix(d.Domain, d.Descriptor)
			anyDom[k] = d.Domain == ""
		}
	}
	matches := func(k int, u int32) bool {
		switch {
		case dkey[k] == "" || j.unitKey[u] == "":
			return true
		case anyDom[k]:
			return j.unitDesc[u] == dkey[k]
		}
		return dkey[k] == j.unitKey[u]
	}
	sort.SliceStable(dec, func(a, b int) bool { return ev.Decisions[dec[a]].TimeNs < ev.Decisions[dec[b]].TimeNs })
	sort.SliceStable(rq, func(a, b int) bool { return reqs.SentNs[rq[a]] < reqs.SentNs[rq[b]] })

	// candidate units of each decision, by a sweep over send times
	start := make([]int, len(dec)+1)
	var adj []int32
	var active []int
	next, scanned := 0, 0
	for m, k := range dec {
		d := &ev.Decisions[k]
		lo, hi := d.TimeNs-j.widen, d.TimeNs+j.res-1+j.widen
		for ; next < len(rq) && reqs.SentNs[rq[next]] <= hi; next++ {
			active = append(active, rq[next])
		}
		kept := active[:0]
		scanned += len(active)
		for _, i := range active {
			if reqs.EndNs[i] < lo {
				continue // ended before this decision, and before every later one
			}
			kept = append(kept, i)
			multi := j.unitStart[i+1]-j.unitStart[i] > 1
			if !compatible(d.Code, reqs.Class[i], multi) {
				continue
			}
			for u := j.unitStart[i]; u < j.unitStart[i+1]; u++ {
				if matches(k, u) {
					adj = append(adj, u)
				}
			}
		}
		active = kept
		start[m+1] = len(adj)
		if len(adj) > maxJoinPairs || scanned > 4*maxJoinPairs {
			j.skipped = "too many requests in flight per decision to join them"
			return j
		}
	}
	dec2unit := make([]int32, len(ev.Decisions))
	for k := range dec2unit {
		dec2unit[k] = -1
	}
	match := func(m int, u int32) {
		dec2unit[dec[m]] = u
		j.unit2dec[u] = int32(dec[m])
	}
	endOf := func(u int32) int64 { return reqs.EndNs[unitReq[u]] }
	// greedy: earliest-ending candidate first
	for m := range dec {
		best := int32(-1)
		for _, u := range adj[start[m]:start[m+1]] {
			if j.unit2dec[u] < 0 && (best < 0 || endOf(u) < endOf(best)) {
				best = u
			}
		}
		if best >= 0 {
			match(m, best)
		}
	}
	// augmenting paths for the decisions left over
	pos := make(map[int]int, len(dec)) // decision index -> m
	for m, k := range dec {
		pos[k] = m
	}
	seen := make([]int, len(j.unitKey))
	stamp, steps := 0, 0
	var try func(m int) bool
	try = func(m int) bool {
		for _, u := range adj[start[m]:start[m+1]] {
			if steps++; steps > maxJoinSteps {
				return false
			}
			if seen[u] == stamp {
				continue
			}
			seen[u] = stamp
			if j.unit2dec[u] < 0 || try(pos[int(j.unit2dec[u])]) {
				match(m, u)
				return true
			}
		}
		return false
	}
	for m, k := range dec {
		if dec2unit[k] >= 0 || start[m] == start[m+1] {
			continue
		}
		stamp++
		try(m)
		if steps > maxJoinSteps {
			j.skipped = "joining the decisions to their requests took too long"
			j.zombieIdx = nil
			return j
		}
	}
	for _, k := range dec {
		if u := dec2unit[k]; u >= 0 {
			j.dec2req[k] = unitReq[u]
		} else {
			j.zombieIdx = append(j.zombieIdx, k)
		}
	}
	sort.Ints(j.zombieIdx)
	return j
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
