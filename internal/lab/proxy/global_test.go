package proxy

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
)

// fakeRLS answers by the descriptor entry "mode": ok, over, error, slow
// (blocks until the caller's deadline cancels the call).
type fakeRLS struct {
	rlsv3.UnimplementedRateLimitServiceServer
	calls atomic.Int64
	mu    sync.Mutex
	last  *rlsv3.RateLimitRequest
}

func (f *fakeRLS) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	f.calls.Add(1)
	f.mu.Lock()
	f.last = req
	f.mu.Unlock()
	mode := ""
	for _, d := range req.GetDescriptors() {
		for _, e := range d.GetEntries() {
			if e.GetKey() == "mode" {
				mode = e.GetValue()
			}
		}
	}
	st := &rlsv3.RateLimitResponse_DescriptorStatus{
		CurrentLimit:       &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: 5, Unit: rlsv3.RateLimitResponse_RateLimit_HOUR},
		LimitRemaining:     3,
		DurationUntilReset: durationpb.New(100 * time.Second),
	}
	switch mode {
	case "ok":
		st.Code = rlsv3.RateLimitResponse_OK
		return &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{st}}, nil
	case "over":
		st.Code, st.LimitRemaining = rlsv3.RateLimitResponse_OVER_LIMIT, 0
		return &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{st},
			ResponseHeadersToAdd: []*corev3.HeaderValue{{Key: "x-from-rls", Value: "yes"}}}, nil
	case "slow":
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	default:
		return nil, status.Error(codes.Unavailable, "fake rls: redis down")
	}
}

func (f *fakeRLS) lastRequest() *rlsv3.RateLimitRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func startFakeRLS(t *testing.T) (*fakeRLS, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	f := &fakeRLS{}
	rlsv3.RegisterRateLimitServiceServer(srv, f)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return f, "grpc://" + ln.Addr().String()
}

// globalCfg is the outcome tests' global rate limit with the RLS call
// timeout given: a minute for the calls that must be answered (a timeout
// would turn them into errors, on a loaded host too), a millisecond for
// "slow", which the fake RLS answers only when the caller gives up.
func globalCfg(rls string, deny bool, timeout time.Duration) *GlobalRateLimit {
	return &GlobalRateLimit{GlobalFilter: GlobalFilter{Domain: "inventory", Timeout: Duration(timeout), FailureModeDeny: deny, EnableXRateLimitHeaders: true}, Actions: []descriptor.RateLimitAction{
		{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "tenant", DescriptorValue: "lab"}},
		{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-mode", DescriptorKey: "mode"}},
	},
		RLS: rls,
	}
}

