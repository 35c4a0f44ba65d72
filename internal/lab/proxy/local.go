package proxy

import (
	"container/list"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/model"
)

// LocalRateLimit configures the lab equivalent of Envoy's HTTP local rate
// limit filter (envoy.filters.http.local_ratelimit, v3 LocalRateLimit): a
// default token bucket and, with Descriptors, one token bucket per
// configured descriptor, per proxy process ("The token bucket is shared
// across all workers, thus the rate limits are applied per Envoy process")
// or, with PerDownstreamConnection, per downstream connection. Semantics
// follow Envoy source/extensions/filters/common/local_ratelimit/
// local_ratelimit_impl.cc (LocalRateLimiterImpl) and
// source/extensions/filters/http/local_ratelimit/local_ratelimit.cc.
type LocalRateLimit struct {
	// StatPrefix roots the counters <StatPrefix>.http_local_rate_limit.
	// {enabled,ok,rate_limited,enforced}; default "http_local_rate_limiter".
	StatPrefix string `json:"stat_prefix,omitempty"`
	// MaxTokens is token_bucket.max_tokens (> 0): the default bucket starts
	// full with MaxTokens tokens and never holds more.
	MaxTokens uint32 `json:"max_tokens"`
	// TokensPerFill is token_bucket.tokens_per_fill; default 1 (Envoy's).
	TokensPerFill uint32 `json:"tokens_per_fill,omitempty"`
	// FillInterval is token_bucket.fill_interval; Envoy requires >= 50 ms.
	// 0 is allowed only with Descriptors and means no default bucket:
	// requests that match no descriptor pass (Envoy main: "Ignore the
	// default token bucket if fill_interval is 0").
	FillInterval Duration `json:"fill_interval"`
	// FilterEnabled is filter_enabled as a percentage 0..100 of requests the
	// filter evaluates. nil = field absent: the filter is a no-op (no
	// counter moves; Envoy: "Defaults to 0% of requests for safety"); the
	// lab (a plan's lab.local, rlbench lab) makes nil 100.
	FilterEnabled *float64 `json:"filter_enabled,omitempty"`
	// FilterEnforced is filter_enforced as a percentage 0..100 of evaluated,
	// token-less requests that get the local reply. nil = absent = 0%
	// (shadow mode: rate_limited grows, enforced stays 0, request
	// continues); the lab (a plan's lab.local, rlbench lab) makes nil 100.
	FilterEnforced *float64 `json:"filter_enforced,omitempty"`
	// Status is status.code of the local reply; values < 400 (and 0) mean
	// 429, like Envoy's toErrorCode.
	Status int `json:"status,omitempty"`
	// EnableXRateLimitHeaders is enable_x_ratelimit_headers: DRAFT_VERSION_03:
	// x-ratelimit-limit (max_tokens of the reported bucket),
	// x-ratelimit-remaining (its whole tokens when the response is sent) and
	// x-ratelimit-reset (seconds until its next token) on every response
	// whose request had a bucket decision. The reported bucket is the one
	// that rejected, else the first matched descriptor's (lowest fill
	// rate), else the default bucket.
	EnableXRateLimitHeaders bool `json:"enable_x_ratelimit_headers,omitempty"`
	// Descriptors are the filter's descriptors, each with its own token
	// bucket. A request descriptor matches one only when its ordered
	// entries equal the configured ones exactly; a configured entry with an
	// empty value is a wildcard (Envoy 1.34+): every distinct value gets
	// its own bucket, kept in an LRU of MaxDynamicDescriptors per
	// descriptor, and a value evicted from it comes back with a full
	// bucket. Duplicates are rejected.
	Descriptors []LocalDescriptor `json:"descriptors,omitempty"`
	// RateLimits are the route's rate_limits entries (the filter's own
	// rate_limits, Envoy ~1.32+): each builds one request descriptor from
	// its actions. They are evaluated only when Descriptors is non-empty.
	RateLimits []descriptor.RateLimitEntry `json:"rate_limits,omitempty"`
	// AlwaysConsumeDefaultTokenBucket is always_consume_default_token_bucket:
	// nil means true. The default bucket is consumed when no descriptor
	// matched, or always when true; false lets descriptor-limited requests
	// bypass the default bucket.
	AlwaysConsumeDefaultTokenBucket *bool `json:"always_consume_default_token_bucket,omitempty"`
	// MaxDynamicDescriptors is max_dynamic_descriptors, the LRU size of each
	// wildcard descriptor; nil means 20.
	MaxDynamicDescriptors *uint32 `json:"max_dynamic_descriptors,omitempty"`
	// PerDownstreamConnection is local_rate_limit_per_downstream_connection:
	// every downstream connection gets its own limiter (default bucket and
	// descriptors), starting full. Wildcard descriptors are not allowed
	// with it (Envoy rejects the combination).
	PerDownstreamConnection bool `json:"local_rate_limit_per_downstream_connection,omitempty"`
	// TokenBucketMode selects how buckets refill: TokenBucketContinuous
	// (default, Envoy >= 1.31: tokens accrue continuously at
	// tokens_per_fill/fill_interval per second, fractional, capped at
	// max_tokens) or TokenBucketTimer (Envoy <= 1.30: a timer running from
	// the filter's creation adds tokens_per_fill every fill_interval;
	// descriptor intervals must then be multiples of the default one).
	TokenBucketMode string `json:"token_bucket_mode,omitempty"`
}

