package analyze

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// writeSynthetic writes n requests (two targets, half admitted with a
// receipt, half local 429s) and their receipts, as attack and backend do.
func writeSynthetic(tb testing.TB, dir string, n int) {
	tb.Helper()
	rw, err := evidence.Create(filepath.Join(dir, evidence.RequestsFile))
	if err != nil {
		tb.Fatal(err)
	}
	cw, err := evidence.Create(filepath.Join(dir, evidence.ReceiptsFile))
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("r-%07d", i)
		r := evidence.Request{ID: id, Target: []string{"proxy-a", "proxy-b"}[i%2], URL: "http://127.0.0.1:1/inventory", Method: "GET",
			SentNs: t0 + int64(i)*1000, LatencyNs: 250_000, Code: 200, BytesIn: 12, Headers: map[string]string{"server": "envoy"}}
		if i%2 == 1 {
			r.Code, r.Body, r.BytesIn = 429, "local_rate_limited", 18
		} else if err := cw.Write(evidence.Receipt{ID: &id, RecvNs: r.SentNs + 100_000, Method: "GET", Path: "/inventory"}); err != nil {
			tb.Fatal(err)
		}
		if err := rw.Write(&r); err != nil {
			tb.Fatal(err)
		}
	}
	if err := rw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, evidence.AttackFile), fmt.Appendf(nil, `{"complete":true,"sent":%d}`, n), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkAnalyzeMillion analyses 1,000,000 requests and 500,000 receipts;
// it reports requests analysed per second.
func BenchmarkAnalyzeMillion(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	writeSynthetic(b, dir, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := Analyze(context.Background(), dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		s := rep.Scenarios[0]
		if s.Status != Pass || s.Totals.Admitted != n/2 || s.Receipts.AdmittedWithReceipt != n/2 {
			b.Fatalf("status %s totals %+v reasons %v", s.Status, s.Totals, s.Reasons)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}
