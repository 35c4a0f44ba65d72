package model

import (
	"fmt"
	"math"
	"time"
)

// tokenBucketModel is a generic token bucket: golang.org/x/time/rate
// (rate.go: a Limiter of burst b starts full, advance() adds
// elapsed.Seconds()*limit capped at burst, Allow takes one token iff at
// least one is there, and a refused request changes nothing), as Redis+Lua
// gateway buckets also do.
//
// The simulator follows x/time/rate's arithmetic to the ns, held against
// it request by request (TestTokenBucketMatchesXTimeRate): reserveN
// admits iff the wait durationFromTokens(1 - level) is not positive, and
// that wait is a time.Duration truncated towards zero, so a level within
// rate × 1ns below one token passes (up to 1ns early), leaving the level
// that much below zero. The checker's threshold is that level (theta).
type tokenBucketModel struct{ spec Spec }

func (m *tokenBucketModel) Spec() Spec { return m.spec }

func (m *tokenBucketModel) NewSimulator(seed int64) Simulator {
	return &tbSim{c: m.spec.Capacity, r: m.spec.RatePerSec, keys: map[string]*tbState{}}
}

type tbState struct {
	tokens float64
	last   int64
}

type tbSim struct {
	c, r float64
	keys map[string]*tbState
}

func (s *tbSim) Offer(r Request) Decision {
	st := s.keys[r.Key]
	if st == nil {
		st = &tbState{tokens: s.c, last: r.At}
		s.keys[r.Key] = st
	}
	last := st.last
	if r.At < last { // x/time/rate advance: a clock going back refills nothing
		last = r.At
	}
	tokens := st.tokens
	if s.r > 0 { // tokensFromDuration
		tokens += time.Duration(r.At-last).Seconds() * s.r
	}
	if tokens > s.c {
		tokens = s.c
	}
	tokens--
	if tokens < 0 && xrateWait(-tokens, s.r) > 0 {
		return Decision{By: "bucket"}
	}
	st.tokens, st.last = tokens, r.At
	return Decision{Admit: true}
}

// xrateWait is x/time/rate's Limit.durationFromTokens: the time to gain
// tokens at r per second, truncated to the ns (MaxInt64 for r <= 0 or
// past the int64 range).
func xrateWait(tokens, r float64) time.Duration {
	if r <= 0 {
		return math.MaxInt64
	}
	d := tokens / r * float64(time.Second)
	if d > float64(math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(d)
}

func (m *tokenBucketModel) checker(ref int64) checkModel {
	p := &tbParams{label: fmt.Sprintf("token bucket %g at %g/s", m.spec.Capacity, m.spec.RatePerSec),
		C: m.spec.Capacity, theta: 1 - 1e-9*m.spec.RatePerSec, cUp: 1, cLo: 1, unit: 1, tol: levelTol,
		refill: continuousRefill(m.spec.RatePerSec/1e9, ref)}
	return singleBucketModel{p: p}
}

// singleBucketModel routes every event to the bucket of its Key.
type singleBucketModel struct {
	p  primParams
	fl specFlags
}

func (s singleBucketModel) route(e *routeIn, dst []bucketRef) []bucketRef {
	return append(dst, bucketRef{id: e.key, params: s.p})
}
func (s singleBucketModel) chain() bool      { return false }
func (s singleBucketModel) flags() specFlags { return s.fl }