// Token bucket refill modes of LocalRateLimit.TokenBucketMode.
const (
	TokenBucketContinuous = "continuous"
	TokenBucketTimer      = "timer"
)

// LocalDescriptor is one common.ratelimit.v3.LocalRateLimitDescriptor.
type LocalDescriptor struct {
	// Entries are the descriptor's ordered entries; an empty Value is a
	// wildcard. At least one.
	Entries []descriptor.DescriptorEntry `json:"entries"`
	// TokenBucket is the descriptor's own bucket.
	TokenBucket TokenBucket `json:"token_bucket"`
}

// TokenBucket is type.v3.TokenBucket.
type TokenBucket struct {
	// MaxTokens > 0; the bucket starts full.
	MaxTokens uint32 `json:"max_tokens"`
	// TokensPerFill; 0 means 1.
	TokensPerFill uint32 `json:"tokens_per_fill,omitempty"`
	// FillInterval >= 50 ms.
	FillInterval Duration `json:"fill_interval"`
}

// DefaultLocalStatPrefix is LocalRateLimit.StatPrefix when empty.
const DefaultLocalStatPrefix = "http_local_rate_limiter"

// MinFillInterval is Envoy's lower bound on token_bucket.fill_interval
// (model.EnvoyMinFillInterval).
const MinFillInterval = Duration(model.EnvoyMinFillInterval)

// DefaultMaxDynamicDescriptors is LocalRateLimit.MaxDynamicDescriptors when nil.
const DefaultMaxDynamicDescriptors = 20

