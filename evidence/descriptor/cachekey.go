package descriptor

import (
	"strconv"
	"strings"
)

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
// start in unix seconds (floor(now/unit)*unit for aligned windows, the unit's
// length being model.UnitSeconds).
func CacheKey(domain string, entries []DescriptorEntry, windowStart int64) string {
	return CacheKeyPrefix(domain, entries) + strconv.FormatInt(windowStart, 10)
}
