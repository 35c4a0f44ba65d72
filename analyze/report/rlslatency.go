package report

// Sources and spans of RLSLatency.
const (
	// RLSLatencyFromRLS is envoyproxy/ratelimit's own response time histogram.
	RLSLatencyFromRLS = "rls"
	// SinceScenario: the figures cover the scenario (after − before).
	SinceScenario = "scenario"
	// SinceProcessStart: the figures are cumulative since the process started.
	SinceProcessStart = "process start"
)

// RLSLatency is the latency of the calls to the rate limit service as one
// part of the system measured it.
//
// Source RLSLatencyFromRLS is envoyproxy/ratelimit's
// ratelimit_service_response_time_seconds histogram scraped into
// rls/metrics.<label>.json (src/stats/prom; milliseconds despite the name in
// the pinned release): the server-side time of each call, by gRPC method
// (Name). Only its sum and count are kept, so it gives Count and MeanNs. The
// figures are the scenario's (the last scrape of each RLS process minus the
// before scrape of the first, counters restarting at 0 with a new process)
// when the first process has a before scrape, else since that process started.
//
// Any other Source is a proxy name: the Envoy histogram
// cluster.<c>.upstream_rq_time (ms; Envoy cluster manager statistics) of its
// after snapshot, for each cluster c whose Envoy-originated requests grew
// during the scenario (cluster.<c>.internal.upstream_rq_completed: the
// ratelimit filter's calls to the RLS cluster are internal requests), the
// caller-side time. Envoy's computed quantiles are cumulative since the
// proxy started; the Prometheus rendering gives Count and MeanNs instead.
type RLSLatency struct {
	// Source is RLSLatencyFromRLS or the proxy's name.
	Source string `json:"source"`
	// Name is the gRPC method (RLS) or the histogram's stat name (proxy).
	Name string `json:"name"`
	// Since is SinceScenario or SinceProcessStart.
	Since string `json:"since"`
	// Count is the number of calls measured; 0 when the source does not tell.
	Count uint64 `json:"count"`
	// MeanNs is the mean call latency, ns; 0 when the source does not tell.
	MeanNs int64 `json:"mean_ns"`
	// Quantiles are the quantiles the source computed, in increasing
	// percent; empty when it gives none.
	Quantiles []LatencyQuantile `json:"quantiles"`
}

// LatencyQuantile is one quantile of a latency distribution.
type LatencyQuantile struct {
	// Percent is in 0..100 (P99.9 is 99.9).
	Percent float64 `json:"percent"`
	// Ns is the latency at that percent, ns.
	Ns int64 `json:"ns"`
}
