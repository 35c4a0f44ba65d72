package analyze

import (
	"container/heap"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// intendedAdmission is one request that passed (sure) or may have passed
// every limiter, with the interval its admission lies in, unix ns.
type intendedAdmission struct {
	lo, hi int64
	sure   bool
}

// intendedAdmissions returns the requests that passed every limiter
// (sure: Classes.Passed, or no response but a receipt) or may have (no
// response, no receipt), each with the interval its admission lies in:
// [send, min(response, first receipt)], widened by widen ns on both sides
// (the shards' clock offset bound).
func intendedAdmissions(in *Input, widen int64) []intendedAdmission {
	reqs := &in.Evidence.Requests
	var out []intendedAdmission
	for i := 0; i < reqs.Len(); i++ {
		c, got := reqs.Class[i], in.received[i]
		sure := c.Passed() || c == evidence.ClassNoResponse && got
		if !sure && c != evidence.ClassNoResponse {
			continue
		}
		lo, hi := reqs.SentNs.At(i), reqs.EndNs.At(i)
		if t := in.ReceiptNs(i); got && t > 0 {
			hi = min(hi, t)
		}
		hi = max(hi, lo)
		out = append(out, intendedAdmission{lo: lo - widen, hi: hi + widen, sure: sure})
	}
	return out
}

// windowedOverAdmission judges the admissions against limit per fixed
// window of per ns aligned to the unix epoch (evidence.IntendedLimit). Each
// admission falls in one of the windows its interval touches. The
// returned OverAdmission's AdmittedMin is the least count the fullest
// window can hold over every way the sure admissions can fall (the
// uncertain ones placed to spread them as evenly as the windows allow),
// AdmittedMax the most any window may hold (every admission that may be
// in it counted); Min and Max are those minus limit. Worst is the window
// that may hold the most, Over the windows that may hold more than limit.
// The limit holds surely when AdmittedMax <= limit, is surely broken when
// AdmittedMin > limit, and is undecided between.
func windowedOverAdmission(adm []intendedAdmission, limit int, per int64) *report.OverAdmission {
	oa := &report.OverAdmission{Intended: limit, PerNs: per, Over: []report.IntendedWindow{}}
	// edges of the counts per window index w: dHi +1 at an admission's
	// first window and -1 after its last; dLo the sure admissions whose
	// interval lies in window w alone
	type edge struct {
		w        int64
		dLo, dHi int
	}
	inside := map[int64]int{} // window -> sure admissions whose interval lies in it
	var hiEdges []edge
	var straddle [][2]int64 // sure admissions across a window edge: their first and last window
	for _, a := range adm {
		wa, wb := floorDiv(a.lo, per), floorDiv(a.hi, per)
		hiEdges = append(hiEdges, edge{w: wa, dHi: 1}, edge{w: wb + 1, dHi: -1})
		switch {
		case a.sure && wa == wb:
			inside[wa]++
		case a.sure:
			straddle = append(straddle, [2]int64{wa, wb})
		}
	}
	for w, n := range inside {
		hiEdges = append(hiEdges, edge{w: w, dLo: n})
	}
	sort.Slice(hiEdges, func(i, j int) bool { return hiEdges[i].w < hiEdges[j].w })
	// Sweep the windows in segments of equal counts: a window with sure
	// admissions inside is a segment of its own.
	maxLo, hi := 0, 0
	window := func(w int64, lo, hi int) report.IntendedWindow {
		return report.IntendedWindow{FromNs: w * per, ToNs: w*per + per, AdmittedMin: lo, AdmittedMax: hi, Min: lo - limit, Max: hi - limit}
	}
	for k := 0; k < len(hiEdges); {
		w := hiEdges[k].w
		lo := 0
		for ; k < len(hiEdges) && hiEdges[k].w == w; k++ {
			hi += hiEdges[k].dHi
			lo += hiEdges[k].dLo
		}
		maxLo = max(maxLo, lo)
		if hi == 0 {
			continue
		}
		// windows w .. next-1 hold hi possible admissions; w holds lo sure
		// ones inside, the others none
		next := w + 1
		if k < len(hiEdges) {
			next = hiEdges[k].w
		}
		for _, seg := range []struct {
			from, to int64
			lo       int
		}{{w, w + 1, lo}, {w + 1, next, 0}} {
			n := seg.to - seg.from
			if n <= 0 {
				continue
			}
			oa.Windows += int(n)
			if oa.Worst == nil || hi > oa.Worst.AdmittedMax || hi == oa.Worst.AdmittedMax && seg.lo > oa.Worst.AdmittedMin {
				v := window(seg.from, seg.lo, hi)
				oa.Worst = &v
			}
			if hi > limit {
				oa.OverWindows += int(n)
				for x := seg.from; x < seg.to && len(oa.Over) < report.SampleIDs; x++ {
					oa.Over = append(oa.Over, window(x, seg.lo, hi))
				}
			}
		}
	}
	oa.Straddling = len(straddle)
	for _, a := range adm {
		if !a.sure {
			oa.Unanswered++
		}
	}
	oa.AdmittedMin = leastFullest(inside, maxLo, straddle)
	if oa.Worst != nil {
		oa.AdmittedMax = oa.Worst.AdmittedMax
	}
	oa.Min, oa.Max = oa.AdmittedMin-limit, oa.AdmittedMax-limit
	return oa
}

// leastFullest returns the least count the fullest window can hold when
// every straddling admission (its first and last window) is placed in one
// of the windows it touches and inside[w] admissions already lie in window
// w (maxLo the largest of them): a binary search on the capacity, each
// tested by placing the admissions window by window, the one whose last
// window comes first first (earliest deadline first is optimal for
// placing intervals into capacities).
func leastFullest(inside map[int64]int, maxLo int, straddle [][2]int64) int {
	if len(straddle) == 0 {
		return maxLo
	}
	sort.Slice(straddle, func(i, j int) bool { return straddle[i][0] < straddle[j][0] })
	fits := func(c int) bool {
		h := &deadlines{}
		k := 0
		w := straddle[0][0]
		for k < len(straddle) || h.Len() > 0 {
			if h.Len() == 0 {
				w = max(w, straddle[k][0])
			}
			for ; k < len(straddle) && straddle[k][0] <= w; k++ {
				heap.Push(h, straddle[k][1])
			}
			if (*h)[0] < w {
				return false // its last window passed without room
			}
			for room := c - inside[w]; room > 0 && h.Len() > 0; room-- {
				heap.Pop(h)
			}
			w++
		}
		return true
	}
	lo, hi := max(maxLo, 1), maxLo+len(straddle) // hi always fits
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// deadlines is a min-heap of last windows.
type deadlines []int64

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i] < d[j] }
func (d deadlines) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deadlines) Push(x any)        { *d = append(*d, x.(int64)) }
func (d *deadlines) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