// Validate checks the filter as Envoy's config validation would: max_tokens
// > 0, fill_interval >= MinFillInterval (or 0 with descriptors: no default
// bucket), filter_enabled and filter_enforced percentages in 0..100, each
// descriptor's entries and bucket, no duplicate descriptor, no wildcard
// with PerDownstreamConnection, descriptor intervals that are multiples of
// the default one in timer mode, and the rate_limits actions.
func (l *LocalRateLimit) Validate() error {
	if err := checkBucket("", TokenBucket{MaxTokens: l.MaxTokens, TokensPerFill: l.TokensPerFill, FillInterval: l.FillInterval},
		l.FillInterval == 0 && len(l.Descriptors) > 0); err != nil {
		return err
	}
	for name, p := range map[string]*float64{"filter_enabled": l.FilterEnabled, "filter_enforced": l.FilterEnforced} {
		if p != nil && (*p < 0 || *p > 100 || *p != *p) {
			return fmt.Errorf("local rate limit: %s %v is not a percentage in 0..100", name, *p)
		}
	}
	switch l.TokenBucketMode {
	case "", TokenBucketContinuous, TokenBucketTimer:
	default:
		return fmt.Errorf("local rate limit: token_bucket_mode %q: want %s or %s", l.TokenBucketMode, TokenBucketContinuous, TokenBucketTimer)
	}
	seen := map[string]int{}
	for i, d := range l.Descriptors {
		at := fmt.Sprintf("local rate limit: descriptors[%d]", i)
		if len(d.Entries) == 0 {
			return fmt.Errorf("%s: at least one entry is required", at)
		}
		wild := false
		for j, e := range d.Entries {
			if e.Key == "" {
				return fmt.Errorf("%s.entries[%d]: key is required", at, j)
			}
			wild = wild || e.Value == ""
		}
		if wild && l.TokenBucketMode == TokenBucketTimer {
			return fmt.Errorf("%s: wildcard (empty value) descriptors arrived in Envoy 1.34, after the timer mode (<= 1.30): use token_bucket_mode %s", at, TokenBucketContinuous)
		}
		if wild && l.PerDownstreamConnection {
			return fmt.Errorf("%s: a wildcard (empty value) descriptor cannot be used with local_rate_limit_per_downstream_connection", at)
		}
		tb := d.TokenBucket
		if err := checkBucket(fmt.Sprintf("descriptors[%d].token_bucket.", i), tb, false); err != nil {
			return err
		}
		if l.TokenBucketMode == TokenBucketTimer && l.FillInterval > 0 && tb.FillInterval%l.FillInterval != 0 {
			return fmt.Errorf("%s.token_bucket: in timer mode (Envoy <= 1.30) fill_interval %v must be a multiple of the default %v", at, tb.FillInterval, l.FillInterval)
		}
		k := descriptorKey(d.Entries)
		if j, dup := seen[k]; dup {
			return fmt.Errorf("%s duplicates descriptors[%d] (Envoy: duplicate descriptor in the local rate descriptor)", at, j)
		}
		seen[k] = i
	}
	_, err := descriptor.CompileRateLimits("local rate limit: rate_limits", l.RateLimits)
	return err
}

// BucketError is a token bucket of a LocalRateLimit that Envoy refuses
// (model.CheckEnvoyBucket, the one owner of the rules). Field is the
// refused field's path in LocalRateLimit's JSON ("fill_interval",
// "descriptors[1].token_bucket.max_tokens"), for an error naming its line.
type BucketError struct {
	Field string
	Issue model.BucketIssue
}

// Error returns "local rate limit: <Field>: <problem>".
func (e *BucketError) Error() string { return "local rate limit: " + e.Field + ": " + e.Issue.Problem }

// checkBucket checks tb as Envoy does (model.CheckEnvoyBucket; its
// TokensPerFill 0 is the absent field, 1) and returns the first refusal
// as a *BucketError with its field under prefix. noDefault (fill_interval
// 0 with descriptors: no default bucket) leaves fill_interval unchecked.
func checkBucket(prefix string, tb TokenBucket, noDefault bool) error {
	var tpf *uint32
	if tb.TokensPerFill != 0 {
		tpf = &tb.TokensPerFill
	}
	for _, i := range model.CheckEnvoyBucket(tb.MaxTokens, tpf, time.Duration(tb.FillInterval)) {
		if i.Refused && !(noDefault && i.Field == "fill_interval") {
			return &BucketError{Field: prefix + i.Field, Issue: i}
		}
	}
	return nil
}

// alwaysConsumeDefault is AlwaysConsumeDefaultTokenBucket with its default.
func (l *LocalRateLimit) alwaysConsumeDefault() bool {
	return l.AlwaysConsumeDefaultTokenBucket == nil || *l.AlwaysConsumeDefaultTokenBucket
}

