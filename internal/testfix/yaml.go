package testfix

import (
	"fmt"
	"runtime"
	"strings"
)

// AliasBomb returns a "billion laughs" YAML fragment: mapping entries
// a0..a<levels> at the given indent, a0 a list of ten scalars and each next
// one a list of fan aliases of the previous, so that the fragment expands to
// more than 10*fan^levels nodes. With levels 8 and fan 10 it is under 1 KiB.
func AliasBomb(indent string, levels, fan int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sa0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", indent)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "%sa%d: &a%d [", indent, i, i)
		for j := 0; j < fan; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// Allocated returns the bytes f allocated (runtime.MemStats.TotalAlloc after
// minus before, after a GC). Allocations of other goroutines running at the
// same time are counted too, so use it for generous bounds only.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
