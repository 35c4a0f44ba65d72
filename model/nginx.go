package model

import (
	"fmt"
	"time"
)

// nginxModel is nginx's limit_req (src/http/modules/
// ngx_http_limit_req_module.c), computed as nginx does:
//   - the rate is stored as rate*1000/scale milli-requests per second
//     (ngx_http_limit_req_zone; integer division: 1r/m is 16), burst and
//     delay as burst*1000 and delay*1000, nodelay as a delay of
//     NGX_MAX_INT_T_VALUE/1000;
//   - the clock is nginx's cached millisecond clock; a key's node keeps
//     excess (milli-requests) and last (ms). ngx_http_limit_req_lookup:
//     ms = now - last (negative: 0; below -60000: 1),
//     excess = stored - rate*ms/1000 + 1000 clamped at 0, NGX_BUSY iff
//     excess > burst; otherwise excess is stored and last = now when ms != 0.
//     A new key stores excess 0: burst+1 requests pass at one instant;
//   - several limit_req in one context (ngx_http_limit_req_handler): zones in
//     order, each one but the last only looked up; the first BUSY stops the
//     loop and charges no zone (ngx_http_limit_req_unlock); if all pass,
//     ngx_http_limit_req_account stores the earlier zones; a zone whose key
//     is empty is skipped;
//   - the forwarding delay of a zone is (excess - delay)*1000/rate ms when
//     excess > delay (0 with nodelay; delay=N forwards N+1 at once), the
//     largest over the zones;
//   - limit_req_dry_run: nothing is delayed or rejected, the state is
//     updated as without it (rejected requests still store nothing).
type nginxModel struct {
	spec  Spec
	zones []nginxZone
}

type nginxZone struct {
	name  string
	rate  int64 // milli-requests per second
	burst int64 // *1000
	delay int64 // *1000
	key   string
	label string
}

const nginxNoDelay = (1<<63 - 1) / 1000 * 1000

func newNginxModel(s Spec) (*nginxModel, error) {
	m := &nginxModel{spec: s}
	for _, z := range s.Zones {
		r, err := parseNginxRate(z.Rate)
		if err != nil {
			return nil, err
		}
		nz := nginxZone{name: z.Name, rate: r, burst: int64(z.Burst) * 1000, delay: int64(z.Delay) * 1000, key: z.Key}
		if z.NoDelay {
			nz.delay = nginxNoDelay
		}
		d := ""
		switch {
		case z.NoDelay:
			d = " nodelay"
		case z.Delay > 0:
			d = fmt.Sprintf(" delay=%d", z.Delay)
		}
		nz.label = fmt.Sprintf("limit_req zone=%s rate=%s burst=%d%s", z.Name, z.Rate, z.Burst, d)
		m.zones = append(m.zones, nz)
	}
	return m, nil
}

func (m *nginxModel) Spec() Spec { return m.spec }

func (z *nginxZone) keyOf(r *Request) string {
	if z.key == "" {
		return r.Key
	}
	return r.Vars[z.key]
}

type nginxNode struct{ excess, last int64 }

type nginxSim struct {
	m     *nginxModel
	nodes []map[string]*nginxNode
}

func (m *nginxModel) NewSimulator(seed int64) Simulator {
	s := &nginxSim{m: m}
	for range m.zones {
		s.nodes = append(s.nodes, map[string]*nginxNode{})
	}
	return s
}

// leak returns the excess a node would store at now.
func (z *nginxZone) leak(n *nginxNode, now int64) (excess, ms int64) {
	ms = now - n.last
	if ms < -60000 {
		ms = 1
	} else if ms < 0 {
		ms = 0
	}
	excess = n.excess - z.rate*ms/1000 + 1000
	if excess < 0 {
		excess = 0
	}
	return excess, ms
}

func (s *nginxSim) Offer(r Request) Decision {
	now := floorDiv(r.At, int64(time.Millisecond))
	type hit struct {
		z    int
		node *nginxNode
		key  string
	}
	var hits [4]hit
	pending := hits[:0]
	var excess int64
	limited := false
	for i := range s.m.zones {
		z := &s.m.zones[i]
		key := z.keyOf(&r)
		if key == "" {
			continue
		}
		limited = true
		node := s.nodes[i][key]
		if node == nil {
			// a new node: excess 0, nothing to check
			pending = append(pending, hit{i, nil, key})
			excess = 0
			continue
		}
		e, _ := z.leak(node, now)
		excess = e
		if e > z.burst {
			d := Decision{By: z.name}
			if s.m.spec.DryRun {
				d.Admit, d.Shadow = true, true
			}
			return d
		}
		pending = append(pending, hit{i, node, key})
	}
	if !limited {
		return Decision{Admit: true}
	}
	// account: store every zone and take the largest delay
	var delay int64
	for _, h := range pending {
		z := &s.m.zones[h.z]
		if h.node == nil {
			h.node = &nginxNode{excess: 0, last: now}
			s.nodes[h.z][h.key] = h.node
			excess = 0
		} else {
			var ms int64
			excess, ms = z.leak(h.node, now)
			h.node.excess = excess
			if ms != 0 {
				h.node.last = now
			}
		}
		if excess > z.delay {
			delay = max(delay, (excess-z.delay)*1000/z.rate)
		}
	}
	if s.m.spec.DryRun {
		delay = 0
	}
	return Decision{Admit: true, Delay: time.Duration(delay) * time.Millisecond}
}

type nginxCheck struct {
	m      *nginxModel
	params []*tbParams
}

func (m *nginxModel) checker(ref int64) checkModel {
	c := &nginxCheck{m: m}
	refMs := floorDiv(ref, int64(time.Millisecond))
	for _, z := range m.zones {
		loss := 0.0
		if z.rate%1000 != 0 {
			loss = 1 // rate*ms/1000 truncates less than 1 milli-request per step
		}
		c.params = append(c.params, &tbParams{label: z.label, C: float64(z.burst + 1000), theta: 1000, cUp: 1000,
			cLo: 1000 + loss, tol: levelTol, unit: int64(time.Millisecond), refill: continuousRefill(float64(z.rate)/1000, refMs),
			resetIdle: 60000})
	}
	return c
}

func (c *nginxCheck) route(e *routeIn, dst []bucketRef) []bucketRef {
	r := Request{Key: e.key, Vars: e.vars()}
	for i := range c.m.zones {
		z := &c.m.zones[i]
		k := z.keyOf(&r)
		if k == "" {
			continue
		}
		dst = append(dst, bucketRef{id: z.name + "|" + k, params: c.params[i]})
	}
	return dst
}

func (c *nginxCheck) chain() bool { return false }

func (c *nginxCheck) flags() specFlags {
	return specFlags{shadowy: c.m.spec.DryRun, neverRejects: c.m.spec.DryRun}
}
