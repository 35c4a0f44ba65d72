package model

import (
	"container/list"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// envoyModel is Envoy's HTTP local rate limit filter
// (source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc,
// LocalRateLimiterImpl::requestAllowed; source/common/common/
// token_bucket_impl.cc, AtomicTokenBucketImpl::consume):
//   - every configured descriptor has its own bucket; a request descriptor
//     matches only if its entries equal the configured ones in order (no
//     subset match); an empty configured value (1.34+) matches any value and
//     each distinct value gets a bucket in an LRU of max_dynamic_descriptors,
//     an evicted value coming back full (dynamic_descriptor.cc);
//   - the matched buckets are consumed in ascending fill rate (1.31+: the
//     double tokens_per_fill/fill_interval; up to 1.30 the integer
//     tokens_per_fill / whole seconds of fill_interval, or tokens_per_fill
//     under 1 s); the first without a token rejects, the ones before it stay
//     charged and the ones after it are not charged; then the default bucket
//     is consumed iff no descriptor matched or
//     always_consume_default_token_bucket (default true);
//   - 1.31+: AtomicTokenBucket, refilled lazily and continuously at
//     tokens_per_fill/fill_interval, fractional, starting full, capped at
//     max_tokens; up to 1.30: a timer adds tokens_per_fill every
//     fill_interval from the limiter's creation, descriptor buckets every
//     multiple-th tick;
//   - filter_enabled below 100 % leaves some requests unchecked;
//     filter_enforced below 100 % lets some rejected ones through (shadow).
type envoyModel struct {
	spec       Spec
	continuous bool
	intSort    bool // up to 1.30: integer fill-rate sort key
	descs      []envoyDesc
	exact      map[string]int // descriptor string -> index (non-wildcard)
	wild       []int          // wildcard descriptor indices, config order
	timerStart int64
	phaseKnown bool
}

type envoyDesc struct {
	entries    Descriptor
	maxTokens  float64
	tpf        float64
	interval   int64 // ns
	multiplier int64 // timer: refilled every multiplier-th default tick
	rank       float64
	wildcard   bool
}

func newEnvoyModel(s Spec) (*envoyModel, error) {
	v, _ := parseEnvoyVersion(s.EnvoyVersion)
	m := &envoyModel{spec: s, continuous: v.atLeast(1, 31), intSort: !v.atLeast(1, 31), exact: map[string]int{}}
	if s.TimerStart != "" {
		t, _ := time.Parse(time.RFC3339Nano, s.TimerStart)
		m.timerStart, m.phaseKnown = t.UnixNano(), true
	}
	def := int64(s.FillInterval)
	for i, d := range s.Descriptors {
		ed := envoyDesc{entries: Descriptor(d.Entries), maxTokens: float64(d.MaxTokens), tpf: float64(*d.TokensPerFill),
			interval: int64(d.FillInterval), multiplier: int64(d.FillInterval) / def}
		ed.rank = m.fillRank(ed.tpf, ed.interval)
		for _, e := range d.Entries {
			if e.Value == "" {
				ed.wildcard = true
			}
		}
		m.descs = append(m.descs, ed)
		if ed.wildcard {
			m.wild = append(m.wild, i)
		} else {
			m.exact[ed.entries.String()] = i
		}
	}
	return m, nil
}

func (m *envoyModel) fillRank(tpf float64, interval int64) float64 {
	if m.intSort {
		sec := interval / int64(time.Second)
		if sec == 0 {
			sec = 1
		}
		return float64(int64(tpf) / sec)
	}
	return tpf / (float64(interval) / 1e9)
}

func (m *envoyModel) Spec() Spec { return m.spec }

// matchWild reports whether request descriptor d matches configured wildcard
// descriptor c (DynamicDescriptorMap::matchDescriptorEntries): same length
// and keys, equal values where the configured one is not empty.
func matchWild(d, c Descriptor) bool {
	if len(d) != len(c) {
		return false
	}
	for i := range d {
		if d[i].Key != c[i].Key || (c[i].Value != "" && d[i].Value != c[i].Value) {
			return false
		}
	}
	return true
}

// envoyMatch is one matched bucket: configured descriptor index and, for a
// wildcard, the request descriptor that names its dynamic bucket.
type envoyMatch struct {
	desc  int
	value string
}

// matches returns the buckets a request's descriptors match, sorted for
// consumption (stable: equal ranks keep request order; Envoy's std::sort
// leaves their order unspecified).
func (m *envoyModel) matches(ds []Descriptor, dst []envoyMatch) []envoyMatch {
	dst = dst[:0]
	for _, d := range ds {
		s := d.String()
		mt := envoyMatch{desc: -1}
		if i, ok := m.exact[s]; ok {
			mt.desc = i
		} else {
			for _, i := range m.wild {
				if matchWild(d, m.descs[i].entries) {
					mt = envoyMatch{desc: i, value: s}
					break
				}
			}
		}
		if mt.desc >= 0 && !slices.Contains(dst, mt) {
			dst = append(dst, mt)
		}
	}
	slices.SortStableFunc(dst, func(a, b envoyMatch) int {
		ra, rb := m.descs[a.desc].rank, m.descs[b.desc].rank
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	return dst
}

func (m *envoyModel) descName(mt envoyMatch) string {
	if mt.value != "" {
		return "descriptor " + mt.value
	}
	return "descriptor " + m.descs[mt.desc].entries.String()
}

// --- simulator ---

// envoyBucket is one token bucket's state: continuous (tau: the virtual time
// of AtomicTokenBucketImpl, tokens = min(max, (now-tau)*rate); with
// Spec.ExactLevel a token count refilled since last, as the lab proxy
// keeps it) or timer (integer tokens).
type envoyBucket struct {
	tau    float64
	tokens float64
	last   int64
}

type envoyLimiter struct {
	def    envoyBucket
	desc   map[int]*envoyBucket
	lru    map[int]*envoyLRU
	t0     int64 // timer start
	ticks  int64 // default timer ticks applied
	dyn    int   // LRU size
	shared *envoySim
}

type envoyLRU struct {
	l *list.List // of string, front = most recent
	m map[string]*list.Element
	b map[string]*envoyBucket
}

type envoySim struct {
	m       *envoyModel
	rng     *rand.Rand
	base    int64
	started bool
	keys    map[string]*envoyLimiter
	buf     []envoyMatch
}

func (m *envoyModel) NewSimulator(seed int64) Simulator {
	return &envoySim{m: m, rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)), keys: map[string]*envoyLimiter{}}
}

func (s *envoySim) secs(t int64) float64 { return float64(t-s.base) / 1e9 }

func (s *envoySim) newBucket(now int64, max, tpf float64, interval int64) *envoyBucket {
	if s.m.continuous && !s.m.spec.ExactLevel {
		rate := tpf / (float64(interval) / 1e9)
		return &envoyBucket{tau: s.secs(now) - max/rate}
	}
	return &envoyBucket{tokens: max, last: now}
}

func (s *envoySim) limiter(key string, now int64) *envoyLimiter {
	l := s.keys[key]
	if l != nil {
		return l
	}
	m := s.m
	l = &envoyLimiter{desc: map[int]*envoyBucket{}, lru: map[int]*envoyLRU{}, dyn: *m.spec.MaxDynamicDescriptors, shared: s}
	l.def = *s.newBucket(now, float64(m.spec.MaxTokens), float64(*m.spec.TokensPerFill), int64(m.spec.FillInterval))
	if !m.continuous {
		if m.phaseKnown && m.spec.Scope != ScopeConnection {
			l.t0 = m.timerStart
		} else {
			// unknown phase: the timer started up to one fill_interval ago
			l.t0 = now - s.rng.Int64N(int64(m.spec.FillInterval))
		}
	}
	for i, d := range m.descs {
		if !d.wildcard {
			l.desc[i] = s.newBucket(now, d.maxTokens, d.tpf, d.interval)
		}
	}
	s.keys[key] = l
	return l
}

// advanceTimer applies the default timer's ticks up to now (timer refill).
func (l *envoyLimiter) advanceTimer(now int64) {
	m := l.shared.m
	if m.continuous {
		return
	}
	iv := int64(m.spec.FillInterval)
	var ticks int64
	if now >= l.t0+iv {
		ticks = (now - l.t0) / iv
	}
	if ticks <= l.ticks {
		return
	}
	c0, d := l.ticks, ticks-l.ticks
	l.ticks = ticks
	tpf, mx := float64(*m.spec.TokensPerFill), float64(m.spec.MaxTokens)
	l.def.tokens = min(mx, l.def.tokens+float64(d)*tpf)
	for i, b := range l.desc {
		ds := m.descs[i]
		fills := (c0+d)/ds.multiplier - c0/ds.multiplier
		b.tokens = min(ds.maxTokens, b.tokens+float64(fills)*ds.tpf)
	}
}

// consume takes one token if there is one.
func (s *envoySim) consume(b *envoyBucket, now int64, max, tpf float64, interval int64) bool {
	if !s.m.continuous {
		if b.tokens < 1 {
			return false
		}
		b.tokens--
		return true
	}
	rate := tpf / (float64(interval) / 1e9)
	if s.m.spec.ExactLevel {
		// internal/lab/proxy's bucket: tokens += elapsed s * rate, capped
		if d := now - b.last; d > 0 {
			b.tokens = min(max, b.tokens+time.Duration(d).Seconds()*rate)
			b.last = now
		}
		if b.tokens < 1 {
			return false
		}
		b.tokens--
		return true
	}
	t := s.secs(now)
	if t <= b.tau {
		return false
	}
	total := min(max, (t-b.tau)*rate)
	if total < 1 {
		return false
	}
	b.tau = t - (total-1)/rate
	return true
}

func (l *envoyLimiter) dynBucket(s *envoySim, mt envoyMatch, now int64) *envoyBucket {
	lru := l.lru[mt.desc]
	if lru == nil {
		lru = &envoyLRU{l: list.New(), m: map[string]*list.Element{}, b: map[string]*envoyBucket{}}
		l.lru[mt.desc] = lru
	}
	if e, ok := lru.m[mt.value]; ok {
		lru.l.MoveToFront(e)
		return lru.b[mt.value]
	}
	d := s.m.descs[mt.desc]
	b := s.newBucket(now, d.maxTokens, d.tpf, d.interval)
	lru.m[mt.value] = lru.l.PushFront(mt.value)
	lru.b[mt.value] = b
	if lru.l.Len() > l.dyn {
		old := lru.l.Back()
		v := old.Value.(string)
		lru.l.Remove(old)
		delete(lru.m, v)
		delete(lru.b, v)
	}
	return b
}

func (s *envoySim) Offer(r Request) Decision {
	m := s.m
	if !s.started {
		s.base, s.started = r.At, true
	}
	if p := *m.spec.FilterEnabledPercent; p < 100 && s.rng.Float64()*100 >= p {
		return Decision{Admit: true}
	}
	l := s.limiter(r.Key, r.At)
	l.advanceTimer(r.At)
	s.buf = m.matches(r.Descriptors, s.buf)
	by := ""
	for _, mt := range s.buf {
		d := m.descs[mt.desc]
		var b *envoyBucket
		if d.wildcard {
			b = l.dynBucket(s, mt, r.At)
		} else {
			b = l.desc[mt.desc]
		}
		if !s.consume(b, r.At, d.maxTokens, d.tpf, d.interval) {
			by = m.descName(mt)
			break
		}
	}
	if by == "" && (len(s.buf) == 0 || *m.spec.AlwaysConsumeDefault) {
		if !s.consume(&l.def, r.At, float64(m.spec.MaxTokens), float64(*m.spec.TokensPerFill), int64(m.spec.FillInterval)) {
			by = "default"
		}
	}
	if by == "" {
		return Decision{Admit: true}
	}
	if p := *m.spec.FilterEnforcedPercent; p < 100 && s.rng.Float64()*100 >= p {
		return Decision{Admit: true, Shadow: true, By: by}
	}
	return Decision{By: by}
}

// --- checker ---

type envoyCheck struct {
	m    *envoyModel
	ref  int64
	def  *tbParams
	desc []*tbParams
	dyn  map[string]*tbParams // per key and wildcard descriptor
	buf  []envoyMatch
}

func (m *envoyModel) bucketParams(label string, max, tpf float64, interval, period int64, ref int64) *tbParams {
	p := &tbParams{label: label, C: max, theta: 1, cUp: 1, cLo: 1, unit: 1, tol: levelTol}
	if m.continuous {
		p.refill = continuousRefill(tpf/float64(interval), ref)
		p.floatLevel, p.tol = true, floatTol
		if m.spec.ExactLevel {
			// a token count: a take of 1 is exact, a refill add (or its
			// product) rounds by at most a few ulps of max
			p.floatLevel, p.levelDrift = false, 4*max*0x1p-52
		}
	} else {
		known := m.phaseKnown && m.spec.Scope != ScopeConnection
		p.refill = timerRefill(tpf, period, m.timerStart, known, ref)
		p.exact = known && max == math.Trunc(max) && tpf == math.Trunc(tpf) && max < 1<<40 && tpf < 1<<40
	}
	return p
}

func (m *envoyModel) checker(ref int64) checkModel {
	s := m.spec
	c := &envoyCheck{m: m, ref: ref, dyn: map[string]*tbParams{}}
	iv := int64(s.FillInterval)
	c.def = m.bucketParams(fmt.Sprintf("default bucket (max_tokens %d, %d per %v)", s.MaxTokens, *s.TokensPerFill, time.Duration(iv)),
		float64(s.MaxTokens), float64(*s.TokensPerFill), iv, iv, ref)
	for _, d := range m.descs {
		c.desc = append(c.desc, m.bucketParams(fmt.Sprintf("descriptor %s (max_tokens %g, %g per %v)", d.entries, d.maxTokens, d.tpf, time.Duration(d.interval)),
			d.maxTokens, d.tpf, d.interval, d.multiplier*iv, ref))
	}
	return c
}

func (c *envoyCheck) route(e *routeIn, dst []bucketRef) []bucketRef {
	m := c.m
	c.buf = m.matches(e.descriptors(), c.buf)
	prevRank := -1.0
	for k, mt := range c.buf {
		d := m.descs[mt.desc]
		p := c.desc[mt.desc]
		id := e.key + "|" + m.descName(mt)
		if d.wildcard {
			pk := e.key + "\x00" + strconv.Itoa(mt.desc)
			p = c.dyn[pk]
			if p == nil {
				q := *c.desc[mt.desc]
				q.lruSize = *m.spec.MaxDynamicDescriptors
				p = &q
				c.dyn[pk] = p
			}
		}
		dst = append(dst, bucketRef{id: id, params: p, tie: k > 0 && d.rank == prevRank})
		prevRank = d.rank
	}
	if len(c.buf) == 0 || *m.spec.AlwaysConsumeDefault {
		dst = append(dst, bucketRef{id: e.key + "|default", params: c.def})
	}
	return dst
}

func (c *envoyCheck) chain() bool { return true }

func (c *envoyCheck) flags() specFlags {
	s := c.m.spec
	return specFlags{shadowy: *s.FilterEnforcedPercent < 100, neverRejects: *s.FilterEnforcedPercent == 0,
		enabledPartial: *s.FilterEnabledPercent < 100}
}
