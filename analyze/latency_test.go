package analyze

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// memScenario builds one scenario's evidence in memory (no file), as
// evidence.Load would: a scenario.json, a complete attack, the requests and
// the receipts.
func memScenario(sc evidence.Scenario, reqs []evidence.Request, recs []evidence.Receipt) *evidence.ScenarioEvidence {
	ev := &evidence.ScenarioEvidence{Dir: ".", Path: "mem", Scenario: sc, HasScenario: true, HasRequests: true,
		Attack: &evidence.Attack{Complete: true, Sent: len(reqs)}, Faults: []evidence.Fault{}, Decisions: []evidence.Decision{},
		Stats: []evidence.ProxySnapshots{}, AccessLogs: []evidence.AccessLog{}, RLSMetrics: []evidence.RLSMetrics{}, Problems: []evidence.Problem{}}
	for i := range reqs {
		ev.Requests.Add(&reqs[i])
	}
	for i := range recs {
		ev.Receipts.Add(&ev.Requests, &recs[i])
	}
	return ev
}

func fixedNow() time.Time { return time.Unix(0, t0).UTC() }

// exactQuantile is the nearest-rank quantile of sorted values.
func exactQuantile(sorted []int64, q float64) int64 {
	k := int(math.Ceil(q/100*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// TestLatencyPerClassTargetPhase records known latencies and checks each
// figure against the exact value: percentiles within the histogram's 0.1%
// (plus its 1 µs unit), max and mean exact, per class, target, phase and
// flow.
func TestLatencyPerClassTargetPhase(t *testing.T) {
	var reqs []evidence.Request
	want := map[string][]int64{} // "<target>/<phase>/<class>" -> latencies
	for i := 0; i < 4000; i++ {
		target := []string{"proxy-b", "proxy-a"}[i%2]
		phase := []string{"before", "after"}[i/2000]
		flow := []string{"alice", "bob", "carol"}[i%3]
		r := evidence.Request{ID: fmt.Sprintf("id-%d", i), Target: target, Phase: phase, Flow: flow, SentNs: t0 + int64(i)*1e6}
		class := evidence.ClassAdmitted.String()
		switch {
		case i%5 == 0:
			r.Code, r.Body = 429, "local_rate_limited"
			r.LatencyNs = int64(200_000 + i*10) // fast rejections
			class = evidence.ClassLocal429.String()
		case i%7 == 0:
			r.LatencyNs = int64(time.Second) + int64(i) // timeouts
			class = evidence.ClassNoResponse.String()
		default:
			r.Code = 200
			r.LatencyNs = int64((i*7919)%50_000_000 + 1_000_000) // 1..51 ms, scattered
		}
		reqs = append(reqs, r)
		for _, k := range []string{"all/all/" + class, target + "/all/" + class, "all/" + phase + "/" + class, "flow/" + flow + "/" + class} {
			want[k] = append(want[k], r.LatencyNs)
		}
	}
	rep := Judge(&evidence.Bundle{Dir: "mem", Scenarios: []*evidence.ScenarioEvidence{memScenario(evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "lat"}, reqs, nil)}},
		Options{Now: fixedNow})
	l := rep.Scenarios[0].Latency
	if l == nil {
		t.Fatal("no latency section")
	}
	check := func(key string, got []report.ClassLatency) {
		t.Helper()
		n := 0
		for _, g := range got {
			vals := want[key+"/"+g.Class]
			if len(vals) == 0 {
				t.Errorf("%s: class %s reported with %d requests, none sent", key, g.Class, g.Count)
				continue
			}
			n++
			sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
			var sum int64
			for _, v := range vals {
				sum += v
			}
			if g.Count != len(vals) || g.MaxNs != vals[len(vals)-1] || g.MeanNs != sum/int64(len(vals)) {
				t.Errorf("%s/%s: count %d max %d mean %d, want %d %d %d", key, g.Class, g.Count, g.MaxNs, g.MeanNs, len(vals), vals[len(vals)-1], sum/int64(len(vals)))
			}
			for _, q := range []struct {
				p   float64
				got int64
			}{{50, g.P50Ns}, {90, g.P90Ns}, {99, g.P99Ns}, {99.9, g.P999Ns}} {
				// Ranks differ by one between quantile definitions.
				k := int(math.Ceil(q.p/100*float64(len(vals)))) - 1
				lo, hi := vals[max(k-1, 0)], vals[min(k+1, len(vals)-1)]
				if float64(q.got) < float64(lo)*0.999-1000 || float64(q.got) > float64(hi)*1.001+1000 {
					t.Errorf("%s/%s p%v = %d, exact %d (neighbours %d..%d)", key, g.Class, q.p, q.got, exactQuantile(vals, q.p), lo, hi)
				}
			}
		}
		if n != 3 {
			t.Errorf("%s: %d classes, want 3 (admitted, local_429, no_response)", key, n)
		}
	}
	check("all/all", l.Classes)
	if len(l.Targets) != 2 || l.Targets[0].Target != "proxy-a" {
		t.Fatalf("targets %+v", l.Targets)
	}
	for _, tl := range l.Targets {
		check(tl.Target+"/all", tl.Classes)
	}
	if len(l.Phases) != 2 || l.Phases[0].Phase != "before" {
		t.Fatalf("phases %+v", l.Phases)
	}
	for _, pl := range l.Phases {
		check("all/"+pl.Phase, pl.Classes)
	}
	if len(l.Flows) != 3 || l.Flows[0].Flow != "alice" || l.Flows[2].Flow != "carol" {
		t.Fatalf("flows %+v", l.Flows)
	}
	for _, fl := range l.Flows {
		check("flow/"+fl.Flow, fl.Classes)
	}
	if l.Classes[0].Class != evidence.ClassNoResponse.String() || l.Classes[1].Class != evidence.ClassAdmitted.String() {
		t.Errorf("classes not in class order: %+v", l.Classes)
	}
}

// TestLatencyRLSSources: the RLS's response time histogram gives the
// scenario's calls (after − before, plus a restarted process from 0), and a
// proxy's upstream_rq_time of the cluster with internal requests gives
// Envoy's quantiles.
func TestLatencyRLSSources(t *testing.T) {
	ev := memScenario(evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "rls"},
		[]evidence.Request{{ID: "a", Target: "p", Code: 200, SentNs: t0, LatencyNs: 1e6}}, nil)
	scrape := func(label string, proc int, tm int64, sum float64, count uint64) evidence.RLSMetrics {
		return evidence.RLSMetrics{Label: label, Process: proc, TimeNs: tm, Prometheus: &evidence.RLSPrometheus{
			ResponseTime: map[string]evidence.RLSHistogram{"ShouldRateLimit": {Sum: sum, Count: count}}}}
	}
	ev.RLSMetrics = []evidence.RLSMetrics{
		scrape("after", 2, t0+3, 6, 4),                           // after a restart: 4 calls, 6 ms
		scrape("before", 1, t0, 100, 50),                         // before the scenario
		scrape("pre-1-restart-rls", 1, t0+2, 120, 60),            // 10 calls, 20 ms in the first process
		{Label: "broken", Error: "rls/metrics.broken.json: bad"}, // skipped
	}
	p99 := 7.5
	ev.Stats = []evidence.ProxySnapshots{{Proxy: "proxy-a",
		Before: &envoyrec.Snapshot{Values: map[string]uint64{"cluster.rate_limit_cluster.internal.upstream_rq_completed": 3}},
		After: &envoyrec.Snapshot{Values: map[string]uint64{"cluster.rate_limit_cluster.internal.upstream_rq_completed": 13, "cluster.backend.internal.upstream_rq_completed": 0},
			Histograms: map[string]envoyrec.Histogram{"cluster.rate_limit_cluster.upstream_rq_time": {Quantiles: []envoyrec.Quantile{{Percent: 99, Cumulative: &p99}, {Percent: 100}}}}}}}
	rep := Judge(&evidence.Bundle{Dir: "mem", Scenarios: []*evidence.ScenarioEvidence{ev}}, Options{Now: fixedNow})
	got := rep.Scenarios[0].Latency.RLS
	if len(got) != 2 {
		t.Fatalf("rls latency %+v", got)
	}
	if g := got[0]; g.Source != report.RLSLatencyFromRLS || g.Since != report.SinceScenario || g.Count != 14 || g.MeanNs != 1857143 {
		t.Errorf("rls: %+v, want 14 calls, mean 1857143 ns (26 ms / 14)", g)
	}
	if g := got[1]; g.Source != "proxy-a" || g.Name != "cluster.rate_limit_cluster.upstream_rq_time" || len(g.Quantiles) != 1 || g.Quantiles[0].Ns != 7_500_000 {
		t.Errorf("envoy: %+v", g)
	}
}
