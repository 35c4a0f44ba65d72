package model

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
)

// eps absorbs float rounding in comparisons, always in the direction of
// "either": the checker's own rounding for exact limiters (levelTol) and a
// limiter that keeps a float level (floatTol, Envoy's AtomicTokenBucket:
// double seconds since boot times tokens per second).
const (
	eps      = 1e-6
	levelTol = 1e-12
	floatTol = 1e-4
)

// slack is the tolerance of a level computed from refill sums of magnitude
// mag: the limiter's own tolerance plus the checker's float rounding.
func (p *tbParams) slack(mag float64) float64 { return p.tol + 1e-15*math.Abs(mag) }

// tbParams is a token bucket as the checker sees it, in level units: a
// request passes iff the level is >= theta and then takes cUp (cLo: the most
// it may take, counting nginx's truncated leak), the level is capped at C and
// the bucket starts full. Envoy and generic buckets: theta = cUp = cLo = 1
// token; nginx: milli-requests, C = (burst+1)*1000, theta = cUp = 1000.
type tbParams struct {
	label              string
	C, theta, cUp, cLo float64
	unit               int64 // ns per time unit
	refill             refill
	// resetIdle > 0: when several keys share the zone, a key idle that long
	// may be freed and recreated full (nginx ngx_http_limit_req_expire).
	resetIdle int64
	// lruSize > 0: the bucket is one value of an Envoy wildcard descriptor,
	// evicted (and recreated full) once more than lruSize values are used.
	lruSize int
	// floatLevel: the limiter keeps its level in floating point, so even an
	// instant burst may come out one short (Envoy's AtomicTokenBucket).
	floatLevel bool
	// tol: how far the limiter's own arithmetic may be from the exact level;
	// a level that close to the threshold is "either".
	tol float64
	// exact: every level the lower bound computes is an integer held
	// exactly (integer C, theta = cUp = cLo = 1, a timer refill of known
	// phase and integer batch: Envoy up to 1.30 with its timer start
	// known), so "the least D above y" is floor(y)+1, not the
	// rounding-tolerant ceil(y - slack), which is one short when y is an
	// integer.
	exact bool
	// levelDrift > 0: the limiter keeps its level as a float token count
	// (Spec.ExactLevel) whose every refill or take may round it by at most
	// levelDrift; a bucket of n requests is then within (n+1)*levelDrift of
	// the exact level, its tol.
	levelDrift float64
	// gcra, when set, words findings in GCRA terms (the bucket is a GCRA's
	// level, KindGCRA).
	gcra *gcraTerms
}

func (p *tbParams) countsAll() bool { return false }

func (p *tbParams) newPrim(c *primCtx) prim {
	if p.levelDrift > 0 {
		q := *p
		q.tol = math.Max(levelTol, float64(len(c.lo)+1)*p.levelDrift)
		p = &q
	}
	t := &tbPrim{p: p, c: c}
	t.init()
	return t
}

type tbPrim struct {
	p *tbParams
	c *primCtx

	// loS is the sorted lo values, which only the must-reject pass
	// reads: built at its first use (sortedLo), released with ubT. hiS,
	// the sorted hi values, is built at the must-admit pass's first use
	// (sortedHi) and released with lbT; the bounds build it again.
	loS, hiS []int64
	// ubT is the must-reject pass's tree, lbT the must-admit pass's; each
	// is built at its first use (ub, lb) and ubT released when its pass
	// is over (rejectPassDone): the two never live together.
	ubT, lbT   *minTree
	rejectDone bool
	// spareT and spareS are a finished pass's tree and sorted times,
	// kept only as memory for the next step's: the must-reject pass's
	// (rejectPassDone) for the must-admit pass's tree and sorted hi
	// (same sizes), the must-admit pass's (sweepDoneSpare) for the
	// findings' tree and sorted lo, the findings' sorted lo for the
	// bounds'; the bounds drop them
	spareT *minTree
	spareS []int64
	// uFen counts the under-admitted, insFen the inserted possible
	// charges, by hi position: each at the last position of its hi value
	// in hiS (every query sums from a value's first position to the
	// end, so where among equal values it counts does not matter); each
	// is made at its first count (nil: none yet), so the must-reject pass
	// holds neither.
	uFen     fenwick
	insFen   fenwick
	uCount   int
	insCount int
	t0       int64
	// cover: times at which the bucket cannot have been recreated full (nil:
	// it never is); noUpper: it may be recreated at any time.
	cover   []coverIv
	noUpper bool
	// the sweeps' searches, each a run near its last answer (cursor):
	// activate's and mustReject's in sorted lo, insert's and markUnder's,
	// mustAdmit's upper and lower bounds in sorted hi
	curAct, curTo, curIns, curA, curAL cursor
	// needed is fmtLevel(theta), made at why's first call
	needed string
}