func TestGlobalRateLimitOutcomes(t *testing.T) {
	be := startBackend(t)
	rls, addr := startFakeRLS(t)
	_, slowAddr := startFakeRLS(t)
	var alog syncBuf
	// The RLS answers ok, over and error at once; slow, never: a timeout
	// (counted as an error). The proxies that must hear an answer wait a
	// minute for it (a timeout would make an error of it, on a loaded host
	// too), those that must time out a millisecond, on an RLS of their own:
	// whether a call abandoned so soon reaches the RLS at all, and when, is
	// the host's affair, so it is not counted, and it cannot be counted
	// against another step.
	allow := startProxy(t, Config{Name: "allow", Upstream: be.URL(), Global: globalCfg(addr, false, time.Minute), AccessLog: &alog})
	deny := startProxy(t, Config{Name: "deny", Upstream: be.URL(), Global: globalCfg(addr, true, time.Minute), AccessLog: &alog})
	allowSlow := startProxy(t, Config{Name: "allow-slow", Upstream: be.URL(), Global: globalCfg(slowAddr, false, time.Millisecond), AccessLog: &alog})
	denySlow := startProxy(t, Config{Name: "deny-slow", Upstream: be.URL(), Global: globalCfg(slowAddr, true, time.Millisecond), AccessLog: &alog})

	type step struct {
		p        *Proxy
		mode     string // "" = no x-mode header
		code     int
		rlsCalls int64 // calls the (answering) RLS gets; -1: not counted
	}
	steps := []step{
		{allow, "ok", 200, 1}, {allow, "over", 429, 1}, {allow, "over", 429, 1}, {allow, "error", 200, 1}, {allowSlow, "slow", 200, -1}, {allow, "", 200, 0},
		{deny, "ok", 200, 1}, {deny, "over", 429, 1}, {deny, "error", 500, 1}, {denySlow, "slow", 500, -1}, {deny, "", 200, 0},
	}
	for i, s := range steps {
		before := rls.calls.Load()
		hdr := map[string]string{"X-Rlbench-Id": s.p.Name() + "-" + s.mode}
		if s.mode != "" {
			hdr["X-Mode"] = s.mode
		}
		r := do(t, "GET", s.p.URL()+"/g", hdr)
		if r.code != s.code {
			t.Fatalf("step %d (%s %q): %d %q, want %d", i, s.p.Name(), s.mode, r.code, r.body, s.code)
		}
		if got := rls.calls.Load() - before; s.rlsCalls >= 0 && got != s.rlsCalls {
			t.Errorf("step %d (%s %q): %d RLS calls, want %d", i, s.p.Name(), s.mode, got, s.rlsCalls)
		}
		if s.rlsCalls == 1 {
			// The call carried the domain and both descriptor entries.
			last := rls.lastRequest()
			if last.GetDomain() != "inventory" || len(last.GetDescriptors()) != 1 {
				t.Fatalf("step %d: RLS request %v", i, last)
			}
			if e := last.GetDescriptors()[0].GetEntries(); len(e) != 2 || e[0].GetKey() != "tenant" || e[0].GetValue() != "lab" || e[1].GetKey() != "mode" || e[1].GetValue() != s.mode {
				t.Errorf("step %d: descriptor entries %v", i, e)
			}
		}
		switch {
		case s.code == 429:
			must(t, r.header.Get("X-Envoy-Ratelimited") == "true" && r.body == "" && r.header.Get("Content-Length") == "0", "429: %v %q", r.header, r.body)
			must(t, r.header.Get("X-From-Rls") == "yes", "429 lacks RLS response_headers_to_add: %v", r.header)
			must(t, r.header.Get("X-Ratelimit-Limit") == "5, 5;w=3600" && r.header.Get("X-Ratelimit-Remaining") == "0" && r.header.Get("X-Ratelimit-Reset") == "100", "429 x-ratelimit: %v", r.header)
		case s.code == 500:
			must(t, r.body == "" && r.header.Get("X-Envoy-Ratelimited") == "", "500: %v %q", r.header, r.body)
		case s.mode == "ok":
			must(t, r.header.Get("X-Ratelimit-Limit") == "5, 5;w=3600" && r.header.Get("X-Ratelimit-Remaining") == "3", "200 x-ratelimit: %v", r.header)
		}
	}

	check := func(p *Proxy, want map[string]int64) {
		t.Helper()
		text := textStats(t, p)
		prom := promStats(t, p.AdminURL()+"/stats/prometheus")
		for k, v := range want {
			got := textCounter(text, "cluster.backend."+k)
			if v == 0 {
				must(t, got <= 0, "%s %s = %d want absent/0", p.Name(), k, got)
				continue
			}
			must(t, got == v, "%s %s = %d want %d", p.Name(), k, got, v)
			if strings.HasPrefix(k, "ratelimit.") {
				pn := "envoy_cluster_ratelimit_" + strings.TrimPrefix(k, "ratelimit.") + `{envoy_cluster_name="backend"}`
				must(t, prom[pn] == float64(v), "%s prometheus %s = %v want %d", p.Name(), pn, prom[pn], v)
			}
		}
	}
	check(allow, map[string]int64{"ratelimit.ok": 1, "ratelimit.over_limit": 2, "ratelimit.error": 1, "ratelimit.failure_mode_allowed": 1,
		"upstream_rq_429": 2, "upstream_rq_4xx": 2, "internal.upstream_rq_429": 2, "upstream_rq_200": 3, "upstream_rq_completed": 5, "upstream_rq_total": 3})
	check(allowSlow, map[string]int64{"ratelimit.ok": 0, "ratelimit.over_limit": 0, "ratelimit.error": 1, "ratelimit.failure_mode_allowed": 1,
		"upstream_rq_429": 0, "upstream_rq_200": 1, "upstream_rq_completed": 1, "upstream_rq_total": 1})
	check(deny, map[string]int64{"ratelimit.ok": 1, "ratelimit.over_limit": 1, "ratelimit.error": 1, "ratelimit.failure_mode_allowed": 0,
		"upstream_rq_429": 1, "upstream_rq_500": 0, "upstream_rq_200": 2, "upstream_rq_completed": 3, "upstream_rq_total": 2})
	check(denySlow, map[string]int64{"ratelimit.ok": 0, "ratelimit.over_limit": 0, "ratelimit.error": 1, "ratelimit.failure_mode_allowed": 0,
		"upstream_rq_500": 0, "upstream_rq_200": 0, "upstream_rq_completed": 0, "upstream_rq_total": 0})
	must(t, be.Count() == 6, "backend received %d, want 6", be.Count())

	flags := map[string]int{}
	for _, p := range []*Proxy{allow, deny, allowSlow, denySlow} {
		must(t, p.FlushAccessLog() == nil, "flush %s", p.Name())
	}
	err := evidence.ReadLines(strings.NewReader(string(alog.Bytes())), "access log", func(_ int, e *AccessLogEntry) error {
		flags[e.ResponseFlags+"/"+e.ResponseCodeDetails]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	must(t, flags["RL/request_rate_limited"] == 3 && flags["RLSE/rate_limiter_error"] == 2 && flags["-/via_upstream"] == 6, "access log flags %v", flags)
}

func TestGlobalDefaultsStatPrefixAndUnreachableRLS(t *testing.T) {
	be := startBackend(t)
	// A port that was free a moment ago: nothing serves gRPC there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	g := &GlobalRateLimit{GlobalFilter: GlobalFilter{Domain: "d", FailureModeDeny: true, StatusOnError: 503}, RLS: dead, StatPrefix: "edge",
		Actions: []descriptor.RateLimitAction{{RemoteAddress: &descriptor.RemoteAddressAction{}}}}
	p := startProxy(t, Config{Upstream: be.URL(), Global: g})
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 503 && r.body == "", "unreachable RLS with deny/503: %d %q", r.code, r.body)
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.ratelimit.edge.error") == 1, "stat_prefix error counter: %v", text)
	prom := promStats(t, p.AdminURL()+"/stats/prometheus")
	must(t, prom[`envoy_cluster_ratelimit_edge_error{envoy_cluster_name="backend"}`] == 1, "prometheus stat_prefix name")
	must(t, be.Count() == 0, "backend %d", be.Count())
	var cfg struct {
		Ratelimit GlobalRateLimit `json:"ratelimit"`
	}
	if err := jsonUnmarshal(get(t, p.AdminURL()+"/config_dump"), &cfg); err != nil {
		t.Fatal(err)
	}
	must(t, time.Duration(cfg.Ratelimit.Timeout) == DefaultRLSTimeout, "effective timeout %v", cfg.Ratelimit.Timeout)
}

