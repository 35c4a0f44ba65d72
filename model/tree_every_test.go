package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMinTreeEveryPrefix checks every prefix minimum after each add (most
// of them prefix adds, which update and read one path only) at every size
// up to 70 and two past a power of two: a bottom-up tree's shape depends
// on the size's bits.
func TestMinTreeEveryPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range append(seq(1, 70), 1023, 1025) {
		for trial := 0; trial < 2; trial++ {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64(rng.IntN(50))
			}
			tr := newMinTree(vals)
			for op := 0; op < min(3*n, 40); op++ {
				a := rng.IntN(n + 1)
				l := 0
				if rng.IntN(3) == 0 {
					l = rng.IntN(a + 1)
				}
				v := float64(rng.IntN(11) - 5)
				tr.add(l, a, v)
				for i := l; i < a; i++ {
					vals[i] += v
				}
				for q := 0; q <= n; q++ {
					want := math.Inf(1)
					for i := 0; i < q; i++ {
						want = math.Min(want, vals[i])
					}
					if got := tr.min(0, q); got != want {
						t.Fatalf("n=%d: min(0,%d)=%v want %v", n, q, got, want)
					}
				}
			}
		}
	}
}

func seq(a, b int) []int {
	var s []int
	for i := a; i <= b; i++ {
		s = append(s, i)
	}
	return s
}
