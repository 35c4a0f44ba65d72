package proxy

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// fire sends n concurrent GETs with ids prefix-<i> and returns the results.
func fire(t *testing.T, url string, n int, prefix string) []result {
	t.Helper()
	res := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = do(t, "GET", fmt.Sprintf("%s/r/%d", url, i), map[string]string{"X-Rlbench-Id": fmt.Sprintf("%s-%d", prefix, i)})
		}()
	}
	wg.Wait()
	return res
}

func TestLocalRateLimitConcurrent(t *testing.T) {
	be := startBackend(t)
	var alog syncBuf
	p := startProxy(t, Config{Name: "proxy-a", Upstream: be.URL(), AccessLog: &alog, Local: &LocalRateLimit{
		MaxTokens: 5, TokensPerFill: 5, FillInterval: Duration(time.Hour), FilterEnabled: pct(100), FilterEnforced: pct(100)}})

	res := fire(t, p.URL(), 20, "c")
	codes := map[int]int{}
	for _, r := range res {
		codes[r.code]++
		if r.code == 429 {
			must(t, r.body == "local_rate_limited", "429 body %q", r.body)
			must(t, r.header.Get("Content-Type") == "text/plain", "429 content-type %q", r.header.Get("Content-Type"))
			must(t, r.header.Get("Content-Length") == "18", "429 content-length %q", r.header.Get("Content-Length"))
			must(t, r.header.Get("X-Envoy-Ratelimited") == "", "local 429 carries x-envoy-ratelimited")
		} else if r.code == 200 {
			must(t, strings.HasPrefix(r.body, `{"id":"c-`), "200 body %q", r.body)
		}
	}
	if codes[200] != 5 || codes[429] != 15 || len(codes) != 2 {
		t.Fatalf("codes %v, want 5x200 15x429", codes)
	}
	if be.Count() != 5 {
		t.Errorf("backend received %d, want 5", be.Count())
	}

	want := map[string]int64{"enabled": 20, "ok": 5, "rate_limited": 15, "enforced": 15}
	text := textStats(t, p)
	js := jsonStats(t, p)
	prom := promStats(t, p.AdminURL()+"/stats/prometheus")
	prom2 := promStats(t, p.AdminURL()+"/stats?format=prometheus")
	for k, v := range want {
		name := "http_local_rate_limiter.http_local_rate_limit." + k
		must(t, textCounter(text, name) == v, "text %s = %d want %d", name, textCounter(text, name), v)
		must(t, js[name] == float64(v), "json %s = %v want %d", name, js[name], v)
		pn := fmt.Sprintf(`envoy_http_local_rate_limit_%s{envoy_local_http_ratelimit_prefix="http_local_rate_limiter"}`, k)
		must(t, prom[pn] == float64(v), "prometheus %s = %v want %d", pn, prom[pn], v)
		must(t, prom2[pn] == float64(v), "?format=prometheus %s = %v want %d", pn, prom2[pn], v)
	}
	// Cluster stats: 5 went upstream; local 429s are not charged to the cluster.
	must(t, textCounter(text, "cluster.backend.upstream_rq_200") == 5, "upstream_rq_200 %d", textCounter(text, "cluster.backend.upstream_rq_200"))
	must(t, textCounter(text, "cluster.backend.upstream_rq_2xx") == 5, "upstream_rq_2xx")
	must(t, textCounter(text, "cluster.backend.upstream_rq_completed") == 5, "upstream_rq_completed")
	must(t, textCounter(text, "cluster.backend.upstream_rq_total") == 5, "upstream_rq_total")
	must(t, textCounter(text, "cluster.backend.upstream_rq_429") == -1, "local 429 charged to cluster")
	must(t, textCounter(text, "http.ingress_http.downstream_rq_4xx") == 15, "downstream_rq_4xx %d", textCounter(text, "http.ingress_http.downstream_rq_4xx"))
	must(t, textCounter(text, "http.ingress_http.downstream_rq_total") == 20, "downstream_rq_total")
	must(t, prom[`envoy_cluster_upstream_rq{envoy_response_code="200",envoy_cluster_name="backend"}`] == 5, "prom upstream_rq 200: %v", prom)
	must(t, prom[`envoy_cluster_upstream_rq_xx{envoy_response_code_class="2",envoy_cluster_name="backend"}`] == 5, "prom upstream_rq_xx")
	must(t, prom[`envoy_http_downstream_rq_xx{envoy_response_code_class="4",envoy_http_conn_manager_prefix="ingress_http"}`] == 15, "prom downstream 4xx")
	must(t, text["server.version_text"] == `"`+Version+`"`, "version_text %q", text["server.version_text"])

	// Access log: 20 lines, 15 RL/local_rate_limited, 5 via_upstream with the upstream host.
	n, rl := 0, 0
	must(t, p.FlushAccessLog() == nil, "flush")
	err := evidence.ReadLines(strings.NewReader(string(alog.Bytes())), "access log", func(_ int, e *AccessLogEntry) error {
		n++
		switch e.ResponseCode {
		case 429:
			rl++
			must(t, e.ResponseFlags == "RL" && e.ResponseCodeDetails == "local_rate_limited" && e.UpstreamHost == "", "429 log %+v", e)
		case 200:
			must(t, e.ResponseFlags == "-" && e.ResponseCodeDetails == "via_upstream" && e.UpstreamHost == be.Addr(), "200 log %+v", e)
		}
		must(t, strings.HasPrefix(e.RlbenchID, "c-") && e.Proxy == "proxy-a" && e.RequestID != "", "log ids %+v", e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	must(t, n == 20 && rl == 15, "access log %d lines %d RL", n, rl)
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestLocalRefillInjectedClock(t *testing.T) {
	be := startBackend(t)
	clk := &fakeClock{t: time.Unix(1796031180, 0)}
	p := startProxy(t, Config{Upstream: be.URL(), Now: clk.Now, Local: &LocalRateLimit{StatPrefix: "lrl",
		MaxTokens: 2, TokensPerFill: 1, FillInterval: Duration(10 * time.Second), FilterEnabled: pct(100), FilterEnforced: pct(100),
		EnableXRateLimitHeaders: true}})
	seq := func(label string, want ...int) {
		t.Helper()
		for i, w := range want {
			r := do(t, "GET", p.URL()+"/x", nil)
			if r.code != w {
				t.Fatalf("%s request %d: %d want %d", label, i, r.code, w)
			}
		}
	}
	// Starts full (2), no refill before the first interval ends.
	seq("full", 200, 200, 429)
	clk.Add(9999 * time.Millisecond)
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 429, "before first fill: %d", r.code)
	// x-ratelimit-* on the 429: limit = max_tokens, 0 left, reset < 1 s -> 0.
	must(t, r.header.Get("X-Ratelimit-Limit") == "2" && r.header.Get("X-Ratelimit-Remaining") == "0" && r.header.Get("X-Ratelimit-Reset") == "0",
		"429 x-ratelimit headers %v", r.header)
	clk.Add(time.Millisecond) // t = 10 s: one fill of 1 token
	r = do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 200 && r.header.Get("X-Ratelimit-Remaining") == "0" && r.header.Get("X-Ratelimit-Reset") == "10", "after fill: %d %v", r.code, r.header)
	seq("drained", 429)
	clk.Add(time.Hour) // 360 fills, capped at max_tokens 2
	seq("capped", 200, 200, 429)

	text := textStats(t, p)
	for name, want := range map[string]int64{"enabled": 9, "ok": 5, "rate_limited": 4, "enforced": 4} {
		must(t, textCounter(text, "lrl.http_local_rate_limit."+name) == want, "%s = %d want %d", name, textCounter(text, "lrl.http_local_rate_limit."+name), want)
	}
	must(t, be.Count() == 5, "backend %d", be.Count())
}

func TestLocalRefillRealClockViaStats(t *testing.T) {
	be := startBackend(t)
	p := startProxy(t, Config{Upstream: be.URL(), Local: &LocalRateLimit{
		MaxTokens: 1, TokensPerFill: 1, FillInterval: MinFillInterval, FilterEnabled: pct(100), FilterEnforced: pct(100)}})
	// Poll until a refill has admitted a second request; bounded by a deadline.
	deadline := time.Now().Add(5 * time.Second)
	for textCounter(textStats(t, p), "http_local_rate_limiter.http_local_rate_limit.ok") < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no refill within 5 s")
		}
		do(t, "GET", p.URL()+"/x", nil)
	}
	text := textStats(t, p)
	ok := textCounter(text, "http_local_rate_limiter.http_local_rate_limit.ok")
	en := textCounter(text, "http_local_rate_limiter.http_local_rate_limit.enabled")
	rl := textCounter(text, "http_local_rate_limiter.http_local_rate_limit.rate_limited")
	must(t, en == ok+rl && ok == int64(be.Count()), "enabled %d ok %d rate_limited %d receipts %d", en, ok, rl, be.Count())
}

