package evidence

import (
	"strconv"
	"strings"
)

// unitSeconds is envoyproxy/ratelimit's window divisor (src/utils/utilities.go
// UnitToDivider): MONTH is 30 days, YEAR 365 days.
var unitSeconds = map[string]int64{
	"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400,
	"WEEK": 604800, "MONTH": 2592000, "YEAR": 31536000,
}

// UnitSeconds returns the window length in seconds of an RLS rate_limit unit
// (case-insensitive: SECOND 1, MINUTE 60, HOUR 3600, DAY 86400, WEEK 604800,
// MONTH 2592000, YEAR 31536000, as envoyproxy/ratelimit's
// src/utils/utilities.go UnitToDivider), or 0 for an unknown unit.
func UnitSeconds(unit string) int64 { return unitSeconds[strings.ToUpper(unit)] }

// CacheKeyPrefix is the part of an envoyproxy/ratelimit cache key before the
// window start: "<domain>_<k1>_<v1>_..._<kn>_<vn>_" (src/limiter/cache_key.go
// GenerateCacheKey). An empty domain gives the descriptor part "_<k1>_<v1>_...".
func CacheKeyPrefix(domain string, entries []DescriptorEntry) string {
	var b strings.Builder
	b.WriteString(domain)
	b.WriteByte('_')
	for _, e := range entries {
		b.WriteString(e.Key)
		b.WriteByte('_')
		b.WriteString(e.Value)
		b.WriteByte('_')
	}
	return b.String()
}

// CacheKey is the full cache key: CacheKeyPrefix followed by the window
// start in unix seconds (floor(now/unit)*unit for aligned windows).
func CacheKey(domain string, entries []DescriptorEntry, windowStart int64) string {
	return CacheKeyPrefix(domain, entries) + strconv.FormatInt(windowStart, 10)
}
