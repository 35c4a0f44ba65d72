package model

import (
	"math"
	"slices"
)

// minTree is a segment tree over n float64 values with range add and range
// minimum in O(log n), non-recursive (bottom-up with pending adds on inner
// nodes, so a node's value is the minimum of its children plus its own
// pending add).
type minTree struct {
	n, h int
	t    []float64 // 2n nodes; t[n+i] is value i
	d    []float64 // pending adds of inner nodes
	// adds counts the range adds, and mag bounds the magnitude of every
	// value, node and partial sum the tree has held (the largest finite
	// initial value's plus the sum of every add's |v|): together they
	// bound the rounding between a node and its children (floor).
	adds int
	mag  float64
	// floor's minimum of all values (low, valid while lowOK), the adds
	// since it was taken and the sum of their negative v (lowDrop).
	low, lowDrop float64
	lowAdds      int
	lowOK        bool
	// The last prefix minimum min(0, preR) returned (pre), valid while
	// preOK: no add since raised a value (ceil); preDrop is the sum of the
	// adds since that cover all of [0, preR) (each lowers every value of
	// it, so its minimum, by its |v|).
	pre, preDrop float64
	preR         int
	preOK        bool
	// The prefix floor (floorTo): the last minimum of a prefix [0, pfR)
	// that min returned (pfMin, valid while pfOK) and the negative adds
	// since (pfDrop); the value at position pfR less its initial value
	// (val) when taken (tail, valid while tailOK) and the negative adds
	// since (tailDrop). general: some add so far was not a prefix add of
	// v <= 0, or some value was set, so that a later position need not
	// have taken every add an earlier one did.
	val             func(int) float64
	pfMin, pfDrop   float64
	pfR             int
	pfOK            bool
	tail, tailDrop  float64
	tailOK, general bool // pend holds prefix adds [0, pend[k]) of pendV not yet applied to the
	// nodes, in their order: a sweep that decides by ceil alone (a
	// must-admit pass where every request may be rejected) then never
	// walks the tree for them. Every read of a node applies them first
	// (flush), in the order add took them, so each node holds the bits it
	// would hold had each been applied at once; the counts above (adds,
	// mag, low, pre, pf, tail) are kept at add, as before.
	pend  []int32
	pendV float64
}

func newMinTree(vals []float64) *minTree {
	return newMinTreeOf(len(vals), func(i int) float64 { return vals[i] })
}

// newMinTreeOf is newMinTree of the n values val(0..n-1), written straight
// into the tree's leaves (no array of them beside it).
func newMinTreeOf(nv int, val func(int) float64) *minTree {
	return newMinTreeIn(nil, nv, val)
}

// newMinTreeIn is newMinTreeOf in the arrays of old (a tree done with),
// when they are large enough: a pass's tree built in the memory of the
// previous pass's, rather than beside it until a collection frees it.
// old may be nil; it must not be used after.
func newMinTreeIn(old *minTree, nv int, val func(int) float64) *minTree {
	n := max(nv, 1)
	h := 0
	for 1<<h < n {
		h++
	}
	m := &minTree{n: n, h: h, val: val}
	if old != nil {
		m.pend = old.pend[:0] // old's adds not applied are void with it
	}
	if old != nil && cap(old.t) >= 2*n && cap(old.d) >= n {
		m.t, m.d = old.t[:2*n], old.d[:n]
		m.t[0] = 0 // as make leaves it
		clear(m.d)
	} else {
		m.t, m.d = make([]float64, 2*n), make([]float64, n)
	}
	for i := range m.t[n:] {
		m.t[n+i] = math.Inf(1)
	}
	for i := 0; i < nv; i++ {
		v := val(i)
		m.t[n+i] = v
		if a := math.Abs(v); a > m.mag && !math.IsInf(v, 0) {
			m.mag = a
		}
	}
	for i := n - 1; i > 0; i-- {
		m.t[i] = fmin(m.t[2*i], m.t[2*i+1])
	}
	return m
}

