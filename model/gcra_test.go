package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// luaGCRA replays go-redis/redis_rate's allowN script (lua.go, cost 1) in
// Lua's arithmetic (float64 seconds since 2017-01-01 on Redis' microsecond
// TIME), one key. It is the reference the model is held against without a
// Redis; the integration test holds both against the real script.
type luaGCRA struct {
	burst, rate int
	period      float64 // seconds, limit.Period.Seconds()
	tat         float64
	set         bool
	expireAtUs  int64 // the key's expiry: EX ceil(reset_after) from now
}

// allow runs the script at Redis TIME nowUs (unix µs). It returns the
// decision and how far (seconds) now was from the boundary now - allow_at.
func (l *luaGCRA) allow(nowUs int64) (bool, float64) {
	const jan2017 = 1483228800
	now := float64(nowUs/1e6-jan2017) + float64(nowUs%1e6)/1e6
	emission := l.period / float64(l.rate)
	increment := emission * 1
	burstOffset := emission * float64(l.burst)
	if l.set && nowUs >= l.expireAtUs { // Redis expired the key
		l.set = false
	}
	tat := now
	if l.set {
		tat = l.tat
	}
	tat = math.Max(tat, now)
	newTat := tat + increment
	allowAt := newTat - burstOffset
	diff := now - allowAt
	if diff/emission < 0 {
		return false, diff
	}
	if reset := newTat - now; reset > 0 {
		l.tat, l.set = newTat, true
		l.expireAtUs = nowUs + int64(math.Ceil(reset))*1e6
	}
	return true, diff
}

// TestGCRAMatchesRedisRateScript: on random schedules of Redis
// microsecond times, the simulator decides every request as redis_rate's
// script does, except where the script's float arithmetic puts now within
// 1 µs of the boundary (tol below; at most a few per schedule, and
// counted so that a wholesale drift would fail).
func TestGCRAMatchesRedisRateScript(t *testing.T) {
	const tol = 1e-6 // seconds: double seconds since 2017 round at ~6e-8
	boundary, total := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		spec := Spec{Kind: KindGCRA, RatePerPeriod: rapid.SampledFrom([]int{1, 3, 7, 10, 100, 1000}).Draw(t, "rate"),
			Period: Duration(rapid.SampledFrom([]time.Duration{time.Second, time.Minute, 250 * time.Millisecond}).Draw(t, "period")),
			Burst:  rapid.IntRange(1, 20).Draw(t, "burst")}
		sim := MustNew(spec).NewSimulator(0)
		lua := &luaGCRA{burst: spec.Burst, rate: spec.RatePerPeriod, period: time.Duration(spec.Period).Seconds()}
		T := time.Duration(spec.Period) / time.Duration(spec.RatePerPeriod)
		nowUs := t0 / 1000
		n := rapid.IntRange(1, 200).Draw(t, "n")
		for i := 0; i < n; i++ {
			switch rapid.IntRange(0, 3).Draw(t, "gap kind") {
			case 0: // same microsecond
			case 1: // around the emission interval
				nowUs += int64(T/time.Microsecond) + rapid.Int64Range(-3, 3).Draw(t, "jitter")
			case 2:
				nowUs += rapid.Int64Range(0, int64(T/time.Microsecond)).Draw(t, "gap")
			case 3: // idle long enough to expire the key, sometimes
				nowUs += rapid.Int64Range(0, int64(3*time.Duration(spec.Period)/time.Microsecond)).Draw(t, "idle")
			}
			want, diff := lua.allow(nowUs)
			got := sim.Offer(Request{At: nowUs * 1000, Key: "k"}).Admit
			total++
			if math.Abs(diff) < tol {
				boundary++
				if got != want { // the float rounding decided: keep the two states apart no longer
					t.Skipf("boundary request %d decided apart (diff %g s)", i, diff)
				}
				continue
			}
			if got != want {
				t.Fatalf("%+v request %d at %d µs: model %v, redis_rate's script %v (now - allow_at = %g s)", spec, i, nowUs, got, want, diff)
			}
		}
	})
	t.Logf("%d requests, %d within %g s of the boundary", total, boundary, tol)
	if boundary*2 > total {
		t.Errorf("%d of %d requests at the boundary: the comparison decided little", boundary, total)
	}
}

