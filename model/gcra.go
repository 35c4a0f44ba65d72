package model

import (
	"fmt"
	"math"
	"time"
)

// The generic cell rate algorithm (GCRA) as rlbench models it.
//
// Public sources: the virtual-scheduling form of the GCRA (ITU-T I.371;
// Wikipedia "Generic cell rate algorithm"; brandur.org "Rate Limiting,
// Cells, and GCRA") and the script go-redis/redis_rate runs on Redis
// (lua.go allowN, itself rwz/redis-gcra's perform_gcra_ratelimit.lua),
// which this model follows for one request (cost 1):
//
//	T        = period / rate            emission interval
//	τ        = burst × T                (redis_rate's burst_offset)
//	tat      = max(stored TAT or now, now)
//	new_tat  = tat + T
//	allowed iff now - (new_tat - τ) >= 0, i.e. tat - now <= τ - T
//	allowed: SET key new_tat EX ceil(new_tat - now); denied: nothing written
//
// The key's expiry (ceil of the time until new_tat) never falls before
// new_tat, so an expired key and a stored TAT at or before now both give
// tat = now: the expiry changes no decision. Writing the debt x = tat - now
// (>= 0), a request passes iff x <= τ - T and then adds T, and x drains at
// one second per second down to 0: the level (τ - x)/T is a token bucket of
// burst tokens refilled at rate/period, starting full, each admission taking
// one token and a denial none. The checker uses that bucket; its findings
// are worded in GCRA terms (TAT - arrival against τ - T).
//
// burst 0 gives τ = 0 and redis_rate denies every request; the Spec refuses
// it. The simulator is exact: it keeps the debt in units of 1/rate ns
// (T is period ns there), so no rounding enters a decision.

// gcraClockTol is the time the checker leaves to "either" around a GCRA
// boundary: redis_rate decides on Redis' TIME truncated to microseconds
// (each of two times may read up to 1 µs early) in double seconds since
// 2017 (about 1e-7 s of rounding).
const gcraClockTol = 2 * time.Microsecond

// gcraLimit bounds burst × period: the simulator's debt and its arithmetic
// stay below it.
const gcraLimit = math.MaxInt64 / 4

// normalizedGCRA checks a gcra: rate_per_period in 1..2^31-1, a positive
// period, burst >= 1 (redis_rate with burst 0 denies every request), and
// burst × period small enough for exact arithmetic. It fills in no
// defaults.
func (s Spec) normalizedGCRA() (Spec, error) {
	if s.RatePerPeriod < 1 || s.RatePerPeriod > math.MaxInt32 {
		return s, fieldErr("rate_per_period", "must be 1..%d requests per period, got %d", math.MaxInt32, s.RatePerPeriod)
	}
	if s.Period <= 0 {
		return s, fieldErr("period", "must be a positive duration such as \"1s\"")
	}
	if s.Burst < 1 {
		return s, fieldErr("burst", "must be >= 1 (with burst 0 the tolerance τ is 0 and redis_rate denies every request), got %d", s.Burst)
	}
	if int64(s.Burst) > gcraLimit/int64(s.Period)-1 {
		return s, fieldErr("burst", "burst × period too large (%d × %v)", s.Burst, time.Duration(s.Period))
	}
	return s, nil
}

// GCRAEmissionInterval returns a gcra Spec's emission interval T =
// period/rate_per_period in ns (fractional), and its tolerance τ = burst ×
// T; both 0 for another kind.
func (s Spec) GCRAEmissionInterval() (t, tau float64) {
	if s.Kind != KindGCRA || s.RatePerPeriod <= 0 {
		return 0, 0
	}
	t = float64(s.Period) / float64(s.RatePerPeriod)
	return t, float64(s.Burst) * t
}

type gcraModel struct{ spec Spec }

func (m *gcraModel) Spec() Spec { return m.spec }

func (m *gcraModel) NewSimulator(seed int64) Simulator {
	p := int64(m.spec.Period)
	return &gcraSim{rate: int64(m.spec.RatePerPeriod), period: p, tau: int64(m.spec.Burst) * p, keys: map[string]*gcraState{}}
}

// gcraState is one key's TAT: base + debt/rate ns (debt in 1/rate ns).
type gcraState struct{ base, debt int64 }

type gcraSim struct {
	rate, period, tau int64 // tau = burst × period, in 1/rate ns: τ
	keys              map[string]*gcraState
}

func (s *gcraSim) Offer(r Request) Decision {
	x := int64(0) // TAT - now in 1/rate ns, after max(TAT, now)
	if st := s.keys[r.Key]; st != nil {
		// elapsed and back in uint64: the difference of any two int64 times fits
		if r.At >= st.base {
			if el := uint64(r.At) - uint64(st.base); el <= uint64(st.debt/s.rate) {
				x = st.debt - int64(el)*s.rate
			}
		} else { // the clock went back: TAT stays, now is earlier
			back := uint64(st.base) - uint64(r.At)
			if back > uint64((gcraLimit-st.debt)/s.rate) {
				return Decision{By: "gcra"}
			}
			x = st.debt + int64(back)*s.rate
		}
	}
	if x+s.period > s.tau { // tat - now > τ - T
		return Decision{By: "gcra"}
	}
	s.keys[r.Key] = &gcraState{base: r.At, debt: x + s.period}
	return Decision{Admit: true}
}

func (m *gcraModel) checker(ref int64) checkModel {
	s := m.spec
	perNs := float64(s.RatePerPeriod) / float64(s.Period)
	t, tau := s.GCRAEmissionInterval()
	p := &tbParams{label: gcraLabel(s), C: float64(s.Burst), theta: 1, cUp: 1, cLo: 1, unit: 1,
		tol: math.Max(levelTol, float64(gcraClockTol)*perNs), refill: continuousRefill(perNs, ref),
		gcra: &gcraTerms{t: t, tau: tau}}
	return singleBucketModel{p: p}
}

// gcraLabel names a gcra spec in findings: "GCRA 10 per 1s, burst 20
// (T=100ms, τ=2s)".
func gcraLabel(s Spec) string {
	t, tau := s.GCRAEmissionInterval()
	return fmt.Sprintf("GCRA %d per %v, burst %d (T=%v, τ=%v)", s.RatePerPeriod, time.Duration(s.Period), s.Burst,
		fmtNs(t), fmtNs(tau))
}

// gcraTerms lets the token-bucket checker word a GCRA finding in GCRA
// terms: T and τ in ns.
type gcraTerms struct{ t, tau float64 }

// debt turns a bucket level (tokens) into TAT - arrival: τ - level × T,
// at least 0.
func (g *gcraTerms) debt(level float64) float64 { return math.Max(g.tau-level*g.t, 0) }

// why words a checker verdict: reject (v an upper bound of the level:
// TAT - arrival was at least τ - v·T, above τ - T) or admit (v a lower bound:
// TAT - arrival at most τ - v·T, within τ - T).
func (g *gcraTerms) why(label string, reject bool, v float64) string {
	if reject {
		return fmt.Sprintf("%s: TAT - arrival at least %s when it arrived, at most τ - T = %s passes", label, fmtNs(g.debt(v)), fmtNs(g.tau-g.t))
	}
	return fmt.Sprintf("%s: TAT - arrival at most %s when it arrived, τ - T = %s passes", label, fmtNs(g.debt(v)), fmtNs(g.tau-g.t))
}

// fmtNs renders a fractional ns duration to the ns.
func fmtNs(ns float64) string { return time.Duration(math.Round(ns)).String() }
