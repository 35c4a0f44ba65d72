// Package envoyrec holds the records of the evidence an Envoy proxy leaves
// about rate limiting, as an evidence directory keeps them: the parsed admin
// /stats snapshot (Snapshot, written to stats/<proxy>.<label>.json; parsed
// by collect/envoy), and Envoy's HTTP access log lines (AccessLogEntry) with
// their codec (ParseAccessLog: Envoy's default text format, Istio's default
// text format and JSON access logs) and the classification of who produced
// a response (Producer, LocalRateLimitedBody).
//
// Stat and flag names follow Envoy's documentation
// (docs/root/configuration/observability/access_log/usage.rst,
// docs/root/operations/admin.rst) and sources (source/server/admin/stats_render.cc,
// source/extensions/filters/http/local_ratelimit/local_ratelimit.cc). It is
// a leaf: it imports no rlbench package; it never prints or exits.
package envoyrec