// gcraBruteMax is the most admissions a gcra of integer T·rate = period
// (tiny, in ns) lets into w consecutive ns ticks over every arrival
// schedule: a dynamic programme over the debt (1/rate ns), starting fresh
// (the least debt admits the most), choosing at each tick how many of the
// possible admissions to take.
func gcraBruteMax(rate, period, burst, w int64) int {
	best := map[int64]int{0: 0} // debt -> most admissions so far
	tau := burst * period
	for tick := int64(0); tick < w; tick++ {
		next := map[int64]int{}
		for x, n := range best {
			for k := 0; ; k++ { // k admissions at this tick, then the debt drains 1 ns
				d := max(x-rate, 0)
				if v, ok := next[d]; !ok || n+k > v {
					next[d] = n + k
				}
				if x+period > tau {
					break
				}
				x += period
			}
		}
		best = next
	}
	m := 0
	for _, n := range best {
		m = max(m, n)
	}
	return m
}

// TestPeakBoundGCRAExact: PeakBound is the exact most, not just a bound:
// it equals the brute-force maximum over every schedule on small
// parameters whenever (burst-1)·period >= rate-1 (then arrivals at
// ceil(k·T) after a burst never find the TAT behind them; every limit with
// T of 1 ns or more and burst >= 2 qualifies), and bounds it otherwise
// (with T below 1 ns, or burst 1 and a fractional T, integer-ns arrivals
// lose the fraction).
func TestPeakBoundGCRAExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := rapid.Int64Range(1, 5).Draw(t, "rate")
		period := rapid.Int64Range(1, 20).Draw(t, "period ns")
		burst := rapid.Int64Range(1, 4).Draw(t, "burst")
		w := rapid.Int64Range(1, 40).Draw(t, "window ns")
		m := MustNew(Spec{Kind: KindGCRA, RatePerPeriod: int(rate), Period: Duration(period), Burst: int(burst)})
		got, ok := PeakBound(m, time.Duration(w))
		want := gcraBruteMax(rate, period, burst, w)
		exact := (burst-1)*period >= rate-1
		if !ok || got < want || (exact && got != want) {
			t.Fatalf("rate %d per %d ns, burst %d, window %d ns: PeakBound %d %v, brute force %d", rate, period, burst, w, got, ok, want)
		}
	})
}

// TestGCRAIsTheTokenBucketOfItsBurst: the gcra admits what a token bucket
// of burst tokens at rate/period admits, on random ns schedules (where an
// exact tie, decided by the token bucket's float level, is rare enough
// never to occur with this seed).
func TestGCRAIsTheTokenBucketOfItsBurst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := 0; c < 200; c++ {
		rate := 1 + rng.IntN(20)
		period := time.Duration(1+rng.IntN(4)) * time.Second
		burst := 1 + rng.IntN(10)
		g := MustNew(Spec{Kind: KindGCRA, RatePerPeriod: rate, Period: Duration(period), Burst: burst}).NewSimulator(0)
		b := MustNew(Spec{Kind: KindTokenBucket, Capacity: float64(burst), RatePerSec: float64(rate) / period.Seconds()}).NewSimulator(0)
		T := int64(period) / int64(rate)
		at := t0
		for i := 0; i < 300; i++ {
			if rng.IntN(3) > 0 {
				at += rng.Int64N(2 * T)
			}
			r := Request{At: at, Key: "k"}
			if gd, bd := g.Offer(r), b.Offer(r); gd.Admit != bd.Admit {
				t.Fatalf("case %d (%d per %v, burst %d) request %d: gcra %v, token bucket %v", c, rate, period, burst, i, gd.Admit, bd.Admit)
			}
		}
	}
}

