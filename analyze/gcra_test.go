package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// gcraEv is a gateway limited by a GCRA of 10 per 1s, burst 3 (T = 100ms,
// τ = 300ms; go-redis/redis_rate's Limit{Rate: 10, Burst: 3, Period:
// time.Second}): six requests 20ms apart, each taking 1ms, the first n
// admitted.
func gcraEv(t *testing.T, n int) *ev {
	e := bare(t)
	e.scenario.Name = "gcra"
	spec := model.Spec{Kind: model.KindGCRA, RatePerPeriod: 10, Period: model.Duration(time.Second), Burst: 3}
	e.scenario.Limiters = []evidence.Limiter{{Name: "gateway", Stage: evidence.StageLocal, Key: evidence.KeyShared, Model: &spec}}
	e.reqs(6, "gateway", 20*time.Millisecond, firstN(n, local429))
	return e
}

// TestGCRALimiterJudged: a scenario declaring a gcra limiter is judged by
// its model: the model's three admissions PASS (the sixth, at the
// boundary TAT - arrival = τ - T, is "either"), and a fourth admission
// 60ms in is over-admitted, explained in GCRA terms (its TAT was at least
// 239.5ms ahead of its latest arrival, its receipt, 200ms allowed).
func TestGCRALimiterJudged(t *testing.T) {
	s := judged(t, gcraEv(t, 3).write(), "gcra-pass")
	wantVerdict(t, s, evidence.Pass)
	if l := s.Limiters[0]; l.Total.Min != 3 || l.Total.Max != 4 {
		t.Fatalf("bounds %d..%d, want 3..4", l.Total.Min, l.Total.Max)
	}
	s = judged(t, gcraEv(t, 4).write(), "gcra-over")
	wantVerdict(t, s, evidence.Fail, "gateway: over-admitted (model must reject): want 0, got 1 (gateway-03)")
	over := s.Limiters[0].OverAdmitted
	if len(over) != 1 || over[0].ID != "gateway-03" {
		t.Fatalf("over-admitted %+v", over)
	}
	for _, want := range []string{"GCRA 10 per 1s, burst 3 (T=100ms, τ=300ms)", "TAT - arrival at least 239.5ms", "at most τ - T = 200ms passes"} {
		if !strings.Contains(over[0].Why, want) {
			t.Errorf("why %q lacks %q", over[0].Why, want)
		}
	}
}
