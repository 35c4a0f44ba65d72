package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func fastRetry(on string, n uint32) *RetryPolicy {
	return &RetryPolicy{RetryOn: on, NumRetries: &n, RetryBackOff: &RetryBackOff{BaseInterval: Duration(time.Millisecond)}}
}

// 503, 503, then 200: three attempts, the attempt count header upstream
// "1", "2", "3" and downstream "3", retry stats and the retried codes under
// cluster.<c>.retry.*.
func TestRetryThenSuccess(t *testing.T) {
	up := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n < 3 {
			w.WriteHeader(503)
			_, _ = w.Write([]byte("busy"))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	var alog syncBuf
	p := startProxy(t, Config{Name: "proxy-a", Upstream: up.URL(), AccessLog: &alog, Retry: fastRetry("5xx", 3),
		IncludeAttemptCount: true, IncludeAttemptCountInResponse: true})
	r := do(t, "GET", p.URL()+"/x", map[string]string{"X-Rlbench-Id": "r1", "X-Envoy-Attempt-Count": "9", "X-Envoy-Max-Retries": "0"})
	must(t, r.code == 200 && r.body == "ok", "reply %d %q", r.code, r.body)
	must(t, r.header.Get("X-Envoy-Attempt-Count") == "3", "downstream attempt count %q", r.header.Get("X-Envoy-Attempt-Count"))
	must(t, slices.Equal(up.seen(), []string{"1", "2", "3"}), "upstream attempt counts %v", up.seen())
	text := textStats(t, p)
	for k, v := range map[string]int64{"upstream_rq_retry": 2, "upstream_rq_retry_success": 1, "upstream_rq_retry_limit_exceeded": 0,
		"upstream_rq_retry_overflow": 0, "upstream_rq_total": 3, "upstream_rq_200": 1, "upstream_rq_2xx": 1, "upstream_rq_completed": 1,
		"retry.upstream_rq_503": 2, "retry.upstream_rq_5xx": 2, "retry.upstream_rq_completed": 2, "upstream_rq_retry_backoff_exponential": 2} {
		must(t, textCounter(text, "cluster.backend."+k) == v, "%s = %d want %d", k, textCounter(text, "cluster.backend."+k), v)
	}
	must(t, textCounter(text, "cluster.backend.upstream_rq_503") == -1, "retried 503s charged as final: %d", textCounter(text, "cluster.backend.upstream_rq_503"))
	js := jsonStats(t, p)
	must(t, js["cluster.backend.upstream_rq_retry"] == float64(2), "json upstream_rq_retry %v", js["cluster.backend.upstream_rq_retry"])
	prom := promStats(t, p.AdminURL()+"/stats/prometheus")
	must(t, prom[`envoy_cluster_upstream_rq_retry{envoy_cluster_name="backend"}`] == 2, "prometheus upstream_rq_retry")
	must(t, prom[`envoy_cluster_retry_upstream_rq{envoy_response_code="503",envoy_cluster_name="backend"}`] == 2, "prometheus retry.upstream_rq_503")
	log := accessLog(t, p, &alog)
	must(t, len(log) == 1 && log[0].ResponseFlags == "-" && log[0].UpstreamRequestAttemptCount == 3 && log[0].ResponseCodeDetails == "via_upstream",
		"access log %+v", log)
}

// Every attempt 503: num_retries 2 -> 3 attempts, then the last upstream
// response is forwarded with URX.
func TestRetryLimitExceededForwardsLastResponse(t *testing.T) {
	up := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		fmt.Fprintf(w, "attempt %d", n)
	})
	var alog syncBuf
	p := startProxy(t, Config{Upstream: up.URL(), AccessLog: &alog, Retry: fastRetry("gateway-error", 2), IncludeAttemptCount: true})
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 503 && r.body == "attempt 3", "reply %d %q", r.code, r.body)
	must(t, r.header.Get("X-Envoy-Attempt-Count") == "", "attempt count in response without include_attempt_count_in_response")
	text := textStats(t, p)
	for k, v := range map[string]int64{"upstream_rq_retry": 2, "upstream_rq_retry_limit_exceeded": 1, "upstream_rq_retry_success": 0,
		"upstream_rq_503": 1, "retry.upstream_rq_503": 2, "upstream_rq_total": 3} {
		must(t, textCounter(text, "cluster.backend."+k) == v, "%s = %d want %d", k, textCounter(text, "cluster.backend."+k), v)
	}
	log := accessLog(t, p, &alog)
	must(t, len(log) == 1 && log[0].ResponseFlags == "URX" && log[0].ResponseCode == 503 && log[0].UpstreamRequestAttemptCount == 3, "log %+v", log)
}

