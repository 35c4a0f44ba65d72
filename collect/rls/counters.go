package rls

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/evidence"
)

func setCounter(k *evidence.RLSKeyCounters, suffix string, v float64, add bool) bool {
	var f *float64
	switch suffix {
	case "total_hits":
		f = &k.TotalHits
	case "within_limit":
		f = &k.WithinLimit
	case "over_limit":
		f = &k.OverLimit
	case "near_limit":
		f = &k.NearLimit
	case "shadow_mode":
		f = &k.ShadowMode
	case "over_limit_with_local_cache":
		f = &k.OverLimitWithLocalCache
	default:
		return false
	}
	if add {
		*f += v
	} else {
		*f = v
	}
	return true
}

func subCounters(k, b evidence.RLSKeyCounters) evidence.RLSKeyCounters {
	return evidence.RLSKeyCounters{TotalHits: k.TotalHits - b.TotalHits, WithinLimit: k.WithinLimit - b.WithinLimit,
		OverLimit: k.OverLimit - b.OverLimit, NearLimit: k.NearLimit - b.NearLimit, ShadowMode: k.ShadowMode - b.ShadowMode,
		OverLimitWithLocalCache: k.OverLimitWithLocalCache - b.OverLimitWithLocalCache}
}

func anyNegative(k evidence.RLSKeyCounters) bool {
	return k.TotalHits < 0 || k.WithinLimit < 0 || k.OverLimit < 0 || k.NearLimit < 0 || k.ShadowMode < 0 || k.OverLimitWithLocalCache < 0
}

func newCounters(source string) *evidence.RLSCounters {
	return &evidence.RLSCounters{Source: source, Keys: map[string]evidence.RLSKeyCounters{}, DomainNotFound: map[string]float64{}}
}

const rateLimitPrefix = "ratelimit.service.rate_limit."

// ParseStatName splits a statsd/gostats RLS stat name
// `ratelimit.service.rate_limit.<domain>.<keypath>.<suffix>` into the stat
// key "<domain>.<keypath>" and the suffix (total_hits, within_limit,
// over_limit, near_limit, shadow_mode, over_limit_with_local_cache, or
// domain_not_found with key "<domain>"). gostats tag segments (".__k=v",
// EXTRA_TAGS) are dropped. A domain containing '.' cannot be told from the
// key path; the split is on the first '.'.
func ParseStatName(name string) (key, suffix string, ok bool) {
	if !strings.HasPrefix(name, rateLimitPrefix) {
		return "", "", false
	}
	rest := name[len(rateLimitPrefix):]
	for {
		i := strings.LastIndex(rest, ".__")
		if i < 0 {
			break
		}
		rest = rest[:i]
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", "", false
	}
	key, suffix = rest[:i], rest[i+1:]
	switch suffix {
	case "total_hits", "within_limit", "over_limit", "near_limit", "shadow_mode", "over_limit_with_local_cache":
		if !strings.Contains(key, ".") {
			return "", "", false
		}
		return key, suffix, true
	case "domain_not_found":
		return key, suffix, true
	}
	return "", "", false
}

// CountersFromStats builds evidence.RLSCounters from statsd-style names and values (the
// summed deltas of StatsdTotals.Counters, or the cumulative values of a stat
// dump).
func CountersFromStats(source string, stats map[string]float64) *evidence.RLSCounters {
	c := newCounters(source)
	for name, v := range stats {
		switch name {
		case "ratelimit.service.call.should_rate_limit.redis_error":
			c.RedisErrors += v
			continue
		case "ratelimit.service.call.should_rate_limit.service_error":
			c.ServiceErrors += v
			continue
		case "ratelimit_server.ShouldRateLimit.total_requests":
			c.TotalRequests += v
			continue
		case "ratelimit.service.config_load_success":
			c.ConfigLoadSuccess += v
			continue
		case "ratelimit.service.config_load_error":
			c.ConfigLoadError += v
			continue
		}
		key, suffix, ok := ParseStatName(name)
		if !ok {
			continue
		}
		if suffix == "domain_not_found" {
			c.DomainNotFound[key] += v
			continue
		}
		kc := c.Keys[key]
		setCounter(&kc, suffix, v, true)
		c.Keys[key] = kc
	}
	return c
}

