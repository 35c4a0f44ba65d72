package attack

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// benchWorkers is the in-flight cap of the throughput benchmarks; the same
// for Run and bare vegeta so that they are comparable.
const benchWorkers = 50

func benchBackend(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	b.Cleanup(srv.Close)
	return srv
}

// reportRate reports requests per second and, where the OS tells, process
// CPU per request. The backend runs in-process, so cpu-us/req is client plus
// server; the difference between the variants is the client overhead.
func reportRate(b *testing.B, n int, wall time.Duration, cpu0 time.Duration, cpuOK bool) {
	b.ReportMetric(float64(n)/wall.Seconds(), "req/s")
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(n), "cpu-us/req")
	}
	b.ReportMetric(0, "ns/op") // one op is one request; wall rate is the metric
}

// BenchmarkThroughput compares the requests/s recorded by Run (evidence
// lines to io.Discard) with a bare vegeta attack (NewAttacker + static
// targeter, results drained) against the same in-process backend, both with
// 50 workers and keep-alives. b.N is the number of requests.
func BenchmarkThroughput(b *testing.B) {
	srv := benchBackend(b)
	b.Run("run", func(b *testing.B) {
		ids := IDs(b.N, "b")
		w := evidence.NewWriter(io.Discard)
		defer w.Close()
		cpu0, ok := processCPU()
		b.ResetTimer()
		start := time.Now()
		sum, err := Run(context.Background(), Options{IDs: ids, Targets: []Target{{URL: srv.URL}}, Concurrency: benchWorkers}, w)
		wall := time.Since(start)
		b.StopTimer()
		if err != nil || sum.Recorded != b.N || sum.CodesByTarget[sum.Config.Targets[0].Name]["200"] != b.N {
			b.Fatalf("summary %+v err %v", sum, err)
		}
		reportRate(b, b.N, wall, cpu0, ok)
	})
	b.Run("run-nokeepalive", func(b *testing.B) {
		if b.N > 3000 {
			b.Skip("capped at 3000 requests: each one leaves a TIME_WAIT socket (use -benchtime=2000x)")
		}
		ids := IDs(b.N, "b")
		w := evidence.NewWriter(io.Discard)
		defer w.Close()
		cpu0, ok := processCPU()
		b.ResetTimer()
		start := time.Now()
		sum, err := Run(context.Background(), Options{IDs: ids, Targets: []Target{{URL: srv.URL}}, Concurrency: benchWorkers, DisableKeepAlives: true}, w)
		wall := time.Since(start)
		b.StopTimer()
		if err != nil || sum.Recorded != b.N {
			b.Fatalf("summary %+v err %v", sum, err)
		}
		reportRate(b, b.N, wall, cpu0, ok)
	})
	b.Run("bare-vegeta", func(b *testing.B) {
		tr := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: srv.URL + "/"})
		atk := vegeta.NewAttacker(vegeta.Workers(benchWorkers), vegeta.MaxWorkers(benchWorkers))
		cpu0, ok := processCPU()
		b.ResetTimer()
		start := time.Now()
		got, ok200 := 0, 0
		for r := range atk.Attack(tr, &stopAfter{inner: vegeta.Rate{}, n: uint64(b.N)}, 0, "") {
			got++
			if r.Code == 200 {
				ok200++
			}
		}
		wall := time.Since(start)
		b.StopTimer()
		if got != b.N || ok200 != b.N {
			b.Fatalf("%d results, %d ok, want %d", got, ok200, b.N)
		}
		reportRate(b, b.N, wall, cpu0, ok)
	})
}

// stopAfter wraps a pacer and stops the attack once n hits were scheduled,
// so a finite bare-vegeta attack ends without "no targets" results.
type stopAfter struct {
	inner vegeta.Pacer
	n     uint64
}

func (s *stopAfter) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= s.n {
		return 0, true
	}
	return s.inner.Pace(elapsed, hits)
}

func (s *stopAfter) Rate(elapsed time.Duration) float64 { return s.inner.Rate(elapsed) }

// runLines runs one attack into memory and returns its lines sorted by SentNs.
func runLines(b *testing.B, opts Options) (*evidence.AttackSummary, []evidence.Request) {
	var buf bytes.Buffer
	w := evidence.NewWriter(&buf)
	sum, err := Run(context.Background(), opts, w)
	w.Close()
	if err != nil || !sum.Complete {
		b.Fatalf("summary %+v err %v", sum, err)
	}
	var lines []evidence.Request
	if err := evidence.ReadLines(&buf, "bench", func(_ int, r *evidence.Request) error {
		lines = append(lines, *r)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].SentNs < lines[j].SentNs })
	return sum, lines
}

// BenchmarkBurstSpread measures the send spread (first to last SentNs) of
// a 20-ID unpaced burst with one worker per ID. Every Run has a new
// transport, so each burst dials 20 fresh connections. One op is one burst.
func BenchmarkBurstSpread(b *testing.B) {
	srv := benchBackend(b)
	ids := IDs(20, "burst")
	var spreads []float64
	for i := 0; i < b.N; i++ {
		sum, _ := runLines(b, Options{IDs: ids, Targets: []Target{{URL: srv.URL}}})
		spreads = append(spreads, float64(sum.SendSpreadNs)/1e3)
	}
	sort.Float64s(spreads)
	b.ReportMetric(spreads[len(spreads)/2], "p50-spread-us")
	b.ReportMetric(spreads[len(spreads)-1], "max-spread-us")
}

