package model

import (
	"math"
	"math/bits"
	"time"
)

// PeakAt is PeakCount with the place of the peak: the largest number of
// times (sorted, unix ns) in any half-open window [t, t+window), and the
// first time of the first such window (0 when times is empty). It is
// O(len(times)): one pass with two indexes.
func PeakAt(times []int64, window time.Duration) (peak int, at int64) {
	j := 0
	for i := range times {
		for times[i]-times[j] >= int64(window) {
			j++
		}
		if n := i - j + 1; n > peak {
			peak, at = n, times[j]
		}
	}
	return peak, at
}

// PeakBound returns the most requests one state of the limiter (one key:
// one bucket, one counter, one nginx node) lets through within any
// half-open window of the given length, over every arrival schedule; for a
// leaky bucket "lets through" is when it forwards (after the delay). ok is
// false when the model gives no such bound: a limiter that does not enforce
// (nginx dry run, shadow mode, unlimited, Envoy filter_enabled or
// filter_enforced below 100 %), Envoy descriptors, several nginx zones
// that delay, and the epoch sliding counter (which admits up to twice its
// limit across a window edge, but its bound is not derived here).
//
//   - nginx_limit_req (one zone; ngx_http_limit_req_module.c): a new key
//     admits burst+1 at one instant and the excess leaks rate*ms/1000
//     milli-requests per ms, so the forwards in a window spanning S ms of
//     nginx's clock (S = ceil(window/1ms): the cached clock truncates) are at
//     most min(burst, delay)+1 + floor(rate*S/1000) requests, delay being
//     delay=N, 0 without nodelay (the bucket forwards at its rate) and burst
//     with nodelay. Without nodelay, 100r/s over 10 ms gives 2: rate × 10 ms
//   - 1. Several zones that all have nodelay give the least of their bounds.
//   - token_bucket: floor(capacity + rate × window).
//   - envoy_local without descriptors: max_tokens plus the refill in the
//     window: tokens_per_fill × window / fill_interval rounded down (1.31+,
//     continuous), or tokens_per_fill × ceil(window / fill_interval) timer
//     ticks (1.30 and before).
//   - fixed_window: limit × the windows a span of that length touches,
//     ceil(window/unit) + 1.
//   - sliding_log: limit × ceil(window / its window).
//   - gcra: burst + floor((window - 1ns) / T), T = period/rate_per_period:
//     n admissions span at least (n - burst)·T, and two integer-ns times
//     in a half-open window are at most window - 1ns apart. Arrivals at
//     ceil(k·T) after a burst reach it whenever (burst-1)·period >=
//     rate_per_period-1 (in ns; any T of 1 ns or more with burst >= 2).
//   - sliding_counter with align freq_ctr (HAProxy): limit × the periods a
//     span of that length touches, ceil(ceil(window/1ms) / period) + 1:
//     freq_ctr counts every request, so a period admits at most limit, and
//     its periods do not overlap (src/freq_ctr.c; an odd period counts one ms
//     shorter, its next tick rounded down to an even ms).
func PeakBound(m Model, window time.Duration) (int, bool) {
	if window <= 0 {
		return 0, false
	}
	s := m.Spec()
	switch s.Kind {
	case KindNginxLimitReq:
		if s.DryRun || len(s.Zones) == 0 {
			return 0, false
		}
		spanMs := int64(math.Ceil(float64(window) / float64(time.Millisecond)))
		best := -1
		for _, z := range s.Zones {
			if len(s.Zones) > 1 && !z.NoDelay {
				return 0, false
			}
			rate, err := parseNginxRate(z.Rate)
			if err != nil {
				return 0, false
			}
			d := z.Burst
			if !z.NoDelay {
				d = min(z.Delay, z.Burst)
			}
			n := d + 1 + int(rate*spanMs/1_000_000)
			if best < 0 || n < best {
				best = n
			}
		}
		return best, true
	case KindTokenBucket:
		return int(math.Floor(s.Capacity + s.RatePerSec*window.Seconds() + 1e-9)), true
	case KindEnvoyLocal:
		if len(s.Descriptors) > 0 || *s.FilterEnabledPercent < 100 || *s.FilterEnforcedPercent < 100 {
			return 0, false
		}
		v, err := parseEnvoyVersion(s.EnvoyVersion)
		if err != nil {
			return 0, false
		}
		tpf, fi := int64(*s.TokensPerFill), int64(s.FillInterval)
		refill := tpf * int64(window) / fi
		if !v.atLeast(1, 31) {
			refill = tpf * ((int64(window) + fi - 1) / fi)
		}
		return int(int64(s.MaxTokens) + refill), true
	case KindFixedWindow:
		if s.ShadowMode || s.Unlimited {
			return 0, false
		}
		unit := UnitSeconds(s.Unit) * int64(time.Second)
		return int(s.Limit) * int((int64(window)+unit-1)/unit+1), true
	case KindSlidingLog:
		return int(s.Limit) * int((int64(window)+int64(s.Window)-1)/int64(s.Window)), true
	case KindGCRA:
		hi, lo := bits.Mul64(uint64(window-1), uint64(s.RatePerPeriod))
		if hi >= uint64(s.Period) {
			return 0, false
		}
		q, _ := bits.Div64(hi, lo, uint64(s.Period))
		if q > math.MaxInt32 {
			return 0, false
		}
		return s.Burst + int(q), true
	case KindSlidingCounter:
		if s.Align != AlignFreqCtr {
			return 0, false
		}
		spanMs := (int64(window) + int64(time.Millisecond) - 1) / int64(time.Millisecond)
		p := int64(time.Duration(s.Window) / time.Millisecond)
		if p > 1 && p%2 == 1 {
			p-- // an odd period's next tick is rounded down to an even ms: one ms shorter in effect
		}
		return int(s.Limit) * int((spanMs+p-1)/p+1), true
	}
	return 0, false
}
