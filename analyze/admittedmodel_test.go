package analyze

// Issue 21, "admitted: model": a plan or scenario.json may expect the
// limiter model's bounds for the run instead of a fixed range. A burst
// meant to arrive at once that the limiter read over 100 ms let a token
// bucket refill: a fixed range that assumes the burst arrived at once
// FAILs, the model's bounds (timing aware) hold.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// bucketBurst is n requests sent together at t0 to proxy-a, which reads
// them one by one over spread (request i at t0 + i·spread/n) and passes
// them through a continuous token bucket of capacity tokens refilled at
// rate per second, starting full (model.KindTokenBucket); an admitted
// request gets a receipt 200 µs after its read and every response comes
// 500 µs after it. With admitAll the proxy admits every request instead
// (a limiter that does not hold). The scenario declares the bucket as its
// limiter and expects admitted (and receipts = admitted).
func bucketBurst(t *testing.T, n int, spread time.Duration, capacity, rate float64, admitAll bool, admitted *evidence.AdmittedExpectation) (*ev, int) {
	e := bare(t)
	spec := model.Spec{Kind: model.KindTokenBucket, Capacity: capacity, RatePerSec: rate}
	e.scenario.Limiters = []evidence.Limiter{{Name: "bucket", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec}}
	e.scenario.Expect.Admitted = admitted
	tokens, last, passed := capacity, t0, 0
	for i := range n {
		read := t0 + int64(i)*int64(spread)/int64(n)
		tokens = min(capacity, tokens+rate*float64(read-last)/1e9)
		last = read
		id := fmt.Sprintf("b-%03d", i)
		r := evidence.Request{ID: id, Target: "proxy-a", Method: "GET", SentNs: t0, LatencyNs: read - t0 + 500_000}
		if tokens >= 1 || admitAll {
			tokens = max(tokens-1, 0)
			passed++
			r.Code, r.Body, r.BytesIn = 200, "ok", 2
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: read + 200_000})
		} else {
			r.Code, r.Body, r.BytesIn = 429, "local_rate_limited", 18
		}
		e.requests = append(e.requests, r)
	}
	e.attack["sent"] = n
	return e, passed
}

// TestAdmittedModelPassesWhereAFixedRangeFails: the proxy read a burst
// of 30 over 100 ms, so its bucket of 10 (100 tokens/s) refilled: a fixed
// "10" (the burst at once) is inconclusive (its premise was not delivered),
// "model" PASSes with the model's bounds
// in its want text, and they are the report's end-to-end model bound.
func TestAdmittedModelPassesWhereAFixedRangeFails(t *testing.T) {
	e, passed := bucketBurst(t, 30, 100*time.Millisecond, 10, 100, false, evidence.AdmittedIn(evidence.Exact(10)))
	if passed <= 10 {
		t.Fatalf("the synthetic bucket admitted %d: no refill to show", passed)
	}
	dir := e.write()
	// the fixed range assumed the burst at once: inconclusive, naming the model for the times delivered
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.NotRun, fmt.Sprintf("inconclusive: admitted: want 10, got %d, within the limiters' model", passed))

	e.scenario.Expect.Admitted = evidence.AdmittedByModel()
	e.write()
	s := run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	m := s.Model
	if m == nil || m.Min > passed || m.Max < passed || m.Max <= 10 {
		t.Fatalf("model bound %+v for %d admitted: want one that allows the refill", m, passed)
	}
	c := mustCheck(t, s, "admitted")
	if c.Status != report.CheckPass || c.Want != fmt.Sprintf("model %d..%d", m.Min, m.Max) || c.Got != fmt.Sprint(passed) {
		t.Fatalf("admitted check %+v", c)
	}
}

// TestAdmittedModelFailsOutsideTheBounds: a proxy that admitted all 30
// is outside the model's bounds: the admitted check FAILs, naming them.
func TestAdmittedModelFailsOutsideTheBounds(t *testing.T) {
	e, passed := bucketBurst(t, 30, 100*time.Millisecond, 10, 100, true, evidence.AdmittedByModel())
	s := run(t, e.write()).Scenarios[0]
	if s.Model == nil || s.Model.Max >= passed {
		t.Fatalf("model %+v, %d admitted", s.Model, passed)
	}
	wantVerdict(t, s, evidence.Fail, fmt.Sprintf("admitted: want model %d..%d, got 30", s.Model.Min, s.Model.Max))
	if c := mustCheck(t, s, "admitted"); c.Status != report.CheckFail {
		t.Fatalf("admitted check %+v", c)
	}
}

// TestAdmittedModelWithoutLimitersIsNotRun: without a declared limiter
// there is no model: "admitted: model" is inconclusive (NOT_RUN naming
// why), never a PASS, even when every other check passes.
func TestAdmittedModelWithoutLimitersIsNotRun(t *testing.T) {
	e, _ := bucketBurst(t, 30, 100*time.Millisecond, 10, 100, false, evidence.AdmittedByModel())
	e.scenario.Limiters = nil
	s := run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.NotRun, "admitted: model needs a limiter model (no limiter declared)")
	if c := mustCheck(t, s, "admitted"); c.Status != report.CheckUnknown || c.Want != "model" {
		t.Fatalf("admitted check %+v", c)
	}
	// A limiter that applies to another target leaves proxy-a's admissions without a bound.
	e.scenario.Limiters = []evidence.Limiter{{Name: "other", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Targets: []string{"proxy-z"},
		Model: &model.Spec{Kind: model.KindTokenBucket, Capacity: 10, RatePerSec: 100}}}
	s = run(t, e.write()).Scenarios[0]
	if s.Status != evidence.NotRun || !strings.Contains(reasons(s), "admitted: model needs a limiter model (no declared limiter applies to target proxy-a)") {
		t.Fatalf("%s: %s", s.Status, reasons(s))
	}
}
