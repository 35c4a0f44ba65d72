package decl

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/rlbench/rlbench/model"
)

// TestEnvoyLocalSpec: the refill mode picks the Envoy version (a timer is
// 1.30's, from the filter's start unless per connection), descriptors keep
// their buckets (tokens_per_fill 0 is 1), no default bucket is one that
// never empties at the descriptors' shortest interval, or their greatest
// common divisor with a timer, and none below 50ms is not modelled.
func TestEnvoyLocalSpec(t *testing.T) {
	start := time.Date(2026, 12, 1, 9, 15, 58, 0, time.UTC)
	desc := []LocalDescriptor{
		{Entries: []model.Entry{{Key: "k", Value: "a"}}, TokenBucket: TokenBucket{MaxTokens: 2, FillInterval: 2 * time.Second}},
		{Entries: []model.Entry{{Key: "k", Value: "b"}}, TokenBucket: TokenBucket{MaxTokens: 2, FillInterval: 3 * time.Second}},
	}
	s, err := EnvoyLocal{TokenBucket: TokenBucket{MaxTokens: 5, FillInterval: time.Second}, EnvoyVersion: "1.34", ExactLevel: true, Start: start}.Spec()
	if err != nil || s.EnvoyVersion != "1.34" || !s.ExactLevel || s.TimerStart != "" || *s.TokensPerFill != 1 {
		t.Fatalf("continuous: %+v %v", s, err)
	}
	s, err = EnvoyLocal{TokenBucket: TokenBucket{MaxTokens: 5, FillInterval: time.Second}, TokenBucketMode: RefillTimer, ExactLevel: true, Start: start}.Spec()
	if err != nil || s.EnvoyVersion != EnvoyTimerVersion || s.ExactLevel || s.TimerStart != "2026-12-01T09:15:58Z" {
		t.Fatalf("timer: %+v %v", s, err)
	}
	s, err = EnvoyLocal{TokenBucket: TokenBucket{MaxTokens: 5, FillInterval: time.Second}, TokenBucketMode: RefillTimer, PerDownstreamConnection: true, Start: start}.Spec()
	if err != nil || s.Scope != model.ScopeConnection || s.TimerStart != "" {
		t.Fatalf("per connection: %+v %v", s, err)
	}
	s, err = EnvoyLocal{Descriptors: desc}.Spec()
	if err != nil || s.MaxTokens != math.MaxUint32 || time.Duration(s.FillInterval) != 2*time.Second || len(s.Descriptors) != 2 || *s.Descriptors[1].TokensPerFill != 1 {
		t.Fatalf("no default bucket: %+v %v", s, err)
	}
	s, err = EnvoyLocal{Descriptors: desc, TokenBucketMode: RefillTimer}.Spec()
	if err != nil || time.Duration(s.FillInterval) != time.Second {
		t.Fatalf("no default bucket, timer: %+v %v", s, err)
	}
	odd := []LocalDescriptor{desc[0], {Entries: []model.Entry{{Key: "k", Value: "c"}}, TokenBucket: TokenBucket{MaxTokens: 1, FillInterval: 2*time.Second + 30*time.Millisecond}}}
	if _, err := (EnvoyLocal{Descriptors: odd, TokenBucketMode: RefillTimer}).Spec(); !errors.Is(err, ErrNotModelled) {
		t.Fatalf("timer gcd 10ms: %v", err)
	}
	var fe *model.FieldError
	if _, err := (EnvoyLocal{TokenBucket: TokenBucket{FillInterval: time.Second}}).Spec(); !errors.As(err, &fe) {
		t.Fatalf("max_tokens 0: %v", err)
	}
	if _, err := (EnvoyLocal{TokenBucket: TokenBucket{MaxTokens: 1, FillInterval: time.Second}, TokenBucketMode: "lazy"}).Spec(); err == nil {
		t.Fatal("unknown token_bucket_mode accepted")
	}
}

// TestRLSRuleSpec: an RLS rule is a fixed window of its unit, lower-cased,
// in shadow mode when the rule is; a unit envoyproxy/ratelimit does not
// know is an error naming the field.
func TestRLSRuleSpec(t *testing.T) {
	s, err := RLSRule{RequestsPerUnit: 5, Unit: "HOUR", ShadowMode: true, Align: model.AlignFirstHit}.Spec()
	if err != nil || s.Kind != model.KindFixedWindow || s.Limit != 5 || s.Unit != "hour" || !s.ShadowMode || s.Align != model.AlignFirstHit {
		t.Fatalf("%+v %v", s, err)
	}
	var fe *model.FieldError
	if _, err := (RLSRule{RequestsPerUnit: 5, Unit: "FORTNIGHT"}).Spec(); !errors.As(err, &fe) || fe.Field != "unit" {
		t.Fatalf("bad unit: %v", err)
	}
	if s, err := (RLSRule{Unlimited: true, Unit: "SECOND"}).Spec(); err != nil || !s.Unlimited {
		t.Fatalf("unlimited: %+v %v", s, err)
	}
}

