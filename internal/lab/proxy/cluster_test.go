package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// blocking is an upstream whose requests wait until the test releases
// them; arrived receives one value per request that reached it.
type blocking struct {
	*scripted
	arrived chan int64
	release chan struct{}
	once    sync.Once
}

// free releases every request, now and later.
func (b *blocking) free() { b.once.Do(func() { close(b.release) }) }

func newBlocking(t *testing.T) *blocking {
	b := &blocking{arrived: make(chan int64, 100), release: make(chan struct{})}
	b.scripted = newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		b.arrived <- n
		<-b.release
		_, _ = w.Write([]byte("ok"))
	})
	t.Cleanup(b.free)
	return b
}

func gauge(t *testing.T, p *Proxy, name string) int64 {
	t.Helper()
	return textCounter(textStats(t, p), "cluster.backend."+name)
}

// async sends a GET from its own goroutine and delivers the result.
func async(t *testing.T, url string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("GET", url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- result{code: -1, body: err.Error()}
			return
		}
		defer resp.Body.Close()
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		ch <- result{resp.StatusCode, string(buf[:n]), resp.Header}
	}()
	return ch
}

// max_connections 1, max_pending_requests 1: one request on the connection,
// one pending (the connection limit counts upstream_cx_overflow), the third
// refused: 503 UO with x-envoy-overloaded and upstream_rq_pending_overflow;
// the gauges show the open breakers while it lasts; the pending request is
// served when the first finishes.
func TestBreakerPendingOverflow(t *testing.T) {
	up := newBlocking(t)
	var alog syncBuf
	p := startProxy(t, Config{Upstream: up.URL(), AccessLog: &alog, Retry: fastRetry("5xx,reset", 3), OutlierDetection: &OutlierDetection{Consecutive5xx: u32(1), MaxEjectionPercent: u32(100)},
		CircuitBreakers: &CircuitBreakers{MaxConnections: u32(1), MaxPendingRequests: u32(1), TrackRemaining: true}})
	first := async(t, p.URL()+"/1")
	<-up.arrived
	second := async(t, p.URL()+"/2")
	waitFor(t, "the second request pending", func() bool { return gauge(t, p, "upstream_rq_pending_active") == 1 })
	must(t, gauge(t, p, "circuit_breakers.default.cx_open") == 1 && gauge(t, p, "circuit_breakers.default.rq_pending_open") == 1 &&
		gauge(t, p, "circuit_breakers.default.remaining_pending") == 0 && gauge(t, p, "circuit_breakers.default.remaining_cx") == 0 &&
		gauge(t, p, "upstream_cx_overflow") >= 1, "breaker gauges %v", textStats(t, p))
	r := do(t, "GET", p.URL()+"/3", nil)
	must(t, r.code == 503 && r.header.Get("X-Envoy-Overloaded") == "true" &&
		r.body == "upstream connect error or disconnect/reset before headers. reset reason: overflow", "overflow reply %d %q %v", r.code, r.body, r.header)
	up.free()
	r1, r2 := <-first, <-second
	must(t, r1.code == 200 && r2.code == 200, "queued requests %d %d", r1.code, r2.code)
	text := textStats(t, p)
	for k, v := range map[string]int64{"upstream_rq_pending_overflow": 1, "upstream_rq_pending_total": 2, "upstream_rq_total": 2,
		"upstream_rq_retry": 0, "upstream_cx_total": 1, "upstream_rq_503": 1, "outlier_detection.ejections_enforced_total": 0} {
		must(t, textCounter(text, "cluster.backend."+k) == v, "%s = %d want %d", k, textCounter(text, "cluster.backend."+k), v)
	}
	must(t, up.n.Load() == 2, "upstream got %d", up.n.Load())
	var uo int
	for _, e := range accessLog(t, p, &alog) {
		if e.ResponseFlags == "UO" {
			uo++
			must(t, e.ResponseCode == 503 && e.ResponseCodeDetails == "upstream_reset_before_response_started{overflow}" && e.UpstreamHost == "",
				"UO line %+v (a pending overflow involves no host)", e)
		}
	}
	must(t, uo == 1, "UO lines %d", uo)
	js := jsonStats(t, p)
	must(t, js["cluster.backend.upstream_rq_pending_overflow"] == float64(1), "json pending overflow")
	prom := promStats(t, p.AdminURL()+"/stats/prometheus")
	must(t, prom[`envoy_cluster_upstream_rq_pending_overflow{envoy_cluster_name="backend"}`] == 1, "prometheus pending overflow")
	must(t, prom[`envoy_cluster_circuit_breakers_default_rq_pending_open{envoy_cluster_name="backend"}`] == 0, "prometheus breaker gauge after")
}