// build recomputes the ancestors of node p from their children.
func (m *minTree) build(p int) {
	t, d := m.t, m.d
	for p > 1 {
		p >>= 1
		t[p] = fmin(t[2*p], t[2*p+1]) + d[p]
	}
}

// add adds v to values [l, r).
func (m *minTree) add(l, r int, v float64) {
	if l >= r {
		return
	}
	m.adds++
	m.mag += math.Abs(v)
	m.lowAdds++
	if v < 0 {
		m.lowDrop += v
		m.pfDrop += v
		m.tailDrop += v
		if l == 0 && r >= m.preR {
			m.preDrop += v
		}
	} else if v > 0 {
		m.preOK = false
		m.general = true
	}
	if l > 0 {
		m.general = true
	}
	if l == 0 && r <= math.MaxInt32 {
		if len(m.pend) > 0 && math.Float64bits(v) != math.Float64bits(m.pendV) {
			m.flush() // pend holds adds of one value
		}
		m.pend = append(m.pend, int32(r))
		m.pendV = v
		return
	}
	m.flush()
	m.apply(l, r, v)
}

// flush applies the pending prefix adds (pend), in order.
func (m *minTree) flush() {
	for _, r := range m.pend {
		m.apply(0, int(r), m.pendV)
	}
	m.pend = m.pend[:0]
}

// apply adds v to the nodes of values [l, r), l < r (add, flush).
func (m *minTree) apply(l, r int, v float64) {
	n, t, d := m.n, m.t, m.d
	l += n
	r += n
	l0, r0 := l, r
	for ; l < r; l, r = l>>1, r>>1 {
		if l&1 == 1 {
			t[l] += v // apply
			if l < n {
				d[l] += v
			}
			l++
		}
		// r-1 takes v when r is odd, else -0, which adds nothing to any
		// value (x + -0 has x's bits, +0 and -0 included): no branch
		// on r's bit, which a prefix's end makes unpredictable
		w := math.Float64frombits(negZero ^ (math.Float64bits(v)^negZero)&-uint64(r&1))
		t[r-1] += w // apply
		if r-1 < n {
			d[r-1] += w
		}
	}
	// For a prefix (l == 0) every changed node's ancestors lie on r0-1's
	// path (a right edge's parent is its path's next node; a left edge's,
	// in a tree whose size is not a power of two, a node of that path
	// higher up: TestMinTreeEveryPrefix), so that one rebuild is enough.
	if l0 != m.n {
		m.build(l0)
	}
	m.build(r0 - 1)
}

// min returns the minimum of values [l, r) (+Inf when empty). It writes
// nothing: a node's true minimum is its t plus the pending adds of its
// ancestors (p>>1, p>>2, ...), and every node the loop has taken on the
// left hangs off node l-1 of the level it has climbed to (on the right,
// off node r), so one pending add per level and side is added to that
// side's minimum, then those of the last such node's ancestors. (A push
// of the boundary paths' pending adds, the textbook form, writes two
// children per level on every query.)
func (m *minTree) min(l, r int) float64 {
	if l >= r {
		return math.Inf(1)
	}
	if len(m.pend) > 0 {
		m.flush()
	}
	n, t, d := m.n, m.t, m.d
	l += n
	r += n
	l0, r0 := l, r
	resL, resR := math.Inf(1), math.Inf(1)
	for l < r {
		if l&1 == 1 {
			resL = fmin(resL, t[l])
			l++
		}
		// t[r-1] when r is odd, else +Inf, which fmin leaves resR for:
		// no branch on r's bit (see add), nor on the comparison (fminFast)
		x := math.Float64frombits(posInf ^ (math.Float64bits(t[r-1])^posInf)&-uint64(r&1))
		resR = fminFast(resR, x)
		l >>= 1
		r >>= 1
		resL += d[l-1] // d[0] is never added to
		if r < n {
			resR += d[r]
		}
	}
	for p := (l - 1) >> 1; p > 0; p >>= 1 {
		resL += d[p]
	}
	for p := r >> 1; p > 0; p >>= 1 {
		resR += d[p]
	}
	res := fmin(resL, resR)
	if l0 == n {
		m.pre, m.preR, m.preOK, m.preDrop = res, r0-m.n, true, 0
		m.pfMin, m.pfDrop, m.pfR, m.pfOK, m.tailOK = res, 0, r0-m.n, true, false
	}
	return res
}

