package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kinds of limiter a Spec can declare.
const (
	// KindTokenBucket is a generic token bucket of Capacity refilled
	// continuously at RatePerSec, starting full, each request taking one
	// token if at least one is there: golang.org/x/time/rate Limiter.Allow
	// (rate.go advance/reserveN) and the usual Redis+Lua gateway buckets.
	KindTokenBucket = "token_bucket"
	// KindEnvoyLocal is Envoy's HTTP local rate limit filter
	// (envoy.filters.http.local_ratelimit).
	KindEnvoyLocal = "envoy_local"
	// KindFixedWindow is a fixed-window counter: envoyproxy/ratelimit (epoch
	// aligned) or rlbench's lab RLS (optionally starting at the first hit).
	KindFixedWindow = "fixed_window"
	// KindNginxLimitReq is nginx's limit_req leaky bucket.
	KindNginxLimitReq = "nginx_limit_req"
	// KindSlidingLog is the exact sliding log: a request passes iff fewer
	// than Limit counted requests lie in (t-Window, t].
	KindSlidingLog = "sliding_log"
	// KindSlidingCounter is the two-counter sliding-window approximation:
	// previous window's count weighted by the part of it still inside the
	// sliding window, plus the current window's count (HAProxy
	// sc_http_req_rate / freq_ctr, Cloudflare, many Redis limiters).
	KindSlidingCounter = "sliding_counter"
	// KindGCRA is the generic cell rate algorithm as go-redis/redis_rate
	// runs it (lua.go allowN, from rwz/redis-gcra): RatePerPeriod requests
	// per Period, emission interval T = Period/RatePerPeriod, delay
	// variation tolerance τ = Burst × T; a request at t passes iff
	// max(TAT, t) + T - τ <= t, and then TAT = max(TAT, t) + T. It admits
	// exactly what a token bucket of Burst tokens refilled at
	// RatePerPeriod/Period does.
	KindGCRA = "gcra"
)

// Envoy local rate limit scopes (what a Request.Key names).
const (
	// ScopeProcess: one bucket per Envoy process (per proxy), shared by all
	// workers: Envoy's default (local_ratelimit docs: "the token bucket is
	// shared across all workers").
	ScopeProcess = "process"
	// ScopeWorker: one bucket per worker thread. Envoy's HTTP filter does not
	// do this; it is offered for limiters that keep thread-local buckets.
	ScopeWorker = "worker"
	// ScopeConnection: one limiter (default bucket and descriptors) per
	// downstream connection, local_rate_limit_per_downstream_connection.
	ScopeConnection = "connection"
)

// Fixed-window alignments.
const (
	// AlignEpoch: windows start at multiples of the unit since the Unix
	// epoch (envoyproxy/ratelimit src/limiter/cache_key.go).
	AlignEpoch = "epoch"
	// AlignFirstHit: a key's window starts at its first hit and the next one
	// at the first hit after it ended (rlbench's lab RLS, WindowFirstHit).
	AlignFirstHit = "first_hit"
	// AlignFreqCtr (sliding_counter only): HAProxy's freq_ctr, as a stick table's http_req_rate(<period>) and
	// sc_http_req_rate compute it (src/freq_ctr.c, include/haproxy/freq_ctr.h): whole-ms time, a key's period
	// starting at its first request (at an even ms) and moving on by whole periods while requests keep coming
	// (two periods without one start it anew), the previous period's share rounded down, every request counted
	// (Count must be "all"). See decl.HAProxyStickTable.
	AlignFreqCtr = "freq_ctr"
)

// What sliding windows count.
const (
	// CountAdmitted: only requests the limiter let through are counted.
	CountAdmitted = "admitted"
	// CountAll: every request is counted, rejected ones too.
	CountAll = "all"
)

// Duration is a time.Duration written in JSON as a Go duration string
// ("500ms", "1s", "1m").
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"1s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// EnvoyDescriptor is one configured descriptor of the local rate limit
// filter (envoy/extensions/common/ratelimit/v3 LocalRateLimitDescriptor):
// its entries and its own token bucket. An entry with an empty value is a
// wildcard (Envoy 1.34+): each distinct value gets its own bucket, kept in an
// LRU of max_dynamic_descriptors.
type EnvoyDescriptor struct {
	Entries []Entry `json:"entries"`
	// MaxTokens is the bucket's max_tokens (> 0).
	MaxTokens uint32 `json:"max_tokens"`
	// TokensPerFill defaults to 1, as in Envoy.
	TokensPerFill *uint32 `json:"tokens_per_fill,omitempty"`
	// FillInterval is required (Envoy requires fill_interval in a token bucket).
	FillInterval Duration `json:"fill_interval"`
}

