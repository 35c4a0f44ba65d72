package model

import (
	"fmt"
	"math"
	"slices"
)

// slParams is the exact sliding log: a request passes iff fewer than limit
// counted requests lie in (t-width, t]; counted are the admitted ones, or
// all (countAll).
type slParams struct {
	label    string
	limit    int64
	width    int64
	countAll bool
}

func (p *slParams) countsAll() bool { return p.countAll }

func (p *slParams) newPrim(c *primCtx) prim {
	n := len(c.lo)
	t := &slPrim{p: p, c: c, loS: slices.Clone(c.lo), posLo: make([]int32, n), posHi: make([]int32, n)}
	slices.Sort(t.loS)
	byLo, byHi := orderBy(c.lo), orderBy(c.hi)
	for pos, l := range byLo {
		t.posLo[l] = int32(pos)
	}
	t.hiS = make([]int64, n)
	for pos, l := range byHi {
		t.posHi[l] = int32(pos)
		t.hiS[pos] = c.hi[l]
	}
	t.act, t.ins, t.under = newFenwick(n), newFenwick(n), newFenwick(n)
	return t
}

// int32Buf returns buf[:n] when buf holds n values, else a new slice of
// n (its values are the caller's to set).
func int32Buf(buf []int32, n int) []int32 {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]int32, n)
}

// orderByKey is orderBy of the values key(0..n-1), read where they lie.
func orderByKey(n int, key func(int32) int64) []int32 { return orderByKeyIn(nil, n, key) }

// orderByKeyIn is orderByKey in buf's memory when it is large enough.
func orderByKeyIn(buf []int32, n int, key func(int32) int64) []int32 {
	o := int32Buf(buf, n)
	for i := range o {
		o[i] = int32(i)
	}
	slices.SortFunc(o, func(x, y int32) int {
		if c := cmp64(key(x), key(y)); c != 0 {
			return c
		}
		return int(x - y)
	})
	return o
}

// orderBy returns the local indices sorted by v (ties by index).
func orderBy(v []int64) []int32 { return orderByIn(nil, v) }

// orderByIn is orderBy in buf's memory when it is large enough.
func orderByIn(buf []int32, v []int64) []int32 {
	o := int32Buf(buf, len(v))
	for i := range o {
		o[i] = int32(i)
	}
	slices.SortFunc(o, func(x, y int32) int {
		if c := cmp64(v[x], v[y]); c != 0 {
			return c
		}
		return int(x - y)
	})
	return o
}

type slPrim struct {
	p            *slParams
	c            *primCtx
	loS, hiS     []int64
	posLo, posHi []int32
	act          fenwick // activated sure counts, by lo position
	ins          fenwick // inserted possible counts, by hi position
	under        fenwick // under-admitted, by hi position
}

func (t *slPrim) activate(l int32) { t.act.add(int(t.posLo[l]), 1) }

// mustReject: at least limit counted requests surely before l lie surely in
// (t-width, t] for every t in [lo, hi]: lo_k > hi_l - width.
func (t *slPrim) mustReject(l int32) (bool, float64) {
	n := len(t.loS)
	k := t.act.rangeSum(upperBound(t.loS, t.c.hi[l]-t.p.width), n)
	return int64(k) >= t.p.limit, float64(k)
}

func (t *slPrim) insert(l int32)    { t.ins.add(int(t.posHi[l]), 1) }
func (t *slPrim) markUnder(l int32) { t.under.add(int(t.posHi[l]), 1) }

// mustAdmit: fewer than limit requests that may be counted may lie in
// (t-width, t] before l for any t in [lo, hi]: hi_k > lo_l - width. An
// under-admitted request counts only for requests surely after it.
func (t *slPrim) mustAdmit(l int32, self bool) (bool, float64) {
	n := len(t.hiS)
	lo := t.c.lo[l]
	from := upperBound(t.hiS, lo-t.p.width)
	k := t.ins.rangeSum(from, n) + t.under.rangeSum(from, lowerBound(t.hiS, lo))
	if self {
		k--
	}
	return int64(k) < t.p.limit, float64(k)
}