// descriptorKey is a descriptor's identity: its ordered keys and values.
func descriptorKey(es []descriptor.DescriptorEntry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Key)
		b.WriteByte(0)
		b.WriteString(e.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// bucket is one token bucket, safe for concurrent use.
//
// Continuous mode follows Envoy's AtomicTokenBucketImpl
// (source/common/common/token_bucket_impl.cc): tokens(t) = min(max,
// tokens(last) + (t-last)·rate) with rate = tokens_per_fill/fill_interval,
// fractional; a request needs a whole token.
//
// Timer mode follows Envoy <= 1.30's fill timer: fill k happens at start +
// k·interval (k >= 1) and adds perFill tokens, capped at max, computed
// lazily so that no goroutine runs and an injected clock drives it.
type bucket struct {
	mu       sync.Mutex
	timer    bool
	max      float64
	perFill  float64
	interval time.Duration
	rate     float64 // tokens per second
	tokens   float64
	last     time.Time // continuous: time of tokens
	start    time.Time // timer: creation
	fills    int64     // timer: fills applied
}

func newBucket(tb TokenBucket, timer bool, start time.Time) *bucket {
	per := tb.TokensPerFill
	if per == 0 {
		per = 1
	}
	return &bucket{timer: timer, max: float64(tb.MaxTokens), perFill: float64(per), interval: time.Duration(tb.FillInterval),
		rate: float64(per) / time.Duration(tb.FillInterval).Seconds(), tokens: float64(tb.MaxTokens), last: start, start: start}
}

func (b *bucket) refillLocked(now time.Time) {
	if b.timer {
		if k := int64(now.Sub(b.start) / b.interval); k > b.fills {
			b.tokens = math.Min(b.max, b.tokens+float64(k-b.fills)*b.perFill)
			b.fills = k
		}
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(b.max, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
}

// take consumes one whole token if there is one.
func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(now)
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// headers returns the DRAFT_VERSION_03 values for this bucket at now:
// max_tokens, whole tokens remaining, and the reset in seconds. Continuous:
// Envoy RateLimitTokenBucket::resetSeconds, the milliseconds until the next
// whole token divided by 1000 in integer arithmetic. Timer: the whole
// seconds until the next fill (remainingFillInterval).
func (b *bucket) headers(now time.Time) (limit, remaining uint64, reset int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(now)
	remaining = uint64(b.tokens)
	if b.timer {
		next := b.start.Add(time.Duration(b.fills+1) * b.interval)
		return uint64(b.max), remaining, int64(next.Sub(now) / time.Second)
	}
	var ms int64
	if b.tokens < 1 {
		ms = int64(math.Ceil((1 - b.tokens) / b.rate * 1000))
	}
	return uint64(b.max), remaining, ms / 1000
}

// localLimiter is one LocalRateLimiterImpl: the default bucket, the exact
// descriptor buckets and the wildcard descriptors' LRUs.
type localLimiter struct {
	cfg        *LocalRateLimit
	def        *bucket // nil: no default bucket
	exact      map[string]*bucket
	wildcards  []*wildcardDescriptor
	alwaysDef  bool
	hasDescrip bool
}

// wildcardDescriptor is Envoy's DynamicDescriptor: a configured descriptor
// with at least one empty value and an LRU of the buckets of the values seen.
type wildcardDescriptor struct {
	entries []descriptor.DescriptorEntry
	tb      TokenBucket
	timer   bool
	size    int
	mu      sync.Mutex
	lru     *list.List // of *dynEntry, most recent first
	byKey   map[string]*list.Element
}

type dynEntry struct {
	key string
	b   *bucket
}

func newLocalLimiter(l *LocalRateLimit, start time.Time) *localLimiter {
	timer := l.TokenBucketMode == TokenBucketTimer
	ll := &localLimiter{cfg: l, exact: map[string]*bucket{}, alwaysDef: l.alwaysConsumeDefault(), hasDescrip: len(l.Descriptors) > 0}
	if l.FillInterval > 0 {
		ll.def = newBucket(TokenBucket{MaxTokens: l.MaxTokens, TokensPerFill: l.TokensPerFill, FillInterval: l.FillInterval}, timer, start)
	}
	size := DefaultMaxDynamicDescriptors
	if l.MaxDynamicDescriptors != nil {
		size = int(*l.MaxDynamicDescriptors)
	}
	for _, d := range l.Descriptors {
		wild := slices.ContainsFunc(d.Entries, func(e descriptor.DescriptorEntry) bool { return e.Value == "" })
		if wild {
			ll.wildcards = append(ll.wildcards, &wildcardDescriptor{entries: d.Entries, tb: d.TokenBucket, timer: timer, size: size,
				lru: list.New(), byKey: map[string]*list.Element{}})
			continue
		}
		ll.exact[descriptorKey(d.Entries)] = newBucket(d.TokenBucket, timer, start)
	}
	return ll
}

// matches reports whether the request descriptor fits the wildcard one:
// same length, same keys in order, values equal or configured empty.
func (w *wildcardDescriptor) matches(rd []descriptor.DescriptorEntry) bool {
	if len(rd) != len(w.entries) {
		return false
	}
	for i, e := range w.entries {
		if rd[i].Key != e.Key || (e.Value != "" && rd[i].Value != e.Value) {
			return false
		}
	}
	return true
}

// bucketFor returns the bucket of this request descriptor's values,
// creating it full (and evicting the least recently used one) when new.
func (w *wildcardDescriptor) bucketFor(rd []descriptor.DescriptorEntry, now time.Time) *bucket {
	k := descriptorKey(rd)
	w.mu.Lock()
	defer w.mu.Unlock()
	if el, ok := w.byKey[k]; ok {
		w.lru.MoveToFront(el)
		return el.Value.(*dynEntry).b
	}
	if w.size <= 0 {
		return nil
	}
	if w.lru.Len() >= w.size {
		old := w.lru.Back()
		w.lru.Remove(old)
		delete(w.byKey, old.Value.(*dynEntry).key)
	}
	b := newBucket(w.tb, w.timer, now)
	w.byKey[k] = w.lru.PushFront(&dynEntry{key: k, b: b})
	return b
}

// decide is LocalRateLimiterImpl::requestAllowed: consume the matched
// descriptors' buckets in ascending fill rate (stable for equal rates) until
// one has no token, then the default bucket iff nothing matched or
// always_consume_default_token_bucket. It returns whether the request is
// allowed and the bucket the x-ratelimit headers report (nil for none).
func (ll *localLimiter) decide(descs [][]descriptor.DescriptorEntry, now time.Time) (bool, *bucket) {
	var matched [8]*bucket
	ms := matched[:0]
	for _, rd := range descs {
		if b := ll.exact[descriptorKey(rd)]; b != nil {
			ms = append(ms, b)
			continue
		}
		for _, w := range ll.wildcards {
			if w.matches(rd) {
				if b := w.bucketFor(rd, now); b != nil {
					ms = append(ms, b)
				}
				break
			}
		}
	}
	if len(ms) > 1 {
		slices.SortStableFunc(ms, func(a, b *bucket) int {
			switch {
			case a.rate < b.rate:
				return -1
			case a.rate > b.rate:
				return 1
			}
			return 0
		})
	}
	for _, b := range ms {
		if !b.take(now) {
			return false, b
		}
	}
	var first *bucket
	if len(ms) > 0 {
		first = ms[0]
	}
	if len(ms) == 0 || ll.alwaysDef {
		if ll.def == nil {
			return true, first
		}
		if !ll.def.take(now) {
			return false, ll.def
		}
		if first == nil {
			first = ll.def
		}
	}
	return true, first
}