// NginxZone is one limit_req directive with its limit_req_zone: zone name,
// rate ("10r/s", "30r/m"), burst, nodelay or delay=N, and the request value
// the zone is keyed on (a Request.Vars name; empty: Request.Key).
type NginxZone struct {
	Name    string `json:"name"`
	Rate    string `json:"rate"`
	Burst   int    `json:"burst,omitempty"`
	NoDelay bool   `json:"nodelay,omitempty"`
	Delay   int    `json:"delay,omitempty"`
	Key     string `json:"key,omitempty"`
}

// Spec declares a limiter, as in scenario.json. Kind selects the semantic;
// only the fields listed for that kind may be given (an unknown or
// inapplicable field is an error naming it).
//
//	{"kind":"token_bucket","capacity":100,"rate_per_sec":100}
//	{"kind":"nginx_limit_req","rate":"10r/s","burst":5,"nodelay":true}
//	{"kind":"fixed_window","limit":5,"unit":"hour","align":"epoch"}
//	{"kind":"envoy_local","envoy_version":"1.31","max_tokens":10,"tokens_per_fill":10,"fill_interval":"1s"}
//	{"kind":"sliding_log","limit":100,"window":"1m","count":"all"}
//	{"kind":"gcra","rate_per_period":10,"period":"1s","burst":20}
type Spec struct {
	Kind string `json:"kind"`

	// token_bucket: Capacity (> 0 tokens, the bucket starts full) and
	// RatePerSec (>= 0 tokens per second).
	Capacity   float64 `json:"capacity,omitempty"`
	RatePerSec float64 `json:"rate_per_sec,omitempty"`

	// envoy_local. EnvoyVersion ("1.31", "1.30.4") chooses the refill: from
	// 1.31 AtomicTokenBucket refills lazily and continuously at
	// tokens_per_fill/fill_interval (fractional, starts full, capped at
	// max_tokens); up to 1.30 a timer adds tokens_per_fill every
	// fill_interval from the limiter's creation (TimerStart, RFC 3339, when
	// known; otherwise the phase is unknown). Descriptors need 1.26+
	// (consumption sorted by fill rate), wildcard entries 1.34+,
	// AlwaysConsumeDefault 1.28+ (default true). FilterEnabledPercent and
	// FilterEnforcedPercent are filter_enabled and filter_enforced
	// (default 100 here; Envoy's own default is 0 %, so give them as
	// configured). MaxDynamicDescriptors defaults to 20 as in Envoy.
	EnvoyVersion          string            `json:"envoy_version,omitempty"`
	MaxTokens             uint32            `json:"max_tokens,omitempty"`
	TokensPerFill         *uint32           `json:"tokens_per_fill,omitempty"`
	FillInterval          Duration          `json:"fill_interval,omitempty"`
	Scope                 string            `json:"scope,omitempty"`
	Descriptors           []EnvoyDescriptor `json:"descriptors,omitempty"`
	AlwaysConsumeDefault  *bool             `json:"always_consume_default_token_bucket,omitempty"`
	MaxDynamicDescriptors *int              `json:"max_dynamic_descriptors,omitempty"`
	FilterEnabledPercent  *float64          `json:"filter_enabled_percent,omitempty"`
	FilterEnforcedPercent *float64          `json:"filter_enforced_percent,omitempty"`
	TimerStart            string            `json:"timer_start,omitempty"`
	// ExactLevel (envoy_local, 1.31+) declares a continuous bucket that
	// keeps its level as a token count (capped at max_tokens, one taken per
	// request, refills added), as the rlbench lab proxy does, instead of
	// Envoy's AtomicTokenBucket, whose double seconds since boot can make
	// even a burst from full come out one token short: from full, a burst
	// admits exactly max_tokens. Refill rounding stays tolerated.
	ExactLevel bool `json:"exact_level,omitempty"`

	// fixed_window: Limit hits per Unit (second, minute, hour, day, week,
	// month = 30 days, year = 365 days, as envoyproxy/ratelimit
	// utils.UnitToDivider), Align (epoch, default, or first_hit),
	// ShadowMode (counted, always answered OK), Unlimited (never limited).
	// sliding_log, sliding_counter: Limit per Window, and Count (required):
	// "admitted" or "all"; sliding_counter also Align: epoch (default) or
	// freq_ctr (HAProxy's stick-table rate, count all, whole-ms Window).
	Limit      uint64   `json:"limit,omitempty"`
	Unit       string   `json:"unit,omitempty"`
	Align      string   `json:"align,omitempty"`
	ShadowMode bool     `json:"shadow_mode,omitempty"`
	Unlimited  bool     `json:"unlimited,omitempty"`
	Window     Duration `json:"window,omitempty"`
	Count      string   `json:"count,omitempty"`

	// nginx_limit_req: one zone from Rate, Burst, NoDelay, Delay and Key, or
	// several in Zones (in limit_req order); DryRun is limit_req_dry_run.
	Rate    string      `json:"rate,omitempty"`
	Burst   int         `json:"burst,omitempty"`
	NoDelay bool        `json:"nodelay,omitempty"`
	Delay   int         `json:"delay,omitempty"`
	Key     string      `json:"key,omitempty"`
	Zones   []NginxZone `json:"zones,omitempty"`
	DryRun  bool        `json:"dry_run,omitempty"`

	// gcra: go-redis/redis_rate's Limit{Rate, Burst, Period}:
	// RatePerPeriod (>= 1) requests per Period (> 0), and Burst (>= 1,
	// shared with nginx_limit_req's burst field): the most requests a
	// fresh key admits at one instant. redis_rate.PerSecond(n) is
	// {n, 1s, n}.
	RatePerPeriod int      `json:"rate_per_period,omitempty"`
	Period        Duration `json:"period,omitempty"`
}