// max_requests 1: the second request gets its own connection but is
// refused when it would attach: 503 UO, upstream_rq_pending_overflow.
func TestBreakerMaxRequests(t *testing.T) {
	up := newBlocking(t)
	p := startProxy(t, Config{Upstream: up.URL(), CircuitBreakers: &CircuitBreakers{MaxRequests: u32(1)}})
	first := async(t, p.URL()+"/1")
	<-up.arrived
	must(t, gauge(t, p, "circuit_breakers.default.rq_open") == 1, "rq_open while the first runs")
	r := do(t, "GET", p.URL()+"/2", nil)
	must(t, r.code == 503 && r.header.Get("X-Envoy-Overloaded") == "true", "max_requests overflow %d %v", r.code, r.header)
	up.free()
	must(t, (<-first).code == 200, "first")
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.upstream_rq_pending_overflow") == 1 && textCounter(text, "cluster.backend.upstream_cx_total") == 2 &&
		up.n.Load() == 1, "stats %v upstream %d", text, up.n.Load())
}

// max_connections 1 without a pending limit: requests queue (none is
// refused) and upstream_cx_overflow counts the connections not made.
func TestBreakerMaxConnectionsQueues(t *testing.T) {
	up := newBlocking(t)
	p := startProxy(t, Config{Upstream: up.URL(), CircuitBreakers: &CircuitBreakers{MaxConnections: u32(1)}})
	var chans []<-chan result
	chans = append(chans, async(t, p.URL()+"/0"))
	<-up.arrived
	for i := 1; i < 4; i++ {
		chans = append(chans, async(t, fmt.Sprintf("%s/%d", p.URL(), i)))
	}
	waitFor(t, "three pending", func() bool { return gauge(t, p, "upstream_rq_pending_active") == 3 })
	up.free()
	for _, c := range chans {
		must(t, (<-c).code == 200, "queued request failed")
	}
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.upstream_cx_total") == 1 && textCounter(text, "cluster.backend.upstream_cx_overflow") >= 3 &&
		textCounter(text, "cluster.backend.upstream_rq_pending_overflow") == 0 && up.n.Load() == 4, "stats %v", text)
}

// hostsUpstreams returns a failing and a healthy upstream.
func failingAndHealthy(t *testing.T) (bad, good *scripted) {
	bad = newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	good = newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	return bad, good
}

