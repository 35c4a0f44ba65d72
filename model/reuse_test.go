package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMinTreeInReusedArrays checks that a tree built in a used tree's
// arrays (newMinTreeIn) answers as one built fresh, after the used tree
// took range adds (its pending adds must not leak into the new one).
func TestMinTreeInReusedArrays(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for _, n := range []int{1, 5, 8, 100} {
		for _, m := range []int{1, n / 2, n} {
			m = max(m, 1)
			old := newMinTreeOf(n, func(int) float64 { return float64(rng.IntN(50)) })
			for range 50 {
				old.add(0, rng.IntN(n+1), -1)
			}
			vals := make([]float64, m)
			for i := range vals {
				vals[i] = float64(rng.IntN(50))
			}
			fresh := newMinTree(vals)
			reused := newMinTreeIn(old, m, func(i int) float64 { return vals[i] })
			for op := range 200 {
				l, r := rng.IntN(m+1), rng.IntN(m+1)
				if l > r {
					l, r = r, l
				}
				if op%2 == 0 && l < r {
					fresh.add(l, r, -1)
					reused.add(l, r, -1)
				}
				if l < r {
					if a, b := fresh.min(l, r), reused.min(l, r); a != b {
						t.Fatalf("n %d m %d op %d: min(%d, %d) = %v reused, %v fresh", n, m, op, l, r, b, a)
					}
				}
			}
		}
	}
}

// TestOrderByInReusedBuffer checks that an order built in a used buffer is
// the order built fresh.
func TestOrderByInReusedBuffer(t *testing.T) {
	v := []int64{5, 3, 5, 1, 3, 9}
	buf := []int32{9, 9, 9, 9, 9, 9, 9}
	if got, want := orderByIn(buf, v), orderBy(v); !slices.Equal(got, want) {
		t.Fatalf("orderByIn = %v, orderBy = %v", got, want)
	}
	key := func(i int32) int64 { return -v[i] }
	if got, want := orderByKeyIn(buf, len(v), key), orderByKey(len(v), key); !slices.Equal(got, want) {
		t.Fatalf("orderByKeyIn = %v, orderByKey = %v", got, want)
	}
}

// TestQuantiles checks the largest, median and 99th percentile against a
// sorted copy, for values that fit an int32 and values that do not.
func TestQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, big := range []bool{false, true} {
		for _, n := range []int{1, 2, 3, 100, 1001} {
			vs := make([]int64, n)
			for i := range vs {
				vs[i] = rng.Int64N(1 << 30)
				if big && i == n/2 {
					vs[i] = math.MaxInt32 + 1 + rng.Int64N(1<<40)
				}
			}
			mx, med, p99 := Quantiles(n, slices.Values(vs))
			s := slices.Sorted(slices.Values(vs))
			if mx != s[n-1] || med != s[n/2] || p99 != s[min(n-1, n*99/100)] {
				t.Fatalf("big %v n %d: got %d %d %d, want %d %d %d", big, n, mx, med, p99, s[n-1], s[n/2], s[min(n-1, n*99/100)])
			}
		}
	}
}

// TestEventsReqIdentityThenNot checks Events' Req column: nil while every
// Req is its index, every Req kept once one is not.
func TestEventsReqIdentityThenNot(t *testing.T) {
	var evs Events
	for j := range 3 {
		evs.Add(Event{Req: int32(j), Lo: 1, Hi: 2})
	}
	if evs.req != nil {
		t.Fatalf("req column allocated for identity Reqs: %v", evs.req)
	}
	evs.Add(Event{Req: -5, Lo: 1, Hi: 2})
	evs.Add(Event{Req: 4, Lo: 1, Hi: 2})
	want := []int32{0, 1, 2, -5, 4}
	if evs.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", evs.Len(), len(want))
	}
	for j, r := range want {
		if got := evs.At(j).Req; got != r {
			t.Fatalf("event %d: Req %d, want %d", j, got, r)
		}
	}
}