func (t *slPrim) why(reject bool, v float64) string {
	w := fmtDur(t.p.width * t.c.unit)
	if reject {
		return fmt.Sprintf("%s: %d counted requests surely in the %s before it (limit %d)", t.p.label, int(v), w, t.p.limit)
	}
	return fmt.Sprintf("%s: at most %d counted requests in the %s before it (limit %d)", t.p.label, int(v), w, t.p.limit)
}

// findings: admissions surely within a span shorter than width must be <=
// limit (the last of them saw all the others).
func (t *slPrim) findings() []WindowFinding {
	c := t.c
	var adm []int32
	for l := range c.lo {
		if c.isAdmittedSure(l) {
			adm = append(adm, int32(l))
		}
	}
	if int64(len(adm)) <= t.p.limit {
		return nil
	}
	hiS := make([]int64, len(adm))
	for i, l := range adm {
		hiS[i] = c.hi[l]
	}
	slices.Sort(hiS)
	slices.SortFunc(adm, func(x, y int32) int { return cmp64(c.lo[y], c.lo[x]) }) // lo descending
	f := newFenwick(len(hiS))
	pos := func(h int64) int { return lowerBound(hiS, h) }
	best, bestA, windows := int64(0), int64(0), 0
	for i := 0; i < len(adm); {
		a := c.lo[adm[i]]
		for ; i < len(adm) && c.lo[adm[i]] == a; i++ {
			f.add(pos(c.hi[adm[i]]), 1)
		}
		k := int64(f.prefix(lowerBound(hiS, a+t.p.width)))
		if k > t.p.limit {
			windows++
			if k > best {
				best, bestA = k, a
			}
		}
	}
	if windows == 0 {
		return nil
	}
	var in []int32
	for _, l := range adm {
		if c.lo[l] >= bestA && c.hi[l] < bestA+t.p.width {
			in = append(in, l)
		}
	}
	sortByHiDesc(in, c.hi)
	fd := WindowFinding{Bucket: c.name, From: bestA * c.unit, To: (bestA + t.p.width) * c.unit, TooMany: true,
		Admitted: len(in), Limit: int(t.p.limit), Windows: windows, IDs: c.ids(in[:int64(len(in))-t.p.limit])}
	fd.Why = fmt.Sprintf("%s: %d admissions surely within %s of each other from %s, limit %d", t.p.label, len(in),
		fmtDur(t.p.width*c.unit), fmtTime(fd.From), t.p.limit)
	return []WindowFinding{fd}
}

// bounds: at most limit admissions in each tile [t0+i*width, t0+(i+1)*width).
func (t *slPrim) bounds(single bool) (int, int) {
	return 0, tiledMax(t.c.lo, t.c.hi, t.p.width, t.p.limit)
}

// tiledMax sums min(limit, events possibly in the tile) over consecutive
// tiles of width from the first lo (capped at the event count).
func tiledMax(lo, hi []int64, width, limit int64) int {
	n := len(lo)
	if n == 0 {
		return 0
	}
	t0 := slices.Min(lo)
	tEnd := slices.Max(hi)
	tiles := (tEnd-t0)/width + 1
	if tiles > 1<<24 {
		return n
	}
	d := make([]int32, tiles+1)
	for l := range n {
		d[(lo[l]-t0)/width]++
		d[(hi[l]-t0)/width+1]--
	}
	total, run := int64(0), int32(0)
	for i := range tiles {
		run += d[i]
		total += min(int64(run), limit)
	}
	return int(min(total, int64(n)))
}

// scParams is the two-counter sliding window: with windows of width aligned
// to the epoch, a request at t in window k passes iff
// prev*(1-f) + cur + 1 <= limit, prev the count of window k-1, cur the count
// so far in k, f the elapsed fraction of k (HAProxy freq_ctr's
// curr + prev*(period-elapsed)/period). Counted are admitted requests, or all.
type scParams struct {
	label    string
	limit    float64
	width    int64
	countAll bool
}

func (p *scParams) countsAll() bool { return p.countAll }

func (p *scParams) newPrim(c *primCtx) prim {
	t := &scPrim{p: p, c: c, ws: newEpochWindows(c.lo, c.hi, p.width, true)}
	nw := len(t.ws.wins)
	t.inside = make([]int32, nw)
	t.poss = newRangeCounter(nw)
	return t
}

type scPrim struct {
	p      *scParams
	c      *primCtx
	ws     *windowSet
	inside []int32
	poss   rangeCounter
}

