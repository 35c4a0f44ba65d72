package analyze

import (
	"math"
	"sort"
	"strings"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

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

// rlsLatency collects the RLS call latency from the RLS's metrics scrapes
// and the proxies' stats snapshots.
func rlsLatency(ev *evidence.ScenarioEvidence, sr *ScenarioReport) []RLSLatency {
	out := rlsServerLatency(ev.RLSMetrics)
	for _, ps := range ev.Stats {
		if ps.After == nil {
			continue
		}
		out = append(out, envoyRLSLatency(ps.Proxy, ps.Before, ps.After)...)
	}
	return out
}

func rlsServerLatency(scrapes []evidence.RLSMetrics) []RLSLatency {
	var ok []evidence.RLSMetrics
	for _, m := range scrapes {
		if m.Error == "" && m.Prometheus != nil {
			ok = append(ok, m)
		}
	}
	if len(ok) == 0 {
		return []RLSLatency{}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].TimeNs < ok[j].TimeNs })
	first := ok[0].Process
	var before *evidence.RLSMetrics
	last := map[int]evidence.RLSMetrics{}
	var procs []int
	for i, m := range ok {
		if m.Label == evidence.LabelBefore && m.Process == first && before == nil {
			before = &ok[i]
		}
		if _, seen := last[m.Process]; !seen {
			procs = append(procs, m.Process)
		}
		last[m.Process] = m
	}
	type acc struct {
		sumMs float64
		count uint64
	}
	byMethod := map[string]*acc{}
	for _, p := range procs {
		for method, h := range last[p].Prometheus.ResponseTime {
			a := byMethod[method]
			if a == nil {
				a = &acc{}
				byMethod[method] = a
			}
			a.sumMs += h.Sum
			a.count += h.Count
			if p == first && before != nil {
				if b, ok := before.Prometheus.ResponseTime[method]; ok && b.Count <= h.Count {
					a.sumMs -= b.Sum
					a.count -= b.Count
				}
			}
		}
	}
	since := SinceProcessStart
	if before != nil {
		since = SinceScenario
	}
	methods := make([]string, 0, len(byMethod))
	for m := range byMethod {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	out := []RLSLatency{}
	for _, m := range methods {
		a := byMethod[m]
		if a.count == 0 {
			continue
		}
		out = append(out, RLSLatency{Source: RLSLatencyFromRLS, Name: m, Since: since, Count: a.count,
			MeanNs: msToNs(a.sumMs / float64(a.count)), Quantiles: []LatencyQuantile{}})
	}
	return out
}

// envoyRLSLatency returns the upstream_rq_time histograms of the clusters
// with Envoy-originated requests during the scenario.
func envoyRLSLatency(proxy string, before, after *envoyrec.Snapshot) []RLSLatency {
	const internal, rqTime = ".internal.upstream_rq_completed", ".upstream_rq_time"
	var out []RLSLatency
	var names []string
	for name := range after.Values {
		if strings.HasPrefix(name, "cluster.") && strings.HasSuffix(name, internal) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		n := after.Values[name]
		if before != nil {
			if b, ok := before.Values[name]; ok && b <= n {
				n -= b
			}
		}
		if n == 0 {
			continue
		}
		hname := strings.TrimSuffix(name, internal) + rqTime
		h, ok := after.Histograms[hname]
		if !ok || h.NoValues {
			continue
		}
		l := RLSLatency{Source: proxy, Name: hname, Since: SinceProcessStart, Quantiles: []LatencyQuantile{}}
		for _, q := range h.Quantiles {
			if q.Cumulative != nil {
				l.Quantiles = append(l.Quantiles, LatencyQuantile{Percent: q.Percent, Ns: msToNs(*q.Cumulative)})
			}
		}
		if h.Count != nil && *h.Count > 0 {
			l.Count = *h.Count
			if h.Sum != nil {
				l.MeanNs = msToNs(*h.Sum / float64(*h.Count))
			}
		}
		out = append(out, l)
	}
	return out
}

func msToNs(ms float64) int64 { return int64(math.Round(ms * 1e6)) }
