package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMinTreeAgainstArray checks the tree's range adds, sets and range
// minima (prefix and general ranges, which take different paths) against a
// plain array, at sizes that are and are not powers of two.
func TestMinTreeAgainstArray(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 2))
		for _, n := range []int{1, 2, 3, 5, 6, 7, 8, 9, 13, 31, 33, 64, 100, 1000} {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64(rng.IntN(100))
			}
			tr := newMinTree(vals)
			for op := range 4000 {
				l, r := rng.IntN(n+1), rng.IntN(n+1)
				if l > r {
					l, r = r, l
				}
				if rng.IntN(2) == 0 { // prefix ranges are most of the model's
					l = 0
				}
				switch rng.IntN(4) {
				case 0, 1:
					v := float64(rng.IntN(21) - 10)
					tr.add(l, r, v)
					for i := l; i < r; i++ {
						vals[i] += v
					}
				case 2:
					want := math.Inf(1)
					for i := l; i < r; i++ {
						want = math.Min(want, vals[i])
					}
					if got := tr.min(l, r); got != want {
						t.Fatalf("n=%d op %d: min(%d, %d) = %v, want %v", n, op, l, r, got, want)
					}
				case 3:
					if n > 0 {
						i := rng.IntN(n)
						v := float64(rng.IntN(100))
						tr.set(i, v)
						vals[i] = v
					}
				}
				if i := rng.IntN(n); tr.at(i) != vals[i] {
					t.Fatalf("n=%d op %d: at(%d) = %v, want %v", n, op, i, tr.at(i), vals[i])
				}
			}
		}
	}
}

// TestMinTreeFloor checks that floor is at most every range minimum the
// tree returns and ceil at least every prefix minimum it answers for, with fractional values whose sums round (values of mixed
// signs and magnitudes, many adds on the same nodes), and that it is not
// vacuous: within the adds it may fall behind (floorEvery of at most 3.1)
// and a token of the true minimum here.
func TestMinTreeFloor(t *testing.T) {
	ceils := 0
	defer func() {
		if ceils == 0 {
			t.Error("ceil never answered")
		}
	}()
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 9))
		for _, n := range []int{1, 2, 3, 7, 33, 1000} {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = -float64(i)*1234.567 + rng.Float64()*1e6 - 5e5
			}
			tr := newMinTree(vals)
			for op := range 5000 {
				l, r := rng.IntN(n+1), rng.IntN(n+1)
				if l > r {
					l, r = r, l
				}
				if rng.IntN(2) == 0 {
					l = 0
				}
				if rng.IntN(3) > 0 {
					tr.add(l, r, -rng.Float64()*3.1)
				} else if n > 0 {
					tr.set(rng.IntN(n), rng.Float64()*1e3)
				}
				f := tr.floor()
				if lo, hi := 0, n; lo < hi {
					if m := tr.min(lo, hi); f > m || m-f > floorEvery*3.1+1 {
						t.Fatalf("n=%d op %d: floor %v, min of all %v", n, op, f, m)
					}
				}
				if l < r {
					if m := tr.min(l, r); f > m {
						t.Fatalf("n=%d op %d: floor %v above min(%d, %d) = %v", n, op, f, l, r, m)
					}
				}
				pr := rng.IntN(n) + 1
				c, ok := tr.ceil(pr)
				if m := tr.min(0, pr); ok && c < m {
					t.Fatalf("n=%d op %d: ceil(%d) %v below min(0, %d) = %v", n, op, pr, c, pr, m)
				}
				if ok {
					ceils++
				}
			}
		}
	}
}

// BenchmarkMinTreePrefix is the model's use of the tree: prefix adds and
// prefix minima at increasing positions over a million values.
func BenchmarkMinTreePrefix(b *testing.B) {
	const n = 1 << 20
	tr := newMinTreeOf(n, func(i int) float64 { return -float64(i) })
	rng := rand.New(rand.NewPCG(3, 4))
	for b.Loop() {
		for i := 0; i < n; i += 16 {
			a := min(n, i+rng.IntN(64))
			tr.add(0, a, -1)
			_ = tr.min(0, a)
		}
	}
}

// TestCursorIsUpperBound checks the galloping cursor against upperBound for
// queries near and far from the last one, duplicates and values outside
// the slice.
func TestCursorIsUpperBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
		a := make([]int64, n)
		for i := range a {
			a[i] = int64(rng.IntN(n/2 + 1))
		}
		slices.Sort(a)
		var c cursor
		x := int64(0)
		for q := range 5000 {
			switch rng.IntN(3) {
			case 0:
				x = int64(rng.IntN(n+3)) - 1
			default:
				x += int64(rng.IntN(5)) - 2
			}
			if got, want := c.upper(a, x), upperBound(a, x); got != want {
				t.Fatalf("n=%d query %d: cursor upper(%d) = %d, upperBound %d", n, q, x, got, want)
			}
		}
	}
}

