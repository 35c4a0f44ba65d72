package rlsconfig

import (
	"github.com/envoyproxy/ratelimit/src/stats"
	gostats "github.com/lyft/gostats"
)

// nopStats is the stats.Manager (envoyproxy/ratelimit src/stats/manager.go) configs are loaded with. The RLS's
// config creates stats for every rule at load and, with detailed_metric or value_to_metric, for every request
// value in GetLimit; rlbench keeps none, so matching holds no per-value state and needs no stats store.
type nopStats struct{}

var _ stats.Manager = nopStats{}

// nopCounter is a gostats.Counter that counts nothing.
type nopCounter struct{}

func (nopCounter) Add(uint64)     {}
func (nopCounter) Inc()           {}
func (nopCounter) Set(uint64)     {}
func (nopCounter) String() string { return "0" }
func (nopCounter) Value() uint64  { return 0 }

// NewStats returns stats keyed by key: the RLS takes a rule's RateLimit.FullKey from this key.
func (nopStats) NewStats(key string) stats.RateLimitStats {
	var c nopCounter
	return stats.RateLimitStats{Key: key, TotalHits: c, OverLimit: c, NearLimit: c, OverLimitWithLocalCache: c, WithinLimit: c, ShadowMode: c}
}

func (nopStats) NewDomainStats(domain string) stats.DomainStats {
	return stats.DomainStats{Key: domain, NotFound: nopCounter{}}
}

func (nopStats) NewShouldRateLimitStats() stats.ShouldRateLimitStats {
	return stats.ShouldRateLimitStats{RedisError: nopCounter{}, ServiceError: nopCounter{}}
}

func (nopStats) NewServiceStats() stats.ServiceStats {
	var c nopCounter
	return stats.ServiceStats{ConfigLoadSuccess: c, ConfigLoadError: c, ShouldRateLimit: nopStats{}.NewShouldRateLimitStats(), GlobalShadowMode: c}
}

// nullStore backs GetStatsStore, which the config package never calls.
var nullStore = gostats.NewStore(gostats.NewNullSink(), false)

func (nopStats) GetStatsStore() gostats.Store { return nullStore }