// overAdmissionSection is the over-admission against the intended limit
// (ScenarioReport.OverAdmission); after the limiters, which set the shards'
// clocks.
var overAdmissionSection = section{name: "over-admission", needs: []string{"receipts", "totals", "limiters"}, compute: func(in *Input) {
	in.Report.OverAdmission = overAdmissionOf(in)
}}

// overAdmissionOf is the report's over-admission against the intended
// limit il: the run's admitted count minus it, or, for a limit per window,
// windowedOverAdmission of the admissions; nil without an intended limit.
func overAdmissionOf(in *Input) *report.OverAdmission {
	il, sr := in.Scenario.IntendedLimit, in.Report
	if il == nil {
		return nil
	}
	if !il.Windowed() {
		lo, hi := sr.Totals.Passed, sr.Totals.PassedMax(sr.Receipts.IndeterminateWithReceipt)
		return &report.OverAdmission{Intended: il.Requests, AdmittedMin: lo, AdmittedMax: hi, Min: lo - il.Requests, Max: hi - il.Requests}
	}
	var widen int64
	if sh := sr.Shards; sh != nil {
		widen = sh.OffsetBoundNs
	}
	return windowedOverAdmission(intendedAdmissions(in, widen), il.Requests, int64(time.Duration(il.Per)))
}