// TestGCRASimulatorEdges: a fresh key admits burst at one instant, the
// next request passes T later and not 1ns before, a denial changes
// nothing, keys are apart, and a clock going back keeps the TAT.
func TestGCRASimulatorEdges(t *testing.T) {
	m := MustNew(Spec{Kind: KindGCRA, RatePerPeriod: 10, Period: Duration(time.Second), Burst: 3})
	s := m.NewSimulator(0)
	T := int64(100 * time.Millisecond)
	for i := 0; i < 3; i++ {
		if !s.Offer(Request{At: t0, Key: "a"}).Admit {
			t.Fatalf("burst request %d denied", i)
		}
	}
	if d := s.Offer(Request{At: t0, Key: "a"}); d.Admit || d.By != "gcra" {
		t.Fatalf("4th at once: %+v", d)
	}
	if !s.Offer(Request{At: t0, Key: "b"}).Admit {
		t.Fatal("key b shares a's TAT")
	}
	for i := 0; i < 5; i++ { // denials at T-1ns change nothing
		if s.Offer(Request{At: t0 + T - 1, Key: "a"}).Admit {
			t.Fatal("passed 1ns before the emission interval")
		}
	}
	if !s.Offer(Request{At: t0 + T, Key: "a"}).Admit {
		t.Fatal("denied at T")
	}
	if s.Offer(Request{At: t0, Key: "a"}).Admit {
		t.Fatal("the clock went back and the TAT moved back with it")
	}
	// after an idle period of burst × T the key is full again
	for i := 0; i < 3; i++ {
		if !s.Offer(Request{At: t0 + T + 4*T, Key: "a"}).Admit {
			t.Fatalf("after idle, burst request %d denied", i)
		}
	}
}

// TestGCRAViolationExplained: an admission past the tolerance and a
// denial with room are found and explained in GCRA terms.
func TestGCRAViolationExplained(t *testing.T) {
	m := MustNew(Spec{Kind: KindGCRA, RatePerPeriod: 10, Period: Duration(time.Second), Burst: 2})
	ms := int64(time.Millisecond)
	ev := func(id string, at int64, o Outcome) tEvent {
		return tEvent{ID: id, Key: "k", Lo: t0 + at, Hi: t0 + at + ms, Outcome: o}
	}
	res, err := Check(m, mk([]tEvent{
		ev("a", 0, Admitted), ev("b", 2*ms, Admitted), ev("c", 4*ms, Admitted), // c: TAT - t = 196ms > τ - T = 100ms
		ev("d", 500*ms, Rejected), // idle 500ms: TAT - t = 0
	}), Options{NoTimingReport: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Over) != 1 || res.Over[0].ID != "c" {
		t.Fatalf("over %+v, want c", res.Over)
	}
	why := res.Over[0].Why
	for _, want := range []string{"GCRA 10 per 1s, burst 2 (T=100ms, τ=200ms)", "TAT - arrival at least", "at most τ - T = 100ms passes"} {
		if !strings.Contains(why, want) {
			t.Errorf("over: %q lacks %q", why, want)
		}
	}
	if len(res.Under) != 1 || res.Under[0].ID != "d" || !strings.Contains(res.Under[0].Why, "TAT - arrival at most 0s") {
		t.Fatalf("under %+v, want d with TAT - arrival at most 0s", res.Under)
	}
	if v, _ := res.Validity(); v != Invalid {
		t.Errorf("validity %v", v)
	}
}

// TestGCRAExtremeTimes: times whose difference overflows int64 neither
// wrap nor panic: far back is refused (the TAT stays ahead), far ahead
// finds the key full.
func TestGCRAExtremeTimes(t *testing.T) {
	s := MustNew(Spec{Kind: KindGCRA, RatePerPeriod: 3, Period: Duration(time.Second), Burst: 1}).NewSimulator(0)
	if !s.Offer(Request{At: math.MaxInt64 / 2, Key: "k"}).Admit {
		t.Fatal("first request refused")
	}
	if s.Offer(Request{At: math.MinInt64, Key: "k"}).Admit {
		t.Fatal("a time far back passed: the elapsed time wrapped")
	}
	if !s.Offer(Request{At: math.MaxInt64, Key: "k"}).Admit {
		t.Fatal("a time far ahead refused")
	}
	if s.Offer(Request{At: math.MaxInt64, Key: "k"}).Admit {
		t.Fatal("burst 1 admitted twice at one instant")
	}
}
