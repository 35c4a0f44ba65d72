package descriptor

import "testing"

// TestCacheKey: the key is envoyproxy/ratelimit's GenerateCacheKey
// (src/limiter/cache_key.go): domain, then each entry's key and value, each
// followed by "_", then the window start; an empty domain keeps its "_".
func TestCacheKey(t *testing.T) {
	es := []DescriptorEntry{{Key: "generic_key", Value: "lab"}, {Key: "user", Value: "a_b"}}
	if got, want := CacheKey("rl", es, 1796032800), "rl_generic_key_lab_user_a_b_1796032800"; got != want {
		t.Fatalf("CacheKey = %q, want %q", got, want)
	}
	if got, want := CacheKeyPrefix("", es[:1]), "_generic_key_lab_"; got != want {
		t.Fatalf("CacheKeyPrefix = %q, want %q", got, want)
	}
	if got, want := CacheKeyPrefix("rl", nil), "rl_"; got != want {
		t.Fatalf("CacheKeyPrefix without entries = %q, want %q", got, want)
	}
}
