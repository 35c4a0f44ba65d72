// Package descriptor holds Envoy's rate limit descriptor semantics, the one
// definition that plans, the lab proxy (internal/lab/proxy), scenario.json's
// limiters, the simulator and analyze share:
//
//   - the route rate limit actions (config.route.v3.RateLimit,
//     api/envoy/config/route/v3/route_components.proto: RateLimitEntry and
//     its actions) and their one evaluation, a request's descriptors
//     (CompiledRateLimit.Descriptor, Descriptors), as Envoy's router builds
//     them (source/common/router/router_ratelimit.cc);
//   - a descriptor's entries (DescriptorEntry,
//     envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry);
//   - envoyproxy/ratelimit's cache key of a descriptor (CacheKey,
//     CacheKeyPrefix; src/limiter/cache_key.go GenerateCacheKey).
//
// It is a leaf: it imports no rlbench package. The window length of an RLS
// unit is model.UnitSeconds.
package descriptor
