package backend

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// BenchmarkReceipts measures recorded requests (4 keep-alive clients per
// GOMAXPROCS, in parallel) with each receipt written through to the receipts file before
// the answer (group commit). Compare with -benchmem across changes of the
// receipt path; bench/compare.sh runs the backend under attack tools.
func BenchmarkReceipts(b *testing.B) {
	be, err := Start(b.Context(), Options{ReceiptsFile: filepath.Join(b.TempDir(), evidence.ReceiptsFile)})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var n atomic.Int64
	b.SetParallelism(4) // 4 client goroutines per GOMAXPROCS
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, be.URL()+"/b", nil)
			req.Header.Set(evidence.IDHeader, fmt.Sprint("bench-", n.Add(1)))
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.StopTimer()
	if be.Count() != int(n.Load()) {
		b.Fatalf("%d receipts for %d requests", be.Count(), n.Load())
	}
}
