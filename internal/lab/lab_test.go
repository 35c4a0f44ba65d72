package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/testfix"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
	"github.com/rlbench/rlbench/internal/rlsconfig"
)

type syncBuf = testfix.SyncBuffer

func TestTwoProxiesLocalBuckets(t *testing.T) {
	on := 100.0
	var receipts syncBuf
	l, err := Start(t.Context(), Options{Backend: backend.Options{Receipts: &receipts}, Proxies: ProxiesOptions{Count: 2,
		Config: proxy.Config{Local: &proxy.LocalRateLimit{MaxTokens: 5, TokensPerFill: 5, FillInterval: proxy.Duration(time.Hour), FilterEnabled: &on, FilterEnforced: &on}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	a := l.Addresses()
	js, _ := json.Marshal(a)
	var back Addresses
	if err := json.Unmarshal(js, &back); err != nil || len(back.Proxies) != 2 || back.Proxies[0].Name != "proxy-a" || back.Proxies[1].Name != "proxy-b" {
		t.Fatalf("addresses %s (%v)", js, err)
	}
	for _, p := range a.Proxies {
		if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || !strings.HasPrefix(p.Admin, "http://127.0.0.1:") || p.URL == p.Admin {
			t.Fatalf("proxy address %+v", p)
		}
	}

	// 20 requests, 10 to each proxy, concurrently: 5 tokens per proxy.
	type res struct {
		id   string
		code int
	}
	out := make([]res, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := a.Proxies[i%2].URL
			id := fmt.Sprintf("lab-%02d", i)
			req, _ := http.NewRequest("GET", target+"/item", nil)
			req.Header.Set("X-Rlbench-Id", id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out[i] = res{id, resp.StatusCode}
		}()
	}
	wg.Wait()
	admitted := map[string]bool{}
	perProxy := [2]int{}
	for i, r := range out {
		if r.code == 200 {
			admitted[r.id] = true
			perProxy[i%2]++
		} else if r.code != 429 {
			t.Errorf("%s: %d", r.id, r.code)
		}
	}
	if len(admitted) != 10 || perProxy != [2]int{5, 5} {
		t.Fatalf("admitted %d (per proxy %v), want 10 (5, 5)", len(admitted), perProxy)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// After Close the receipts are flushed: exactly the admitted ids, once each.
	seen := map[string]int{}
	err = evidence.ReadLines(bytes.NewReader(receipts.Bytes()), "receipts", func(_ int, r *evidence.Receipt) error {
		if r.ID == nil {
			return fmt.Errorf("receipt without id: %+v", r)
		}
		seen[*r.ID]++
		if xff := r.Headers["x-forwarded-for"]; xff != "127.0.0.1" {
			return fmt.Errorf("receipt %s x-forwarded-for %q", *r.ID, xff)
		}
		if r.Headers["x-request-id"] == "" {
			return fmt.Errorf("receipt %s without generated x-request-id", *r.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 10 {
		t.Fatalf("%d receipts, want 10", len(seen))
	}
	for id, n := range seen {
		if !admitted[id] || n != 1 {
			t.Errorf("receipt %s: %d times, admitted=%v", id, n, admitted[id])
		}
	}
}

// TestValidate: every misuse is reported before anything starts, naming
// what is wrong.
func TestValidate(t *testing.T) {
	local := &proxy.LocalRateLimit{MaxTokens: 5, FillInterval: proxy.Duration(time.Second)}
	global := &proxy.GlobalRateLimit{GlobalFilter: proxy.GlobalFilter{Domain: "d"}, Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorValue: "v"}}}}
	for _, c := range []struct {
		name string
		opts Options
		want string // "" = valid
	}{
		{"zero value: two bare proxies", Options{}, ""},
		{"26 proxies", Options{Proxies: ProxiesOptions{Count: MaxProxies}}, ""},
		{"27 proxies", Options{Proxies: ProxiesOptions{Count: 27}}, "27 proxies, want 1..26"},
		{"negative count", Options{Proxies: ProxiesOptions{Count: -1}}, "-1 proxies"},
		{"name set", Options{Proxies: ProxiesOptions{Config: proxy.Config{Name: "x"}}}, "Config.Name is chosen by the lab"},
		{"upstream set", Options{Proxies: ProxiesOptions{Config: proxy.Config{Upstream: "http://x"}}}, "Config.Upstream"},
		{"listen set", Options{Proxies: ProxiesOptions{Config: proxy.Config{Listen: "127.0.0.1:8080"}}}, "Config.Listen"},
		{"bad bucket", Options{Proxies: ProxiesOptions{Config: proxy.Config{Local: &proxy.LocalRateLimit{FillInterval: proxy.Duration(time.Second)}}}}, "max_tokens: must be > 0"},
		{"short fill", Options{Proxies: ProxiesOptions{Config: proxy.Config{Local: &proxy.LocalRateLimit{MaxTokens: 1, FillInterval: proxy.Duration(time.Millisecond)}}}}, "fill_interval"},
		{"bad cluster", Options{Proxies: ProxiesOptions{Config: proxy.Config{Cluster: "a.b"}}}, "cluster name"},
		{"local only", Options{Proxies: ProxiesOptions{Config: proxy.Config{Local: local}}}, ""},
		{"global without rls", Options{Proxies: ProxiesOptions{Config: proxy.Config{Global: global}}}, "needs an RLS"},
		{"global with lab rls", Options{Proxies: ProxiesOptions{Config: proxy.Config{Global: global}}, RLS: RLSOptions{Lab: &labrls.Options{}}}, ""},
		{"global with address", Options{Proxies: ProxiesOptions{Config: proxy.Config{Global: global}}, RLS: RLSOptions{Address: "grpc://127.0.0.1:1"}}, ""},
		{"rls in the filter", Options{Proxies: ProxiesOptions{Config: proxy.Config{Global: &proxy.GlobalRateLimit{GlobalFilter: proxy.GlobalFilter{Domain: "d"}, RLS: "grpc://x:1", Actions: global.Actions}}},
			RLS: RLSOptions{Address: "grpc://127.0.0.1:1"}}, "not in Config.Global.RLS"},
		{"global without domain", Options{Proxies: ProxiesOptions{Config: proxy.Config{Global: &proxy.GlobalRateLimit{Actions: global.Actions}}}, RLS: RLSOptions{Lab: &labrls.Options{}}}, "domain is required"},
		{"both rls", Options{RLS: RLSOptions{Lab: &labrls.Options{}, Address: "grpc://127.0.0.1:1"}}, "not both"},
		{"bad address", Options{RLS: RLSOptions{Address: "127.0.0.1:1"}}, "want grpc://host:port"},
		{"bad window start", Options{RLS: RLSOptions{Lab: &labrls.Options{WindowStart: "sliding"}}}, `window start "sliding"`},
		{"negative delay", Options{RLS: RLSOptions{Lab: &labrls.Options{Delay: -time.Second}}}, "negative delay"},
		{"no proxies", Options{Proxies: ProxiesOptions{None: true}}, ""},
		{"no proxies but a count", Options{Proxies: ProxiesOptions{None: true, Count: 1}}, "no proxies (Proxies.None)"},
		{"no proxies but a bucket", Options{Proxies: ProxiesOptions{None: true, Config: proxy.Config{Local: local}}}, "no proxies (Proxies.None)"},
		{"listen base", Options{ListenBase: MaxListenBase}, ""},
		{"listen base too high", Options{ListenBase: MaxListenBase + 1}, "listen base 65236, want 1..65235"},
		{"negative listen base", Options{ListenBase: -1}, "listen base -1"},
		{"listen base and backend listen", Options{ListenBase: 10000, Backend: backend.Options{Listen: "127.0.0.1:8080"}}, "give one"},
		{"listen base and rls listen", Options{ListenBase: 10000, RLS: RLSOptions{Lab: &labrls.Options{Listen: "127.0.0.1:8081"}}}, "give one"},
	} {
		err := c.opts.Validate()
		if c.want == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
		if c.want != "" {
			if _, serr := Start(t.Context(), c.opts); serr == nil || serr.Error() != err.Error() {
				t.Errorf("%s: Start err %v, want Validate's %v", c.name, serr, err)
			}
		}
	}
}

// TestDefaults: the lab's defaults are applied once, visible in
// Lab.Options, and the caller's options are left as they were.
func TestDefaults(t *testing.T) {
	in := Options{Proxies: ProxiesOptions{Config: proxy.Config{Local: &proxy.LocalRateLimit{MaxTokens: 5, FillInterval: proxy.Duration(time.Hour)}}},
		RLS: RLSOptions{Lab: &labrls.Options{}}}
	l, err := Start(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := l.Options()
	lc := o.Proxies.Config.Local
	if o.Proxies.Count != DefaultProxies || len(l.Proxies) != DefaultProxies || o.Proxies.Config.Cluster != "backend" ||
		lc.TokensPerFill != 1 || *lc.FilterEnabled != 100 || *lc.FilterEnforced != 100 || o.RLS.Lab.WindowStart != evidence.WindowAligned {
		t.Fatalf("effective options %+v local %+v rls %+v", o.Proxies, lc, o.RLS.Lab)
	}
	if in.Proxies.Count != 0 || in.Proxies.Config.Local.TokensPerFill != 0 || in.Proxies.Config.Local.FilterEnabled != nil || in.RLS.Lab.WindowStart != "" {
		t.Fatalf("Start modified its input: %+v %+v", in.Proxies.Config.Local, in.RLS.Lab)
	}
	// The lab RLS is up and its address is what the addresses say.
	if l.RLS == nil || !l.RLS.Running() || l.RLSAddress() != "grpc://"+l.RLS.Addr() || l.Addresses().RLS != l.RLSAddress() {
		t.Fatalf("rls %v address %q", l.RLS, l.RLSAddress())
	}
	if l.ProxiesStartNs <= 0 || l.ProxiesStartNs > time.Now().UnixNano() {
		t.Fatalf("ProxiesStartNs %d", l.ProxiesStartNs)
	}
	if err := l.Close(); err != nil || l.RLS.Running() {
		t.Fatalf("close: %v, rls running %v", err, l.RLS.Running())
	}
}

// TestAddressesJSON pins the JSON shape of the addresses (`rlbench lab`'s
// line, README): proxies carry "admin", an unknown receipts file is omitted.
func TestAddressesJSON(t *testing.T) {
	a := Addresses{Backend: "http://127.0.0.1:1", RLS: "grpc://127.0.0.1:2",
		Proxies: []ProxyAddress{{Name: "proxy-a", URL: "http://127.0.0.1:3", Admin: "http://127.0.0.1:4"}}}
	b, _ := json.Marshal(a)
	want := `{"backend":"http://127.0.0.1:1","rls":"grpc://127.0.0.1:2","proxies":[{"name":"proxy-a","url":"http://127.0.0.1:3","admin":"http://127.0.0.1:4"}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	a.Receipts = "ev/receipts.jsonl"
	if b, _ = json.Marshal(a); !strings.Contains(string(b), `"backend":"http://127.0.0.1:1","receipts":"ev/receipts.jsonl",`) {
		t.Fatalf("with receipts: %s", b)
	}
}

// TestGlobalWithLabRLS: two proxies share the lab RLS's fixed window of 3;
// each proxy writes its own access log; the lab RLS logs every decision.
// answerRLSTimeout is the proxies' RLS call timeout in the tests that
// count the lab RLS's answers: far above a call's time on a loaded host.
// A call that times out fails open (a 200 the test would not expect), and
// the lab RLS may still count it: with a second, the codes were the
// host's affair.
const answerRLSTimeout = time.Minute

func TestGlobalWithLabRLS(t *testing.T) {
	cfg, err := rlsconfig.Parse("inventory.yaml", []byte("domain: inventory\ndescriptors:\n  - {key: tenant, value: lab, rate_limit: {unit: hour, requests_per_unit: 3}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var decisions syncBuf
	logs := map[string]*syncBuf{}
	l, err := Start(t.Context(), Options{
		Proxies: ProxiesOptions{Count: 2,
			Config:    proxy.Config{Global: &proxy.GlobalRateLimit{GlobalFilter: proxy.GlobalFilter{Domain: "inventory", Timeout: proxy.Duration(answerRLSTimeout)}, Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "tenant", DescriptorValue: "lab"}}}}},
			AccessLog: func(name string) (io.Writer, error) { logs[name] = &syncBuf{}; return logs[name], nil }},
		RLS: RLSOptions{Lab: &labrls.Options{Configs: []*rlsconfig.Config{cfg}, DecisionLog: &decisions}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	codes := map[int]int{}
	for i := range 8 {
		resp, err := http.Get(l.Proxies[i%2].URL() + "/item")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[200] != 3 || codes[429] != 5 {
		t.Fatalf("codes %v, want 3x200 5x429 (one shared window of 3)", codes)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(decisions.String(), "\n"); n != 8 || strings.Count(decisions.String(), `"OVER_LIMIT"`) != 5 {
		t.Fatalf("%d decisions:\n%s", n, decisions.String())
	}
	if len(logs) != 2 {
		t.Fatalf("access logs for %d proxies", len(logs))
	}
	for name, b := range logs {
		if n := strings.Count(b.String(), `"proxy":"`+name+`"`); n != 4 || strings.Count(b.String(), "\n") != 4 {
			t.Errorf("%s access log: %d own lines of %d:\n%s", name, n, strings.Count(b.String(), "\n"), b.String())
		}
	}
}

// TestStartFailureStopsWhatStarted: when the second proxy cannot start, the
// error names it, and the first proxy, the backend and the lab RLS are
// stopped: their ports refuse connections.
func TestStartFailureStopsWhatStarted(t *testing.T) {
	var addrs []string // lab RLS, backend, proxy-a, proxy-a admin
	startProxy = func(ctx context.Context, cfg proxy.Config) (*proxy.Proxy, error) {
		if cfg.Name == "proxy-b" {
			return nil, fmt.Errorf("no room")
		}
		p, err := proxy.Start(ctx, cfg)
		if err == nil {
			addrs = append(addrs, strings.TrimPrefix(cfg.Global.RLS, "grpc://"), strings.TrimPrefix(cfg.Upstream, "http://"), p.Addr(), p.AdminAddr())
		}
		return p, err
	}
	defer func() { startProxy = proxy.Start }()
	global := &proxy.GlobalRateLimit{GlobalFilter: proxy.GlobalFilter{Domain: "d"}, Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorValue: "v"}}}}
	_, err := Start(t.Context(), Options{Proxies: ProxiesOptions{Count: 3, Config: proxy.Config{Global: global}},
		RLS: RLSOptions{Lab: &labrls.Options{}}, Backend: backend.Options{Receipts: io.Discard}})
	if err == nil || err.Error() != "lab: proxy-b: no room" {
		t.Fatalf("err %v", err)
	}
	if len(addrs) != 4 {
		t.Fatalf("started %v", addrs)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the failed Start", a)
		}
	}
	// An access log that cannot be opened is named too.
	_, err = Start(t.Context(), Options{Proxies: ProxiesOptions{AccessLog: func(name string) (io.Writer, error) {
		return nil, fmt.Errorf("disk full")
	}}})
	if err == nil || err.Error() != "lab: proxy-a: access log: disk full" {
		t.Fatalf("access log err %v", err)
	}
}

// Three backend endpoints are every proxy's cluster hosts: the addresses
// list them, round robin spreads requests over them, and each receipt
// names its endpoint.
func TestBackendEndpointsAreClusterHosts(t *testing.T) {
	var receipts syncBuf
	l, err := Start(t.Context(), Options{Backend: backend.Options{Receipts: &receipts, Endpoints: 3}, Proxies: ProxiesOptions{Count: 2}})
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addresses()
	if len(a.Endpoints) != 3 || a.Endpoints[0].URL != a.Backend || a.Endpoints[2].Name != "backend-2" {
		t.Fatalf("addresses %+v", a)
	}
	for i := range 12 {
		resp, err := http.Get(a.Proxies[i%2].URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	if err := evidence.ReadLines(bytes.NewReader(receipts.Bytes()), "receipts", func(_ int, r *evidence.Receipt) error {
		per[r.Endpoint]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(per) != 3 || per["backend-0"]+per["backend-1"]+per["backend-2"] != 12 || per["backend-0"] != 4 {
		t.Fatalf("receipts per endpoint %v", per)
	}
	if _, err := Start(t.Context(), Options{Backend: backend.Options{Endpoints: 65}}); err == nil {
		t.Fatal("65 endpoints accepted")
	}
	if err := (Options{Proxies: ProxiesOptions{Config: proxy.Config{Upstreams: []string{"http://x:1"}}}}).Validate(); err == nil {
		t.Fatal("Config.Upstreams accepted")
	}
}

// TestNoProxies: with Proxies.None the lab is its backend alone (for the
// runner's nginx): no proxy, every endpoint serving receipts.
func TestNoProxies(t *testing.T) {
	var rec testfix.SyncBuffer
	l, err := Start(t.Context(), Options{Proxies: ProxiesOptions{None: true}, Backend: backend.Options{Endpoints: 2, Receipts: &rec}})
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addresses()
	if len(l.Proxies) != 0 || len(a.Proxies) != 0 || len(a.Endpoints) != 2 {
		t.Fatalf("proxies %d, addresses %+v", len(l.Proxies), a)
	}
	for _, ep := range a.Endpoints {
		req, _ := http.NewRequest(http.MethodGet, ep.URL+"/", nil)
		req.Header.Set("X-Rlbench-Id", "id-"+ep.Name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rec.String(); !strings.Contains(got, `"id-backend-0"`) || !strings.Contains(got, `"id-backend-1"`) {
		t.Errorf("receipts %s", got)
	}
}

// TestListenBase starts a lab on the fixed ports of a listen base: every
// part is where the layout says, requests go through, and a taken port is
// an error naming the layout that leaves nothing listening.
func TestListenBase(t *testing.T) {
	base := testfix.FreePortSpan(t, RLSPortOffset+1)
	cfg, err := rlsconfig.Parse("inline", []byte("domain: d\ndescriptors:\n  - key: k\n    value: v\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	global := &proxy.GlobalRateLimit{GlobalFilter: proxy.GlobalFilter{Domain: "d", Timeout: proxy.Duration(answerRLSTimeout)}, Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "k", DescriptorValue: "v"}}}}
	opts := Options{ListenBase: base, Backend: backend.Options{Endpoints: 2}, Proxies: ProxiesOptions{Count: 2, Config: proxy.Config{Global: global}},
		RLS: RLSOptions{Lab: &labrls.Options{Configs: []*rlsconfig.Config{cfg}}}}
	l, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	url := func(off int) string { return fmt.Sprintf("http://127.0.0.1:%d", base+off) }
	a := l.Addresses()
	want := Addresses{Backend: url(BackendPortOffset), RLS: fmt.Sprintf("grpc://127.0.0.1:%d", base+RLSPortOffset),
		Endpoints: []backend.Endpoint{{Name: "backend-0", URL: url(BackendPortOffset)}, {Name: "backend-1", URL: url(BackendPortOffset + 1)}},
		Proxies:   []ProxyAddress{{Name: "proxy-a", URL: url(0), Admin: url(AdminPortOffset)}, {Name: "proxy-b", URL: url(1), Admin: url(AdminPortOffset + 1)}}}
	if got, w := fmt.Sprint(a), fmt.Sprint(want); got != w {
		t.Fatalf("addresses\n%s\nwant\n%s", got, w)
	}
	for i := range 6 {
		resp, err := http.Get(url(i % 2))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: 200, false: 429}[i < 5]; resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d (limit 5 per hour through the lab RLS)", i, resp.StatusCode, want)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// proxy-b's admin port taken: Start fails, names the layout, and
	// stops what it had started (the same lab starts again once it is free).
	hold, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+AdminPortOffset+1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(t.Context(), opts)
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) ||
		!strings.Contains(err.Error(), fmt.Sprintf("lab: proxy-b: proxy proxy-b: admin listen 127.0.0.1:%d", base+AdminPortOffset+1)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("that port of listen base %d is taken (the layout: proxies on %d.., their admins on %d..", base, base, base+AdminPortOffset)) {
		t.Fatalf("start with a taken port: %v", err)
	}
	hold.Close()
	l, err = Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start after the port was freed (the failed start left a part listening?): %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
