package model

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// TestNormalizeErrors pins every normalisation error of Spec.Validate, its
// exact text, and which one wins when a spec has several problems (the
// checks run in declaration order).
func TestNormalizeErrors(t *testing.T) {
	u32 := func(n uint32) *uint32 { return &n }
	pint := func(n int) *int { return &n }
	pf := func(f float64) *float64 { return &f }
	pb := func(b bool) *bool { return &b }
	sec := Duration(time.Second)
	env := func(v string, mod func(*Spec)) Spec {
		s := Spec{Kind: KindEnvoyLocal, EnvoyVersion: v, MaxTokens: 1, FillInterval: sec}
		mod(&s)
		return s
	}
	desc := func(key, value string, max uint32, fill Duration) EnvoyDescriptor {
		return EnvoyDescriptor{Entries: []Entry{{Key: key, Value: value}}, MaxTokens: max, FillInterval: fill}
	}
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"kind missing", Spec{}, `limiter spec: kind: missing (one of envoy_local, fixed_window, gcra, nginx_limit_req, sliding_counter, sliding_log, token_bucket)`},
		{"kind unknown", Spec{Kind: "leaky"}, `limiter spec: kind: unknown kind "leaky" (one of envoy_local, fixed_window, gcra, nginx_limit_req, sliding_counter, sliding_log, token_bucket)`},

		{"tb capacity", Spec{Kind: KindTokenBucket, RatePerSec: -1}, `limiter spec: capacity: must be a positive number of tokens, got 0`},
		{"tb capacity inf", Spec{Kind: KindTokenBucket, Capacity: math.Inf(1)}, `limiter spec: capacity: must be a positive number of tokens, got +Inf`},
		{"tb rate", Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: -1}, `limiter spec: rate_per_sec: must be >= 0 tokens per second, got -1`},
		{"tb rate nan", Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: math.NaN()}, `limiter spec: rate_per_sec: must be >= 0 tokens per second, got NaN`},

		{"fw unit missing", Spec{Kind: KindFixedWindow, Align: "x"}, `limiter spec: unit: missing (second, minute, hour, day, week, month or year)`},
		{"fw unit invalid", Spec{Kind: KindFixedWindow, Unit: "fortnight"}, `limiter spec: unit: invalid rate limit unit "fortnight" (second, minute, hour, day, week, month or year)`},
		{"fw align", Spec{Kind: KindFixedWindow, Unit: "hour", Align: "sliding", Unlimited: true, Limit: 1}, `limiter spec: align: want "epoch" or "first_hit", got "sliding"`},
		{"fw unlimited limit", Spec{Kind: KindFixedWindow, Unit: "hour", Unlimited: true, Limit: 1, ShadowMode: true}, `limiter spec: limit: an unlimited rule takes no limit`},
		{"fw unlimited shadow", Spec{Kind: KindFixedWindow, Unit: "hour", Unlimited: true, ShadowMode: true}, `limiter spec: shadow_mode: an unlimited rule has nothing to shadow`},
		{"fw uint32", Spec{Kind: KindFixedWindow, Unit: "hour", Limit: math.MaxUint32 + 1}, `limiter spec: limit: requests_per_unit is a uint32, got 4294967296`},

		{"sl limit", Spec{Kind: KindSlidingLog}, `limiter spec: limit: must be > 0`},
		{"sc window", Spec{Kind: KindSlidingCounter, Limit: 1, Count: "x"}, `limiter spec: window: must be a positive duration such as "1s"`},
		{"sl count", Spec{Kind: KindSlidingLog, Limit: 1, Window: sec, Count: "x"}, `limiter spec: count: want "admitted" (only admitted requests count) or "all" (rejected ones too), got "x"`},

		{"nginx both", Spec{Kind: KindNginxLimitReq, Key: "$host", Zones: []NginxZone{{Rate: "x"}}}, `limiter spec: zones: give either rate/burst/nodelay/delay/key for one zone or zones, not both`},
		{"nginx none", Spec{Kind: KindNginxLimitReq}, `limiter spec: rate: missing (or give zones)`},
		{"nginx single rate missing", Spec{Kind: KindNginxLimitReq, Burst: -1}, `limiter spec: rate: missing (such as "10r/s")`},
		{"nginx single rate invalid", Spec{Kind: KindNginxLimitReq, Rate: "10r/h", Burst: -1}, `limiter spec: rate: invalid rate "10r/h": want a positive integer followed by r/s or r/m`},
		{"nginx single rate tiny", Spec{Kind: KindNginxLimitReq, Rate: "1r/m"}, ``},
		{"nginx burst", Spec{Kind: KindNginxLimitReq, Rate: "1r/s", Burst: -1, Delay: -1}, `limiter spec: burst: must be >= 0, got -1`},
		{"nginx delay", Spec{Kind: KindNginxLimitReq, Rate: "1r/s", Delay: -1}, `limiter spec: delay: must be > 0, got -1`},
		{"nginx nodelay delay", Spec{Kind: KindNginxLimitReq, Rate: "1r/s", NoDelay: true, Delay: 2}, `limiter spec: delay: give nodelay or delay, not both`},
		{"nginx zone rate", Spec{Kind: KindNginxLimitReq, Zones: []NginxZone{{Rate: "1r/s"}, {Rate: "x"}}}, `limiter spec: zones[1].rate: invalid rate "x": want a positive integer followed by r/s or r/m`},
		{"nginx zone dup before rate", Spec{Kind: KindNginxLimitReq, Zones: []NginxZone{{Name: "zone1", Rate: "1r/s"}, {Rate: "x"}}}, `limiter spec: zones[1].name: zone "zone1" is duplicate (nginx: "is duplicate")`},
		{"nginx zone delay", Spec{Kind: KindNginxLimitReq, Zones: []NginxZone{{Rate: "1r/s", Delay: -2}}}, `limiter spec: zones[0].delay: must be > 0, got -2`},

		{"envoy version missing", Spec{Kind: KindEnvoyLocal}, `limiter spec: envoy_version: missing: the refill and descriptor semantics depend on it ("1.31")`},
		{"envoy version invalid", Spec{Kind: KindEnvoyLocal, EnvoyVersion: "one"}, `limiter spec: envoy_version: want MAJOR.MINOR[.PATCH] such as "1.31", got "one"`},
		{"envoy max_tokens", env("1.31", func(s *Spec) { s.MaxTokens = 0; s.Scope = "x" }), `limiter spec: max_tokens: must be > 0 (Envoy's token_bucket.proto: max_tokens uint32 gt 0; a release that allows 0 rejects every request with it)`},
		{"envoy tokens_per_fill", env("1.31", func(s *Spec) { s.TokensPerFill = u32(0); s.FillInterval = 0 }), `limiter spec: tokens_per_fill: must be > 0 (Envoy's token_bucket.proto: tokens_per_fill uint32 gt 0; absent means 1)`},
		{"envoy fill_interval", env("1.31", func(s *Spec) { s.FillInterval = Duration(10 * time.Millisecond); s.Scope = "x" }), `limiter spec: fill_interval: 10ms is below Envoy's minimum 50ms (local rate limit token bucket fill timer must be >= 50ms)`},
		{"envoy scope", env("1.27", func(s *Spec) { s.Scope = "thread"; s.AlwaysConsumeDefault = pb(false) }), `limiter spec: scope: want "process", "worker" or "connection", got "thread"`},
		{"envoy always_consume", env("1.27", func(s *Spec) { s.AlwaysConsumeDefault = pb(false); s.MaxDynamicDescriptors = pint(0) }), `limiter spec: always_consume_default_token_bucket: needs Envoy 1.28+ (declared 1.27)`},
		{"envoy max_dynamic", env("1.31", func(s *Spec) { s.MaxDynamicDescriptors = pint(0); s.FilterEnabledPercent = pf(101) }), `limiter spec: max_dynamic_descriptors: must be > 0`},
		{"envoy enabled percent", env("1.31", func(s *Spec) { s.FilterEnabledPercent = pf(101); s.TimerStart = "x" }), `limiter spec: filter_enabled_percent: must be within 0..100, got 101`},
		{"envoy enforced percent", env("1.31", func(s *Spec) { s.FilterEnforcedPercent = pf(math.NaN()) }), `limiter spec: filter_enforced_percent: must be within 0..100, got NaN`},
		{"envoy timer_start continuous", env("1.31", func(s *Spec) { s.TimerStart = "x"; s.Scope = ScopeConnection }), `limiter spec: timer_start: Envoy 1.31 refills continuously; a timer phase applies to 1.30 and before`},
		{"envoy timer_start connection", env("1.30", func(s *Spec) { s.TimerStart = "x"; s.Scope = ScopeConnection }), `limiter spec: timer_start: each downstream connection starts its own timer`},
		{"envoy timer_start parse", env("1.30", func(s *Spec) { s.TimerStart = "x"; s.ExactLevel = true }), `limiter spec: timer_start: want RFC 3339 time: parsing time "x" as "2006-01-02T15:04:05.999999999Z07:00": cannot parse "x" as "2006"`},
		{"envoy exact_level", env("1.30", func(s *Spec) { s.ExactLevel = true; s.Descriptors = []EnvoyDescriptor{{}} }), `limiter spec: exact_level: applies to the continuous refill of Envoy 1.31+ (declared 1.30)`},
		{"envoy descriptors old", env("1.25", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{{}} }), `limiter spec: descriptors: descriptor consumption before Envoy 1.26 is not modelled (declared 1.25)`},
		{"envoy descriptor entries", env("1.31", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{desc("u", "a", 1, sec), {}} }), `limiter spec: descriptors[1].entries: must not be empty`},
		{"envoy descriptor key", env("1.31", func(s *Spec) {
			s.Descriptors = []EnvoyDescriptor{{Entries: []Entry{{Key: "a", Value: "b"}, {Value: ""}}}}
		}), `limiter spec: descriptors[0].entries[1].key: must not be empty`},
		{"envoy descriptor wildcard version", env("1.33", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{desc("u", "", 0, 0)}; s.Scope = ScopeConnection }), `limiter spec: descriptors[0].entries: an empty value is a wildcard, which needs Envoy 1.34+ (declared 1.33)`},
		{"envoy descriptor wildcard connection", env("1.34", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{desc("u", "", 0, 0)}; s.Scope = ScopeConnection }), `limiter spec: descriptors[0].entries: wildcard descriptors do not work with per-connection limiting`},
		{"envoy descriptor duplicate", env("1.31", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{desc("u", "a", 1, sec), desc("u", "a", 0, 0)} }), `limiter spec: descriptors[1].entries: duplicate descriptor in the local rate descriptor: u=a`},
		{"envoy descriptor max_tokens", env("1.31", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{desc("u", "a", 0, 0)} }), `limiter spec: descriptors[0].max_tokens: must be > 0 (Envoy's token_bucket.proto: max_tokens uint32 gt 0; a release that allows 0 rejects every request with it)`},
		{"envoy descriptor tokens_per_fill", env("1.31", func(s *Spec) {
			d := desc("u", "a", 1, 0)
			d.TokensPerFill = u32(0)
			s.Descriptors = []EnvoyDescriptor{d}
		}), `limiter spec: descriptors[0].tokens_per_fill: must be > 0 (Envoy's token_bucket.proto: tokens_per_fill uint32 gt 0; absent means 1)`},
		{"envoy descriptor fill_interval", env("1.30", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{desc("u", "a", 1, Duration(10*time.Millisecond))} }), `limiter spec: descriptors[0].fill_interval: 10ms is below Envoy's minimum 50ms (local rate limit token bucket fill timer must be >= 50ms)`},
		{"envoy descriptor multiple", env("1.30", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{desc("u", "a", 1, Duration(1500*time.Millisecond))} }), `limiter spec: descriptors[0].fill_interval: local rate descriptor limit is not a multiple of token bucket fill timer (1s)`},
		{"envoy descriptor not multiple 1.31", env("1.31", func(s *Spec) { s.Descriptors = []EnvoyDescriptor{desc("u", "a", 1, Duration(1500*time.Millisecond))} }), ``},
	} {
		err := tc.spec.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestNormalizeDefaults pins the defaults normalisation fills in and that
// it does not write through the caller's slices.
func TestNormalizeDefaults(t *testing.T) {
	fw, err := Spec{Kind: KindFixedWindow, Unit: "HOUR", Limit: 3}.normalized()
	if err != nil || fw.Unit != "hour" || fw.Align != AlignEpoch {
		t.Errorf("fixed_window: %+v, %v", fw, err)
	}
	ng, err := Spec{Kind: KindNginxLimitReq, Rate: "2r/s", Burst: 3, Key: "$host"}.normalized()
	want := []NginxZone{{Name: "zone", Rate: "2r/s", Burst: 3, Key: "$host"}}
	if err != nil || !reflect.DeepEqual(ng.Zones, want) || ng.Rate != "" || ng.Burst != 0 || ng.Key != "" {
		t.Errorf("nginx single: %+v, %v", ng, err)
	}
	zones := []NginxZone{{Rate: "1r/s"}, {Name: "b", Rate: "1r/m"}}
	nz, err := Spec{Kind: KindNginxLimitReq, Zones: zones}.normalized()
	if err != nil || nz.Zones[0].Name != "zone0" || nz.Zones[1].Name != "b" || zones[0].Name != "" {
		t.Errorf("nginx zones: %+v, %v (input %+v)", nz.Zones, err, zones)
	}
	ds := []EnvoyDescriptor{{Entries: []Entry{{Key: "u", Value: "a"}}, MaxTokens: 2, FillInterval: Duration(time.Second)}}
	ev, err := Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 3, FillInterval: Duration(time.Second), Descriptors: ds}.normalized()
	if err != nil || *ev.Descriptors[0].TokensPerFill != 1 || ds[0].TokensPerFill != nil || *ev.FilterEnabledPercent != 100 || *ev.FilterEnforcedPercent != 100 || *ev.MaxDynamicDescriptors != 20 || !*ev.AlwaysConsumeDefault || ev.Scope != ScopeProcess || *ev.TokensPerFill != 1 {
		t.Errorf("envoy defaults: %+v, %v", ev, err)
	}
}
