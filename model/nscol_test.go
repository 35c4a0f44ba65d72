package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNsColumnExact: every value read back equals the one added, for times
// in order, out of order by seconds, at the int64 extremes and mixed in one
// chunk, across chunk boundaries.
func TestNsColumnExact(t *testing.T) {
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
	var c nsColumn
	c.grow(100)
	for _, v := range want {
		c.add(v)
	}
	if c.len() != len(want) {
		t.Fatalf("len %d, want %d", c.len(), len(want))
	}
	for j, v := range want {
		if got := c.at(j); got != v {
			t.Fatalf("value %d: %d, want %d", j, got, v)
		}
	}
}

// FuzzNsColumn: any sequence of values reads back exactly.
func FuzzNsColumn(f *testing.F) {
	f.Add(int64(0), int64(1), uint16(3000))
	f.Add(int64(math.MaxInt64), int64(-1<<40), uint16(2050))
	f.Fuzz(func(t *testing.T, start, step int64, n uint16) {
		var c nsColumn
		v := start
		for range int(n) {
			c.add(v)
			v += step
		}
		v = start
		for j := range int(n) {
			if got := c.at(j); got != v {
				t.Fatalf("value %d: %d, want %d", j, got, v)
			}
			v += step
		}
	})
}