// kindFields lists the JSON fields each kind accepts besides "kind".
var kindFields = map[string][]string{
	KindTokenBucket: {"capacity", "rate_per_sec"},
	KindEnvoyLocal: {"envoy_version", "max_tokens", "tokens_per_fill", "fill_interval", "scope", "descriptors",
		"always_consume_default_token_bucket", "max_dynamic_descriptors", "filter_enabled_percent",
		"filter_enforced_percent", "timer_start", "exact_level"},
	KindFixedWindow:    {"limit", "unit", "align", "shadow_mode", "unlimited"},
	KindNginxLimitReq:  {"rate", "burst", "nodelay", "delay", "key", "zones", "dry_run"},
	KindSlidingLog:     {"limit", "window", "count"},
	KindSlidingCounter: {"limit", "window", "count", "align"},
	KindGCRA:           {"rate_per_period", "period", "burst"},
}

// KindFields returns the JSON fields a Spec of kind may give besides
// "kind" (nil for an unknown kind).
func KindFields(kind string) []string { return append([]string(nil), kindFields[kind]...) }

// Kinds returns the kinds a Spec may declare, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kindFields))
	for k := range kindFields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// FieldError is a Spec problem naming the JSON field ("zones[1].rate").
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return "limiter spec: " + e.Field + ": " + e.Problem }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

type specAlias Spec