// A policy without num_retries retries once (Envoy's default).
func TestRetryDefaultOneRetry(t *testing.T) {
	up := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	p := startProxy(t, Config{Upstream: up.URL(), Retry: &RetryPolicy{RetryOn: "5xx", RetryBackOff: &RetryBackOff{BaseInterval: Duration(time.Millisecond)}}})
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 500 && up.n.Load() == 2, "reply %d after %d attempts, want 500 after 2", r.code, up.n.Load())
}

// Which responses each retry_on retries.
func TestRetryOnConditions(t *testing.T) {
	for _, c := range []struct {
		on       string
		codes    []int
		code     int
		limited  bool
		attempts int64
	}{
		{"5xx", nil, 500, false, 2},
		{"5xx", nil, 404, false, 1},
		{"gateway-error", nil, 500, false, 1},
		{"gateway-error", nil, 502, false, 2},
		{"gateway-error", nil, 504, false, 2},
		{"retriable-4xx", nil, 409, false, 2},
		{"retriable-4xx", nil, 429, false, 1},
		{"retriable-status-codes", []int{418}, 418, false, 2},
		{"retriable-status-codes", []int{418}, 419, false, 1},
		{"connect-failure", nil, 503, false, 1},
		{"reset", nil, 503, false, 1},
		// x-envoy-ratelimited: only envoy-ratelimited retries it, whatever the status.
		{"5xx", nil, 503, true, 1},
		{"retriable-status-codes", []int{429}, 429, true, 1},
		{"envoy-ratelimited", nil, 429, true, 2},
	} {
		up := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
			if c.limited {
				w.Header().Set("X-Envoy-Ratelimited", "true")
			}
			w.WriteHeader(c.code)
		})
		pol := fastRetry(c.on, 1)
		pol.RetriableStatusCodes = c.codes
		p := startProxy(t, Config{Upstream: up.URL(), Retry: pol})
		r := do(t, "GET", p.URL()+"/x", nil)
		must(t, r.code == c.code && up.n.Load() == c.attempts, "retry_on %s codes %v on %d (ratelimited %v): %d after %d attempts, want %d",
			c.on, c.codes, c.code, c.limited, r.code, up.n.Load(), c.attempts)
	}
}

// The upstream resets after reading the request: retry_on reset retries;
// when the retries run out the client gets Envoy's 503 with "retried and
// the latest reset reason: connection termination", flags URX,UC.
func TestRetryOnResetThenLimit(t *testing.T) {
	up := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) { resetConn(w) })
	var alog syncBuf
	p := startProxy(t, Config{Upstream: up.URL(), AccessLog: &alog, Retry: fastRetry("reset", 1)})
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 503 && r.body == "upstream connect error or disconnect/reset before headers. retried and the latest reset reason: connection termination",
		"reply %d %q", r.code, r.body)
	must(t, up.n.Load() == 2, "attempts %d", up.n.Load())
	log := accessLog(t, p, &alog)
	must(t, len(log) == 1 && log[0].ResponseFlags == "URX,UC" && log[0].ResponseCodeDetails == "upstream_reset_before_response_started{connection_termination}",
		"log %+v", log)
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.upstream_rq_503") == 1 && textCounter(text, "cluster.backend.upstream_rq_retry_limit_exceeded") == 1, "stats %v", text)
}

