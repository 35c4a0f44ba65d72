package analyze

import (
	"sort"

	"github.com/rlbench/rlbench/evidence"
)

// maxJoinPairs bounds the (decision, request) candidate pairs of one join;
// maxJoinSteps the augmenting-path search. Beyond them the join is not
// made and nothing is called late.
const (
	maxJoinPairs = 4 << 20
	maxJoinSteps = 32 << 20
)

// rlsJoin joins each RLS decision (OK or OVER_LIMIT) to the request it
// answered. No RLS log names a request, so a decision can belong to any
// request that went to the RLS with the same descriptor, that was in
// flight when the decision was made ([send, response], widened by the
// log's time resolution) and whose outcome agrees with the code (see
// compatible). Each request gets at most one decision per call: the join is a
// maximum matching of that bipartite graph (greedy earliest-end first,
// then augmenting paths), so that one unrelated request in flight cannot
// hide many late decisions. A decision no request can take is late (a
// "zombie": the RLS executed the call after its client had given up,
// envoyproxy/ratelimit src/redis/fixed_cache_impl.go): it counted in its
// window but admitted no one.
type rlsJoin struct {
	ds  []evidence.Decision
	res int64
	// dec2req is, per decision, the request joined (-1: none).
	dec2req []int32
	// req2dec is, per request, the decision joined (-1: none).
	req2dec []int32
	// zombieIdx are the OK/OVER_LIMIT decisions joined to no request.
	zombieIdx []int
	// Skipped says why the join was not made ("" when it was).
	skipped string
}

func (j *rlsJoin) decision(k int) *evidence.Decision { return &j.ds[k] }

// joinDecisions joins ev's decisions to the requests for which eligible is
// true; key gives a request's descriptor key (evidence.CacheKeyPrefix of
// its domain and descriptor, "" when unknown: it matches any decision).
func joinDecisions(ev *evidence.ScenarioEvidence, res int64, eligible func(int) bool, key func(int) string) *rlsJoin {
	reqs := &ev.Requests
	j := &rlsJoin{ds: ev.Decisions, res: max(res, 1), dec2req: make([]int32, len(ev.Decisions)), req2dec: make([]int32, reqs.Len())}
	for i := range j.dec2req {
		j.dec2req[i] = -1
	}
	for i := range j.req2dec {
		j.req2dec[i] = -1
	}
	var dec []int
	dkey := make([]string, len(ev.Decisions))
	for k := range ev.Decisions {
		d := &ev.Decisions[k]
		if d.Code != evidence.CodeOK && d.Code != evidence.CodeOverLimit {
			continue
		}
		dec = append(dec, k)
		if len(d.Descriptor) > 0 {
			dkey[k] = evidence.CacheKeyPrefix(d.Domain, d.Descriptor)
		}
	}
	sort.SliceStable(dec, func(a, b int) bool { return ev.Decisions[dec[a]].TimeNs < ev.Decisions[dec[b]].TimeNs })
	var rq []int
	rkey := make([]string, reqs.Len())
	for i := 0; i < reqs.Len(); i++ {
		if eligible(i) {
			rq = append(rq, i)
			rkey[i] = key(i)
		}
	}
	sort.SliceStable(rq, func(a, b int) bool { return reqs.SentNs[rq[a]] < reqs.SentNs[rq[b]] })

	// candidates of each decision, by a sweep over send times
	start := make([]int, len(dec)+1)
	var adj []int32
	var active []int
	next, scanned := 0, 0
	for n, k := range dec {
		d := &ev.Decisions[k]
		lo, hi := d.TimeNs, d.TimeNs+j.res-1
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
			if (dkey[k] == "" || rkey[i] == "" || dkey[k] == rkey[i]) && compatible(d.Code, reqs.Class[i]) {
				adj = append(adj, int32(i))
			}
		}
		active = kept
		start[n+1] = len(adj)
		if len(adj) > maxJoinPairs || scanned > 4*maxJoinPairs {
			j.skipped = "too many requests in flight per decision to join them"
			return j
		}
	}
	// greedy: earliest-ending candidate first
	match := func(n int, i int32) {
		j.dec2req[dec[n]] = i
		j.req2dec[i] = int32(dec[n])
	}
	for n := range dec {
		best := int32(-1)
		for _, i := range adj[start[n]:start[n+1]] {
			if j.req2dec[i] < 0 && (best < 0 || reqs.EndNs[i] < reqs.EndNs[best]) {
				best = i
			}
		}
		if best >= 0 {
			match(n, best)
		}
	}
	// augmenting paths for the decisions left over
	pos := make(map[int]int, len(dec)) // decision index -> n
	for n, k := range dec {
		pos[k] = n
	}
	seen := make([]int, reqs.Len())
	stamp, steps := 0, 0
	var try func(n int) bool
	try = func(n int) bool {
		for _, i := range adj[start[n]:start[n+1]] {
			if steps++; steps > maxJoinSteps {
				return false
			}
			if seen[i] == stamp {
				continue
			}
			seen[i] = stamp
			if j.req2dec[i] < 0 || try(pos[int(j.req2dec[i])]) {
				match(n, i)
				return true
			}
		}
		return false
	}
	for n, k := range dec {
		if j.dec2req[k] >= 0 || start[n] == start[n+1] {
			continue
		}
		stamp++
		try(n)
		if steps > maxJoinSteps {
			j.skipped = "joining the decisions to their requests took too long"
			j.zombieIdx = nil
			return j
		}
	}
	for _, k := range dec {
		if j.dec2req[k] < 0 {
			j.zombieIdx = append(j.zombieIdx, k)
		}
	}
	sort.Ints(j.zombieIdx)
	return j
}

// compatible reports whether a decision with code reached a request whose
// client outcome is c: an OK one that passed the RLS (or whose outcome is
// unknown), an OVER_LIMIT one the RLS rejected (or unknown). A request
// whose RLS call failed (rls_error) got no decision in time: a decision made
// during it reached no one.
func compatible(code string, c evidence.Class) bool {
	switch c {
	case evidence.ClassRLSError:
		return false
	case evidence.ClassNoResponse, evidence.ClassOther4xx, evidence.ClassOther5xx, evidence.ClassOther:
		return true
	}
	if code == evidence.CodeOK {
		return c.Passed()
	}
	return c == evidence.ClassGlobal429
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
