package proxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rlbench/rlbench/collect/envoy"
)

// LocalRateLimit configures the lab equivalent of Envoy's HTTP local rate
// limit filter (envoy.filters.http.local_ratelimit, v3 LocalRateLimit) with
// one token bucket per proxy process ("The token bucket is shared across
// all workers, thus the rate limits are applied per Envoy process").
type LocalRateLimit struct {
	// StatPrefix roots the counters <StatPrefix>.http_local_rate_limit.
	// {enabled,ok,rate_limited,enforced}; default "http_local_rate_limiter".
	StatPrefix string `json:"stat_prefix,omitempty"`
	// MaxTokens is token_bucket.max_tokens (> 0): the bucket starts full
	// with MaxTokens tokens and never holds more.
	MaxTokens uint32 `json:"max_tokens"`
	// TokensPerFill is token_bucket.tokens_per_fill; default 1 (Envoy's).
	TokensPerFill uint32 `json:"tokens_per_fill,omitempty"`
	// FillInterval is token_bucket.fill_interval; Envoy requires >= 50 ms.
	FillInterval time.Duration `json:"fill_interval"`
	// FilterEnabled is filter_enabled as a percentage 0..100 of requests the
	// filter evaluates. nil = field absent: the filter is a no-op (no
	// counter moves; Envoy: "Defaults to 0% of requests for safety").
	FilterEnabled *float64 `json:"filter_enabled,omitempty"`
	// FilterEnforced is filter_enforced as a percentage 0..100 of evaluated,
	// token-less requests that get the local reply. nil = absent = 0%
	// (shadow mode: rate_limited grows, enforced stays 0, request continues).
	FilterEnforced *float64 `json:"filter_enforced,omitempty"`
	// Status is status.code of the local reply; values < 400 (and 0) mean
	// 429, like Envoy's toErrorCode.
	Status int `json:"status,omitempty"`
	// EnableXRateLimitHeaders is enable_x_ratelimit_headers: DRAFT_VERSION_03:
	// x-ratelimit-limit (MaxTokens), x-ratelimit-remaining (tokens left after
	// this request) and x-ratelimit-reset (whole seconds until the next
	// fill) on every response that had a bucket decision.
	EnableXRateLimitHeaders bool `json:"enable_x_ratelimit_headers,omitempty"`
}

// DefaultLocalStatPrefix is LocalRateLimit.StatPrefix when empty.
const DefaultLocalStatPrefix = "http_local_rate_limiter"

// MinFillInterval is Envoy's lower bound on token_bucket.fill_interval.
const MinFillInterval = 50 * time.Millisecond

// LocalRateLimitedBody is the body of Envoy's local rate limit reply
// (collect/envoy.LocalRateLimitedBody).
const LocalRateLimitedBody = envoy.LocalRateLimitedBody

// Validate checks the bucket as Envoy's config validation would: max_tokens
// > 0, fill_interval >= MinFillInterval, and filter_enabled and
// filter_enforced, when set, percentages in 0..100.
func (l *LocalRateLimit) Validate() error {
	if l.MaxTokens == 0 {
		return errors.New("local rate limit: max_tokens must be > 0")
	}
	if l.FillInterval < MinFillInterval {
		return fmt.Errorf("local rate limit: fill_interval %v is below Envoy's minimum %v", l.FillInterval, MinFillInterval)
	}
	for name, p := range map[string]*float64{"filter_enabled": l.FilterEnabled, "filter_enforced": l.FilterEnforced} {
		if p != nil && (*p < 0 || *p > 100 || *p != *p) {
			return fmt.Errorf("local rate limit: %s %v is not a percentage in 0..100", name, *p)
		}
	}
	return nil
}

// percentHit draws one runtime feature decision: true with probability
// pct/100 (0 never, 100 always), like Envoy's featureEnabled on a
// FractionalPercent.
func percentHit(pct *float64) bool {
	if pct == nil || *pct <= 0 {
		return false
	}
	if *pct >= 100 {
		return true
	}
	return rand.Float64()*100 < *pct
}

// bucket is one token bucket. Refill is computed lazily: fill k happens at
// start + k*interval (k >= 1) and adds perFill tokens, capped at max. This
// gives exactly the token counts of Envoy's timer that fires every
// fill_interval from filter creation, without a goroutine, and lets tests
// drive it with an injected clock.
type bucket struct {
	mu       sync.Mutex
	max      uint32
	perFill  uint32
	interval time.Duration
	start    time.Time
	fills    int64
	tokens   uint32
}

func newBucket(l *LocalRateLimit, start time.Time) *bucket {
	per := l.TokensPerFill
	if per == 0 {
		per = 1
	}
	return &bucket{max: l.MaxTokens, perFill: per, interval: l.FillInterval, start: start, tokens: l.MaxTokens}
}

// take consumes one token if available; it returns whether it did, the
// tokens left and the time until the next fill.
func (b *bucket) take(now time.Time) (ok bool, remaining uint32, reset time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := int64(now.Sub(b.start) / b.interval); k > b.fills {
		add := uint64(k-b.fills) * uint64(b.perFill)
		if t := uint64(b.tokens) + add; t >= uint64(b.max) {
			b.tokens = b.max
		} else {
			b.tokens = uint32(t)
		}
		b.fills = k
	}
	if b.tokens > 0 {
		b.tokens--
		ok = true
	}
	next := b.start.Add(time.Duration(b.fills+1) * b.interval)
	return ok, b.tokens, next.Sub(now)
}