func (t *scPrim) activate(l int32) {
	if w := t.ws.sure[l]; w >= 0 {
		t.inside[w]++
	}
}

func (t *scPrim) prevIndex(w int32) int { return t.ws.index(t.ws.num[w] - 1) }

// mustReject: in every window l may fall in, the estimate from the counts
// surely in the previous window and surely before l in this one, weighted
// at l's latest possible time there, already reaches the limit.
func (t *scPrim) mustReject(l int32) (bool, float64) {
	ws := t.ws
	if !ws.judged[l] {
		return false, 0
	}
	least := math.Inf(1)
	for w := ws.pLo[l]; w <= ws.pHi[l]; w++ {
		start := ws.num[w] * t.p.width
		sub := min(t.c.hi[l], start+t.p.width-1)
		f := float64(sub-start) / float64(t.p.width)
		prev := 0.0
		if pw := t.prevIndex(w); pw >= 0 {
			prev = float64(t.inside[pw])
		}
		least = math.Min(least, prev*(1-f)+float64(t.inside[w]))
	}
	return least+1 > t.p.limit+eps, least
}

func (t *scPrim) insert(l int32)    { t.poss.add(t.ws.pLo[l], t.ws.pHi[l], 1) }
func (t *scPrim) markUnder(l int32) {}

// mustAdmit: in every window l may fall in, even counting every request
// that may lie in the previous window and before l in this one, weighted at
// l's earliest possible time there, the estimate stays below the limit.
func (t *scPrim) mustAdmit(l int32, self bool) (bool, float64) {
	ws := t.ws
	if !ws.judged[l] {
		return false, 0
	}
	most := 0.0
	for w := ws.pLo[l]; w <= ws.pHi[l]; w++ {
		start := ws.num[w] * t.p.width
		sub := max(t.c.lo[l], start)
		f := float64(sub-start) / float64(t.p.width)
		prev := 0.0
		if pw := t.prevIndex(w); pw >= 0 {
			prev = float64(t.poss.at(pw))
		}
		cur := float64(t.poss.at(int(w)))
		if self {
			cur--
		}
		most = math.Max(most, prev*(1-f)+cur)
	}
	return most+1 <= t.p.limit-eps, most
}

func (t *scPrim) why(reject bool, v float64) string {
	if reject {
		return fmt.Sprintf("%s: estimated %.2f counted before it (limit %g)", t.p.label, v, t.p.limit)
	}
	return fmt.Sprintf("%s: estimated at most %.2f counted before it (limit %g)", t.p.label, v, t.p.limit)
}

// findings: admissions surely inside one window must be <= limit.
func (t *scPrim) findings() []WindowFinding {
	c := t.c
	sureIn, _ := windowCounts(t.ws, len(c.lo), func(l int) bool { return c.isAdmittedSure(l) })
	var out []WindowFinding
	lim := int(math.Floor(t.p.limit + eps))
	for w, adm := range sureIn {
		if len(adm) <= lim {
			continue
		}
		sortByHiDesc(adm, c.hi)
		start := t.ws.num[w] * t.p.width
		f := WindowFinding{Bucket: c.name, From: start * c.unit, To: (start + t.p.width) * c.unit, TooMany: true,
			Admitted: len(adm), Limit: lim, Windows: 1, IDs: c.ids(adm[:len(adm)-lim])}
		f.Why = fmt.Sprintf("%s: %d admitted in window %s, limit %d", t.p.label, len(adm), fmtSpan(f.From, f.To), lim)
		out = append(out, f)
	}
	return out
}

func (t *scPrim) bounds(single bool) (int, int) {
	return 0, epochMax(t.ws, len(t.c.lo), int64(math.Floor(t.p.limit+eps)))
}

// epochMax bounds the admissions over epoch windows: at most limit per
// window among the events judged window by window, plus every event whose
// interval spans too many windows to list (each is one request).
func epochMax(ws *windowSet, n int, limit int64) int {
	_, possN := windowCounts(ws, n, func(l int) bool { return ws.judged[l] })
	total := int64(0)
	for _, k := range possN {
		total += min(int64(k), limit)
	}
	for l := range n {
		if !ws.judged[l] {
			total++
		}
	}
	return int(min(total, int64(n)))
}