// UnmarshalJSON decodes a Spec strictly: unknown fields, and fields that do
// not apply to the declared kind, are errors naming the field. Values are
// checked by Validate (and New), not here.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("limiter spec: %w", err)
	}
	kraw, ok := raw["kind"]
	if !ok {
		return fieldErr("kind", "missing (one of %s)", strings.Join(Kinds(), ", "))
	}
	var kind string
	if err := json.Unmarshal(kraw, &kind); err != nil {
		return fieldErr("kind", "want a string")
	}
	allowed, ok := kindFields[kind]
	if !ok {
		return fieldErr("kind", "unknown kind %q (one of %s)", kind, strings.Join(Kinds(), ", "))
	}
	for name := range raw {
		if name == "kind" || contains(allowed, name) {
			continue
		}
		if kindOf(name) != "" {
			return fieldErr(name, "does not apply to kind %q (fields: %s)", kind, strings.Join(allowed, ", "))
		}
		return fieldErr(name, "unknown field (kind %q takes: %s)", kind, strings.Join(allowed, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var a specAlias
	if err := dec.Decode(&a); err != nil {
		return fmt.Errorf("limiter spec: %w", err)
	}
	*s = Spec(a)
	return nil
}

func kindOf(field string) string {
	for k, fs := range kindFields {
		if contains(fs, field) {
			return k
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Decode reads one Spec from JSON strictly (see UnmarshalJSON), rejects
// trailing data and validates it.
func Decode(data []byte) (Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return Spec{}, err
	}
	if dec.More() {
		return Spec{}, fmt.Errorf("limiter spec: trailing data after the object")
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// Validate checks the values of s for its kind. Errors are *FieldError.
func (s Spec) Validate() error {
	_, err := s.normalized()
	return err
}

// unitSeconds is envoyproxy/ratelimit's window divisor of each
// RateLimitResponse.RateLimit.Unit (src/utils/utilities.go UnitToDivider):
// MONTH is 30 days, YEAR 365 days. It is rlbench's one unit table.
var unitSeconds = map[string]int64{
	"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400,
	"WEEK": 604800, "MONTH": 2592000, "YEAR": 31536000,
}

// UnitSeconds returns the window length in seconds of an RLS rate_limit unit
// (case-insensitive: SECOND 1, MINUTE 60, HOUR 3600, DAY 86400, WEEK 604800,
// MONTH 2592000, YEAR 31536000, as envoyproxy/ratelimit's
// src/utils/utilities.go UnitToDivider), or 0 for an unknown unit.
func UnitSeconds(unit string) int64 { return unitSeconds[strings.ToUpper(unit)] }

// envoyVersion is a parsed "major.minor[.patch]".
type envoyVersion struct{ major, minor int }

func parseEnvoyVersion(v string) (envoyVersion, error) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return envoyVersion{}, fmt.Errorf("want MAJOR.MINOR[.PATCH] such as \"1.31\", got %q", v)
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return envoyVersion{}, fmt.Errorf("want MAJOR.MINOR[.PATCH] such as \"1.31\", got %q", v)
		}
		n[i] = x
	}
	return envoyVersion{n[0], n[1]}, nil
}

func (v envoyVersion) atLeast(major, minor int) bool {
	return v.major > major || (v.major == major && v.minor >= minor)
}

// parseNginxRate parses limit_req_zone's rate= value as nginx does
// (ngx_http_limit_req_zone): an integer followed by "r/s" or "r/m" (no suffix
// means r/s), stored as rate*1000/scale milli-requests per second with
// integer division, so 1r/m is 16.
func parseNginxRate(s string) (int64, error) {
	scale := int64(1)
	num := s
	switch {
	case strings.HasSuffix(s, "r/s"):
		num = strings.TrimSuffix(s, "r/s")
	case strings.HasSuffix(s, "r/m"):
		num, scale = strings.TrimSuffix(s, "r/m"), 60
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/1000 {
		return 0, fmt.Errorf("invalid rate %q: want a positive integer followed by r/s or r/m", s)
	}
	milli := n * 1000 / scale
	if milli <= 0 {
		return 0, fmt.Errorf("invalid rate %q: below 1 milli-request per second", s)
	}
	return milli, nil
}

// normalized validates s and returns it with defaults filled in. Each
// kind's checks live in one helper; the first problem found is returned as
// a *FieldError.
func (s Spec) normalized() (Spec, error) {
	switch s.Kind {
	case KindTokenBucket:
		return s.normalizedTokenBucket()
	case KindEnvoyLocal:
		return s.normalizedEnvoy()
	case KindFixedWindow:
		return s.normalizedFixedWindow()
	case KindSlidingLog, KindSlidingCounter:
		return s.normalizedSliding()
	case KindNginxLimitReq:
		return s.normalizedNginx()
	case KindGCRA:
		return s.normalizedGCRA()
	case "":
		return s, fieldErr("kind", "missing (one of %s)", strings.Join(Kinds(), ", "))
	default:
		return s, fieldErr("kind", "unknown kind %q (one of %s)", s.Kind, strings.Join(Kinds(), ", "))
	}
}

// normalizedTokenBucket checks a token_bucket: a finite positive capacity
// and a finite rate_per_sec >= 0. It fills in no defaults.
func (s Spec) normalizedTokenBucket() (Spec, error) {
	if !(s.Capacity > 0) || math.IsInf(s.Capacity, 0) {
		return s, fieldErr("capacity", "must be a positive number of tokens, got %v", s.Capacity)
	}
	if !(s.RatePerSec >= 0) || math.IsInf(s.RatePerSec, 0) {
		return s, fieldErr("rate_per_sec", "must be >= 0 tokens per second, got %v", s.RatePerSec)
	}
	return s, nil
}

// normalizedFixedWindow checks a fixed_window (an envoyproxy/ratelimit
// rule): a known unit (lowercased), align epoch (the default) or
// first_hit, no limit or shadow_mode on an unlimited rule, and a limit
// that fits requests_per_unit's uint32.
func (s Spec) normalizedFixedWindow() (Spec, error) {
	if s.Unit == "" {
		return s, fieldErr("unit", "missing (second, minute, hour, day, week, month or year)")
	}
	if UnitSeconds(s.Unit) == 0 {
		return s, fieldErr("unit", "invalid rate limit unit %q (second, minute, hour, day, week, month or year)", s.Unit)
	}
	s.Unit = strings.ToLower(s.Unit)
	switch s.Align {
	case "":
		s.Align = AlignEpoch
	case AlignEpoch, AlignFirstHit:
	default:
		return s, fieldErr("align", "want %q or %q, got %q", AlignEpoch, AlignFirstHit, s.Align)
	}
	if s.Unlimited && s.Limit != 0 {
		return s, fieldErr("limit", "an unlimited rule takes no limit")
	}
	if s.Unlimited && s.ShadowMode {
		return s, fieldErr("shadow_mode", "an unlimited rule has nothing to shadow")
	}
	if s.Limit > math.MaxUint32 {
		return s, fieldErr("limit", "requests_per_unit is a uint32, got %d", s.Limit)
	}
	return s, nil
}

// normalizedSliding checks a sliding_log or sliding_counter: limit > 0, a
// positive window and a count of admitted or all.
func (s Spec) normalizedSliding() (Spec, error) {
	if s.Limit == 0 {
		return s, fieldErr("limit", "must be > 0")
	}
	if s.Window <= 0 {
		return s, fieldErr("window", "must be a positive duration such as \"1s\"")
	}
	if s.Count != CountAdmitted && s.Count != CountAll {
		return s, fieldErr("count", "want %q (only admitted requests count) or %q (rejected ones too), got %q", CountAdmitted, CountAll, s.Count)
	}
	if s.Kind == KindSlidingCounter {
		switch s.Align {
		case "":
		case AlignEpoch:
			s.Align = "" // the default, written as before
		case AlignFreqCtr:
			if s.Count != CountAll {
				return s, fieldErr("count", "align %q counts every request (HAProxy's track-sc counts before the deny rule): want %q, got %q", AlignFreqCtr, CountAll, s.Count)
			}
			if s.Window%Duration(time.Millisecond) != 0 {
				return s, fieldErr("window", "align %q counts in whole ms: want a whole number of milliseconds, got %v", AlignFreqCtr, time.Duration(s.Window))
			}
		default:
			return s, fieldErr("align", "want %q (the default) or %q, got %q", AlignEpoch, AlignFreqCtr, s.Align)
		}
	}
	return s, nil
}

// normalizedNginx checks an nginx_limit_req, given either as one zone
// (rate/burst/nodelay/delay/key, moved into Zones as zone "zone") or as
// Zones (unnamed ones become "zone<i>"; names must be unique, as nginx
// rejects a duplicate limit_req_zone). It copies Zones before filling names.
func (s Spec) normalizedNginx() (Spec, error) {
	single := s.Rate != "" || s.Burst != 0 || s.NoDelay || s.Delay != 0 || s.Key != ""
	if single && len(s.Zones) > 0 {
		return s, fieldErr("zones", "give either rate/burst/nodelay/delay/key for one zone or zones, not both")
	}
	if !single && len(s.Zones) == 0 {
		return s, fieldErr("rate", "missing (or give zones)")
	}
	if single {
		s.Zones = []NginxZone{{Name: "zone", Rate: s.Rate, Burst: s.Burst, NoDelay: s.NoDelay, Delay: s.Delay, Key: s.Key}}
		if err := checkZone(s.Zones[0], ""); err != nil {
			return s, err
		}
		s.Rate, s.Burst, s.NoDelay, s.Delay, s.Key = "", 0, false, 0, ""
		return s, nil
	}
	names := map[string]bool{}
	zones := make([]NginxZone, len(s.Zones))
	copy(zones, s.Zones)
	for i, z := range zones {
		p := fmt.Sprintf("zones[%d].", i)
		if z.Name == "" {
			zones[i].Name = fmt.Sprintf("zone%d", i)
		}
		if names[zones[i].Name] {
			return s, fieldErr(p+"name", "zone %q is duplicate (nginx: \"is duplicate\")", zones[i].Name)
		}
		names[zones[i].Name] = true
		if err := checkZone(z, p); err != nil {
			return s, err
		}
	}
	s.Zones = zones
	return s, nil
}

func checkZone(z NginxZone, prefix string) error {
	if z.Rate == "" {
		return fieldErr(prefix+"rate", "missing (such as \"10r/s\")")
	}
	if _, err := parseNginxRate(z.Rate); err != nil {
		return fieldErr(prefix+"rate", "%v", err)
	}
	if z.Burst < 0 {
		return fieldErr(prefix+"burst", "must be >= 0, got %d", z.Burst)
	}
	if z.Delay < 0 {
		return fieldErr(prefix+"delay", "must be > 0, got %d", z.Delay)
	}
	if z.NoDelay && z.Delay != 0 {
		return fieldErr(prefix+"delay", "give nodelay or delay, not both")
	}
	return nil
}

// normalizedEnvoy checks an envoy_local spec against the declared
// envoy_version and fills in Envoy's defaults (tokens_per_fill 1, scope
// process, always_consume_default_token_bucket true, max_dynamic_descriptors
// 20, filter percents 100). Checks run bucket first, then the
// version-gated options, then each descriptor.
func (s Spec) normalizedEnvoy() (Spec, error) {
	if s.EnvoyVersion == "" {
		return s, fieldErr("envoy_version", "missing: the refill and descriptor semantics depend on it (\"1.31\")")
	}
	v, err := parseEnvoyVersion(s.EnvoyVersion)
	if err != nil {
		return s, fieldErr("envoy_version", "%v", err)
	}
	if err := s.normalizeEnvoyBucket(); err != nil {
		return s, err
	}
	if err := s.normalizeEnvoyOptions(v); err != nil {
		return s, err
	}
	if err := s.checkEnvoyVersionGates(v); err != nil {
		return s, err
	}
	if err := s.normalizeEnvoyDescriptors(v); err != nil {
		return s, err
	}
	return s, nil
}

// normalizeEnvoyBucket checks the default bucket as Envoy does
// (CheckEnvoyBucket: max_tokens > 0, tokens_per_fill > 0 defaulting to 1,
// fill_interval >= 50ms) and the scope (default process).
func (s *Spec) normalizeEnvoyBucket() error {
	if err := refusedBucket("", s.MaxTokens, s.TokensPerFill, time.Duration(s.FillInterval)); err != nil {
		return err
	}
	if s.TokensPerFill == nil {
		one := uint32(1)
		s.TokensPerFill = &one
	}
	switch s.Scope {
	case "":
		s.Scope = ScopeProcess
	case ScopeProcess, ScopeWorker, ScopeConnection:
	default:
		return fieldErr("scope", "want %q, %q or %q, got %q", ScopeProcess, ScopeWorker, ScopeConnection, s.Scope)
	}
	return nil
}

// normalizeEnvoyOptions checks and defaults
// always_consume_default_token_bucket (Envoy 1.28+ when given),
// max_dynamic_descriptors (> 0, default 20) and the filter_enabled and
// filter_enforced percents (0..100, default 100), in that order.
func (s *Spec) normalizeEnvoyOptions(v envoyVersion) error {
	if s.AlwaysConsumeDefault == nil {
		t := true
		s.AlwaysConsumeDefault = &t
	} else if !v.atLeast(1, 28) {
		return fieldErr("always_consume_default_token_bucket", "needs Envoy 1.28+ (declared %s)", s.EnvoyVersion)
	}
	if s.MaxDynamicDescriptors == nil {
		n := 20
		s.MaxDynamicDescriptors = &n
	} else if *s.MaxDynamicDescriptors <= 0 {
		return fieldErr("max_dynamic_descriptors", "must be > 0")
	}
	for _, pc := range []struct {
		name string
		p    **float64
	}{{"filter_enabled_percent", &s.FilterEnabledPercent}, {"filter_enforced_percent", &s.FilterEnforcedPercent}} {
		if *pc.p == nil {
			h := 100.0
			*pc.p = &h
		} else if !(**pc.p >= 0 && **pc.p <= 100) {
			return fieldErr(pc.name, "must be within 0..100, got %v", **pc.p)
		}
	}
	return nil
}

// checkEnvoyVersionGates checks the options the declared version gates:
// timer_start (only for the timer refill of Envoy 1.30 and before, not per
// connection, RFC 3339), exact_level (only for the continuous refill of
// 1.31+) and descriptors (1.26+).
func (s *Spec) checkEnvoyVersionGates(v envoyVersion) error {
	if s.TimerStart != "" {
		if v.atLeast(1, 31) {
			return fieldErr("timer_start", "Envoy %s refills continuously; a timer phase applies to 1.30 and before", s.EnvoyVersion)
		}
		if s.Scope == ScopeConnection {
			return fieldErr("timer_start", "each downstream connection starts its own timer")
		}
		if _, err := time.Parse(time.RFC3339Nano, s.TimerStart); err != nil {
			return fieldErr("timer_start", "want RFC 3339 time: %v", err)
		}
	}
	if s.ExactLevel && !v.atLeast(1, 31) {
		return fieldErr("exact_level", "applies to the continuous refill of Envoy 1.31+ (declared %s)", s.EnvoyVersion)
	}
	if len(s.Descriptors) > 0 && !v.atLeast(1, 26) {
		return fieldErr("descriptors", "descriptor consumption before Envoy 1.26 is not modelled (declared %s)", s.EnvoyVersion)
	}
	return nil
}

// normalizeEnvoyDescriptors checks each descriptor in order and replaces
// s.Descriptors with a copy whose tokens_per_fill defaults to 1.
func (s *Spec) normalizeEnvoyDescriptors(v envoyVersion) error {
	seen := map[string]bool{}
	ds := make([]EnvoyDescriptor, len(s.Descriptors))
	copy(ds, s.Descriptors)
	for i := range ds {
		if err := s.normalizeEnvoyDescriptor(v, fmt.Sprintf("descriptors[%d].", i), &ds[i], seen); err != nil {
			return err
		}
	}
	s.Descriptors = ds
	return nil
}

// normalizeEnvoyDescriptor checks one descriptor d, whose fields are
// named with prefix p: non-empty entries with keys, a wildcard (empty
// value) only on Envoy 1.34+ and not per connection, no duplicate of an
// earlier descriptor in seen, and its own bucket (CheckEnvoyBucket:
// max_tokens > 0, tokens_per_fill > 0 defaulting to 1, fill_interval >=
// 50ms; before 1.31 also a multiple of the default bucket's fill_interval).
func (s *Spec) normalizeEnvoyDescriptor(v envoyVersion, p string, d *EnvoyDescriptor, seen map[string]bool) error {
	if len(d.Entries) == 0 {
		return fieldErr(p+"entries", "must not be empty")
	}
	wild := false
	for j, e := range d.Entries {
		if e.Key == "" {
			return fieldErr(fmt.Sprintf("%sentries[%d].key", p, j), "must not be empty")
		}
		if e.Value == "" {
			wild = true
		}
	}
	if wild && !v.atLeast(1, 34) {
		return fieldErr(p+"entries", "an empty value is a wildcard, which needs Envoy 1.34+ (declared %s)", s.EnvoyVersion)
	}
	if wild && s.Scope == ScopeConnection {
		return fieldErr(p+"entries", "wildcard descriptors do not work with per-connection limiting")
	}
	id := Descriptor(d.Entries).String()
	if seen[id] {
		return fieldErr(p+"entries", "duplicate descriptor in the local rate descriptor: %s", id)
	}
	seen[id] = true
	if err := refusedBucket(p, d.MaxTokens, d.TokensPerFill, time.Duration(d.FillInterval)); err != nil {
		return err
	}
	if d.TokensPerFill == nil {
		one := uint32(1)
		d.TokensPerFill = &one
	}
	if !v.atLeast(1, 31) && d.FillInterval%s.FillInterval != 0 {
		return fieldErr(p+"fill_interval", "local rate descriptor limit is not a multiple of token bucket fill timer (%v)", time.Duration(s.FillInterval))
	}
	return nil
}