func (t *tbPrim) init() {
	c := t.c
	n := len(c.lo)
	// ubT, lbT, loS and hiS are built at their pass's first use
	if n > 0 {
		t.t0 = slices.Min(c.lo) - 1
	}
	switch {
	case t.p.lruSize > 0 && c.siblings > t.p.lruSize:
		t.noUpper = true
	case t.p.resetIdle > 0 && c.siblings > 1:
		t.cover = resetCover(c.lo, c.hi, c.isAdmitted, t.p.resetIdle)
	}
}

// sortedLo returns loS, building it at its first use.
func (t *tbPrim) sortedLo() []int64 {
	if t.loS == nil && len(t.c.lo) > 0 {
		t.loS = slices.Clone(t.c.lo)
		slices.Sort(t.loS)
	}
	return t.loS
}

// sortedHi returns hiS, building it at its first use.
func (t *tbPrim) sortedHi() []int64 {
	if t.hiS == nil && len(t.c.hi) > 0 {
		if cap(t.spareS) >= len(t.c.hi) {
			t.hiS = append(t.spareS[:0], t.c.hi...)
		} else {
			t.hiS = slices.Clone(t.c.hi)
		}
		t.spareS = nil
		slices.Sort(t.hiS)
	}
	return t.hiS
}

// int64Buf returns buf[:n] when buf holds n values, else a new slice of
// n (its values are the caller's to set).
func int64Buf(buf []int64, n int) []int64 {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]int64, n)
}

// coverIv is a half-open time interval [a, b).
type coverIv struct{ a, b int64 }

// resetCover returns the merged times at which an idle key cannot have been
// freed: a key whose last admission lies idle or more before x may be freed
// at x, so x is covered when some admission surely lies in (x-idle, x],
// that is x in [hi_k, lo_k+idle).
func resetCover(lo, hi []int64, admitted func(int) bool, idle int64) []coverIv {
	var cover []coverIv
	for k := range lo {
		if admitted(k) && hi[k] < lo[k]+idle {
			cover = append(cover, coverIv{hi[k], lo[k] + idle})
		}
	}
	slices.SortFunc(cover, func(x, y coverIv) int {
		switch {
		case x.a < y.a:
			return -1
		case x.a > y.a:
			return 1
		}
		return 0
	})
	merged := []coverIv{}
	for _, v := range cover {
		if m := len(merged); m > 0 && v.a <= merged[m-1].b {
			merged[m-1].b = max(merged[m-1].b, v.b)
			continue
		}
		merged = append(merged, v)
	}
	return merged
}

// resetFloor returns the time after which every admission counted toward
// the level at y is safe from a reset: a reset frees a key idle resetIdle or
// more, so it can only undo admissions at least resetIdle before the latest
// reset point <= y. math.MinInt64 when the bucket is never recreated.
func (t *tbPrim) resetFloor(y int64) int64 {
	if t.cover == nil {
		return math.MinInt64
	}
	return t.latestReset(y) - t.p.resetIdle
}