// RLSCounters converts summed statsd counter deltas to evidence.RLSCounters.
func (t *StatsdTotals) RLSCounters() *evidence.RLSCounters {
	return CountersFromStats(t.Name, t.Counters)
}

// ParseStatDump reads `name: value` lines, the format of the pre-2020 RLS
// debug-port /stats and of the README "Statistics" section
// (github.com/envoyproxy/ratelimit README.md, "Statistics"). Values must
// be numbers; anything else is an error naming name and the line (the current
// /stats page is expvar JSON, not stats).
func ParseStatDump(r io.Reader, name string) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		i := strings.LastIndex(s, ": ")
		if i <= 0 {
			return nil, fmt.Errorf("%s:%d: want `name: value`", name, n)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s[i+2:]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: value of %s is not a number", name, n, s[:i])
		}
		out[s[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, n+1, err)
	}
	return out, nil
}

// Identity statuses of IdentityResult.Status.
const (
	// IdentityPass: Δtotal_hits = Δwithin_limit + Δover_limit, shadow ⊆ over,
	// local-cache ⊆ over.
	IdentityPass = "pass"
	// IdentityReset: some counter of the key went down (or vanished) between
	// before and after: the RLS restarted and its stats began again at 0.
	// Never a pass.
	IdentityReset = "reset"
	// IdentityErrorGap: Δtotal_hits exceeds Δwithin+Δover while redis_error
	// grew: base_limiter counts total_hits before the backend call, so failed
	// (or still hanging) calls are in total_hits only. Not a pass.
	IdentityErrorGap = "error_gap"
	// IdentityFail: the identity is broken with no reset or error to explain it.
	IdentityFail = "fail"
	// IdentityInexact: a counter of the key, or redis_error, is not a
	// finite number within ±MaxExactCounter (counters are read as float64 from
	// statsd and Prometheus text, which above 2^53 no longer hold every
	// integer): the sums cannot be compared exactly. Unknown: never a pass,
	// never a fail.
	IdentityInexact = "inexact"
)

// MaxExactCounter is 2^53, the largest count float64 holds exactly with
// every smaller whole number: counters past it are compared as unknown
// (IdentityInexact).
const MaxExactCounter = 1 << 53

// inexact names the first counter of k (at label) that is not a finite
// number within ±MaxExactCounter, with its value, or returns "".
func inexact(label string, k evidence.RLSKeyCounters) string {
	for _, c := range []struct {
		name string
		v    float64
	}{{"total_hits", k.TotalHits}, {"within_limit", k.WithinLimit}, {"over_limit", k.OverLimit}, {"near_limit", k.NearLimit},
		{"shadow_mode", k.ShadowMode}, {"over_limit_with_local_cache", k.OverLimitWithLocalCache}} {
		if why := inexactValue(c.v); why != "" {
			return fmt.Sprintf("%s %s = %g (%s)", label, c.name, c.v, why)
		}
	}
	return ""
}

// inexactValue says why v is no exact count, or "".
func inexactValue(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "not a number"
	case math.Abs(v) > MaxExactCounter:
		return "past 2^53, where float64 no longer holds every whole number"
	}
	return ""
}

// IdentityResult is the identity check of one stat key between two snapshots.
type IdentityResult struct {
	Key    string                  `json:"key"`
	Before evidence.RLSKeyCounters `json:"before"`
	After  evidence.RLSKeyCounters `json:"after"`
	Delta  evidence.RLSKeyCounters `json:"delta"`
	// Gap is Δtotal_hits - Δwithin_limit - Δover_limit.
	Gap    float64 `json:"gap"`
	Status string  `json:"status"`
	Detail string  `json:"detail"`
}

