package hostprobe

import (
	"container/heap"
	"math"
	"math/bits"

	"github.com/rlbench/rlbench/evidence"
)

// histogram counts non-negative values in log-linear buckets: every value
// below histExact has its own bucket; above, each power of two is split
// into histSub buckets, so a bucket's upper bound is at most 1/histSub
// above any value in it.
type histogram struct {
	counts [histBuckets]uint32
	n      uint64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // 128
	histExact   = 2 * histSub      // 256
	// histBuckets covers every int64: the largest value, MaxInt64, has
	// bits.Len64 = 63, so shift 63-(histSubBits+1) = 55.
	histBuckets = histExact + (63-histSubBits-1)*histSub
)

// bucketOf returns v's bucket.
func bucketOf(v uint64) int {
	if v < histExact {
		return int(v)
	}
	shift := bits.Len64(v) - (histSubBits + 1) // v>>shift is in [histSub, 2·histSub)
	return histExact + (shift-1)*histSub + int(v>>shift) - histSub
}

// bucketMax returns the largest value of bucket i.
func bucketMax(i int) uint64 {
	if i < histExact {
		return uint64(i)
	}
	shift := (i-histExact)/histSub + 1
	m := uint64((i-histExact)%histSub + histSub)
	return (m+1)<<shift - 1
}

// add counts v (negative values count as 0).
func (h *histogram) add(v int64) {
	h.counts[bucketOf(uint64(max(v, 0)))]++
	h.n++
}

// quantile returns the upper bound of the bucket holding the value of
// nearest rank ceil(q·n) (0 when empty): exact below histExact, else at most
// 1/histSub above the value.
func (h *histogram) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		if seen += uint64(c); seen >= rank {
			return int64(min(bucketMax(i), math.MaxInt64))
		}
	}
	return math.MaxInt64 // not reached: the counts sum to n
}

// stallHeap keeps the evidence.HarnessMaxStalls latest stalls offered: a
// min-heap whose root is the weakest kept (the least late, and of equally
// late ones the last offered), replaced only by a strictly later stall.
type stallHeap []evidence.HarnessStall

func (s stallHeap) Len() int { return len(s) }
func (s stallHeap) Less(i, j int) bool {
	return s[i].LateNs < s[j].LateNs || s[i].LateNs == s[j].LateNs && s[i].AtNs > s[j].AtNs
}
func (s stallHeap) Swap(i, j int) { s[i], s[j] = s[j], s[i] }
func (s *stallHeap) Push(x any)   { *s = append(*s, x.(evidence.HarnessStall)) }
func (s *stallHeap) Pop() any {
	old := *s
	x := old[len(old)-1]
	*s = old[:len(old)-1]
	return x
}

// offer keeps st if fewer than HarnessMaxStalls are kept or it is later
// than the weakest kept one, which it then replaces.
func (s *stallHeap) offer(st evidence.HarnessStall) {
	switch {
	case len(*s) < evidence.HarnessMaxStalls:
		heap.Push(s, st)
	case st.LateNs > (*s)[0].LateNs:
		(*s)[0] = st
		heap.Fix(s, 0)
	}
}
