package rlsconfig

import (
	"strings"
	"testing"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/envoyproxy/ratelimit/src/utils"

	"github.com/rlbench/rlbench/model"
)

// upstreamUnitSeconds is the pinned envoyproxy/ratelimit's window of a unit
// name (src/utils/utilities.go UnitToDivider), 0 for an unknown unit.
func upstreamUnitSeconds(unit string) int64 {
	v, ok := rlspb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(unit)]
	if !ok || v == int32(rlspb.RateLimitResponse_RateLimit_UNKNOWN) {
		return 0
	}
	return utils.UnitToDivider(rlspb.RateLimitResponse_RateLimit_Unit(v))
}

// TestUnitSecondsAgreeWithUpstream: model.UnitSeconds, rlbench's one unit
// table (what the config check, analyze's bounds, the lab RLS and the lab
// proxy use), gives the window of the pinned envoyproxy/ratelimit
// (utils.UnitToDivider) for every unit, in any case, and 0 for unknown ones.
func TestUnitSecondsAgreeWithUpstream(t *testing.T) {
	want := map[string]int64{"second": 1, "MINUTE": 60, "Hour": 3600, "DAY": 86400, "WEEK": 604800, "MONTH": 2592000, "YEAR": 31536000, "UNKNOWN": 0, "": 0, "fortnight": 0}
	for u, s := range want {
		if got := model.UnitSeconds(u); got != s {
			t.Errorf("model.UnitSeconds(%q) = %d, want %d", u, got, s)
		}
		if up := upstreamUnitSeconds(u); up != s {
			t.Errorf("envoyproxy/ratelimit UnitToDivider(%q) = %d, want %d", u, up, s)
		}
	}
	for name, v := range rlspb.RateLimitResponse_RateLimit_Unit_value {
		if v == int32(rlspb.RateLimitResponse_RateLimit_UNKNOWN) {
			continue
		}
		if got, up := model.UnitSeconds(name), upstreamUnitSeconds(name); got != up {
			t.Errorf("model.UnitSeconds(%q) = %d, envoyproxy/ratelimit %d", name, got, up)
		}
	}
}