// TestMinTreeFloorTo checks that floorTo(r) is at most every minimum of a
// range inside [0, r) the tree returns, on a sweep's shape (nonincreasing
// initial values with fractional parts, so that sums round; prefix adds
// of v <= 0 at positions that mostly rise; prefix minima now and then),
// with a non-prefix or positive add or a set now and then in some runs
// (general: no tail), and that its tail is used, and then not vacuous:
// within the adds since and the spread of the initial values of a
// position's neighbours of the true minimum.
func TestMinTreeFloorTo(t *testing.T) {
	tails := 0
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 17))
		for _, n := range []int{1, 2, 3, 7, 33, 1000} {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = 1e7 - float64(i)*1234.567 - rng.Float64()*0.3
			}
			tr := newMinTree(vals)
			pos := 0
			for op := range 3000 {
				pos = min(n, max(0, pos+rng.IntN(5)-1))
				switch k := rng.IntN(200); {
				case seed == 3 && k == 0:
					tr.add(rng.IntN(n), n, -rng.Float64()) // not a prefix
				case seed == 3 && k == 1:
					tr.add(0, rng.IntN(n+1), rng.Float64()) // raises
				case seed == 3 && k == 2:
					tr.set(rng.IntN(n), vals[n-1]-rng.Float64()*1e3)
				case k < 20:
					tr.min(0, rng.IntN(n)+1) // a new prefix minimum
				default:
					tr.add(0, pos, -rng.Float64()*3.1)
				}
				r := rng.IntN(n) + 1
				f := tr.floorTo(r, vals[r-1], math.Inf(-1))
				used := tr.tailOK && r > tr.pfR
				l := rng.IntN(r)
				if m := tr.min(l, r); f > m {
					t.Fatalf("seed %d n=%d op %d: floorTo(%d) %v above min(%d, %d) = %v", seed, n, op, r, f, l, r, m)
				} else if used && !tr.general {
					tails++
					if m-f > 3.1*float64(tr.adds)+1234.567*float64(r)+1 {
						t.Fatalf("seed %d n=%d op %d: floorTo(%d) %v far below min = %v", seed, n, op, r, f, m)
					}
				}
			}
		}
	}
	if tails == 0 {
		t.Error("floorTo never used its tail")
	}
}

// TestMinTreeCeilAfterAdds holds ceil to min (on a copy of the tree, so
// the last prefix minimum stays the one ceil starts from) after runs of
// adds between minima: prefix adds that cover the last prefix (which
// lower its minimum by their |v|, preDrop), prefix adds that do not, and
// ranges inside; and checks that a run of covering adds alone leaves
// ceil within the rounding bound of the minimum.
func TestMinTreeCeilAfterAdds(t *testing.T) {
	dropped := 0
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 21))
		for _, n := range []int{1, 2, 5, 64, 1000, 4097} {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = -float64(i)*0.8 + rng.Float64()*3 - 1e5*float64(seed)
			}
			tr := newMinTree(vals)
			for op := range 3000 {
				if rng.IntN(8) == 0 || !tr.preOK {
					_ = tr.min(0, rng.IntN(n)+1)
					continue
				}
				v := -[]float64{1, 1, 1000, rng.Float64() * 3}[rng.IntN(4)]
				covering := rng.IntN(4) > 0
				switch {
				case covering:
					tr.add(0, tr.preR+rng.IntN(n-tr.preR+1), v)
				case rng.IntN(2) == 0:
					tr.add(0, rng.IntN(n+1), v)
				default:
					l := rng.IntN(n + 1)
					tr.add(l, l+rng.IntN(n-l+1), v)
				}
				pr := tr.preR + rng.IntN(n-tr.preR+1)
				c, ok := tr.ceil(pr)
				if !ok {
					continue
				}
				cp := &minTree{n: tr.n, h: tr.h, t: slices.Clone(tr.t), d: slices.Clone(tr.d), pend: slices.Clone(tr.pend), pendV: tr.pendV}
				m := cp.min(0, pr)
				if c < m {
					t.Fatalf("seed %d n=%d op %d: ceil(%d) %v below min(0, %d) = %v (pre %v, preDrop %v)", seed, n, op, pr, c, pr, m, tr.pre, tr.preDrop)
				}
				if tr.preDrop != 0 {
					dropped++
				}
			}
		}
	}
	if dropped == 0 {
		t.Error("ceil never answered after covering adds")
	}
	// covering adds alone: the minimum falls by their sum, and ceil with it
	vals := make([]float64, 1000)
	for i := range vals {
		vals[i] = -float64(i) * 0.8
	}
	tr := newMinTree(vals)
	_ = tr.min(0, 500)
	for k := range 400 {
		tr.add(0, 500+k, -1)
	}
	c, ok := tr.ceil(900)
	if m := tr.min(0, 900); !ok || c < m || c-m > 1e-6 {
		t.Errorf("after 400 covering adds: ceil %v (%v), min %v", c, ok, m)
	}
}
