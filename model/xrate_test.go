package model

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
	"pgregory.net/rapid"
)

// TestTokenBucketMatchesXTimeRate holds the token_bucket model against the
// limiter it describes: golang.org/x/time/rate Limiter.AllowN(t, 1) with
// injected times, one limiter per key, on generated schedules (bursts at
// one instant, arrivals on the refill grid k/rate, just before and after
// it, random gaps, idle gaps, a clock going back). Every request's
// decision must be the same: no tolerance.
func TestTokenBucketMatchesXTimeRate(t *testing.T) {
	admitted, denied := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		burst := rapid.IntRange(1, 20).Draw(t, "burst")
		r := rapid.SampledFrom([]float64{0, 0.5, 1, 3, 7, 10, 100, 1000, 2000, 1e6}).Draw(t, "rate")
		m := MustNew(Spec{Kind: KindTokenBucket, Capacity: float64(burst), RatePerSec: r})
		sim := m.NewSimulator(0)
		real := map[string]*rate.Limiter{}
		step := int64(time.Second)
		if r > 0 {
			step = int64(float64(time.Second) / r)
		}
		at := t0
		n := rapid.IntRange(1, 300).Draw(t, "n")
		for i := 0; i < n; i++ {
			switch rapid.IntRange(0, 6).Draw(t, "gap kind") {
			case 0: // same instant
			case 1: // on the refill grid
				at += step * rapid.Int64Range(1, 3).Draw(t, "steps")
			case 2: // a ns or two off the grid
				at += step + rapid.Int64Range(-2, 2).Draw(t, "ns off")
			case 3:
				at += rapid.Int64Range(0, 2*step).Draw(t, "random gap")
			case 4: // idle
				at += rapid.Int64Range(0, int64(time.Duration(burst+1)*time.Duration(step))).Draw(t, "idle")
			case 5: // the clock goes back a little
				at -= rapid.Int64Range(0, step).Draw(t, "back")
			case 6:
				at += rapid.Int64Range(0, 3).Draw(t, "ns")
			}
			key := rapid.SampledFrom([]string{"a", "a", "b"}).Draw(t, "key")
			lim := real[key]
			if lim == nil {
				lim = rate.NewLimiter(rate.Limit(r), burst)
				real[key] = lim
			}
			want := lim.AllowN(time.Unix(0, at), 1)
			got := sim.Offer(Request{At: at, Key: key})
			if got.Admit != want {
				t.Fatalf("rate %g burst %d, request %d (key %s at t0%+d ns): model %v, x/time/rate %v", r, burst, i, key, at-t0, got.Admit, want)
			}
			if want {
				admitted++
			} else {
				denied++
			}
		}
	})
	t.Logf("%d admitted, %d denied, all decided alike", admitted, denied)
	if admitted == 0 || denied == 0 {
		t.Errorf("admitted %d, denied %d: the schedules did not exercise both", admitted, denied)
	}
}