// latestReset returns the latest time <= y at which the bucket may have
// been recreated full (cover != nil).
func (t *tbPrim) latestReset(y int64) int64 {
	lo, hi := 0, len(t.cover)
	for lo < hi { // first interval with a > y
		m := int(uint(lo+hi) >> 1)
		if t.cover[m].a <= y {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo > 0 && y < t.cover[lo-1].b {
		return t.cover[lo-1].a - 1
	}
	return y
}

// negCumTree is a min tree over -cumBefore(v) for the sorted times vs.
func (t *tbPrim) negCumTree(vs []int64) *minTree {
	return newMinTreeOf(len(vs), func(q int) float64 { return -t.p.refill.cumBefore(vs[q]) })
}

// negCumTreeIn is negCumTree in the arrays of old (newMinTreeIn).
func (t *tbPrim) negCumTreeIn(old *minTree, vs []int64) *minTree {
	return newMinTreeIn(old, len(vs), func(q int) float64 { return -t.p.refill.cumBefore(vs[q]) })
}

// floorTo is tr.floorTo(to, ...) for a negCumTree tr of the sorted times
// vs (to >= 1): -cumBefore(vs[to-1]), the initial value of position to-1,
// is at most every earlier position's, as vs is sorted and cumBefore
// rises with its time (a product or a multiple of a positive float by
// a rising integer, which rounding keeps rising).
func (t *tbPrim) floorTo(tr *minTree, vs []int64, to int, want float64) float64 {
	return tr.floorTo(to, -t.p.refill.cumBefore(vs[to-1]), want)
}

// ub is the must-reject pass's tree (activate, mustReject), built at its
// first use.
func (t *tbPrim) ub() *minTree {
	if t.ubT == nil {
		if t.rejectDone {
			panic("model: token bucket must-reject pass after its end") // a sweep's passes are in order
		}
		t.ubT = t.negCumTree(t.sortedLo())
	}
	return t.ubT
}

// lb is the must-admit pass's tree (insert, markUnder, mustAdmit), built at
// its first use.
func (t *tbPrim) lb() *minTree {
	if t.lbT == nil {
		hiS := t.sortedHi()
		t.lbT, t.spareT = t.negCumTreeIn(t.spareT, hiS), nil
	}
	return t.lbT
}

// rejectPassDone ends the must-reject pass: the sweep calls it between its
// passes. Its tree and sorted lo are kept only as the memory of the
// must-admit pass's (spareT, spareS).
func (t *tbPrim) rejectPassDone() {
	t.spareT, t.spareS = t.ubT, t.loS
	t.ubT, t.loS, t.rejectDone = nil, nil, true
}

// sweepDone releases the must-admit pass's tree, counts and sorted hi:
// the sweep or Check calls it after the verdicts, before the bounds and
// findings (which read neither; the bounds sort hi again, so that a plan
// swept a bucket at a time holds no bucket's sorted hi in between).
func (t *tbPrim) sweepDone() {
	t.lbT, t.uFen, t.insFen, t.hiS, t.spareT, t.spareS = nil, nil, nil, nil, nil, nil
}

// sweepDoneSpare is sweepDone for a primitive whose findings and bounds
// come next (a plan swept a bucket at a time): its tree and sorted hi are
// kept as their memory (spareT, spareS), which the bounds drop.
func (t *tbPrim) sweepDoneSpare() {
	lbT, hiS := t.lbT, t.hiS
	t.sweepDone()
	t.spareT, t.spareS = lbT, hiS
}

func (t *tbPrim) activate(l int32) {
	t.ub().add(0, t.curAct.upper(t.sortedLo(), t.c.lo[l]), -t.p.cUp)
}

// mustReject: an upper bound of the level when l arrives, from the
// admissions surely before it (activated) and the most refill up to hi[l]:
// level <= C + F([lo_q, hi_l]) - cUp*#{activated: lo >= lo_q} for every
// candidate lo_q <= lo_l after the last possible reset. The bound it
// returns is that minimum's only when it rejects (the caller reports it
// then); otherwise it may be C.
func (t *tbPrim) mustReject(l int32) (bool, float64) {
	p := t.p
	if t.noUpper {
		return false, p.C
	}
	from := 0
	if t.cover != nil {
		from = upperBound(t.sortedLo(), t.resetFloor(t.c.hi[l]))
	}
	to := t.curTo.upper(t.sortedLo(), t.c.lo[l])
	ub := p.C
	if from < to {
		h := p.refill.cum(t.c.hi[l])
		thr := p.theta - p.slack(h)
		tr := t.ub()
		if p.C >= thr && (p.C+h+p.refill.upSlack+tr.floor() >= thr ||
			p.C+h+p.refill.upSlack+t.floorTo(tr, t.sortedLo(), to, thr-p.C-h-p.refill.upSlack) >= thr) {
			// not even the tree's floor, of all values or of the prefix
			// up to to, rejects (see floor, floorTo): nor does the
			// minimum over [from, to); the bound is not reported
			return false, ub
		}
		m := tr.min(from, to)
		ub = fmin(ub, p.C+h+p.refill.upSlack+m)
		return ub < thr, ub
	}
	return ub < p.theta-p.tol, ub
}

// insert counts l against every candidate hi_q <= hi[l].
func (t *tbPrim) insert(l int32) {
	a := t.curIns.upper(t.sortedHi(), t.c.hi[l])
	t.lb().add(0, a, -t.p.cLo)
	if t.insFen == nil {
		t.insFen = newFenwick(len(t.c.hi))
	}
	t.insFen.add(a-1, 1)
	t.insCount++
}

func (t *tbPrim) markUnder(l int32) {
	a := t.curIns.upper(t.sortedHi(), t.c.hi[l])
	t.lb().add(0, a, -t.p.cLo)
	if t.uFen == nil {
		t.uFen = newFenwick(len(t.c.hi))
	}
	t.uFen.add(a-1, 1)
	t.uCount++
}

// mustAdmit: a lower bound of the level when l arrives, counting every
// possible charge whose interval may precede it and the least refill before
// lo[l]: level >= C + F([hi_q, lo_l)) - cLo*#{possible: hi >= hi_q} for every
// candidate hi_q <= lo_l, and >= C - cLo*#{possible: hi > lo_l}. The bound
// it returns is the level's only when it admits (the caller reports it
// then).
func (t *tbPrim) mustAdmit(l int32, self bool) (bool, float64) {
	p := t.p
	lo := t.c.lo[l]
	hiS := t.sortedHi()
	a := t.curA.upper(hiS, lo)
	n := len(hiS)
	uGE := 0
	if t.uCount > 0 {
		ge := 0 // lowerBound(hiS, lo)
		if lo != math.MinInt64 {
			ge = t.curAL.upper(hiS, lo-1)
		}
		uGE = t.uFen.rangeSum(ge, n)
	}
	// l's own charge, if inserted, covers every candidate hi_q <= hi[l]:
	// all of [0, a), and a itself when hi_a <= hi[l].
	selfA := 0.0
	if self {
		selfA = p.cLo
	}
	// lb with the refill (float, within eps of theta is "either") and lbX
	// without (integer arithmetic, exact unless the limiter keeps a float
	// level)
	lb, lbX := math.Inf(1), p.C
	h := p.refill.cumBefore(lo)
	if a > 0 {
		tr := t.lb()
		if c, ok := tr.ceil(a); ok && p.C+h-p.refill.loSlack+(c+p.cLo*float64(uGE)+selfA) < p.theta+p.slack(h) {
			// not even the ceiling of the minimum over [0, a) (see
			// ceil) admits for sure: nor does the minimum; the bound is
			// not reported
			return false, lb
		}
		m := tr.min(0, a) + p.cLo*float64(uGE) + selfA
		lb = p.C + h - p.refill.loSlack + m
	}
	if a < n {
		// s in [lo, arrival]: no refill counted, every possible charge
		// with hi > lo may come first (under-admitted ones never: they
		// count only for requests surely after them)
		cnt := 0
		if t.insFen != nil {
			cnt = t.insFen.rangeSum(a, n)
		}
		if self && t.c.hi[l] > lo {
			cnt--
		}
		lbX = p.C - p.cLo*float64(cnt)
	}
	if t.c.initUnknown {
		cnt := t.insCount + t.uCount - uGE
		if self {
			cnt--
		}
		lb = fmin(lb, h-p.refill.cum(t.t0)-p.refill.loSlack-p.cLo*float64(cnt))
	}
	tolX := 0.0
	if p.floatLevel {
		tolX = p.tol
	}
	ok := lb >= p.theta+p.slack(h) && lbX >= p.theta+tolX
	return ok, fmin(lb, lbX)
}

func (t *tbPrim) why(reject bool, v float64) string {
	p := t.p
	if p.gcra != nil {
		return p.gcra.why(p.label, reject, v)
	}
	// a tight run has a why for every over-admission (hundreds of
	// thousands): appended, the needed level formatted once
	if t.needed == "" {
		t.needed = p.fmtLevel(p.theta)
	}
	b := make([]byte, 0, len(p.label)+len(t.needed)+64)
	b = append(b, p.label...)
	if reject {
		b = append(b, ": at most "...)
	} else {
		b = append(b, ": at least "...)
	}
	b = p.appendLevel(b, v)
	b = append(b, " when it arrived, "...)
	b = append(b, t.needed...)
	b = append(b, " needed"...)
	return string(b)
}

func (p *tbParams) fmtLevel(v float64) string { return string(p.appendLevel(nil, v)) }

// appendLevel appends level v as the findings word it: "%.3f requests of
// room" (nginx's milli-requests) or "%.3f tokens", a negative level 0.
func (p *tbParams) appendLevel(b []byte, v float64) []byte {
	if p.theta == 1000 {
		return append(appendFixed3(b, v/1000), " requests of room"...)
	}
	if v < 0 {
		v = 0
	}
	return append(appendFixed3(b, v), " tokens"...)
}

// appendFixed3 appends v as fmt's %.3f does: strconv's 'f' with 3 digits,
// which is fmt's for every finite v; fmt writes the infinities and NaN
// ("Inf", not strconv's "+Inf").
func appendFixed3(b []byte, v float64) []byte {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Appendf(b, "%.3f", v)
	}
	return strconv.AppendFloat(b, v, 'f', 3, 64)
}

// findings checks that the admissions surely inside any window [a, b] fit:
// at most (C - theta + F)/cUp + 1 of them. It reports the worst window and
// names the excess admissions (those with the latest possible arrivals).
func (t *tbPrim) findings() []WindowFinding {
	p, c := t.p, t.c
	// the sweep's tree and sorted hi (sweepDoneSpare) hold the tree and
	// sorted lo built here; the sorted lo is kept for the bounds'
	spareT, spareS := t.spareT, t.spareS
	t.spareT, t.spareS = nil, nil
	var loS []int64
	defer func() {
		if loS != nil {
			spareS = loS
		}
		t.spareS = spareS
	}()
	if t.noUpper {
		return nil
	}
	n := 0
	for l := range c.lo {
		if c.isAdmittedSure(l) {
			n++
		}
	}
	adm := make([]int32, 0, n) // once, at its size
	for l := range c.lo {
		if c.isAdmittedSure(l) {
			adm = append(adm, int32(l))
		}
	}
	if len(adm) == 0 {
		return nil
	}
	loS = int64Buf(spareS, len(adm))
	for i, l := range adm {
		loS[i] = c.lo[l]
	}
	slices.Sort(loS)
	// max over a of cUp*cnt(a) - cumBefore(a): a min tree of the negation
	tr := t.negCumTreeIn(spareT, loS)
	slices.SortFunc(adm, func(x, y int32) int {
		switch {
		case c.hi[x] < c.hi[y]:
			return -1
		case c.hi[x] > c.hi[y]:
			return 1
		}
		return 0
	})
	bestExcess, bestB, windows := 0.0, int64(0), 0
	var curAdd, curTo cursor // by hi, so near their last answers
	for i := 0; i < len(adm); {
		b := c.hi[adm[i]]
		for ; i < len(adm) && c.hi[adm[i]] == b; i++ {
			tr.add(0, curAdd.upper(loS, c.lo[adm[i]]), -p.cUp)
		}
		from := 0
		if t.cover != nil {
			from = upperBound(loS, t.resetFloor(b))
		}
		to := curTo.upper(loS, b)
		if from >= to {
			continue
		}
		if -tr.floor()-p.refill.cum(b)-p.refill.upSlack-(p.C-p.theta+p.cUp) <= p.slack(p.refill.cum(b)) {
			continue // not a window even at the tree's floor (see floor)
		}
		if -t.floorTo(tr, loS, to, -p.refill.cum(b)-p.refill.upSlack-(p.C-p.theta+p.cUp))-p.refill.cum(b)-p.refill.upSlack-(p.C-p.theta+p.cUp) <= p.slack(p.refill.cum(b)) {
			continue // nor at its floor of the prefix up to to (floorTo)
		}
		worst := -tr.min(from, to) - p.refill.cum(b) - p.refill.upSlack // cUp*cnt - F
		if ex := worst - (p.C - p.theta + p.cUp); ex > p.slack(p.refill.cum(b)) {
			windows++
			if ex > bestExcess {
				bestExcess, bestB = ex, b
			}
		}
	}
	if windows == 0 {
		return nil
	}
	// find the window start for bestB and the admissions inside it
	var in []int32
	for _, l := range adm {
		if c.hi[l] <= bestB {
			in = append(in, l)
		}
	}
	slices.SortFunc(in, func(x, y int32) int { // by lo, descending
		switch {
		case c.lo[x] > c.lo[y]:
			return -1
		case c.lo[x] < c.lo[y]:
			return 1
		}
		return 0
	})
	from := t.resetFloor(bestB)
	bestA, bestCnt, bestVal := int64(0), 0, math.Inf(-1)
	for k := 0; k < len(in); {
		a := c.lo[in[k]]
		for k < len(in) && c.lo[in[k]] == a {
			k++
		}
		if a <= from {
			break
		}
		v := p.cUp*float64(k) - p.refill.maxOver(a, bestB)
		if v > bestVal {
			bestA, bestCnt, bestVal = a, k, v
		}
	}
	maxN := int(math.Floor((p.C-p.theta+p.refill.maxOver(bestA, bestB))/p.cUp+p.slack(p.refill.cum(bestB)))) + 1
	if maxN < 0 {
		maxN = 0
	}
	inside := in[:bestCnt]
	if !c.noIDs { // the order only names the excess
		slices.SortFunc(inside, func(x, y int32) int { // latest possible arrival first
			switch {
			case c.hi[x] > c.hi[y]:
				return -1
			case c.hi[x] < c.hi[y]:
				return 1
			}
			return 0
		})
	}
	excess := bestCnt - maxN
	if excess <= 0 {
		return nil
	}
	f := WindowFinding{
		Bucket: c.name, From: bestA * p.unit, To: bestB * p.unit, TooMany: true,
		Admitted: bestCnt, Limit: maxN, Windows: windows,
		IDs: c.ids(inside[:excess]),
	}
	f.Why = fmt.Sprintf("%s: %d admissions surely inside %s, at most %d fit (capacity plus refill)",
		p.label, bestCnt, fmtSpan(f.From, f.To), maxN)
	if p.gcra != nil {
		f.Why = fmt.Sprintf("%s: %d admissions surely inside %s, at most %d fit (burst plus the span's emission intervals)",
			p.label, bestCnt, fmtSpan(f.From, f.To), maxN)
	}
	return []WindowFinding{f}
}

// bounds returns the fewest and the most admissions of the bucket over all
// schedules consistent with the offered intervals (sound bounds, not
// necessarily attained). The lower bound holds only when every request of
// the bucket touches it alone (single); otherwise it is left to the caller.
func (t *tbPrim) bounds(single bool) (int, int) {
	c := t.c
	n := len(c.lo)
	spareS := t.spareS // the findings' sorted lo (sweepDoneSpare)
	t.spareT, t.spareS = nil, nil
	if n == 0 {
		return 0, 0
	}
	loS := append(int64Buf(spareS, 0), c.lo...)
	slices.Sort(loS)
	// sorted here, not kept in t.hiS: a plan judged a bucket at a time
	// holds no judged bucket's sorted hi while it sweeps the next
	hiS := t.hiS
	if hiS == nil {
		hiS = slices.Clone(c.hi)
		slices.Sort(hiS)
	}
	// time points: every lo-1, lo and hi, merged from the sorted lo and
	// hi as the DPs walk them; an array of them (24 bytes an event) only
	// when upperDP looks points up by rank (resets bound its sources)
	var pts []int64
	if t.cover != nil {
		pts = slices.Collect(points(loS, hiS))
	}
	upper := t.upperDP(pts, loS, hiS)
	lower := 0
	if single {
		lower = t.lowerDP(loS, hiS)
	}
	if lower > upper {
		lower = upper
	}
	return lower, upper
}

// points yields, in increasing order and once each, the time points of
// the bounds' DPs: every lo-1, lo and hi, from the sorted lo (loS) and hi
// (hiS).
func points(loS, hiS []int64) iter.Seq[int64] {
	return func(yield func(int64) bool) {
		a, b, h := 0, 0, 0 // next lo-1, lo and hi
		for a < len(loS) || b < len(loS) || h < len(hiS) {
			y := int64(math.MaxInt64)
			if a < len(loS) {
				y = loS[a] - 1
			}
			if b < len(loS) {
				y = min(y, loS[b])
			}
			if h < len(hiS) {
				y = min(y, hiS[h])
			}
			for a < len(loS) && loS[a]-1 == y {
				a++
			}
			for b < len(loS) && loS[b] == y {
				b++
			}
			for h < len(hiS) && hiS[h] == y {
				h++
			}
			// every head now lies after y: the next point is larger
			if !yield(y) {
				return
			}
		}
	}
}

// upperDP: D(y) <= min(#{lo <= y}, D(s) + #{lo <= y, hi > s},
// D(s) + floor((C - theta + F(s, y])/cUp) + 1) over earlier points s after
// the last possible reset.
//
// loAll and hiAll are the sorted lo and hi; pts the points (points), given
// only when resets bound s (cover), which looks them up by rank.
func (t *tbPrim) upperDP(pts, loAll, hiAll []int64) int {
	p := t.p
	m := len(pts)
	var capTerm *minTree // cUp*U(s) - cum(s) per point, when resets bound s
	if t.cover != nil {
		unset := make([]float64, m)
		for i := range unset {
			unset[i] = math.Inf(1)
		}
		capTerm = newMinTree(unset)
	}
	bestCap := math.Inf(1)
	bestArr := math.Inf(1) // min over s of U(s) - #{hi <= s}
	u := 0.0
	nLo, nHi := 0, 0
	walk := points(loAll, hiAll)
	if pts != nil {
		walk = slices.Values(pts)
	}
	i := -1
	for y := range walk {
		i++
		for nLo < len(loAll) && loAll[nLo] <= y {
			nLo++
		}
		for nHi < len(hiAll) && hiAll[nHi] <= y {
			nHi++
		}
		arr := float64(nLo)
		u = fmin(arr, arr+bestArr)
		if !t.noUpper && i > 0 {
			v := bestCap
			if capTerm != nil {
				v = capTerm.min(upperBound(pts, t.resetFloor(y)), i)
			}
			if !math.IsInf(v, 1) {
				h := p.refill.cum(y)
				u = fmin(u, math.Floor((v+p.C-p.theta+h+p.refill.upSlack)/p.cUp+p.slack(h))+1)
			}
		}
		if u < 0 {
			u = 0
		}
		if capTerm != nil {
			capTerm.set(i, p.cUp*u-p.refill.cum(y))
		}
		bestCap = fmin(bestCap, p.cUp*u-p.refill.cum(y))
		bestArr = fmin(bestArr, u-float64(nHi))
	}
	return int(u)
}

// lowerDP: a rejection at tau means some s < tau with
// D(s, tau) > (L_s - theta + F(s, tau))/c, L_s = C (or the initial level at
// the start); after the last rejection every request is admitted. Where the
// refill enters, a count within eps of an integer is taken as the limiter's
// own rounding may have decided it (ceil(y - eps) instead of floor(y) + 1);
// with no refill (s just before tau) the integer arithmetic is exact unless
// the limiter keeps a float level (Envoy's AtomicTokenBucket).
//
// loS and hiS are the sorted lo and hi of every request.
func (t *tbPrim) lowerDP(loS, hiS []int64) int {
	p, c := t.p, t.c
	n := 0
	for l := range c.lo {
		if c.isKnown(l) {
			n++
		}
	}
	knownLo, knownHi := loS, hiS // every request's outcome known: no copy
	if n < len(c.lo) {
		knownLo, knownHi = make([]int64, 0, n), make([]int64, 0, n) // once, at their size
		for l := range c.lo {
			if c.isKnown(l) {
				knownLo = append(knownLo, c.lo[l])
				knownHi = append(knownHi, c.hi[l])
			}
		}
		slices.Sort(knownLo)
		slices.Sort(knownHi)
	}
	l0 := p.C
	if c.initUnknown {
		l0 = 0
	}
	t0 := loS[0] - 2 // the first point (points) minus 1
	// least integer D with D > y, rounding-tolerant (mag: refill magnitude)
	more := func(y, mag float64) float64 {
		if p.exact {
			return math.Floor(y) + 1
		}
		return math.Ceil(y - p.slack(mag)/p.cLo)
	}
	step := math.Floor((p.C-p.theta)/p.cUp) + 1 // D(y-, y) > (C-theta)/c exactly
	if p.floatLevel {
		step = more((p.C-p.theta)/p.cUp, 0)
	}
	bestM := math.Inf(1) // min over s of cLo*LB(s) + C - theta - cum(s)
	bestV := math.Inf(1) // min over tau of V(tau) - Klo(tau)
	prev := 0.0
	nLo, nHi := 0, 0
	for y := range points(loS, hiS) {
		for nLo < len(knownLo) && knownLo[nLo] <= y {
			nLo++
		}
		for nHi < len(knownHi) && knownHi[nHi] <= y {
			nHi++
		}
		// R(y): a rejection at y
		r := prev + step // s = y-: just before the requests at y
		h := p.refill.cumBefore(y)
		r = fmin(r, more((l0-p.theta+h-p.refill.cum(t0)-p.refill.loSlack)/p.cLo, h))
		r = fmin(r, more((bestM+h-p.refill.loSlack)/p.cLo, h))
		klo, khi := float64(nLo), float64(nHi)
		v := fmin(bestV, r-klo)
		lb := fmin(khi, v+khi)
		lb = math.Max(lb, prev)
		if lb < 0 {
			lb = 0
		}
		bestV = fmin(v, fmin(r, lb+step)-klo)
		bestM = fmin(bestM, p.cLo*prev+p.C-p.theta-p.refill.cumBefore(y))
		bestM = fmin(bestM, p.cLo*lb+p.C-p.theta-p.refill.cum(y))
		prev = lb
	}
	return int(prev)
}
