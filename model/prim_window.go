package model

import (
	"fmt"
	"math"
	"slices"
)

// maxSpan is the most windows an event's interval may span and still be
// judged; a wider interval gets "either" (it still counts as a possible hit
// in every window it spans).
const maxSpan = 64

const far = math.MaxInt64 / 4

// window is one counting window: it starts somewhere in [a, b] (a == b for
// epoch-aligned windows) and lasts width.
type window struct{ a, b int64 }

// windowSet maps events to the windows they surely or possibly fall in.
// Windows are indexed 0..n-1 in time order.
type windowSet struct {
	width int64
	wins  []window
	// per local event: possible windows [pLo, pHi] (pLo > pHi: none),
	// surely-in window (-1: none), and whether the span is judged.
	pLo, pHi, sure []int32
	judged         []bool
	// epoch: window number of each index (for prev-window lookups).
	num []int64
}

func newEpochWindows(lo, hi []int64, width int64, withPrev bool) *windowSet {
	n := len(lo)
	var nums []int64
	for l := range n {
		k0, k1 := floorDiv(lo[l], width), floorDiv(hi[l], width)
		if k1-k0 < maxSpan {
			for k := k0; k <= k1; k++ {
				nums = append(nums, k)
				if withPrev {
					nums = append(nums, k-1)
				}
			}
		} else {
			nums = append(nums, k0, k1)
		}
	}
	slices.Sort(nums)
	nums = slices.Compact(nums)
	ws := &windowSet{width: width, num: nums, wins: make([]window, len(nums)),
		pLo: make([]int32, n), pHi: make([]int32, n), sure: make([]int32, n), judged: make([]bool, n)}
	for i, k := range nums {
		ws.wins[i] = window{k * width, k * width}
	}
	for l := range n {
		k0, k1 := floorDiv(lo[l], width), floorDiv(hi[l], width)
		i0, _ := slices.BinarySearch(nums, k0)
		i1, _ := slices.BinarySearch(nums, k1)
		ws.pLo[l], ws.pHi[l] = int32(i0), int32(i1)
		ws.sure[l] = -1
		if k0 == k1 {
			ws.sure[l] = int32(i0)
		}
		ws.judged[l] = k1-k0 < maxSpan
	}
	return ws
}

// index returns the index of window number k, or -1.
func (ws *windowSet) index(k int64) int {
	i, ok := slices.BinarySearch(ws.num, k)
	if !ok {
		return -1
	}
	return i
}