// Consecutive 5xx ejects the failing host; traffic then goes to the other
// one only; the interval sweep after base_ejection_time brings it back.
func TestOutlierEjectionAndSweep(t *testing.T) {
	bad, good := failingAndHealthy(t)
	clk := newTestClock()
	var alog syncBuf
	p := startProxy(t, Config{Upstreams: []string{bad.URL(), good.URL()}, Clock: clk, Seed: 1, AccessLog: &alog,
		OutlierDetection: &OutlierDetection{Consecutive5xx: u32(3), Interval: Duration(time.Second), BaseEjectionTime: Duration(2 * time.Second), MaxEjectionPercent: u32(50)}})
	codes := map[int]int{}
	for range 10 {
		codes[do(t, "GET", p.URL()+"/x", nil).code]++
	}
	// Round robin: the bad host answers every other request until its third 503.
	must(t, bad.n.Load() == 3 && codes[503] == 3 && codes[200] == 7, "before/after ejection: bad %d good %d codes %v", bad.n.Load(), good.n.Load(), codes)
	text := textStats(t, p)
	for k, v := range map[string]int64{"outlier_detection.ejections_active": 1, "outlier_detection.ejections_enforced_total": 1,
		"outlier_detection.ejections_enforced_consecutive_5xx": 1, "outlier_detection.ejections_detected_consecutive_5xx": 1,
		"outlier_detection.ejections_overflow": 0, "membership_healthy": 1, "membership_total": 2, "lb_healthy_panic": 0} {
		must(t, textCounter(text, "cluster.backend."+k) == v, "%s = %d want %d", k, textCounter(text, "cluster.backend."+k), v)
	}
	prom := promStats(t, p.AdminURL()+"/stats/prometheus")
	must(t, prom[`envoy_cluster_outlier_detection_ejections_active{envoy_cluster_name="backend"}`] == 1, "prometheus ejections_active")
	// Sweeps at 1 s: 1 s < 2 s base, still ejected; at 2 s it returns.
	clk.Advance(time.Second)
	must(t, gauge(t, p, "outlier_detection.ejections_active") == 1, "unejected before base_ejection_time")
	clk.Advance(time.Second)
	must(t, gauge(t, p, "outlier_detection.ejections_active") == 0 && gauge(t, p, "membership_healthy") == 2, "not unejected at the sweep after base_ejection_time")
	before := bad.n.Load()
	for range 4 {
		do(t, "GET", p.URL()+"/x", nil)
	}
	must(t, bad.n.Load() > before, "the unejected host gets no traffic")
	// Ejected again: the multiplier is now 2 (4 s), less the sweeps it
	// stayed healthy; it comes back only at a sweep.
	for bad.n.Load() < before+3 {
		do(t, "GET", p.URL()+"/x", nil)
	}
	must(t, gauge(t, p, "outlier_detection.ejections_active") == 1 && gauge(t, p, "outlier_detection.ejections_enforced_total") == 2, "second ejection")
}

// max_ejection_percent 10 (the default) with 3 hosts: (0+1)/3 > 10%, so no
// ejection ever happens (Envoy >= 1.28): ejections_overflow instead;
// always_eject_one_host allows the first.
func TestOutlierMaxEjectionPercent(t *testing.T) {
	for _, always := range []bool{false, true} {
		bad, good := failingAndHealthy(t)
		good2 := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
		p := startProxy(t, Config{Upstreams: []string{bad.URL(), good.URL(), good2.URL()}, Clock: newTestClock(),
			OutlierDetection: &OutlierDetection{Consecutive5xx: u32(2), AlwaysEjectOneHost: always}})
		for range 12 {
			do(t, "GET", p.URL()+"/x", nil)
		}
		text := textStats(t, p)
		if always {
			must(t, textCounter(text, "cluster.backend.outlier_detection.ejections_active") == 1 && textCounter(text, "cluster.backend.outlier_detection.ejections_overflow") == 0,
				"always_eject_one_host: %v", text)
			continue
		}
		must(t, textCounter(text, "cluster.backend.outlier_detection.ejections_active") == 0 && textCounter(text, "cluster.backend.outlier_detection.ejections_overflow") >= 1 &&
			textCounter(text, "cluster.backend.outlier_detection.ejections_detected_consecutive_5xx") >= 1 && bad.n.Load() == 4,
			"default 10%%: %v bad %d", text, bad.n.Load())
	}
}

// enforcing_consecutive_gateway_failure defaults to 0: a gateway-failure
// run is detected, not enforced.
func TestOutlierGatewayFailureNotEnforcedByDefault(t *testing.T) {
	bad, good := failingAndHealthy(t)
	p := startProxy(t, Config{Upstreams: []string{bad.URL(), good.URL()}, Clock: newTestClock(),
		OutlierDetection: &OutlierDetection{Consecutive5xx: u32(100), ConsecutiveGatewayFailure: u32(2), MaxEjectionPercent: u32(100)}})
	for range 8 {
		do(t, "GET", p.URL()+"/x", nil)
	}
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.outlier_detection.ejections_detected_consecutive_gateway_failure") == 2 &&
		textCounter(text, "cluster.backend.outlier_detection.ejections_enforced_total") == 0 && textCounter(text, "cluster.backend.outlier_detection.ejections_active") == 0,
		"gateway failure: %v", text)
}