// connect-failure retries a refused connection (UF) and gives up with
// URX,UF and the transport failure reason.
func TestRetryConnectFailure(t *testing.T) {
	dead := deadAddr(t)
	var alog syncBuf
	p := startProxy(t, Config{Upstream: "http://" + dead, AccessLog: &alog, Retry: fastRetry("connect-failure", 2)})
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 503 && strings.HasPrefix(r.body, "upstream connect error or disconnect/reset before headers. retried and the latest reset reason: remote connection failure, transport failure reason: delayed connect error: 111"),
		"reply %d %q", r.code, r.body)
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.upstream_cx_connect_fail") == 3 && textCounter(text, "cluster.backend.upstream_rq_retry") == 2 &&
		textCounter(text, "cluster.backend.upstream_rq_total") == 0, "stats %v", text)
	log := accessLog(t, p, &alog)
	must(t, len(log) == 1 && log[0].ResponseFlags == "URX,UF" && log[0].UpstreamHost == dead &&
		log[0].ResponseCodeDetails == "upstream_reset_before_response_started{remote_connection_failure|delayed_connect_error:_111}", "log %+v", log)
}

// max_retries 0: the breaker refuses every retry: upstream_rq_retry_overflow,
// flag UO without x-envoy-overloaded, the upstream response forwarded.
func TestRetryOverflow(t *testing.T) {
	up := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	var alog syncBuf
	p := startProxy(t, Config{Upstream: up.URL(), AccessLog: &alog, Retry: fastRetry("5xx", 3), CircuitBreakers: &CircuitBreakers{MaxRetries: u32(0)}})
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 503 && r.header.Get("X-Envoy-Overloaded") == "" && up.n.Load() == 1, "reply %d overloaded %q attempts %d", r.code, r.header.Get("X-Envoy-Overloaded"), up.n.Load())
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.upstream_rq_retry_overflow") == 1 && textCounter(text, "cluster.backend.upstream_rq_retry") == 0 &&
		textCounter(text, "cluster.backend.circuit_breakers.default.rq_retry_open") == 1, "stats %v", text)
	log := accessLog(t, p, &alog)
	must(t, len(log) == 1 && log[0].ResponseFlags == "UO", "log %+v", log)
}

// A per-try timeout is retried under 5xx; the final one answers 504 UT
// "upstream request timeout" with details upstream_per_try_timeout.
func TestPerTryTimeout(t *testing.T) {
	up := hanging(t)
	var alog syncBuf
	pol := fastRetry("5xx", 1)
	pol.PerTryTimeout = Duration(200 * time.Millisecond)
	p := startProxy(t, Config{Upstream: up.URL(), AccessLog: &alog, Retry: pol, IncludeAttemptCount: true})
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 504 && r.body == "upstream request timeout", "reply %d %q", r.code, r.body)
	// The proxy sent both attempts; the upstream's handler may still be
	// starting on the second.
	waitFor(t, "the second attempt upstream", func() bool { return len(up.seen()) >= 2 })
	must(t, slices.Equal(up.seen(), []string{"1", "2"}), "attempts %v", up.seen())
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.upstream_rq_per_try_timeout") == 2 && textCounter(text, "cluster.backend.upstream_rq_504") == 1 &&
		textCounter(text, "cluster.backend.upstream_rq_timeout") == 0, "stats %v", text)
	log := accessLog(t, p, &alog)
	must(t, len(log) == 1 && log[0].ResponseFlags == "URX,UT" && log[0].ResponseCodeDetails == "upstream_per_try_timeout", "log %+v", log)
}

