package model

import (
	"fmt"
	"slices"
	"time"
)

// slidingLogModel is the exact sliding log per key: a request at t passes
// iff fewer than limit counted requests lie in (t-window, t]; counted are
// the admitted ones ("admitted", as a log of granted requests) or every
// request ("all", as a Redis sorted set that records before it checks).
type slidingLogModel struct{ spec Spec }

func (m *slidingLogModel) Spec() Spec { return m.spec }

type slSim struct {
	m    *slidingLogModel
	logs map[string][]int64
}

func (m *slidingLogModel) NewSimulator(seed int64) Simulator {
	return &slSim{m: m, logs: map[string][]int64{}}
}

// Offer expects non-decreasing times per key; entries at or before
// t-window are dropped.
func (s *slSim) Offer(r Request) Decision {
	w := int64(s.m.spec.Window)
	log := s.logs[r.Key]
	i := 0
	for i < len(log) && log[i] <= r.At-w {
		i++
	}
	log = log[i:]
	in := 0
	for _, t := range log {
		if t <= r.At {
			in++
		}
	}
	admit := uint64(in) < s.m.spec.Limit
	if admit || s.m.spec.Count == CountAll {
		j, _ := slices.BinarySearch(log, r.At+1)
		log = slices.Insert(log, j, r.At)
	}
	s.logs[r.Key] = log
	if admit {
		return Decision{Admit: true}
	}
	return Decision{By: "sliding log"}
}

func (m *slidingLogModel) checker(ref int64) checkModel {
	return singleBucketModel{p: &slParams{label: fmt.Sprintf("sliding log %d per %v (%s)", m.spec.Limit, time.Duration(m.spec.Window), m.spec.Count),
		limit: int64(m.spec.Limit), width: int64(m.spec.Window), countAll: m.spec.Count == CountAll}}
}

// slidingCounterModel is the two-counter approximation per key, windows of
// Window aligned to the epoch: at t in window k with elapsed fraction f, the
// estimate is prev*(1-f) + cur (Cloudflare's rate limiting, many Redis
// limiters; the shape of HAProxy's freq_ctr, curr + prev*(period-elapsed)/period);
// the request passes iff estimate + 1 <= limit, the request itself included.
// HAProxy's own arithmetic (periods from a key's first request, whole ms,
// the previous period's share rounded down) is align freq_ctr
// (freqCtrModel, freqctr.go).
type slidingCounterModel struct{ spec Spec }

func (m *slidingCounterModel) Spec() Spec { return m.spec }

type scState struct {
	win       int64
	cur, prev float64
}

type scSim struct {
	m    *slidingCounterModel
	keys map[string]*scState
}

func (m *slidingCounterModel) NewSimulator(seed int64) Simulator {
	return &scSim{m: m, keys: map[string]*scState{}}
}

func (s *scSim) Offer(r Request) Decision {
	w := int64(s.m.spec.Window)
	k := floorDiv(r.At, w)
	st := s.keys[r.Key]
	switch {
	case st == nil:
		st = &scState{win: k}
		s.keys[r.Key] = st
	case k == st.win+1:
		st.prev, st.cur, st.win = st.cur, 0, k
	case k > st.win+1:
		st.prev, st.cur, st.win = 0, 0, k
	}
	f := float64(r.At-k*w) / float64(w)
	est := st.prev*(1-f) + st.cur
	admit := est+1 <= float64(s.m.spec.Limit)
	if admit || s.m.spec.Count == CountAll {
		st.cur++
	}
	if admit {
		return Decision{Admit: true}
	}
	return Decision{By: "sliding counter"}
}

func (m *slidingCounterModel) checker(ref int64) checkModel {
	return singleBucketModel{p: &scParams{label: fmt.Sprintf("sliding counter %d per %v (%s)", m.spec.Limit, time.Duration(m.spec.Window), m.spec.Count),
		limit: float64(m.spec.Limit), width: int64(m.spec.Window), countAll: m.spec.Count == CountAll}}
}