// Both hosts ejected: healthy 0% < the 50% panic threshold, so the load
// balancer uses every host (lb_healthy_panic); with threshold 0 there is no
// panic and the reply is 503 "no healthy upstream" (UH).
func TestPanicRouting(t *testing.T) {
	for _, threshold := range []*float64{nil, pct(0)} {
		a := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
		b := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
		var alog syncBuf
		p := startProxy(t, Config{Upstreams: []string{a.URL(), b.URL()}, Clock: newTestClock(), HealthyPanicThreshold: threshold, AccessLog: &alog,
			OutlierDetection: &OutlierDetection{Consecutive5xx: u32(1), MaxEjectionPercent: u32(100)}})
		do(t, "GET", p.URL()+"/x", nil)
		do(t, "GET", p.URL()+"/x", nil)
		must(t, gauge(t, p, "outlier_detection.ejections_active") == 2, "both ejected")
		r := do(t, "GET", p.URL()+"/x", nil)
		if threshold == nil {
			must(t, r.code == 503 && a.n.Load()+b.n.Load() == 3 && gauge(t, p, "lb_healthy_panic") == 1, "panic: %d, hosts got %d", r.code, a.n.Load()+b.n.Load())
			continue
		}
		must(t, r.code == 503 && r.body == "no healthy upstream" && a.n.Load()+b.n.Load() == 2 && gauge(t, p, "lb_healthy_panic") == 0,
			"threshold 0: %d %q", r.code, r.body)
		log := accessLog(t, p, &alog)
		last := log[len(log)-1]
		must(t, last.ResponseFlags == "UH" && last.ResponseCodeDetails == "no_healthy_upstream" && last.UpstreamHost == "", "UH line %+v", last)
	}
}

// Panic needs the normalized availability below 100: with 3 hosts and one
// ejected, 140·2/3 = 93 < 100 but 66% >= 50%, so no panic; with two ejected,
// 33% < 50%: panic.
func TestPanicThresholdNormalization(t *testing.T) {
	var ups []*scripted
	var urls []string
	for i := range 3 {
		fail := i < 2
		s := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
			if fail {
				w.WriteHeader(503)
			}
		})
		ups = append(ups, s)
		urls = append(urls, s.URL())
	}
	p := startProxy(t, Config{Upstreams: urls, Clock: newTestClock(), Seed: 3,
		OutlierDetection: &OutlierDetection{Consecutive5xx: u32(1), MaxEjectionPercent: u32(100)}})
	for gauge(t, p, "outlier_detection.ejections_active") < 1 {
		do(t, "GET", p.URL()+"/x", nil)
	}
	must(t, gauge(t, p, "lb_healthy_panic") == 0, "panic with one of three ejected")
	for gauge(t, p, "outlier_detection.ejections_active") < 2 {
		do(t, "GET", p.URL()+"/x", nil)
	}
	n := ups[0].n.Load() + ups[1].n.Load()
	for range 6 {
		do(t, "GET", p.URL()+"/x", nil)
	}
	must(t, gauge(t, p, "lb_healthy_panic") == 6 && ups[0].n.Load()+ups[1].n.Load() > n, "panic with two of three ejected: %d", gauge(t, p, "lb_healthy_panic"))
}

func TestClusterConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Upstream: "http://a:1", Upstreams: []string{"http://b:1"}}, "not both"},
		{Config{Upstreams: []string{"http://a:1/x", "http://b:1/y"}}, "different paths"},
		{Config{Upstream: "http://a:1", OutlierDetection: &OutlierDetection{BaseEjectionTime: Duration(time.Minute), MaxEjectionTime: Duration(time.Second)}}, "max_ejection_time"},
		{Config{Upstream: "http://a:1", OutlierDetection: &OutlierDetection{MaxEjectionPercent: u32(101)}}, "max_ejection_percent"},
		{Config{Upstream: "http://a:1", HealthyPanicThreshold: pct(120)}, "healthy_panic_threshold"},
	} {
		_, err := Start(t.Context(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}