// A per-try timeout at or above the route timeout is ignored (finalTimeout).
func TestPerTryTimeoutIgnoredAboveRouteTimeout(t *testing.T) {
	up := hanging(t)
	pol := fastRetry("5xx", 3)
	pol.PerTryTimeout = Duration(time.Second)
	var alog syncBuf
	p := startProxy(t, Config{Upstream: up.URL(), AccessLog: &alog, Retry: pol, UpstreamTimeout: 300 * time.Millisecond})
	r := do(t, "GET", p.URL()+"/x", nil)
	waitFor(t, "the attempt upstream", func() bool { return up.n.Load() >= 1 })
	must(t, r.code == 504 && up.n.Load() == 1, "reply %d after %d attempts", r.code, up.n.Load())
	log := accessLog(t, p, &alog)
	must(t, len(log) == 1 && log[0].ResponseFlags == "UT" && log[0].ResponseCodeDetails == "response_timeout", "log %+v", log)
	must(t, textCounter(textStats(t, p), "cluster.backend.upstream_rq_timeout") == 1, "upstream_rq_timeout")
}

// The back-off of retry n is a whole number of ms in [0, B·2^(n-1)), the
// interval capped at 10·B: 0-24, 0-49, 0-99, 0-199, then 0-249 ms for the
// default 25 ms (JitteredExponentialBackOffStrategy). The draws of a seeded
// source cover each range.
func TestBackoffDistribution(t *testing.T) {
	pol, err := compileRetry(&RetryPolicy{RetryOn: "5xx"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, pol.baseMs == 25 && pol.maxMs == 250 && pol.numRetries == 1, "defaults %+v", pol)
	bounds := []uint64{25, 50, 100, 200, 250, 250, 250}
	r, _ := newRand(42)
	maxSeen := make([]uint64, len(bounds))
	for range 4000 {
		b := newBackoff(pol.baseMs, pol.maxMs)
		for i, bound := range bounds {
			ms := b.nextMs(r.Uint64())
			if ms >= bound {
				t.Fatalf("retry %d waited %d ms, want < %d", i+1, ms, bound)
			}
			maxSeen[i] = max(maxSeen[i], ms)
		}
	}
	for i, bound := range bounds {
		must(t, maxSeen[i] >= bound*9/10, "retry %d: largest back-off %d ms of bound %d: the range is not covered", i+1, maxSeen[i], bound)
	}
	// A configured base and max: base 10 ms, max 30 ms -> 0-9, 0-19, 0-29, 0-29.
	pol, _ = compileRetry(&RetryPolicy{RetryOn: "5xx", RetryBackOff: &RetryBackOff{BaseInterval: Duration(10 * time.Millisecond), MaxInterval: Duration(30 * time.Millisecond)}})
	b := newBackoff(pol.baseMs, pol.maxMs)
	var got []uint64
	for range 4 {
		got = append(got, b.nextMs(^uint64(0)))
	}
	// random() % interval with the largest random: interval-1 each time.
	must(t, slices.Equal(got, []uint64{(^uint64(0)) % 10, (^uint64(0)) % 20, (^uint64(0)) % 30, (^uint64(0)) % 30}), "intervals %v", got)
}

func TestRetryPolicyValidation(t *testing.T) {
	for _, pol := range []RetryPolicy{
		{RetryOn: ""},
		{RetryOn: "5xx,bogus"},
		{RetryOn: "retriable-status-codes", RetriableStatusCodes: []int{99}},
		{RetryOn: "5xx", RetryBackOff: &RetryBackOff{BaseInterval: 0}},
		{RetryOn: "5xx", RetryBackOff: &RetryBackOff{BaseInterval: Duration(2 * time.Second), MaxInterval: Duration(time.Second)}},
	} {
		if _, err := Start(t.Context(), Config{Upstream: "http://127.0.0.1:1", Retry: &pol}); err == nil || !strings.Contains(err.Error(), "retry policy") {
			t.Errorf("%+v: error %v", pol, err)
		}
	}
}