func TestLocalFilterEnabledAbsentIsNoop(t *testing.T) {
	be := startBackend(t)
	p := startProxy(t, Config{Upstream: be.URL(), Local: &LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Hour), FilterEnforced: pct(100)}})
	for _, r := range fire(t, p.URL(), 20, "n") {
		must(t, r.code == 200, "no-op filter returned %d", r.code)
	}
	text := textStats(t, p)
	for _, k := range []string{"enabled", "ok", "rate_limited", "enforced"} {
		// Envoy creates the counters with the filter config; none moves.
		must(t, textCounter(text, "http_local_rate_limiter.http_local_rate_limit."+k) == 0, "%s = %d", k, textCounter(text, "http_local_rate_limiter.http_local_rate_limit."+k))
	}
	used := get(t, p.AdminURL()+"/stats?usedonly&filter=http_local_rate_limit")
	must(t, used == "", "usedonly shows untouched local counters: %q", used)
	must(t, be.Count() == 20, "backend %d", be.Count())
}

func TestLocalShadowMode(t *testing.T) {
	be := startBackend(t)
	// filter_enforced 0% (explicit) and absent behave the same.
	for _, enf := range []*float64{pct(0), nil} {
		p := startProxy(t, Config{Upstream: be.URL(), Local: &LocalRateLimit{MaxTokens: 5, TokensPerFill: 5, FillInterval: Duration(time.Hour),
			FilterEnabled: pct(100), FilterEnforced: enf, EnableXRateLimitHeaders: true}})
		for _, r := range fire(t, p.URL(), 20, "s") {
			must(t, r.code == 200, "shadow returned %d", r.code)
		}
		text := textStats(t, p)
		for name, want := range map[string]int64{"enabled": 20, "ok": 5, "rate_limited": 15, "enforced": 0} {
			must(t, textCounter(text, "http_local_rate_limiter.http_local_rate_limit."+name) == want, "shadow %s = %d want %d", name, textCounter(text, "http_local_rate_limiter.http_local_rate_limit."+name), want)
		}
	}
	must(t, be.Count() == 40, "backend %d", be.Count())
}

func TestLocalConfigErrors(t *testing.T) {
	for _, c := range []struct {
		l    LocalRateLimit
		want string
	}{
		{LocalRateLimit{FillInterval: Duration(time.Second)}, "max_tokens"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(10 * time.Millisecond)}, "fill_interval"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), FilterEnabled: pct(101)}, "filter_enabled"},
	} {
		_, err := Start(t.Context(), Config{Name: "px", Upstream: "http://127.0.0.1:1", Local: &c.l})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "px") {
			t.Errorf("%+v: error %v, want mention of %s", c.l, err, c.want)
		}
	}
	if _, err := Start(t.Context(), Config{Upstream: "ftp://x"}); err == nil {
		t.Error("ftp upstream accepted")
	}
}
