// Package rls reads what an envoyproxy/ratelimit service (RLS) lets a tool
// observe: its logrus logs (text and JSON), its Prometheus /metrics page, the
// statsd lines its gostats sink sends, its debug-port /rlconfig dump and the
// Redis keys it writes. It reconstructs per-descriptor decisions from debug
// logs, sums statsd counter deltas, and checks the RLS stat identities.
//
// The semantics follow envoyproxy/ratelimit at commit 3fb702589d36 (the pinned
// version, v1.4.1-0.20260122083618-3fb702589d36) and the template changes of
// later commits (f2fb15770f7f) and earlier ones (2020 README): the log
// templates are in src/limiter/base_limiter.go, src/redis/fixed_cache_impl.go,
// src/service/ratelimit.go and src/config/config_impl.go of
// https://github.com/envoyproxy/ratelimit.
//
// The package never prints and never exits: every function takes readers,
// writers and a context and returns data and errors. Parse errors name the
// input (file or source name) and the line.
package rls