// checkIntendedLimit: without an explicit admitted expectation, an intended
// limit is the expectation: the limit must hold, over the run, or in every
// window of a limit per window (see windowedOverAdmission: a window count
// that depends on when uncertain admissions happened, or on requests
// without response, is a range, and a verdict that depends on it unknown).
func checkIntendedLimit(in *Input) (r Result) {
	il, oa := in.Scenario.IntendedLimit, in.Report.OverAdmission
	if !intendedJudged(in) || oa == nil {
		return r
	}
	if v := intendedVacuous(in); v != nil {
		r.notChecked(v, strconv.Itoa(oa.AdmittedMin))
		return r
	}
	st := passIf(oa.AdmittedMax <= oa.Intended)
	if oa.AdmittedMin <= oa.Intended && oa.AdmittedMax > oa.Intended {
		st = report.CheckUnknown
	}
	if !il.Windowed() {
		r.add("admitted within intended limit", st, fmt.Sprintf("<= %d", il.Requests), strconv.Itoa(oa.AdmittedMin))
		return r
	}
	per := evidence.ShortDuration(time.Duration(il.Per))
	want := fmt.Sprintf("<= %d per %s window (fixed windows from the unix epoch)", il.Requests, per)
	// Shards on one clock (one node, or one host) share its time line;
	// on several, an unbounded one leaves the windows unknown.
	if sh := in.Report.Shards; sh != nil && len(sh.Unbounded) > 0 && sh.Clocks > 1 {
		r.add("admitted within intended limit", report.CheckUnknown, want, "no window can be told: the clocks of shard nodes "+
			strings.Join(sh.Unbounded, ", ")+" are not bounded against the backend's")
		return r
	}
	r.add("admitted within intended limit", st, want, windowedGot(oa, per))
	return r
}

// windowedGot describes a windowed over-admission for a check: the
// fullest window's count (a range when timing or missing responses leave
// it open, and why), the worst window and how many windows may be over.
func windowedGot(oa *report.OverAdmission, per string) string {
	cnt := strconv.Itoa(oa.AdmittedMin)
	if oa.AdmittedMax != oa.AdmittedMin {
		cnt += ".." + strconv.Itoa(oa.AdmittedMax)
	}
	got := fmt.Sprintf("%s in the fullest %s window", cnt, per)
	var open []string
	if oa.Straddling > 0 {
		open = append(open, fmt.Sprintf("%d admissions whose time spans a window edge may fall in any window they touch", oa.Straddling))
	}
	if oa.Unanswered > 0 {
		open = append(open, fmt.Sprintf("%d requests without response may have been admitted", oa.Unanswered))
	}
	if len(open) > 0 {
		got += " (" + strings.Join(open, "; ") + ")"
	}
	if w := oa.Worst; w != nil {
		got += fmt.Sprintf("; worst window %s: %s admitted", windowText(w.FromNs, w.ToNs), report.RangeText(w.AdmittedMin, w.AdmittedMax))
	}
	if oa.OverWindows > 0 {
		got += fmt.Sprintf("; %d of %d windows may be over", oa.OverWindows, oa.Windows)
	}
	return got
}

// windowText renders [from, to) in UTC, e.g. "[10:00:00.000, 10:01:00.000) UTC".
func windowText(from, to int64) string {
	const f = "15:04:05.000"
	return "[" + time.Unix(0, from).UTC().Format(f) + ", " + time.Unix(0, to).UTC().Format(f) + ") UTC"
}
