package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refTree is minTree's range add and minimum as they were written before
// the branch-free right edge (the textbook loops, one apply per node): the
// reference whose every bit the tree must keep, since the checker's
// decisions and reports read the tree's rounded sums.
type refTree struct {
	n    int
	t, d []float64
}

func newRefTree(vals []float64) *refTree {
	n := max(len(vals), 1)
	m := &refTree{n: n, t: make([]float64, 2*n), d: make([]float64, n)}
	for i := range m.t[n:] {
		m.t[n+i] = math.Inf(1)
	}
	copy(m.t[n:], vals)
	for i := n - 1; i > 0; i-- {
		m.t[i] = fmin(m.t[2*i], m.t[2*i+1])
	}
	return m
}

func (m *refTree) apply(p int, v float64) {
	m.t[p] += v
	if p < m.n {
		m.d[p] += v
	}
}

func (m *refTree) build(p int) {
	for p > 1 {
		p >>= 1
		m.t[p] = fmin(m.t[2*p], m.t[2*p+1]) + m.d[p]
	}
}

func (m *refTree) add(l, r int, v float64) {
	if l >= r {
		return
	}
	l += m.n
	r += m.n
	l0, r0 := l, r
	for ; l < r; l, r = l>>1, r>>1 {
		if l&1 == 1 {
			m.apply(l, v)
			l++
		}
		if r&1 == 1 {
			r--
			m.apply(r, v)
		}
	}
	if l0 != m.n {
		m.build(l0)
	}
	m.build(r0 - 1)
}

func (m *refTree) min(l, r int) float64 {
	if l >= r {
		return math.Inf(1)
	}
	l += m.n
	r += m.n
	resL, resR := math.Inf(1), math.Inf(1)
	for l < r {
		if l&1 == 1 {
			resL = fmin(resL, m.t[l])
			l++
		}
		if r&1 == 1 {
			r--
			resR = fmin(resR, m.t[r])
		}
		l >>= 1
		r >>= 1
		resL += m.d[l-1]
		if r < m.n {
			resR += m.d[r]
		}
	}
	for p := (l - 1) >> 1; p > 0; p >>= 1 {
		resL += m.d[p]
	}
	for p := r >> 1; p > 0; p >>= 1 {
		resR += m.d[p]
	}
	return fmin(resL, resR)
}

// TestMinTreeBitsAsReference runs the same range adds and minima on the
// tree and on refTree and requires the same bits of every node, pending
// add and minimum after each: values whose sums round (as the token
// bucket's -cumBefore), signed zeros, which the branch-free edges must
// leave as they are, and the infinities of an empty tree; prefix and
// general ranges; sizes that are and are not powers of two.
func TestMinTreeBitsAsReference(t *testing.T) {
	negZ := math.Copysign(0, -1)
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 77))
		for k, n := range []int{1, 2, 3, 5, 7, 8, 13, 64, 100, 1000, 1025, 2, 3, 6, 9, 33} {
			zeros := k >= 11 // values and adds of both zeros, whose minima differ in sign only
			vals := make([]float64, n)
			for i := range vals {
				switch rng.IntN(8) {
				case 3, 4, 5, 6, 7:
					if zeros {
						vals[i] = []float64{0, negZ}[rng.IntN(2)]
						break
					}
					vals[i] = -0.0004 * float64(rng.Int64N(2e9)) * float64(1+rng.IntN(3))
				case 0:
					vals[i] = 0
				case 1:
					vals[i] = negZ
				case 2:
					vals[i] = float64(rng.IntN(5) - 2)
				}
			}
			tr, ref := newMinTree(vals), newRefTree(vals)
			for op := range 3000 {
				l, r := rng.IntN(n+1), rng.IntN(n+1)
				if l > r {
					l, r = r, l
				}
				if rng.IntN(3) > 0 {
					l = 0
				}
				if rng.IntN(2) == 0 {
					v := []float64{-1, -1000, 1, 0, negZ, -0.8, 0.4, -rng.Float64() * 3}[rng.IntN(8)]
					if zeros {
						v = []float64{0, negZ, 0, negZ, 1, -1}[rng.IntN(6)]
					}
					tr.add(l, r, v)
					ref.add(l, r, v)
				} else if got, want := tr.min(l, r), ref.min(l, r); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("seed %d n=%d op %d: min(%d, %d) = %v (%#x), reference %v (%#x)", seed, n, op, l, r,
						got, math.Float64bits(got), want, math.Float64bits(want))
				}
				tr.flush() // the pending prefix adds, applied as min would
				for p := range tr.t {
					if math.Float64bits(tr.t[p]) != math.Float64bits(ref.t[p]) || p < n && math.Float64bits(tr.d[p]) != math.Float64bits(ref.d[p]) {
						t.Fatalf("seed %d n=%d op %d: node %d holds %v/%v, reference %v/%v", seed, n, op, p, tr.t[p], tr.d[p%n], ref.t[p], ref.d[p%n])
					}
				}
			}
		}
	}
	empty := newMinTree(nil)
	if m := empty.min(0, 1); !math.IsInf(m, 1) {
		t.Fatalf("empty tree: min %v", m)
	}
}

// TestFminFast holds fminFast to fmin, bit for bit, on every pair of a
// set of operands covering each class: signed zeros, subnormals, the
// infinities, NaN, equal and unequal numbers of either sign.
func TestFminFast(t *testing.T) {
	ops := []float64{0, math.Copysign(0, -1), 5e-324, -5e-324, 1, -1, 0.9996, math.Nextafter(0.9996, 2), 4e5, -4e5,
		math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	for _, a := range ops {
		for _, b := range ops {
			if got, want := fminFast(a, b), fmin(a, b); math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("fminFast(%v, %v) = %v (%#x), fmin %v (%#x)", a, b, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
}
