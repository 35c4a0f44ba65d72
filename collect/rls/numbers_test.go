package rls

import (
	"math"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestIdentityPastExactFloat (issue 27): RLS counters are read as float64
// (statsd, Prometheus text); past 2^53 float64 no longer holds every whole
// number, and total_hits = within_limit + over_limit failed (or passed) on
// rounding: within_limit 2^53+1 reads as 2^53, and the true identity
// 2^53+2 = (2^53+1) + 1 showed a gap of 2. Such a key is now
// IdentityInexact, naming the counter and its value; counters up to 2^53
// are compared as before.
func TestIdentityPastExactFloat(t *testing.T) {
	key := func(total, within, over float64) *evidence.RLSCounters {
		return &evidence.RLSCounters{Keys: map[string]evidence.RLSKeyCounters{"d.k": {TotalHits: total, WithinLimit: within, OverLimit: over}}}
	}
	const top = 1 << 53
	for _, c := range []struct {
		name           string
		before, after  *evidence.RLSCounters
		status, detail string
	}{
		{"rounded sum", nil, key(top+2, float64(top+1), 1), IdentityInexact, "after total_hits = 9.007199254740994e+15 (past 2^53"},
		{"2^64-1", nil, key(math.MaxUint64, 5, 0), IdentityInexact, "after total_hits = 1.8446744073709552e+19"},
		{"before past 2^53", key(top+4, top+2, 2), key(top+8, top+4, 4), IdentityInexact, "after total_hits"},
		{"at 2^53, exact", nil, key(top, top-1, 1), IdentityPass, "total_hits"},
		{"a real gap below 2^53", nil, key(top, top-3, 1), IdentityFail, "gap 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := CheckIdentities(c.before, c.after)
			if len(r) != 1 || r[0].Status != c.status || !strings.Contains(r[0].Detail, c.detail) {
				t.Fatalf("results %+v, want %s with %q", r, c.status, c.detail)
			}
		})
	}
	bad := key(5, 3, 2)
	bad.RedisErrors = math.Inf(1)
	if r := CheckIdentities(nil, bad); r[0].Status != IdentityInexact || !strings.Contains(r[0].Detail, "redis_error = +Inf") {
		t.Fatalf("redis_error +Inf: %+v", r)
	}
	// before's redis_error feeds the delta too: past 2^53 (or not finite)
	// it makes the identity unknown, as after's does.
	before := key(1, 1, 0)
	before.RedisErrors = math.NaN()
	if r := CheckIdentities(before, key(5, 3, 2)); r[0].Status != IdentityInexact || !strings.Contains(r[0].Detail, "before redis_error = NaN") {
		t.Fatalf("before redis_error NaN: %+v", r)
	}
}
