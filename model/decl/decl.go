// Package decl translates every limiter declaration rlbench reads into the
// one model.Spec the model checker and the simulator run: Envoy's HTTP local
// rate limit filter (EnvoyLocal, the lab proxy's local section), an
// envoyproxy/ratelimit rule (RLSRule), nginx's limit_req (NginxLimitReq),
// HAProxy's stick-table rate limit (HAProxyStickTable),
// a generic token bucket (TokenBucketRate), go-redis/redis_rate's GCRA
// limit (GCRALimit) and the previous release's
// scenario.json `limits:` entry (Legacy). Each type has one Spec method; no
// other package builds a model.Spec by hand.
//
// decl imports only model and the standard library, so that evidence (the
// on-disk contract) can use it.
package decl

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rlbench/rlbench/model"
)

// Envoy versions whose local rate limit refill a translation names
// (model.Spec.EnvoyVersion).
const (
	// EnvoyTimerVersion is the last Envoy whose token bucket a timer refills:
	// tokens_per_fill added every fill_interval from the filter's creation
	// (source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc
	// up to v1.30, fill_timer_).
	EnvoyTimerVersion = "1.30"
	// EnvoyContinuousVersion is the first Envoy whose token bucket refills
	// lazily and continuously at tokens_per_fill/fill_interval per second
	// (v1.31 source/common/common/token_bucket_impl.cc AtomicTokenBucketImpl).
	EnvoyContinuousVersion = "1.31"
)

// Refill modes of EnvoyLocal.TokenBucketMode (the lab proxy's
// token_bucket_mode, the legacy LimitSpec's refill).
const (
	// RefillContinuous is Envoy 1.31+'s continuous refill (the default).
	RefillContinuous = "continuous"
	// RefillTimer is Envoy <= 1.30's timer refill.
	RefillTimer = "timer"
)

// ErrNotModelled is returned (wrapped) for a valid declaration that no
// model.Spec expresses; callers declare no model for it.
var ErrNotModelled = errors.New("not expressible as a limiter model")

// TokenBucket is Envoy's type.v3.TokenBucket
// (api/envoy/type/v3/token_bucket.proto): MaxTokens (> 0, the bucket starts
// full), TokensPerFill (0 means 1, Envoy's default) and FillInterval
// (>= 50ms). model.CheckEnvoyBucket owns these rules; Spec applies them
// through model.Spec.Validate.
type TokenBucket struct {
	MaxTokens     uint32
	TokensPerFill uint32
	FillInterval  time.Duration
}

// LocalDescriptor is one common.ratelimit.v3.LocalRateLimitDescriptor: its
// ordered entries (an empty value is a wildcard, Envoy 1.34+) and its own
// token bucket.
type LocalDescriptor struct {
	Entries     []model.Entry
	TokenBucket TokenBucket
}

// EnvoyLocal is Envoy's HTTP local rate limit filter
// (envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit) as far
// as its admissions go: the default bucket (FillInterval 0: none, only
// descriptors limit, as Envoy main "Ignore the default token bucket if
// fill_interval is 0"), the descriptors, filter_enabled and
// filter_enforced (percent, nil: as model.Spec defaults them),
// always_consume_default_token_bucket (nil: true),
// max_dynamic_descriptors (nil: 20),
// local_rate_limit_per_downstream_connection, and the refill: TokenBucketMode
// RefillContinuous ("" too) or RefillTimer.
type EnvoyLocal struct {
	TokenBucket
	Descriptors                     []LocalDescriptor
	FilterEnabled                   *float64
	FilterEnforced                  *float64
	AlwaysConsumeDefaultTokenBucket *bool
	MaxDynamicDescriptors           *uint32
	PerDownstreamConnection         bool
	TokenBucketMode                 string
	// EnvoyVersion is the version whose continuous refill (and features)
	// the filter has; "" means EnvoyContinuousVersion. A timer refill is
	// always EnvoyTimerVersion.
	EnvoyVersion string
	// ExactLevel: the continuous bucket keeps its level as a token count
	// (model.Spec.ExactLevel), as the rlbench lab proxy does.
	ExactLevel bool
	// Start is when the filter (and its timer) was created; zero: unknown
	// timer phase. Ignored for a continuous refill and per connection
	// (each connection's limiter has its own start).
	Start time.Time
}