// TestNginxLimitReqSpec: one zone per limit_req, in order; a bad rate and
// no zone are errors.
func TestNginxLimitReqSpec(t *testing.T) {
	s, err := NginxLimitReq{Zones: []NginxZone{{Name: "a", Rate: "10r/s", Burst: 5, NoDelay: true}, {Name: "b", Rate: "30r/m", Delay: 2}}, DryRun: true}.Spec()
	if err != nil || s.Kind != model.KindNginxLimitReq || len(s.Zones) != 2 || s.Zones[1] != (model.NginxZone{Name: "b", Rate: "30r/m", Delay: 2}) || !s.DryRun {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := (NginxLimitReq{Zones: []NginxZone{{Name: "a", Rate: "ten"}}}).Spec(); err == nil {
		t.Fatal("bad rate accepted")
	}
	if _, err := (NginxLimitReq{}).Spec(); err == nil {
		t.Fatal("no zone accepted")
	}
}

// TestTokenBucketRateSpec: a generic bucket needs a positive capacity.
func TestTokenBucketRateSpec(t *testing.T) {
	if s, err := (TokenBucketRate{Capacity: 10, RatePerSec: 2}).Spec(); err != nil || s.Kind != model.KindTokenBucket || s.Capacity != 10 {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := (TokenBucketRate{RatePerSec: 2}).Spec(); err == nil {
		t.Fatal("capacity 0 accepted")
	}
}

// TestLegacySpec: the previous release's limits: a token bucket is Envoy
// 1.31's continuous bucket when its refill says so, else 1.30's timer from
// start_ns (the refill of every lab before the field); a fixed window's
// unit is lower-cased and first-hit windows keep their alignment; an
// unknown kind is an error.
func TestLegacySpec(t *testing.T) {
	s, err := Legacy{Kind: "token_bucket", MaxTokens: 5, FillInterval: 1e9, StartNs: 1796116558000000000}.Spec()
	if err != nil || s.EnvoyVersion != EnvoyTimerVersion || s.TimerStart != "2026-12-01T09:15:58Z" || *s.TokensPerFill != 1 {
		t.Fatalf("timer: %+v %v", s, err)
	}
	s, err = Legacy{Kind: "token_bucket", MaxTokens: 5, TokensPerFill: 5, FillInterval: 1e9, StartNs: 1, Refill: RefillContinuous}.Spec()
	if err != nil || s.EnvoyVersion != EnvoyContinuousVersion || s.TimerStart != "" || *s.TokensPerFill != 5 {
		t.Fatalf("continuous: %+v %v", s, err)
	}
	s, err = Legacy{Kind: "fixed_window", Limit: 5, Unit: "HOUR", WindowStart: "first-hit"}.Spec()
	if err != nil || s.Unit != "hour" || s.Align != model.AlignFirstHit || s.Limit != 5 {
		t.Fatalf("fixed window: %+v %v", s, err)
	}
	if s, _ := (Legacy{Kind: "fixed_window", Limit: 5, Unit: "MINUTE", WindowStart: "aligned"}).Spec(); s.Align != model.AlignEpoch {
		t.Fatalf("aligned: %+v", s)
	}
	if _, err := (Legacy{Kind: "leaky"}).Spec(); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

// TestGCRALimitSpec: redis_rate's Limit{Rate, Burst, Period} is a gcra
// spec with T = Period/Rate and τ = Burst × T; burst 0 (redis_rate denies
// everything) is an error naming the field.
func TestGCRALimitSpec(t *testing.T) {
	s, err := GCRALimit{Rate: 10, Burst: 20, Period: time.Second}.Spec()
	if err != nil || s.Kind != model.KindGCRA || s.RatePerPeriod != 10 || s.Burst != 20 || time.Duration(s.Period) != time.Second {
		t.Fatalf("%+v %v", s, err)
	}
	if T, tau := s.GCRAEmissionInterval(); T != float64(100*time.Millisecond) || tau != float64(2*time.Second) {
		t.Fatalf("T %v τ %v", T, tau)
	}
	var fe *model.FieldError
	if _, err := (GCRALimit{Rate: 10, Period: time.Second}).Spec(); !errors.As(err, &fe) || fe.Field != "burst" {
		t.Fatalf("burst 0: %v", err)
	}
	if _, err := (GCRALimit{Rate: 10, Burst: 1}).Spec(); !errors.As(err, &fe) || fe.Field != "period" {
		t.Fatalf("period 0: %v", err)
	}
}