// floor returns a value at most any min(l, r) would return now: the
// minimum of all values when it was last taken (at most every floorEvery
// adds, when floor is called), plus every negative add since (an add lowers
// no value by more than its |v|), less a bound of the rounding by which two
// minima summed along different paths may differ (every add rounds a
// node's value and pending add once, each level a sum once; an ulp of mag
// each). A check that passes with floor in place of a range's minimum
// passes with the minimum (rounding is monotone): the token bucket's
// sweeps skip the walk of a range so while they are far from the limit.
func (m *minTree) floor() float64 {
	if !m.lowOK || m.lowAdds >= floorEvery {
		// the minimum of all values is no prefix floor worth keeping
		// (floorTo): the last prefix's stays
		pf, pfMin, pfDrop, pfR, pfOK := m.tail, m.pfMin, m.pfDrop, m.pfR, m.pfOK
		tailDrop, tailOK := m.tailDrop, m.tailOK
		m.low, m.lowAdds, m.lowDrop, m.lowOK = m.min(0, m.n), 0, 0, true
		m.tail, m.pfMin, m.pfDrop, m.pfR, m.pfOK = pf, pfMin, pfDrop, pfR, pfOK
		m.tailDrop, m.tailOK = tailDrop, tailOK
	}
	return m.low + m.lowDrop - m.slop()
}

// floorTo returns a value at most any min(l, r') with r' <= r would return
// now, or -Inf: floor's bound, but of a prefix rather than of all values,
// which a sweep in time order needs once the values ahead of it (less
// refill so far) lie lower than any it asks for. initLow is at most the
// initial value (val) of each of the positions [0, r). Positions before
// the last prefix minimum's end pfR hold at least that minimum plus the
// negative adds since (floor's argument); when every add so far was a
// prefix add of v <= 0 (not general), a position q >= pfR has taken at
// most the adds that pfR has (each that reached q reached pfR), so it
// holds at least its initial value plus pfR's adds: pfR's value less its
// initial value when first needed (at; tail), plus the negative adds
// since. Each sum is within slop of the exact one, so two slops are
// taken off. The tail is looked up (O(log n)) only when the prefix's part
// is at least want, the bound the caller needs, so a sweep near the limit
// pays nothing for it.
func (m *minTree) floorTo(r int, initLow, want float64) float64 {
	if !m.pfOK {
		return math.Inf(-1)
	}
	head := m.pfMin + m.pfDrop - m.slop()
	if r <= m.pfR || head < want {
		return head
	}
	if !m.tailOK {
		if m.general || m.val == nil || m.pfR >= m.n {
			return math.Inf(-1)
		}
		m.tail, m.tailDrop, m.tailOK = m.at(m.pfR)-m.val(m.pfR), 0, true
	}
	return fmin(head, initLow+m.tail+m.tailDrop-2*m.slop())
}

// slop bounds the rounding by which two minima of the tree, summed along
// different paths or at different times, may differ from what exact sums
// would give (see floor).
func (m *minTree) slop() float64 { return float64(m.adds+2*m.h+80) * m.mag * 0x1p-50 }

// ceil returns a value at least min(0, r) would return now, and true, when
// the last prefix minimum the tree returned was of a prefix no longer than
// r and no add since raised a value: a longer prefix's minimum is no larger,
// adds of v <= 0 only lower values, and those that cover the whole of that
// prefix lower its minimum by their |v| (preDrop; its float sum rounds by
// at most an ulp of mag an add, the last term). Otherwise it returns false.
// A token bucket's must-admit sweep in a tight run, whose every request
// takes a charge while the refill brings less, is mostly decided by ceil.
func (m *minTree) ceil(r int) (float64, bool) {
	if !m.preOK || r < m.preR {
		return 0, false
	}
	if m.preDrop == 0 {
		return m.pre + m.slop(), true
	}
	return m.pre + m.preDrop + m.slop() + float64(m.adds)*m.mag*0x1p-52, true
}

