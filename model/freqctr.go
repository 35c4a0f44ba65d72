package model

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// freqCtr is one key's HAProxy freq_ctr (struct freq_ctr: curr_tick, curr_ctr, prev_ctr), in HAProxy's ticks of
// 1 ms. set is false until the first event.
type freqCtr struct {
	tick, curr, prev int64
	set              bool
}

// update is update_freq_ctr_period(ctr, period, 1) at now (ms), HAProxy's src/freq_ctr.c
// update_freq_ctr_period_slow (include/haproxy/freq_ctr.h in 2.6): within the period (now - tick < period) the
// current count grows; otherwise the current count becomes the previous one, the period moves on by one period,
// and when now is two periods or more past the old tick both are dropped and the period starts at now. The tick's
// lowest bit is HAProxy's lock, so every stored tick is rounded down to an even ms (curr_tick & ~1). A zeroed
// counter (a new stick-table entry, tick 0) rotates on its first event: its period starts at that event.
func (c *freqCtr) update(now, period int64) {
	if c.set && now-c.tick < period {
		c.curr++
		return
	}
	tick := c.tick + period
	c.prev, c.curr = c.curr, 1
	if !c.set || now-tick >= period {
		c.prev, tick = 0, now
	}
	c.tick, c.set = tick&^1, true
}

// read is read_freq_ctr_period(ctr, period) at now (ms): freq_ctr_total with pend -1 (src/freq_ctr.c) divided by
// the period in integer arithmetic. remain = tick + period - now is what is left of the current period; past it,
// the current count is the previous one (or nothing, two periods on). With no current count and a previous one of
// at most 1 the previous count is returned as is (HAProxy's flapping correction); otherwise
// (prev*remain + curr*period) / period, rounded down.
func (c *freqCtr) read(now, period int64) int64 {
	if !c.set {
		return 0
	}
	curr, past := c.curr, c.prev
	remain := c.tick + period - now
	if remain < 0 {
		remain += period
		past = 0
		if remain >= 0 {
			past = curr
		}
		curr = 0
	}
	if curr == 0 && past <= 1 {
		return past
	}
	return (past*remain + curr*period) / period
}

// freqCtrModel is the sliding counter with align freq_ctr: HAProxy's stick-table http_req_rate(period) as the rule
// `http-request track-sc0 <key>` then `http-request deny if { sc_http_req_rate(0) gt <limit> }` uses it. Every
// request of a key is counted when tracked (src/http_act.c http_action_track_sc calls update_freq_ctr_period
// before any later rule runs), the denied ones too; the deny rule then reads the rate (src/stick_table.c
// smp_fetch_sc_http_req_rate: read_freq_ctr_period) with the request itself counted and denies when it is greater
// than the limit. So at the request's ms, with curr its period's count (itself included), prev the previous
// period's and remain the ms left of the current period, it passes iff
//
//	curr + floor(prev*remain/period) <= limit
//
// The epoch-aligned sliding counter (align epoch) differs in three ways: its windows start at multiples of the
// window since the epoch where freq_ctr's start at a key's first request (at an even ms) and move on by whole
// periods while requests keep coming; its previous window's share is not rounded down; and its time is
// continuous where freq_ctr counts whole ms.
type freqCtrModel struct{ spec Spec }

func (m *freqCtrModel) Spec() Spec { return m.spec }

type fcSim struct {
	period, limit int64
	keys          map[string]*freqCtr
}

func (m *freqCtrModel) NewSimulator(seed int64) Simulator {
	return &fcSim{period: int64(time.Duration(m.spec.Window) / time.Millisecond), limit: int64(m.spec.Limit), keys: map[string]*freqCtr{}}
}

// Offer counts the request at its ms (r.At in unix ns, floored to the ms) and decides it.
func (s *fcSim) Offer(r Request) Decision {
	d, _ := s.offer(r.Key, floorDiv(r.At, int64(time.Millisecond)))
	return d
}

// offer is Offer at now (ms); it also returns the rate the deny rule read.
func (s *fcSim) offer(key string, now int64) (Decision, int64) {
	c := s.keys[key]
	if c == nil {
		c = &freqCtr{}
		s.keys[key] = c
	}
	c.update(now, s.period)
	rate := c.read(now, s.period)
	if rate <= s.limit {
		return Decision{Admit: true}, rate
	}
	return Decision{By: "freq_ctr"}, rate
}