// CheckIdentities checks, per stat key present in either snapshot, the RLS
// counting rules of limiter/base_limiter.go for the interval before→after:
// total_hits = within_limit + over_limit (shadow-mode hits are counted in
// over_limit, so shadow_mode ≤ over_limit; local-cache hits likewise). A nil
// before means a fresh process (all zero), which is right for summed statsd
// deltas. Results are sorted by key.
func CheckIdentities(before, after *evidence.RLSCounters) []IdentityResult {
	if after == nil {
		return nil
	}
	keys := map[string]bool{}
	for k := range after.Keys {
		keys[k] = true
	}
	var redisDelta float64
	if before != nil {
		for k := range before.Keys {
			keys[k] = true
		}
		redisDelta = after.RedisErrors - before.RedisErrors
	} else {
		redisDelta = after.RedisErrors
	}
	// The redis_error counters are the same for every key: whether they
	// are exact is decided once (before's feeds redisDelta too).
	redisWhy := ""
	if why := inexactValue(after.RedisErrors); why != "" {
		redisWhy = fmt.Sprintf("after redis_error = %g (%s)", after.RedisErrors, why)
	} else if before != nil {
		if why := inexactValue(before.RedisErrors); why != "" {
			redisWhy = fmt.Sprintf("before redis_error = %g (%s)", before.RedisErrors, why)
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]IdentityResult, 0, len(names))
	for _, k := range names {
		var b evidence.RLSKeyCounters
		inBefore := false
		if before != nil {
			b, inBefore = before.Keys[k]
		}
		a, inAfter := after.Keys[k]
		d := subCounters(a, b)
		r := IdentityResult{Key: k, Before: b, After: a, Delta: d, Gap: d.TotalHits - d.WithinLimit - d.OverLimit}
		why := inexact("after", a)
		if why == "" {
			why = inexact("before", b)
		}
		if why == "" {
			why = redisWhy
		}
		switch {
		case why != "":
			r.Status = IdentityInexact
			r.Detail = "counter not comparable exactly: " + why + ": identity unknown"
		case inBefore && !inAfter:
			r.Status = IdentityReset
			r.Detail = "key missing after: counters restarted (RLS restart)"
		case anyNegative(d):
			r.Status = IdentityReset
			r.Detail = fmt.Sprintf("counter went down (total_hits %g→%g): RLS restarted, interval unusable", b.TotalHits, a.TotalHits)
		case d.ShadowMode > d.OverLimit:
			r.Status = IdentityFail
			r.Detail = fmt.Sprintf("shadow_mode %g > over_limit %g", d.ShadowMode, d.OverLimit)
		case d.OverLimitWithLocalCache > d.OverLimit:
			r.Status = IdentityFail
			r.Detail = fmt.Sprintf("over_limit_with_local_cache %g > over_limit %g", d.OverLimitWithLocalCache, d.OverLimit)
		case r.Gap == 0:
			r.Status = IdentityPass
			r.Detail = fmt.Sprintf("total_hits %g = within_limit %g + over_limit %g", d.TotalHits, d.WithinLimit, d.OverLimit)
		case r.Gap > 0 && redisDelta > 0:
			r.Status = IdentityErrorGap
			r.Detail = fmt.Sprintf("total_hits %g = within_limit %g + over_limit %g + %g hits without a decision (redis_error +%g calls)",
				d.TotalHits, d.WithinLimit, d.OverLimit, r.Gap, redisDelta)
		default:
			r.Status = IdentityFail
			r.Detail = fmt.Sprintf("total_hits %g != within_limit %g + over_limit %g (gap %g)", d.TotalHits, d.WithinLimit, d.OverLimit, r.Gap)
		}
		out = append(out, r)
	}
	return out
}
