package model

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// EarliestForwards returns, for requests a limiter let through, the earliest
// time it may forward each one, unix ns, in the order of reqs. Each
// request's At is when it reached the limiter by the limiter's own clock
// (nginx: the request's creation, $msec - $request_time), never after the
// limiter decided; Key and Vars key it as for a Simulator. ok is false when
// the model cannot say: several nginx zones of which one delays (the order of
// same-millisecond arrivals across keys then decides the delays).
//
//   - A limiter that forwards when it admits (every kind but nginx limit_req
//     without nodelay): At.
//   - nginx_limit_req with one zone (ngx_http_limit_req_module.c): At, or
//     when limit_req delays the request its millisecond plus the delay (excess - delay)*1000/rate
//     ms when excess > delay, in a replay that admits every request given
//     (they passed; a rejected request stores nothing, so it is left out) and
//     leaks the excess exactly (rate × ms micro-requests, where nginx
//     truncates rate*ms/1000 milli-requests per step and so keeps at least as
//     much excess). nginx frees a drained node idle for 60 s when it needs
//     room for another key (ngx_http_limit_req_expire), and a new node
//     starts at excess 0; as nginx decides later than At, a drained node
//     idle for 1 s or more by At is taken as freed (a decision 59 s after
//     the request's creation is not considered). A request whose zone key
//     is empty is not limited (At). Dry run delays nothing (At).
//
// These are lower bounds: a limiter that decided later than At, or whose
// timer fired late, forwards later, never earlier. For the leaky bucket the
// k-th earliest forward of a key only grows when any arrival is later
// (workload sup over windows of arrivals minus leak), so the sorted earliest
// forwards of one key are at most the sorted forwards of nginx itself.
// Within one millisecond of one key the values are a multiset: which of the
// same-millisecond arrivals nginx processed first, the log does not tell;
// compare sorted values per key, not request by request.
func EarliestForwards(m Model, reqs []Request) (out []int64, ok bool) {
	out = make([]int64, len(reqs))
	for i := range reqs {
		out[i] = reqs[i].At
	}
	nm, isNginx := m.(*nginxModel)
	if !isNginx || nm.spec.DryRun {
		return out, true
	}
	delaying := 0
	for _, z := range nm.zones {
		if z.delay < z.burst {
			delaying++
		}
	}
	switch {
	case delaying == 0:
		return out, true
	case len(nm.zones) > 1:
		return nil, false
	}
	z := &nm.zones[0]
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(reqs[a].At, reqs[b].At) })
	type node struct{ excess, last int64 } // excess in micro-requests, last in ms
	nodes := map[string]*node{}
	const unit = 1_000_000 // one request, micro-requests
	msNs := int64(time.Millisecond)
	for _, i := range order {
		r := &reqs[i]
		key := z.keyOf(r)
		if key == "" {
			continue
		}
		now := floorDiv(r.At, msNs)
		n := nodes[key]
		switch {
		case n == nil:
			n = &node{excess: 0, last: now}
			nodes[key] = n
		default:
			ms := now - n.last
			if ms < -60000 {
				ms = 1
			} else if ms < 0 {
				ms = 0
			}
			// exact leak: rate milli-requests per s is rate micro-requests
			// per ms (products compared without overflowing rate*ms)
			var e int64
			if c := n.excess + unit; ms < (c+z.rate-1)/z.rate {
				e = c - z.rate*ms
			}
			if drained := ms > n.excess/z.rate || n.excess-z.rate*ms <= 0; drained && ms >= 1000 {
				e = 0 // nginx may have expired the node (see above)
			}
			n.excess = e
			if ms != 0 {
				n.last = now
			}
		}
		var delay int64
		if z.delay < math.MaxInt64/1000 && n.excess > z.delay*1000 {
			delay = (n.excess - z.delay*1000) / z.rate
		}
		out[i] = max(r.At, (now+delay)*msNs)
	}
	return out, true
}