// Spec translates the filter into an envoy_local model.Spec. Without a
// default bucket it is a default bucket that never empties (2^32-1 tokens,
// refilled in full every fill interval of the shortest descriptor's, or
// with a timer of their greatest common divisor): an error wrapping
// ErrNotModelled when that interval is below 50ms. Other errors are
// model.Spec.Validate's (*model.FieldError) or an unknown TokenBucketMode.
func (l EnvoyLocal) Spec() (model.Spec, error) {
	var timer bool
	switch l.TokenBucketMode {
	case "", RefillContinuous:
	case RefillTimer:
		timer = true
	default:
		return model.Spec{}, fmt.Errorf("token_bucket_mode: want %q or %q, got %q", RefillContinuous, RefillTimer, l.TokenBucketMode)
	}
	tpf := max(l.TokensPerFill, 1)
	s := model.Spec{Kind: model.KindEnvoyLocal, EnvoyVersion: l.EnvoyVersion, MaxTokens: l.MaxTokens, TokensPerFill: &tpf,
		FillInterval: model.Duration(l.FillInterval), FilterEnabledPercent: l.FilterEnabled, FilterEnforcedPercent: l.FilterEnforced,
		AlwaysConsumeDefault: l.AlwaysConsumeDefaultTokenBucket}
	if s.EnvoyVersion == "" {
		s.EnvoyVersion = EnvoyContinuousVersion
	}
	if timer {
		s.EnvoyVersion = EnvoyTimerVersion
		if !l.PerDownstreamConnection && !l.Start.IsZero() {
			s.TimerStart = l.Start.UTC().Format(time.RFC3339Nano)
		}
	} else {
		s.ExactLevel = l.ExactLevel
	}
	if l.PerDownstreamConnection {
		s.Scope = model.ScopeConnection
	}
	if l.MaxDynamicDescriptors != nil {
		n := int(*l.MaxDynamicDescriptors)
		s.MaxDynamicDescriptors = &n
	}
	for _, d := range l.Descriptors {
		dtpf := max(d.TokenBucket.TokensPerFill, 1)
		s.Descriptors = append(s.Descriptors, model.EnvoyDescriptor{Entries: append([]model.Entry(nil), d.Entries...),
			MaxTokens: d.TokenBucket.MaxTokens, TokensPerFill: &dtpf, FillInterval: model.Duration(d.TokenBucket.FillInterval)})
	}
	if l.FillInterval == 0 {
		never := uint32(math.MaxUint32)
		s.MaxTokens, s.TokensPerFill = never, &never
		var fill time.Duration
		for _, d := range l.Descriptors {
			if timer {
				fill = gcd(fill, d.TokenBucket.FillInterval)
			} else if fill == 0 || d.TokenBucket.FillInterval < fill {
				fill = d.TokenBucket.FillInterval
			}
		}
		if fill < model.EnvoyMinFillInterval {
			return model.Spec{}, fmt.Errorf("no default bucket, and the descriptors' fill intervals have no common interval of 50ms or more: %w", ErrNotModelled)
		}
		s.FillInterval = model.Duration(fill)
	}
	return validated(s)
}

