package analyze

import (
	"math"
	"sort"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// rlsLatency collects the RLS call latency from the RLS's metrics scrapes
// and the proxies' stats snapshots.
func rlsLatency(ev *evidence.ScenarioEvidence, sr *report.ScenarioReport) []report.RLSLatency {
	out := rlsServerLatency(ev.RLSMetrics)
	for _, ps := range ev.Stats {
		if ps.After == nil {
			continue
		}
		out = append(out, envoyRLSLatency(ps.Proxy, ps.Before, ps.After)...)
	}
	return out
}

func rlsServerLatency(scrapes []evidence.RLSMetrics) []report.RLSLatency {
	var ok []evidence.RLSMetrics
	for _, m := range scrapes {
		if m.Error == "" && m.Prometheus != nil {
			ok = append(ok, m)
		}
	}
	if len(ok) == 0 {
		return []report.RLSLatency{}
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
	since := report.SinceProcessStart
	if before != nil {
		since = report.SinceScenario
	}
	methods := make([]string, 0, len(byMethod))
	for m := range byMethod {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	out := []report.RLSLatency{}
	for _, m := range methods {
		a := byMethod[m]
		if a.count == 0 {
			continue
		}
		out = append(out, report.RLSLatency{Source: report.RLSLatencyFromRLS, Name: m, Since: since, Count: a.count,
			MeanNs: msToNs(a.sumMs / float64(a.count)), Quantiles: []report.LatencyQuantile{}})
	}
	return out
}

// envoyRLSLatency returns the upstream_rq_time histograms of the clusters
// with Envoy-originated requests during the scenario.
func envoyRLSLatency(proxy string, before, after *envoyrec.Snapshot) []report.RLSLatency {
	const internal, rqTime = ".internal.upstream_rq_completed", ".upstream_rq_time"
	var out []report.RLSLatency
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
		l := report.RLSLatency{Source: proxy, Name: hname, Since: report.SinceProcessStart, Quantiles: []report.LatencyQuantile{}}
		for _, q := range h.Quantiles {
			if q.Cumulative != nil {
				l.Quantiles = append(l.Quantiles, report.LatencyQuantile{Percent: q.Percent, Ns: msToNs(*q.Cumulative)})
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
