package attack

import "math"

// fdInfo is the process's descriptor budget as fdLimits found it.
type fdInfo struct {
	limit uint64 // soft RLIMIT_NOFILE; 0 = unknown
	open  int    // descriptors open when Run started
}

// free is how many more descriptors the process may open, less fdMargin.
func (f fdInfo) free() int {
	if f.limit == 0 {
		return math.MaxInt32
	}
	lim := min(f.limit, math.MaxInt32)
	return max(0, int(lim)-f.open-fdMargin)
}

// capacity is the default cap on workers: half of free (package doc,
// "Descriptors"), at least 1; 0 when the limit is unknown.
func (f fdInfo) capacity() int {
	if f.limit == 0 {
		return 0
	}
	return max(1, f.free()/2)
}
