package attack

import (
	"github.com/rlbench/rlbench/evidence"

	"math/bits"
	"sync/atomic"
)

// histSub is the number of linear sub-buckets per power of two above
// 2*histSub: the relative width of a bucket is at most 1/histSub.
const (
	histSubBits = 7
	histSub     = 1 << histSubBits
	histExact   = 2 * histSub // values below are their own bucket
	histBuckets = histExact + (64-histSubBits-1)*histSub
)

// hist is a concurrent log-linear histogram of non-negative durations in
// ns (negative values count as 0). It uses a fixed 59 KiB, whatever the
// number of values, so that percentiles cost no memory per ID.
type hist struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	max    atomic.Int64
}

func histIndex(v uint64) int {
	if v < histExact {
		return int(v)
	}
	l := bits.Len64(v)           // v in [2^(l-1), 2^l), l > histSubBits+1
	shift := l - histSubBits - 1 // v>>shift in [histSub, 2*histSub)
	return histExact + (shift-1)*histSub + int(v>>shift) - histSub
}

// histUpper is the largest value that falls into bucket i.
func histUpper(i int) int64 {
	if i < histExact {
		return int64(i)
	}
	k := i - histExact
	shift := k/histSub + 1
	top := uint64(k%histSub + histSub)
	return int64((top+1)<<shift - 1)
}

func (h *hist) add(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(uint64(v))].Add(1)
	h.n.Add(1)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// quantiles reads h: exact once every add has returned. While adds run
// (Progress.Snapshot's pacing error) it reads n before the buckets, so
// the buckets it reads hold every value n counts and each rank is
// reached; Max, read after n, may lag an add under way, which then
// lowers the quantiles it caps.
func (h *hist) quantiles() evidence.AttackQuantiles {
	n := h.n.Load()
	q := evidence.AttackQuantiles{N: int(n), Max: h.max.Load()}
	if n == 0 {
		return q
	}
	ranks := [3]uint64{(n*50 + 99) / 100, (n*90 + 99) / 100, (n*99 + 99) / 100}
	var out [3]int64
	seen, r := uint64(0), 0
	for i := 0; i < histBuckets && r < len(ranks); i++ {
		seen += h.counts[i].Load()
		for r < len(ranks) && seen >= ranks[r] {
			out[r] = min(histUpper(i), q.Max)
			r++
		}
	}
	q.P50, q.P90, q.P99 = out[0], out[1], out[2]
	return q
}

// merge adds o's values to h; call it after every add to o has returned.
func (h *hist) merge(o *hist) {
	if o.n.Load() == 0 {
		return
	}
	for i := range o.counts {
		if c := o.counts[i].Load(); c > 0 {
			h.counts[i].Add(c)
		}
	}
	h.n.Add(o.n.Load())
	if m := o.max.Load(); m > h.max.Load() {
		h.max.Store(m)
	}
}