// FreqCtrRates replays reqs (in order, each at its ms) through a fresh freq_ctr of m, which must be a sliding
// counter with align freq_ctr, and returns the rate the deny rule read for each: what HAProxy logs as
// sc_http_req_rate(0). ok is false for another model.
func FreqCtrRates(m Model, reqs []Request) (rates []int64, ok bool) {
	fm, ok := m.(*freqCtrModel)
	if !ok {
		return nil, false
	}
	s := fm.NewSimulator(0).(*fcSim)
	rates = make([]int64, len(reqs))
	for i, r := range reqs {
		_, rates[i] = s.offer(r.Key, floorDiv(r.At, int64(time.Millisecond)))
	}
	return rates, true
}

func (m *freqCtrModel) checker(ref int64) checkModel {
	return singleBucketModel{p: &fcParams{label: fmt.Sprintf("HAProxy freq_ctr %d per %v", m.spec.Limit, time.Duration(m.spec.Window)),
		period: int64(time.Duration(m.spec.Window) / time.Millisecond), limit: int64(m.spec.Limit)}}
}

// fcParams is the freq_ctr checker. freq_ctr decides on whole ms and where its periods start depends on every
// earlier request's ms, so it is judged by replay: when every request of the key is known to its ms (its interval
// lies within one ms, as HAProxy's own log gives it), the exact replay in that order decides each request;
// otherwise no request of the key is decided (either) and its admitted count is bounded by 2 x limit per period.
// Within one ms the replay fixes how many requests pass, not which (HAProxy's order within the ms is unknown):
// a ms where some pass and some not leaves its requests undecided, the count exact.
type fcParams struct {
	label         string
	period, limit int64
}

func (p *fcParams) countsAll() bool { return true }
func (p *fcParams) timeUnit() int64 { return 1 }

func (p *fcParams) newPrim(c *primCtx) prim {
	n := len(c.lo)
	t := &fcPrim{p: p, n: n, exact: true, admit: make([]bool, n), rate: make([]int64, n), lo: c.lo, hi: c.hi, unit: max(c.unit, 1)}
	ms := int64(time.Millisecond)
	for l := range n {
		if floorDiv(c.lo[l]*c.unit, ms) != floorDiv(c.hi[l]*c.unit, ms) {
			t.exact = false
			return t
		}
	}
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(c.lo[a], c.lo[b]) })
	s := &fcSim{period: p.period, limit: p.limit, keys: map[string]*freqCtr{}}
	t.mixed = make([]bool, n)
	for k := 0; k < n; {
		// the requests of one ms: freq_ctr counts them all, and which of them
		// pass depends on the order HAProxy took them in, which the times do
		// not tell; how many pass does not.
		now := floorDiv(c.lo[order[k]]*c.unit, ms)
		e, admits := k, 0
		for ; e < n && floorDiv(c.lo[order[e]]*c.unit, ms) == now; e++ {
			d, r := s.offer("", now)
			l := order[e]
			t.admit[l], t.rate[l] = d.Admit, r
			if d.Admit {
				admits++
			}
		}
		t.admitted += admits
		for _, l := range order[k:e] {
			t.mixed[l] = admits > 0 && admits < e-k
		}
		k = e
	}
	return t
}

type fcPrim struct {
	p        *fcParams
	n        int
	exact    bool
	admit    []bool
	rate     []int64
	mixed    []bool // in a ms some of whose requests pass and some not
	admitted int
	lo, hi   []int64
	unit     int64
}

func (t *fcPrim) activate(l int32)  {}
func (t *fcPrim) insert(l int32)    {}
func (t *fcPrim) markUnder(l int32) {}

func (t *fcPrim) mustReject(l int32) (bool, float64) {
	if !t.exact || t.mixed[l] {
		return false, 0
	}
	return !t.admit[l], float64(t.rate[l])
}

func (t *fcPrim) mustAdmit(l int32, self bool) (bool, float64) {
	if !t.exact || t.mixed[l] {
		return false, 0
	}
	return t.admit[l], float64(t.rate[l])
}

func (t *fcPrim) why(reject bool, v float64) string {
	if reject {
		return fmt.Sprintf("%s: sc_http_req_rate %d (the request counted) > limit %d at its ms", t.p.label, int64(v), t.p.limit)
	}
	return fmt.Sprintf("%s: sc_http_req_rate %d (the request counted) <= limit %d at its ms", t.p.label, int64(v), t.p.limit)
}

func (t *fcPrim) findings() []WindowFinding { return nil }

// bounds: the replay's admitted count when exact. Otherwise at most 2 x limit in each tile of one period from the
// first request: freq_ctr admits a request only when its period's count, itself included, is at most the limit
// (every request counts), and a tile meets at most two of its periods.
func (t *fcPrim) bounds(single bool) (int, int) {
	if !t.exact {
		return 0, tiledMax(t.lo, t.hi, t.p.period*int64(time.Millisecond)/t.unit, 2*t.p.limit)
	}
	return t.admitted, t.admitted
}
