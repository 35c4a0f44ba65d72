package analyze

import (
	"context"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/labshape"
	"github.com/rlbench/rlbench/model"
)

// benchLoadJudge times Analyze (Load + Judge) of n lab-shaped requests and
// n receipts (internal/labshape, shaped like `rlbench demo`'s evidence); it
// reports requests analysed per second. Peak RSS is measured by
// bench/analyze.sh.
func benchLoadJudge(b *testing.B, n int, limiters ...evidence.Limiter) {
	dir := b.TempDir()
	if err := labshape.Write(dir, labshape.Options{N: n, Limiters: limiters}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := Analyze(context.Background(), dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		s := rep.Scenarios[0]
		if s.Status != evidence.Pass || s.Totals.N[evidence.ClassAdmitted] != n || s.Receipts.AdmittedWithReceipt != n || len(s.Limiters) != len(limiters) {
			b.Fatalf("status %s totals %+v reasons %v", s.Status, s.Totals, s.Reasons)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// BenchmarkLoadJudgeMillion: 1,000,000 requests + 1,000,000 receipts.
func BenchmarkLoadJudgeMillion(b *testing.B) { benchLoadJudge(b, 1_000_000) }

// BenchmarkLoadJudge100k: 100,000 requests + 100,000 receipts (quick).
func BenchmarkLoadJudge100k(b *testing.B) { benchLoadJudge(b, 100_000) }

// roomyBucket is a token bucket per proxy that admits every lab-shaped
// request (one every µs, alternating between two proxies).
func roomyBucket() evidence.Limiter {
	spec := model.Spec{Kind: model.KindTokenBucket, Capacity: 1e7, RatePerSec: 1e7}
	return evidence.Limiter{Name: "bucket", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec}
}

// BenchmarkLoadJudgeModel100k: 100,000 requests replayed through a
// limiter model (model.Check on every request) on top of Load + Judge.
func BenchmarkLoadJudgeModel100k(b *testing.B) { benchLoadJudge(b, 100_000, roomyBucket()) }

// BenchmarkLoadJudgeModelMillion: the million, through the model.
func BenchmarkLoadJudgeModelMillion(b *testing.B) { benchLoadJudge(b, 1_000_000, roomyBucket()) }