// floorEvery is how many adds floor's last minimum may fall behind.
const floorEvery = 64

// set assigns value i: its leaf holds v less the pending adds of its
// ancestors (see at).
func (m *minTree) set(i int, v float64) {
	m.flush()
	p := i + m.n
	anc := 0.0
	for q := p >> 1; q > 0; q >>= 1 {
		anc += m.d[q]
	}
	m.t[p] = v - anc
	if a := math.Abs(v); a > m.mag && !math.IsInf(v, 0) {
		m.mag = a
	}
	m.adds++ // the subtraction and the rebuild round as an add does
	m.lowOK, m.preOK, m.pfOK, m.general = false, false, false, true
	m.build(p)
}

// at returns value i.
func (m *minTree) at(i int) float64 {
	m.flush()
	p := i + m.n
	v := m.t[p]
	for p >>= 1; p > 0; p >>= 1 {
		v += m.d[p]
	}
	return v
}

// fenwick counts points by position.
type fenwick []int32

func newFenwick(n int) fenwick { return make(fenwick, n+1) }

func (f fenwick) add(i int, v int32) {
	for i++; i < len(f); i += i & -i {
		f[i] += v
	}
}

// prefix returns the sum of positions [0, i).
func (f fenwick) prefix(i int) int {
	s := 0
	for ; i > 0; i -= i & -i {
		s += int(f[i])
	}
	return s
}

func (f fenwick) rangeSum(l, r int) int {
	if l >= r {
		return 0
	}
	return f.prefix(r) - f.prefix(l)
}

// upperBound returns the number of values in sorted a that are <= x.
func upperBound(a []int64, x int64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// cursor answers upperBound on one sorted slice for a run of queries that
// each lie near the last one (a sweep's, in time order): it gallops from
// the last answer, O(log d) for an answer d positions away, instead of a
// binary search over the whole slice. The zero cursor starts at 0.
type cursor struct{ last int }

// upper returns upperBound(a, x), a sorted.
func (c *cursor) upper(a []int64, x int64) int {
	n := len(a)
	h := min(c.last, n)
	var lo, hi int // the answer lies in [lo, hi]
	switch {
	case h < n && a[h] <= x: // at or right of h+1
		lo, hi = h+1, n
		for step := 1; lo+step-1 < n; step <<= 1 {
			if a[lo+step-1] > x {
				hi = lo + step - 1
				break
			}
			lo += step
		}
	case h > 0 && a[h-1] > x: // left of h
		lo, hi = 0, h-1
		for step := 1; hi-step >= 0; step <<= 1 {
			if a[hi-step] <= x {
				lo = hi - step + 1
				break
			}
			hi -= step
		}
	default:
		c.last = h
		return h
	}
	r := lo + upperBound(a[lo:hi], x)
	c.last = r
	return r
}

// lowerBound returns the number of values in sorted a that are < x.
func lowerBound(a []int64, x int64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func sortInt64(a []int64) { slices.Sort(a) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// negZero and posInf are the bits of -0 and +Inf.
const (
	negZero = 1 << 63
	posInf  = 0x7ff0000000000000
)

// fmin returns the smaller of a and b, a when neither is smaller (of +0
// and -0 the first, of NaN and a number the first): the tree's every
// minimum, whose bits the checker's decisions and reports depend on.
func fmin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

// fminFast is fmin without a branch on the comparison: Go's min is fmin
// but for the two cases where the bits of the smaller differ with the
// order of the operands (min of +0 and -0 is -0; of NaN and a number,
// NaN), and its result is then 0 or NaN, which fmin decides instead.
// (TestFminFast compares the two on every class of operand.)
func fminFast(a, b float64) float64 {
	if m := min(a, b); m != 0 && m == m {
		return m
	}
	return fmin(a, b)
}
