package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fixedUpstream is a minimal HTTP/1.1 keep-alive server that answers every
// request with the same 200 "ok": the upstream of the hop benchmarks, cheap
// enough that the profile shows the proxy.
func fixedUpstream(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	const resp = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if _, err := io.WriteString(c, resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchGet fires b.N keep-alive GETs at url from 50 goroutines and reports
// the process CPU per request (client, proxy and upstream together: the
// hop's cost is the difference between BenchmarkProxyHop/direct and the
// proxied variants).
func benchGet(b *testing.B, url string) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.SetParallelism(25) // 50 goroutines on 2 cores
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest("GET", url+"/bench", nil)
		req.Header.Set("X-Rlbench-Id", "bench-1")
		for pb.Next() {
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-c0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/req")
}

// BenchmarkProxyHop measures requests through one lab proxy against the same
// requests sent directly (bench/proxy.sh compares the proxy process alone
// with nginx). Profile the hop with
//
//	go test -run '^$' -bench 'ProxyHop/(plain|local-accesslog)' -cpuprofile cpu.out ./internal/lab/proxy/
func BenchmarkProxyHop(b *testing.B) {
	up := fixedUpstream(b)
	b.Run("direct", func(b *testing.B) { benchGet(b, up) })
	b.Run("plain", func(b *testing.B) {
		p := startProxy(b, Config{Name: "proxy-a", Upstream: up})
		benchGet(b, p.URL())
	})
	b.Run("local-accesslog", func(b *testing.B) {
		p := startProxy(b, Config{Name: "proxy-a", Upstream: up, AccessLog: io.Discard, Local: &LocalRateLimit{
			MaxTokens: 1 << 30, TokensPerFill: 1 << 30, FillInterval: Duration(time.Second), FilterEnabled: pct(100), FilterEnforced: pct(100)}})
		benchGet(b, p.URL())
	})
}