// BenchmarkPacing runs 200 IDs at 200/s (1 s per op) and measures how far
// each send is from its schedule. vegeta's ConstantPacer sends hit k at
// began+(k+1)*5ms; began is not exposed, so the schedule's origin is taken
// as the median of SentNs_k - k*5ms over the run (a constant offset does not
// count as error). Reports mean, p99 and max absolute error and the lowest
// achieved rate (first to last send) over the ops.
func BenchmarkPacing(b *testing.B) {
	srv := benchBackend(b)
	const n = 200
	rate := vegeta.Rate{Freq: n, Per: time.Second}
	b.Run("run", func(b *testing.B) {
		ids := IDs(n, "pace")
		var runs [][]int64
		for i := 0; i < b.N; i++ {
			_, lines := runLines(b, Options{IDs: ids, Targets: []Target{{URL: srv.URL}}, Rate: rate})
			sent := make([]int64, len(lines))
			for k, l := range lines {
				sent[k] = l.SentNs
			}
			runs = append(runs, sent)
		}
		reportPacing(b, runs, int64(time.Second/n))
	})
	// The same schedule with bare vegeta, timed by Result.Timestamp (when
	// the worker started the hit): the pacer's own error, for comparison.
	b.Run("bare-vegeta", func(b *testing.B) {
		var runs [][]int64
		for i := 0; i < b.N; i++ {
			atk := vegeta.NewAttacker(vegeta.MaxWorkers(n))
			tr := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: srv.URL + "/"})
			var sent []int64
			for r := range atk.Attack(tr, &stopAfter{inner: rate, n: n}, 0, "") {
				sent = append(sent, r.Timestamp.UnixNano())
			}
			sort.Slice(sent, func(a, c int) bool { return sent[a] < sent[c] })
			runs = append(runs, sent)
		}
		reportPacing(b, runs, int64(time.Second/n))
	})
}

// reportPacing computes the pacing error of sorted send times per run.
func reportPacing(b *testing.B, runs [][]int64, interval int64) {
	var errs, rates []float64
	for _, sent := range runs {
		n := len(sent)
		offs := make([]int64, n)
		for k, s := range sent {
			offs[k] = s - int64(k)*interval
		}
		sorted := append([]int64(nil), offs...)
		sort.Slice(sorted, func(a, c int) bool { return sorted[a] < sorted[c] })
		origin := sorted[n/2]
		for _, o := range offs {
			errs = append(errs, math.Abs(float64(o-origin))/1e3)
		}
		rates = append(rates, float64(n-1)/(float64(sent[n-1]-sent[0])/1e9))
	}
	sort.Float64s(errs)
	sort.Float64s(rates)
	mean := 0.0
	for _, e := range errs {
		mean += e
	}
	b.ReportMetric(mean/float64(len(errs)), "mean-abs-err-us")
	b.ReportMetric(errs[len(errs)*99/100], "p99-abs-err-us")
	b.ReportMetric(errs[len(errs)-1], "max-abs-err-us")
	b.ReportMetric(rates[0], "min-rate-req/s")
}

// rawBackend answers every request on a connection with a canned 200 and
// allocates nothing per request, so that allocs/op in BenchmarkRequestCost
// are the client's. It reads up to the blank line ending the headers (the
// benchmark sends no body).
func rawBackend(b *testing.B) string {
	resp := []byte("HTTP/1.1 200 OK\r\nServer: raw\r\nContent-Length: 2\r\n\r\nok")
	return "http://" + serveRaw(b, func(c net.Conn) {
		br := bufio.NewReaderSize(c, 4096)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) == 2 { // "\r\n": end of the request
				if _, err := c.Write(resp); err != nil {
					return
				}
			}
		}
	})
}

// BenchmarkRequestCost is the client's cost per request (one op = one
// request; allocs/op and B/op are per request, with the backend allocation
// free): Run with keep-alive and 8 in flight, next to a hey-like loop on
// net/http's Transport and a bare vegeta attack against the same backend.
// cpu-us/req includes the in-process backend's share.
func BenchmarkRequestCost(b *testing.B) {
	url := rawBackend(b)
	b.Run("run", func(b *testing.B) {
		ids := IDs(b.N, "c")
		w := evidence.NewWriter(io.Discard)
		defer w.Close()
		cpu0, ok := processCPU()
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		sum, err := Run(context.Background(), Options{IDs: ids, Targets: []Target{{URL: url}}, Concurrency: 8}, w)
		wall := time.Since(start)
		b.StopTimer()
		if err != nil || sum.CodesByTarget[sum.Config.Targets[0].Name]["200"] != b.N {
			b.Fatalf("summary %+v err %v", sum, err)
		}
		reportRate(b, b.N, wall, cpu0, ok)
	})
	b.Run("nethttp-transport", func(b *testing.B) {
		tr := &http.Transport{MaxIdleConnsPerHost: 8}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		var left atomic.Int64
		left.Store(int64(b.N))
		cpu0, ok := processCPU()
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					req, _ := http.NewRequest("GET", url+"/", nil)
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		b.StopTimer()
		reportRate(b, b.N, wall, cpu0, ok)
	})
	b.Run("bare-vegeta", func(b *testing.B) {
		tr := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: url + "/"})
		atk := vegeta.NewAttacker(vegeta.Workers(8), vegeta.MaxWorkers(8))
		cpu0, ok := processCPU()
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range atk.Attack(tr, &stopAfter{inner: vegeta.Rate{}, n: uint64(b.N)}, 0, "") {
		}
		wall := time.Since(start)
		b.StopTimer()
		reportRate(b, b.N, wall, cpu0, ok)
	})
}