func TestGlobalDescriptors(t *testing.T) {
	g := &GlobalRateLimit{GlobalFilter: GlobalFilter{Domain: "d"}, RLS: "x", Actions: []descriptor.RateLimitAction{
		{GenericKey: &descriptor.GenericKeyAction{DescriptorValue: "v"}},
		{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-opt", DescriptorKey: "opt", SkipIfAbsent: true}},
		{RemoteAddress: &descriptor.RemoteAddressAction{}},
	}}
	if err := g.validate(); err != nil {
		t.Fatal(err)
	}
	entries := func(g *GlobalRateLimit, remote string, hdr map[string]string) []string {
		req := httptestRequest(remote, hdr)
		var out []string
		es, err := g.compile()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range globalDescriptors(es, req.Header, remoteIPOf(req.RemoteAddr)) {
			got := ""
			for _, e := range d.GetEntries() {
				got += e.GetKey() + "=" + e.GetValue() + ";"
			}
			out = append(out, got)
		}
		return out
	}
	got := entries(g, "10.1.2.3:5555", nil)
	must(t, len(got) == 1 && got[0] == "generic_key=v;remote_address=10.1.2.3;", "entries %q", got)
	got = entries(g, "10.1.2.3:5555", map[string]string{"X-Opt": "o"})
	must(t, len(got) == 1 && got[0] == "generic_key=v;opt=o;remote_address=10.1.2.3;", "with header %q", got)

	only := &GlobalRateLimit{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-a", DescriptorKey: "a"}}}}
	must(t, len(entries(only, "1.1.1.1:1", nil)) == 0, "missing header produced a descriptor")
	// Every action skipped: Envoy (router_ratelimit.cc populateDescriptor)
	// still emits the descriptor, with no entries.
	skipped := &GlobalRateLimit{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-a", DescriptorKey: "a", SkipIfAbsent: true}}}}
	got = entries(skipped, "1.1.1.1:1", nil)
	must(t, len(got) == 1 && got[0] == "", "all-skipped: %q", got)

	bad := []GlobalRateLimit{
		{RLS: "x", Actions: g.Actions},
		{GlobalFilter: GlobalFilter{Domain: "d"}, Actions: g.Actions},
		{GlobalFilter: GlobalFilter{Domain: "d"}, RLS: "x"},
		{GlobalFilter: GlobalFilter{Domain: "d"}, RLS: "x", Actions: []descriptor.RateLimitAction{{}}},
		{GlobalFilter: GlobalFilter{Domain: "d"}, RLS: "x", Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{}}}},
	}
	for i, b := range bad {
		if err := b.validate(); err == nil {
			t.Errorf("bad[%d] accepted", i)
		}
	}
}

func TestPercentHitFraction(t *testing.T) {
	r, _ := newRand(7)
	hits := 0
	for range 20000 {
		if r.hit(pct(25)) {
			hits++
		}
	}
	// 25% of 20000 = 5000, sd ~61: a 5-sd window.
	must(t, hits > 4690 && hits < 5310, "25%% drew %d of 20000", hits)
	must(t, !r.hit(nil) && !r.hit(pct(0)) && r.hit(pct(100)), "edge percentages")
}

// Several rate_limits entries go to the RLS as several descriptors of one
// call; an entry whose action cannot produce its entry is left out, and a
// request with no descriptor makes no call.
func TestGlobalSeveralEntriesOneCall(t *testing.T) {
	be := startBackend(t)
	f, addr := startFakeRLS(t)
	p := startProxy(t, Config{Upstream: be.URL(), Global: &GlobalRateLimit{GlobalFilter: GlobalFilter{Domain: "d", Timeout: Duration(time.Minute), RateLimits: []descriptor.RateLimitEntry{
		{Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "mode", DescriptorValue: "ok"}}, {RemoteAddress: &descriptor.RemoteAddressAction{}}}},
		{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-user", DescriptorKey: "user"}}}},
		{Actions: []descriptor.RateLimitAction{{HeaderValueMatch: &descriptor.HeaderValueMatchAction{DescriptorValue: "gold", Headers: []descriptor.HeaderMatcher{{Name: "x-plan", ExactMatch: ptr("gold")}}}}}},
	}}, RLS: addr}})
	r := do(t, "GET", p.URL()+"/x", map[string]string{"X-User": "alice"})
	must(t, r.code == 200 && f.calls.Load() == 1, "reply %d after %d RLS calls", r.code, f.calls.Load())
	var got []string
	for _, d := range f.lastRequest().GetDescriptors() {
		var es []string
		for _, e := range d.GetEntries() {
			es = append(es, e.GetKey()+"="+e.GetValue())
		}
		got = append(got, strings.Join(es, ","))
	}
	must(t, strings.Join(got, " | ") == "mode=ok,remote_address=127.0.0.1 | user=alice", "descriptors %q", got)
	none := startProxy(t, Config{Upstream: be.URL(), Global: &GlobalRateLimit{GlobalFilter: GlobalFilter{Domain: "d", Timeout: Duration(time.Minute), RateLimits: []descriptor.RateLimitEntry{
		{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-user", DescriptorKey: "user"}}}}}}, RLS: addr}})
	r = do(t, "GET", none.URL()+"/x", nil)
	must(t, r.code == 200 && f.calls.Load() == 1, "no descriptor: %d, %d calls", r.code, f.calls.Load())
	must(t, textCounter(textStats(t, none), "cluster.backend.ratelimit.ok") == 0, "a request without descriptor counted ok")
}
