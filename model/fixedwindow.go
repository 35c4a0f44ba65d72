package model

import "fmt"

// fixedWindowModel is a fixed-window counter per key:
//   - align epoch: envoyproxy/ratelimit (src/limiter/cache_key.go: the
//     window starts at now/unit*unit unix seconds; src/redis/
//     fixed_cache_impl.go: INCRBY on every hit, over-limit ones included;
//     src/limiter/base_limiter.go GetResponseDescriptorStatus: OVER_LIMIT
//     iff the count after the increment exceeds requests_per_unit; a
//     shadow_mode rule answers OK but counts; unlimited rules are never
//     limited);
//   - align first_hit: rlbench's lab RLS with WindowFirstHit
//     (internal/lab/rls): a key's window starts at its first hit and lasts
//     one unit, the next one starts at the first hit after it ended.
type fixedWindowModel struct {
	spec  Spec
	width int64 // ns
}

func (m *fixedWindowModel) Spec() Spec { return m.spec }

type fwState struct {
	start, end int64 // first_hit: ns; epoch: window number in start
	count      uint64
}

type fwSim struct {
	m    *fixedWindowModel
	keys map[string]*fwState
}

func (m *fixedWindowModel) NewSimulator(seed int64) Simulator {
	return &fwSim{m: m, keys: map[string]*fwState{}}
}

func (s *fwSim) Offer(r Request) Decision {
	m := s.m
	if m.spec.Unlimited {
		return Decision{Admit: true}
	}
	st := s.keys[r.Key]
	if m.spec.Align == AlignFirstHit {
		if st == nil || r.At >= st.end {
			st = &fwState{start: r.At, end: r.At + m.width}
			s.keys[r.Key] = st
		}
	} else {
		k := floorDiv(r.At, m.width)
		if st == nil || st.start != k {
			st = &fwState{start: k}
			s.keys[r.Key] = st
		}
	}
	st.count++
	if st.count <= m.spec.Limit {
		return Decision{Admit: true}
	}
	if m.spec.ShadowMode {
		return Decision{Admit: true, Shadow: true, By: "window"}
	}
	return Decision{By: "window"}
}

type fwCheck struct {
	m *fixedWindowModel
	p *fwParams
}

func (m *fixedWindowModel) checker(ref int64) checkModel {
	return &fwCheck{m: m, p: &fwParams{label: fmt.Sprintf("fixed window %d per %s", m.spec.Limit, m.spec.Unit),
		limit: int64(m.spec.Limit), width: m.width, firstHit: m.spec.Align == AlignFirstHit}}
}

func (c *fwCheck) route(e *routeIn, dst []bucketRef) []bucketRef {
	if c.m.spec.Unlimited {
		return dst
	}
	return append(dst, bucketRef{id: e.key, params: c.p})
}

func (c *fwCheck) chain() bool { return false }

func (c *fwCheck) flags() specFlags {
	return specFlags{shadowy: c.m.spec.ShadowMode, neverRejects: c.m.spec.ShadowMode}
}