// newFirstHitWindows builds the windows of a key whose window starts at its
// first hit and the next one at the first hit after that window ended
// (rlbench's lab RLS WindowFirstHit). Window k starts in [a_k, b_k]: a_k is
// the earliest possible hit at or after the earliest end of window k-1, b_k
// the latest time by which a sure hit (known outcome) after its latest end
// has happened.
func newFirstHitWindows(lo, hi []int64, known func(int) bool, width int64) *windowSet {
	n := len(lo)
	ws := &windowSet{width: width, pLo: make([]int32, n), pHi: make([]int32, n), sure: make([]int32, n), judged: make([]bool, n)}
	if n == 0 {
		return ws
	}
	byHi := make([]int32, n)
	for i := range byHi {
		byHi[i] = int32(i)
	}
	slices.SortFunc(byHi, func(x, y int32) int { return cmp64(hi[x], hi[y]) })
	hiS := make([]int64, n)
	sufMinLo := make([]int64, n+1) // over byHi suffix
	sufMinLo[n] = far
	for i := n - 1; i >= 0; i-- {
		hiS[i] = hi[byHi[i]]
		sufMinLo[i] = min(sufMinLo[i+1], lo[byHi[i]])
	}
	var knownByLo []int32
	for l := range n {
		if known(l) {
			knownByLo = append(knownByLo, int32(l))
		}
	}
	slices.SortFunc(knownByLo, func(x, y int32) int { return cmp64(lo[x], lo[y]) })
	kLo := make([]int64, len(knownByLo))
	sufMinHi := make([]int64, len(knownByLo)+1)
	sufMinHi[len(knownByLo)] = far
	for i := len(knownByLo) - 1; i >= 0; i-- {
		kLo[i] = lo[knownByLo[i]]
		sufMinHi[i] = min(sufMinHi[i+1], hi[knownByLo[i]])
	}
	a := sufMinLo[0]
	b := sufMinHi[0]
	for {
		ws.wins = append(ws.wins, window{a, min(b, far)})
		eLo, eHi := a+width, min(b, far)+width
		i := lowerBound(hiS, eLo) // events with hi >= eLo
		if i >= n {
			break
		}
		na := max(eLo, sufMinLo[i])
		nb := int64(far)
		if eHi < far {
			nb = sufMinHi[lowerBound(kLo, eHi)]
		}
		if nb < na { // cannot happen for consistent data; keep the range valid
			nb = na
		}
		a, b = na, nb
		if a >= far {
			break
		}
	}
	starts := make([]int64, len(ws.wins))
	ends := make([]int64, len(ws.wins))
	for i, w := range ws.wins {
		starts[i] = w.a
		ends[i] = min(w.b, far) + width
	}
	for l := range n {
		// possible: a <= hi and b+width > lo; starts and ends are increasing
		p1 := upperBound(starts, hi[l]) - 1
		p0 := upperBound(ends, lo[l])
		ws.pLo[l], ws.pHi[l] = int32(p0), int32(p1)
		ws.sure[l] = -1
		for w := p0; w <= p1; w++ {
			if lo[l] >= ws.wins[w].b && hi[l] < ws.wins[w].a+width {
				ws.sure[l] = int32(w)
			}
		}
		ws.judged[l] = p1-p0 < maxSpan
	}
	return ws
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rangeCounter counts, per window index, how many events' ranges cover it
// (range add, point query).
type rangeCounter struct{ f fenwick }

func newRangeCounter(n int) rangeCounter { return rangeCounter{newFenwick(n + 1)} }
func (r rangeCounter) add(lo, hi int32, v int32) {
	if lo > hi {
		return
	}
	r.f.add(int(lo), v)
	r.f.add(int(hi)+1, -v)
}
func (r rangeCounter) at(i int) int { return r.f.prefix(i + 1) }

// fwParams is a fixed-window counter that counts every hit, over-limit ones
// included (envoyproxy/ratelimit: INCRBY on every hit; a hit is OK iff the
// counter after it is <= limit).
type fwParams struct {
	label    string
	limit    int64
	width    int64
	firstHit bool
}

func (p *fwParams) countsAll() bool { return true }

func (p *fwParams) newPrim(c *primCtx) prim {
	t := &fwPrim{p: p, c: c}
	if p.firstHit {
		t.ws = newFirstHitWindows(c.lo, c.hi, c.isKnown, p.width)
	} else {
		t.ws = newEpochWindows(c.lo, c.hi, p.width, false)
	}
	nw := len(t.ws.wins)
	t.inside = make([]int32, nw)
	t.poss = newRangeCounter(nw)
	return t
}

type fwPrim struct {
	p      *fwParams
	c      *primCtx
	ws     *windowSet
	inside []int32 // activated sure hits surely in the window
	poss   rangeCounter
}

func (t *fwPrim) activate(l int32) {
	if w := t.ws.sure[l]; w >= 0 {
		t.inside[w]++
	}
}

// mustReject: in every window l may fall in, at least limit hits surely in
// that window surely came before it.
func (t *fwPrim) mustReject(l int32) (bool, float64) {
	ws := t.ws
	if !ws.judged[l] || ws.pLo[l] > ws.pHi[l] {
		return false, 0
	}
	least := int32(math.MaxInt32)
	for w := ws.pLo[l]; w <= ws.pHi[l]; w++ {
		least = min(least, t.inside[w])
	}
	return int64(least) >= t.p.limit, float64(least)
}

func (t *fwPrim) insert(l int32)    { t.poss.add(t.ws.pLo[l], t.ws.pHi[l], 1) }
func (t *fwPrim) markUnder(l int32) {}

// mustAdmit: in every window l may fall in, fewer than limit other hits may
// have come before it.
func (t *fwPrim) mustAdmit(l int32, self bool) (bool, float64) {
	ws := t.ws
	if !ws.judged[l] || ws.pLo[l] > ws.pHi[l] {
		return false, 0
	}
	most := 0
	for w := ws.pLo[l]; w <= ws.pHi[l]; w++ {
		n := t.poss.at(int(w))
		if self {
			n--
		}
		most = max(most, n)
	}
	return int64(most) < t.p.limit, float64(most)
}

func (t *fwPrim) why(reject bool, v float64) string {
	if reject {
		return fmt.Sprintf("%s: %d hits already counted in its window before it (limit %d)", t.p.label, int(v), t.p.limit)
	}
	return fmt.Sprintf("%s: at most %d hits counted in its window before it (limit %d)", t.p.label, int(v), t.p.limit)
}

func (t *fwPrim) span(w int) (int64, int64) {
	win := t.ws.wins[w]
	return win.a, min(win.b, far) + t.ws.width
}

// windowCounts returns, per window, the events surely in it (sel filters
// them) and the number of events possibly in it that sel accepts.
func windowCounts(ws *windowSet, n int, sel func(l int) bool) ([][]int32, []int) {
	sureIn := make([][]int32, len(ws.wins))
	possN := make([]int, len(ws.wins)+1)
	for l := range n {
		if sel != nil && !sel(l) {
			continue
		}
		if w := ws.sure[l]; w >= 0 {
			sureIn[w] = append(sureIn[w], int32(l))
		}
		if ws.pLo[l] <= ws.pHi[l] {
			possN[ws.pLo[l]]++
			possN[ws.pHi[l]+1]--
		}
	}
	for i := 1; i < len(possN); i++ {
		possN[i] += possN[i-1]
	}
	return sureIn, possN[:len(ws.wins)]
}

// findings: per window, admissions surely in it must be <= limit (the first
// limit hits get OK), and the admissions possibly in it must be at least
// min(limit, hits surely in it).
func (t *fwPrim) findings() []WindowFinding {
	c := t.c
	sureIn, _ := windowCounts(t.ws, len(c.lo), nil)
	_, maybeAdm := windowCounts(t.ws, len(c.lo), func(l int) bool { return c.isAdmitted(l) || !c.isKnown(l) })
	var out []WindowFinding
	for w, evs := range sureIn {
		var adm, rej []int32
		known := 0
		for _, l := range evs {
			if c.isKnown(int(l)) {
				known++
			}
			if c.isAdmittedSure(int(l)) {
				adm = append(adm, l)
			} else if c.isRejected(int(l)) {
				rej = append(rej, l)
			}
		}
		from, to := t.span(w)
		if int64(len(adm)) > t.p.limit {
			sortByHiDesc(adm, c.hi)
			f := WindowFinding{Bucket: c.name, From: from * c.unit, To: to * c.unit, TooMany: true, Admitted: len(adm),
				Limit: int(t.p.limit), Windows: 1, IDs: c.ids(adm[:int64(len(adm))-t.p.limit])}
			f.Why = fmt.Sprintf("%s: %d admitted in window %s, limit %d", t.p.label, len(adm), fmtSpan(f.From, f.To), t.p.limit)
			out = append(out, f)
		}
		need := min(int64(known), t.p.limit)
		got := maybeAdm[w]
		if int64(got) < need && len(rej) > 0 {
			sortByLoAsc(rej, c.lo)
			k := min(int(need)-got, len(rej))
			f := WindowFinding{Bucket: c.name, From: from * c.unit, To: to * c.unit, TooMany: false, Admitted: got,
				Limit: int(need), Windows: 1, IDs: c.ids(rej[:k])}
			f.Why = fmt.Sprintf("%s: %d hits surely in window %s, so at least %d were OK; at most %d were admitted", t.p.label, known, fmtSpan(f.From, f.To), need, got)
			out = append(out, f)
		}
	}
	return out
}

func (t *fwPrim) bounds(single bool) (int, int) {
	lo, hi, _ := t.windowBounds()
	return lo, hi
}

// windowBounds returns the run's bounds and one Bound per window.
func (t *fwPrim) windowBounds() (int, int, []Bound) {
	c := t.c
	sureIn, possN := windowCounts(t.ws, len(c.lo), nil)
	_, maybeAdm := windowCounts(t.ws, len(c.lo), func(l int) bool { return c.isAdmitted(l) || !c.isKnown(l) })
	minT, maxT := 0, 0
	out := make([]Bound, 0, len(sureIn))
	for w, evs := range sureIn {
		known, adm := 0, 0
		for _, l := range evs {
			if c.isKnown(int(l)) {
				known++
			}
			if c.isAdmittedSure(int(l)) {
				adm++
			}
		}
		mn := min(int64(known), t.p.limit)
		mx := min(int64(possN[w]), t.p.limit)
		minT += int(mn)
		maxT += int(mx)
		from, to := t.span(w)
		out = append(out, Bound{Bucket: c.name, From: from * c.unit, To: to * c.unit, Offered: possN[w], Min: int(mn), Max: int(mx),
			Admitted: adm, Possible: maybeAdm[w]})
	}
	if !t.p.firstHit {
		maxT = epochMax(t.ws, len(c.lo), t.p.limit)
	}
	maxT = min(maxT, len(c.lo))
	return minT, maxT, out
}

func sortByHiDesc(ls []int32, hi []int64) {
	slices.SortFunc(ls, func(x, y int32) int { return cmp64(hi[y], hi[x]) })
}

func sortByLoAsc(ls []int32, lo []int64) {
	slices.SortFunc(ls, func(x, y int32) int { return cmp64(lo[x], lo[y]) })
}
