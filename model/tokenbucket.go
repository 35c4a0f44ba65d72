package model

import "fmt"

// tokenBucketModel is a generic token bucket: golang.org/x/time/rate
// (rate.go: a Limiter of burst b starts full, advance() adds
// elapsed*limit capped at burst, Allow takes one token iff at least one is
// there, and a refused request changes nothing), as Redis+Lua gateway
// buckets also do.
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
	tokens := st.tokens + float64(r.At-last)/1e9*s.r
	if tokens > s.c {
		tokens = s.c
	}
	if tokens < 1 {
		return Decision{By: "bucket"}
	}
	st.tokens, st.last = tokens-1, r.At
	return Decision{Admit: true}
}

func (m *tokenBucketModel) checker(ref int64) checkModel {
	p := &tbParams{label: fmt.Sprintf("token bucket %g at %g/s", m.spec.Capacity, m.spec.RatePerSec),
		C: m.spec.Capacity, theta: 1, cUp: 1, cLo: 1, unit: 1, tol: levelTol,
		refill: continuousRefill(m.spec.RatePerSec/1e9, ref)}
	return singleBucketModel{p: p}
}

// singleBucketModel routes every event to the bucket of its Key.
type singleBucketModel struct {
	p  primParams
	fl specFlags
}

func (s singleBucketModel) route(e *Event, dst []bucketRef) []bucketRef {
	return append(dst, bucketRef{id: e.Key, params: s.p})
}
func (s singleBucketModel) chain() bool      { return false }
func (s singleBucketModel) flags() specFlags { return s.fl }
