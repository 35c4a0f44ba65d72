package model

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestEarliestForwardsNginx: limit_req's delays for the shapes of issue 21
// (six at one instant behind burst=5 without nodelay: one at once, then one
// per 10 ms), delay=N, a drained bucket, and the kinds that do not queue.
func TestEarliestForwardsNginx(t *testing.T) {
	ms := int64(time.Millisecond)
	at := func(msOf ...int64) []Request {
		var out []Request
		for _, m := range msOf {
			out = append(out, Request{At: m*ms + 123_456, Key: "nginx-a"})
		}
		return out
	}
	for _, c := range []struct {
		spec Spec
		reqs []Request
		want []int64 // ms
		ok   bool
	}{
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 5}, at(0, 0, 0, 0, 0, 0), []int64{0, 10, 20, 30, 40, 50}, true},
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 5, Delay: 2}, at(0, 0, 0, 0, 0, 0), []int64{0, 0, 0, 10, 20, 30}, true},
		// 25 ms later the first request's excess (0) has drained: no delay
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 5}, at(0, 0, 25), []int64{0, 10, 25}, true},
		// excess 1000 at 0 ms leaks 100 per ms: 400 left at 6 ms, +1000 = 1400 → 14 ms
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 5}, at(0, 0, 6), []int64{0, 10, 20}, true},
		// the replay admits what nginx let through, even beyond burst (its clock decided later)
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 1}, at(0, 0, 0), []int64{0, 10, 20}, true},
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 5, NoDelay: true}, at(0, 0, 0), []int64{0, 0, 0}, true},
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 5, Delay: 5}, at(0, 0, 0), []int64{0, 0, 0}, true},
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 5, DryRun: true}, at(0, 0, 0), []int64{0, 0, 0}, true},
		{Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: 1}, at(0, 0, 0), []int64{0, 0, 0}, true},
		{Spec{Kind: KindNginxLimitReq, Zones: []NginxZone{{Name: "a", Rate: "100r/s", Burst: 5}, {Name: "b", Rate: "10r/s", Burst: 5, NoDelay: true}}},
			at(0, 0, 0), nil, false},
	} {
		got, ok := EarliestForwards(MustNew(c.spec), c.reqs)
		if ok != c.ok {
			t.Errorf("%+v: ok %v", c.spec, ok)
			continue
		}
		if !ok {
			continue
		}
		var gotMs []int64
		for i, g := range got {
			gotMs = append(gotMs, g/ms)
			if c.spec.Kind == KindTokenBucket || c.spec.NoDelay || c.spec.DryRun || c.spec.Delay >= c.spec.Burst {
				if g != c.reqs[i].At {
					t.Errorf("%+v: %d, want At %d", c.spec, g, c.reqs[i].At)
				}
			} else if g != c.reqs[i].At && g%ms != 0 {
				t.Errorf("%+v: %d is neither At nor on nginx's millisecond clock", c.spec, g)
			}
		}
		if fmt.Sprint(gotMs) != fmt.Sprint(c.want) {
			t.Errorf("%+v: %v ms, want %v", c.spec, gotMs, c.want)
		}
	}
	// Two keys have their own nodes.
	reqs := append(at(0, 0), Request{At: 0, Key: "nginx-b"})
	if got, _ := EarliestForwards(MustNew(Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 5}), reqs); got[2] != 0 || got[1] != 10*ms {
		t.Errorf("keys: %v", got)
	}
}

func drawNginxSpec(t *rapid.T) Spec {
	s := Spec{Kind: KindNginxLimitReq, Rate: rapid.SampledFrom([]string{"1r/s", "7r/s", "100r/s", "1000r/s", "30r/m", "1r/m", "7r/m"}).Draw(t, "rate"),
		Burst: rapid.IntRange(0, 8).Draw(t, "burst")}
	if rapid.Bool().Draw(t, "with delay") {
		s.Delay = rapid.IntRange(1, 6).Draw(t, "delay")
	}
	return s
}

func drawArrivals(t *rapid.T, keys int) []Request {
	n := rapid.IntRange(1, 40).Draw(t, "n")
	var out []Request
	at := int64(0)
	for i := range n {
		gap := rapid.Int64Range(0, 30_000_000).Draw(t, fmt.Sprintf("gap %d", i))
		if rapid.IntRange(0, 9).Draw(t, fmt.Sprintf("long gap %d", i)) == 0 {
			gap *= 3000 // up to 90 s: drained nodes, freed ones
		}
		at += gap
		out = append(out, Request{At: at, Key: fmt.Sprint(rapid.IntRange(0, keys-1).Draw(t, fmt.Sprintf("key %d", i)))})
	}
	return out
}

// TestEarliestForwardsBoundNginx: on the times nginx decided, the earliest
// forwards are what the exact simulator forwards (whole requests per second
// leak exactly, and no node idled long enough to be freed) or earlier (nginx
// truncates the leak per step), for the requests it admits.
func TestEarliestForwardsBoundNginx(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawNginxSpec(t)
		m := MustNew(s)
		reqs := drawArrivals(t, 2)
		ds := Simulate(m, reqs, 1)
		var admitted []Request
		var fwd []int64
		for i, d := range ds {
			if d.Admit {
				admitted = append(admitted, reqs[i])
				fwd = append(fwd, max(reqs[i].At, floorDiv(reqs[i].At, int64(time.Millisecond))*int64(time.Millisecond)+int64(d.Delay)))
			}
		}
		got, ok := EarliestForwards(m, admitted)
		if !ok {
			t.Fatal("one zone: not ok")
		}
		// whole requests per second leak exactly; a node idle for 1 s may be freed
		exact := s.Rate[len(s.Rate)-3:] == "r/s"
		last := map[string]int64{}
		for _, r := range admitted {
			if l, ok := last[r.Key]; ok && r.At-l >= int64(time.Second)-int64(time.Millisecond) {
				exact = false
			}
			last[r.Key] = r.At
		}
		for i := range got {
			if got[i] > fwd[i] || exact && got[i] != fwd[i] {
				t.Fatalf("request %d at %d: earliest %d, simulator %d", i, admitted[i].At, got[i], fwd[i])
			}
		}
	})
}

// TestEarliestForwardsMonotone: arrivals that reach nginx later (a decision
// after the request's creation) never make the k-th earliest forward of a
// key earlier: the sorted earliest forwards at the creation times are lower
// bounds of those at the decision times.
func TestEarliestForwardsMonotone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := MustNew(drawNginxSpec(t))
		early := drawArrivals(t, 1)
		late := slices.Clone(early)
		for i := range late {
			late[i].At += rapid.Int64Range(0, 40_000_000).Draw(t, fmt.Sprintf("late %d", i))
		}
		a, _ := EarliestForwards(m, early)
		b, _ := EarliestForwards(m, late)
		slices.Sort(a)
		slices.Sort(b)
		for k := range a {
			if a[k] > b[k] {
				t.Fatalf("k=%d: %d at the creation times, %d at the later decisions (%v / %v)", k, a[k], b[k], a, b)
			}
		}
	})
}