func gcd(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// RLSRule is one envoyproxy/ratelimit rule's rate_limit
// (config.yaml: requests_per_unit, unit, unlimited) and shadow_mode, with
// the windows' alignment: model.AlignEpoch ("" too; the real service,
// src/limiter/cache_key.go) or model.AlignFirstHit (the lab RLS). Unit is
// case-insensitive (SECOND ... YEAR, src/config/config_impl.go).
type RLSRule struct {
	RequestsPerUnit uint32
	Unit            string
	Unlimited       bool
	ShadowMode      bool
	Align           string
}

// Spec translates the rule into a fixed_window model.Spec (every hit
// counted, OK iff the count after it is <= requests_per_unit,
// src/limiter/base_limiter.go), unit lower-cased. Errors are
// model.Spec.Validate's (*model.FieldError).
func (r RLSRule) Spec() (model.Spec, error) {
	return validated(model.Spec{Kind: model.KindFixedWindow, Limit: uint64(r.RequestsPerUnit), Unit: strings.ToLower(r.Unit),
		Align: r.Align, ShadowMode: r.ShadowMode, Unlimited: r.Unlimited})
}

// NginxZone is one limit_req directive with its limit_req_zone
// (ngx_http_limit_req_module): zone Name, Rate ("10r/s", "30r/m"), burst=,
// nodelay, delay=N, and the request value the zone is keyed on (a
// model.Request.Vars name; "": model.Request.Key).
type NginxZone struct {
	Name    string
	Rate    string
	Burst   int
	NoDelay bool
	Delay   int
	Key     string
}

// NginxLimitReq is a location's limit_req directives in order
// (ngx_http_limit_req_module.c ngx_http_limit_req_handler) and
// limit_req_dry_run.
type NginxLimitReq struct {
	Zones  []NginxZone
	DryRun bool
}

// Spec translates the directives into a nginx_limit_req model.Spec with
// one zone each. Errors are model.Spec.Validate's (*model.FieldError), e.g.
// a bad rate; no zone is an error.
func (n NginxLimitReq) Spec() (model.Spec, error) {
	if len(n.Zones) == 0 {
		return model.Spec{}, errors.New("nginx limit_req: no zone")
	}
	s := model.Spec{Kind: model.KindNginxLimitReq, DryRun: n.DryRun}
	for _, z := range n.Zones {
		s.Zones = append(s.Zones, model.NginxZone{Name: z.Name, Rate: z.Rate, Burst: z.Burst, NoDelay: z.NoDelay, Delay: z.Delay, Key: z.Key})
	}
	return validated(s)
}

// TokenBucketRate is a generic token bucket of Capacity tokens (> 0, starts
// full) refilled continuously at RatePerSec (>= 0): golang.org/x/time/rate
// Limiter.Allow.
type TokenBucketRate struct {
	Capacity   float64
	RatePerSec float64
}

// Spec translates the bucket into a token_bucket model.Spec. Errors are
// model.Spec.Validate's (*model.FieldError).
func (b TokenBucketRate) Spec() (model.Spec, error) {
	return validated(model.Spec{Kind: model.KindTokenBucket, Capacity: b.Capacity, RatePerSec: b.RatePerSec})
}

// GCRALimit is go-redis/redis_rate's Limit{Rate, Burst, Period} (rate.go):
// Rate requests per Period, Burst at one instant; redis_rate.PerSecond(n)
// is {Rate: n, Burst: n, Period: time.Second}. The lab gateway's `gcra:`
// section declares one.
type GCRALimit struct {
	Rate   int
	Burst  int
	Period time.Duration
}

// Spec translates the limit into a gcra model.Spec (emission interval T =
// Period/Rate, tolerance τ = Burst × T; redis_rate lua.go allowN). Errors
// are model.Spec.Validate's (*model.FieldError): Rate < 1, Period <= 0,
// Burst < 1 (redis_rate denies every request with burst 0).
func (l GCRALimit) Spec() (model.Spec, error) {
	return validated(model.Spec{Kind: model.KindGCRA, RatePerPeriod: l.Rate, Burst: l.Burst, Period: model.Duration(l.Period)})
}

func validated(s model.Spec) (model.Spec, error) {
	if err := s.Validate(); err != nil {
		return model.Spec{}, err
	}
	return s, nil
}
