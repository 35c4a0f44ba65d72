package nscol

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestColumnExact: every value read back equals the one added, for times
// in order, out of order by seconds, at the int64 extremes and mixed in one
// chunk, across chunk boundaries.
func TestColumnExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var want []int64
	t0 := int64(1_780_000_000_000_000_000)
	for i := range 5000 {
		want = append(want, t0+int64(i)*1000+r.Int64N(1000)) // in order, jittered
	}
	for range 3000 {
		want = append(want, t0+r.Int64N(60e9)-30e9) // ±30 s: many chunks wide
	}
	want = append(want, math.MinInt64, math.MaxInt64, 0, -1, math.MinInt64+1<<31, math.MinInt64+1<<31+1)
	for i := range 2100 {
		want = append(want, t0+int64(i)) // narrow again after wide chunks
	}
	var c Column
	c.Grow(100)
	for _, v := range want {
		c.Add(v)
	}
	if c.Len() != len(want) {
		t.Fatalf("len %d, want %d", c.Len(), len(want))
	}
	for j, v := range want {
		if got := c.At(j); got != v {
			t.Fatalf("value %d: %d, want %d", j, got, v)
		}
	}
}

// FuzzColumn: any sequence of values reads back exactly.
func FuzzColumn(f *testing.F) {
	f.Add(int64(0), int64(1), uint16(3000))
	f.Add(int64(math.MaxInt64), int64(-1<<40), uint16(2050))
	f.Fuzz(func(t *testing.T, start, step int64, n uint16) {
		var c Column
		v := start
		for range int(n) {
			c.Add(v)
			v += step
		}
		v = start
		for j := range int(n) {
			if got := c.At(j); got != v {
				t.Fatalf("value %d: %d, want %d", j, got, v)
			}
			v += step
		}
	})
}

// TestGrowThenAddAllocatesNothing: after Grow(n), n values in reach of
// their chunks' bases are added without an allocation.
func TestGrowThenAddAllocatesNothing(t *testing.T) {
	const n = 5000
	var c Column
	allocs := testing.AllocsPerRun(1, func() {
		c = Column{}
		c.Grow(n)
		for i := range n {
			c.Add(int64(1e18) + int64(i)*1000)
		}
	})
	if allocs > 2 { // Grow's two arrays
		t.Fatalf("%v allocations for Grow and %d adds, want 2", allocs, n)
	}
	if c.Len() != n || c.At(n-1) != int64(1e18)+(n-1)*1000 {
		t.Fatalf("len %d, last %d", c.Len(), c.At(n-1))
	}
	var got []int64
	for i, v := range c.All() {
		if v != c.At(i) {
			t.Fatalf("All: value %d is %d, At says %d", i, v, c.At(i))
		}
		got = append(got, v)
	}
	if len(got) != n || len(c.AppendTo(nil)) != n || c.AppendTo([]int64{7})[1] != int64(1e18) {
		t.Fatalf("All gave %d values, AppendTo %d", len(got), len(c.AppendTo(nil)))
	}
}
