package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// TestNginxZoneKeys: a zone keyed on the client address uses each request's
// connection, per nginx instance; a key the evidence cannot tell leaves the
// limiter unchecked (unknown), never judged as "not limited".
func TestNginxZoneKeys(t *testing.T) {
	e := bare(t)
	spec := model.Spec{Kind: model.KindNginxLimitReq, Zones: []model.NginxZone{{Name: "perip", Rate: "1r/m", Key: "$binary_remote_addr"}}}
	e.scenario.Limiters = []evidence.Limiter{{Name: "nginx", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec}}
	// two clients, 3 requests each, a minute apart from each other's first: each gets 1
	e.reqs(6, "nginx", time.Second, func(i int) (int, string, map[string]string) {
		if i < 2 {
			return ok200(i)
		}
		return 503, "limited", nil
	})
	e.scenario.Classify = []evidence.ClassRule{{Status: evidence.Range{Min: 503, Max: 503}, Class: "local_429"}}
	for i := range e.requests {
		e.requests[i].Conn = []string{"10.0.0.1:4000/1", "10.0.0.2:4000/2"}[i%2]
	}
	s := run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	if l := s.Limiters[0]; l.Total.Min != 2 || l.Total.Max != 2 || len(l.Buckets) != 2 {
		t.Fatalf("limiter %+v", l)
	}
	spec.Zones[0].Key = "$cookie_user"
	s = run(t, e.write()).Scenarios[0]
	if l := s.Limiters[0]; l.Status != report.LimiterNotChecked || !strings.Contains(l.Detail, "zone key $cookie_user") || s.Status != evidence.NotRun {
		t.Fatalf("status %s limiter %+v", s.Status, l)
	}
}

// TestClockSkewWidensWindows: a limiter on another host places its windows
// by its own clock; within clock_skew_ns of a boundary the checker says
// "either" instead of a breach.
func TestClockSkewWidensWindows(t *testing.T) {
	e := bare(t)
	spec := model.Spec{Kind: model.KindFixedWindow, Limit: 1, Unit: "second"}
	e.scenario.Limiters = []evidence.Limiter{{Name: "remote", Stage: evidence.StageGlobal, Key: evidence.KeyShared, Model: &spec}}
	// two admissions 10 ms before and 10 ms after a second boundary (t0 is one)
	for k, at := range []int64{-10e6, 10e6} {
		e.requests = append(e.requests, evidence.Request{ID: []string{"a", "b"}[k], Target: "p", SentNs: t0 + int64(time.Second) + at, LatencyNs: 1e6, Code: 200, BytesIn: 2})
		e.receipts = append(e.receipts, evidence.Receipt{ID: sp([]string{"a", "b"}[k]), RecvNs: t0 + int64(time.Second) + at + 1000})
	}
	e.attack["sent"] = 2
	if s := run(t, e.write()).Scenarios[0]; s.Status != evidence.Pass {
		t.Fatalf("same clock: %s %v", s.Status, s.Reasons)
	}
	// both 10 and 5 ms before the boundary: one window by the clients'
	// clock, a breach; a limiter clock up to 50 ms off may put the boundary
	// between them: unsure, not wrong
	e.requests[1].SentNs, e.receipts[1].RecvNs = t0+int64(time.Second)-5e6, t0+int64(time.Second)-5e6+1000
	wantVerdict(t, run(t, e.write()).Scenarios[0], evidence.Fail, "over-admitted (model must reject)")
	e.scenario.Limiters[0].ClockSkewNs = 50e6
	if s := run(t, e.write()).Scenarios[0]; s.Status != evidence.Pass {
		t.Fatalf("skew 50 ms: %s %v", s.Status, s.Reasons)
	}
}

// TestPerConnectionBuckets: local_rate_limit_per_downstream_connection
// gives each client connection its own bucket, keyed by the request's conn;
// without conn the limiter cannot be judged.
func TestPerConnectionBuckets(t *testing.T) {
	e := bare(t)
	tpf := uint32(2)
	spec := model.Spec{Kind: model.KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 2, TokensPerFill: &tpf, FillInterval: model.Duration(time.Hour),
		Scope: model.ScopeConnection}
	e.scenario.Limiters = []evidence.Limiter{{Name: "per conn", Stage: evidence.StageLocal, Key: evidence.KeyConnection, Model: &spec}}
	e.reqs(6, "proxy-a", time.Millisecond, func(i int) (int, string, map[string]string) {
		if i%3 == 2 {
			return local429(i)
		}
		return ok200(i)
	})
	for i := range e.requests {
		e.requests[i].Conn = []string{"127.0.0.1:5000/1", "127.0.0.1:5001/2"}[i/3]
	}
	s := run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	// (1.31's float bucket may come out one short of a burst: the lower bound is 1 a bucket)
	if l := s.Limiters[0]; len(l.Buckets) != 2 || l.Total.Min != 2 || l.Total.Max != 4 {
		t.Fatalf("limiter %+v", l)
	}
	// Had they shared one connection, 4 admissions would be 2 too many.
	for i := range e.requests {
		e.requests[i].Conn = "127.0.0.1:5000/1"
	}
	wantVerdict(t, run(t, e.write()).Scenarios[0], evidence.Fail, "per conn: over-admitted (model must reject)")
	for i := range e.requests {
		e.requests[i].Conn = ""
	}
	s = run(t, e.write()).Scenarios[0]
	if l := s.Limiters[0]; l.Status != report.LimiterNotChecked || !strings.Contains(l.Detail, "6 requests have no connection key") || s.Status != evidence.NotRun {
		t.Fatalf("status %s limiter %+v", s.Status, l)
	}
}
