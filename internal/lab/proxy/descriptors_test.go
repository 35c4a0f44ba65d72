package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/descriptor"
)

func entries(kv ...string) []descriptor.DescriptorEntry {
	var out []descriptor.DescriptorEntry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, descriptor.DescriptorEntry{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func userAction() []descriptor.RateLimitEntry {
	return []descriptor.RateLimitEntry{{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-user", DescriptorKey: "user"}}}}}
}

func localCfg(l LocalRateLimit) *LocalRateLimit {
	l.FilterEnabled, l.FilterEnforced = pct(100), pct(100)
	return &l
}

func codesFor(t *testing.T, p *Proxy, n int, hdr map[string]string) []int {
	t.Helper()
	var out []int
	for range n {
		out = append(out, do(t, "GET", p.URL()+"/x", hdr).code)
	}
	return out
}

func count(codes []int, c int) int {
	n := 0
	for _, x := range codes {
		if x == c {
			n++
		}
	}
	return n
}

// Per-user descriptors: A and B have their own buckets; a user without a
// descriptor (C) and a request without the header use the default bucket.
// With always_consume_default_token_bucket (default true) every request
// also takes a default token.
func TestLocalDescriptorBuckets(t *testing.T) {
	be := startBackend(t)
	clk := newTestClock()
	p := startProxy(t, Config{Upstream: be.URL(), Clock: clk, Local: localCfg(LocalRateLimit{MaxTokens: 100, FillInterval: Duration(time.Hour),
		RateLimits: userAction(),
		Descriptors: []LocalDescriptor{
			{Entries: entries("user", "A"), TokenBucket: TokenBucket{MaxTokens: 2, FillInterval: Duration(time.Hour)}},
			{Entries: entries("user", "B"), TokenBucket: TokenBucket{MaxTokens: 5, FillInterval: Duration(time.Hour)}},
		}})})
	a := codesFor(t, p, 4, map[string]string{"X-User": "A"})
	b := codesFor(t, p, 6, map[string]string{"X-User": "B"})
	c := codesFor(t, p, 3, map[string]string{"X-User": "C"})
	none := codesFor(t, p, 2, nil)
	must(t, count(a, 200) == 2 && count(a, 429) == 2, "A %v", a)
	must(t, count(b, 200) == 5 && count(b, 429) == 1, "B %v", b)
	must(t, count(c, 200) == 3 && count(none, 200) == 2, "default bucket: C %v none %v", c, none)
	text := textStats(t, p)
	must(t, textCounter(text, "http_local_rate_limiter.http_local_rate_limit.rate_limited") == 3 &&
		textCounter(text, "http_local_rate_limiter.http_local_rate_limit.ok") == 12, "stats %v", text)
}

// The default bucket is consumed for descriptor-matched requests only with
// always_consume_default_token_bucket true; false lets them bypass it.
func TestLocalAlwaysConsumeDefault(t *testing.T) {
	for _, always := range []bool{true, false} {
		be := startBackend(t)
		a := always
		p := startProxy(t, Config{Upstream: be.URL(), Clock: newTestClock(), Local: localCfg(LocalRateLimit{MaxTokens: 2, FillInterval: Duration(time.Hour),
			AlwaysConsumeDefaultTokenBucket: &a, RateLimits: userAction(),
			Descriptors: []LocalDescriptor{{Entries: entries("user", "A"), TokenBucket: TokenBucket{MaxTokens: 10, FillInterval: Duration(time.Hour)}}}})})
		matched := codesFor(t, p, 3, map[string]string{"X-User": "A"})
		unmatched := codesFor(t, p, 2, nil)
		if always {
			// A's 3 requests: 2 default tokens, so the 3rd is rejected by the
			// default bucket; nothing is left for unmatched requests.
			must(t, count(matched, 200) == 2 && count(unmatched, 200) == 0, "always: matched %v unmatched %v", matched, unmatched)
		} else {
			must(t, count(matched, 200) == 3 && count(unmatched, 200) == 2, "bypass: matched %v unmatched %v", matched, unmatched)
		}
	}
}

// Two matched descriptors: the one with the lower fill rate is consumed
// first, and when it rejects the other is not charged.
func TestLocalConsumptionOrder(t *testing.T) {
	be := startBackend(t)
	clk := newTestClock()
	rl := []descriptor.RateLimitEntry{
		{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-user", DescriptorKey: "user"}}}},
		{Actions: []descriptor.RateLimitAction{{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: "path", DescriptorValue: "report"}}}},
	}
	p := startProxy(t, Config{Upstream: be.URL(), Clock: clk, Local: localCfg(LocalRateLimit{MaxTokens: 1000, FillInterval: Duration(time.Hour),
		EnableXRateLimitHeaders: true, RateLimits: rl,
		Descriptors: []LocalDescriptor{
			// user A: 10 per second (fast); path report: 1 per hour (slow).
			{Entries: entries("user", "A"), TokenBucket: TokenBucket{MaxTokens: 3, TokensPerFill: 10, FillInterval: Duration(time.Second)}},
			{Entries: entries("path", "report"), TokenBucket: TokenBucket{MaxTokens: 2, FillInterval: Duration(time.Hour)}},
		}})})
	h := map[string]string{"X-User": "A"}
	r := do(t, "GET", p.URL()+"/x", h)
	// The reported bucket is the first consumed: the slow one (report, max 2).
	must(t, r.code == 200 && r.header.Get("X-Ratelimit-Limit") == "2" && r.header.Get("X-Ratelimit-Remaining") == "1", "first %d %v", r.code, r.header)
	do(t, "GET", p.URL()+"/x", h)
	r = do(t, "GET", p.URL()+"/x", h)
	must(t, r.code == 429 && r.header.Get("X-Ratelimit-Limit") == "2" && r.header.Get("X-Ratelimit-Remaining") == "0", "report exhausted %d %v", r.code, r.header)
	// user A's bucket (max 3) was charged only twice, and the default
	// bucket twice too: the rejecting descriptor stops the consumption.
	_, rem, _ := p.limiter.exact[descriptorKey(entries("user", "A"))].headers(clk.Now())
	must(t, rem == 1, "user A bucket charged after the rejection: %d left, want 1", rem)
	_, rem, _ = p.limiter.def.headers(clk.Now())
	must(t, rem == 998, "default bucket: %d left, want 998", rem)
}

// A wildcard descriptor gives every value its own bucket, in an LRU of
// max_dynamic_descriptors; an evicted value comes back full.
func TestLocalWildcardLRU(t *testing.T) {
	be := startBackend(t)
	two := uint32(2)
	p := startProxy(t, Config{Upstream: be.URL(), Clock: newTestClock(), Local: localCfg(LocalRateLimit{MaxTokens: 1000, FillInterval: Duration(time.Hour),
		MaxDynamicDescriptors: &two, RateLimits: userAction(),
		Descriptors: []LocalDescriptor{{Entries: entries("user", ""), TokenBucket: TokenBucket{MaxTokens: 1, FillInterval: Duration(time.Hour)}}}})})
	u := func(name string) int { return do(t, "GET", p.URL()+"/x", map[string]string{"X-User": name}).code }
	must(t, u("A") == 200 && u("A") == 429, "A's own bucket")
	must(t, u("B") == 200 && u("B") == 429, "B's own bucket")
	must(t, u("A") == 429, "A still in the LRU")
	must(t, u("C") == 200, "C") // evicts B (A was used more recently)
	must(t, u("B") == 200, "B evicted, back with a full bucket")
}

// local_rate_limit_per_downstream_connection: each connection has its own
// limiter.
func TestLocalPerDownstreamConnection(t *testing.T) {
	be := startBackend(t)
	p := startProxy(t, Config{Upstream: be.URL(), Clock: newTestClock(), Local: localCfg(LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Hour),
		PerDownstreamConnection: true})})
	client := func() *http.Client { return &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}} }
	c1, c2 := client(), client()
	get := func(c *http.Client) int {
		resp, err := c.Get(p.URL() + "/x")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // read to the end, so the connection is reused
		resp.Body.Close()
		return resp.StatusCode
	}
	must(t, get(c1) == 200 && get(c1) == 429, "connection 1")
	must(t, get(c2) == 200 && get(c2) == 429, "connection 2 has its own bucket")
	// A new connection starts full.
	c1.CloseIdleConnections()
	must(t, get(c1) == 200, "new connection")
}

// Continuous refill (Envoy >= 1.31): fractional tokens accrue; timer mode
// (<= 1.30) adds tokens_per_fill at each fill_interval tick.
func TestLocalRefillModes(t *testing.T) {
	for _, mode := range []string{TokenBucketContinuous, TokenBucketTimer} {
		be := startBackend(t)
		clk := newTestClock()
		p := startProxy(t, Config{Upstream: be.URL(), Clock: clk, Local: localCfg(LocalRateLimit{MaxTokens: 4, TokensPerFill: 4, FillInterval: Duration(time.Second),
			TokenBucketMode: mode})})
		must(t, count(codesFor(t, p, 5, nil), 200) == 4, "%s: starts full", mode)
		clk.Advance(500 * time.Millisecond) // continuous: +2 tokens; timer: none yet
		got := count(codesFor(t, p, 3, nil), 200)
		if mode == TokenBucketContinuous {
			must(t, got == 2, "continuous after half an interval: %d", got)
		} else {
			must(t, got == 0, "timer before the tick: %d", got)
		}
		clk.Advance(500 * time.Millisecond) // continuous: +2; timer: +4 at the tick
		got = count(codesFor(t, p, 5, nil), 200)
		if mode == TokenBucketContinuous {
			must(t, got == 2, "continuous after a full interval: %d", got)
		} else {
			must(t, got == 4, "timer at the tick: %d", got)
		}
	}
}

// x-ratelimit-reset in continuous mode: whole seconds until the next token.
func TestLocalXRateLimitResetContinuous(t *testing.T) {
	be := startBackend(t)
	clk := newTestClock()
	p := startProxy(t, Config{Upstream: be.URL(), Clock: clk, Local: localCfg(LocalRateLimit{MaxTokens: 1, FillInterval: Duration(10 * time.Second),
		EnableXRateLimitHeaders: true})})
	r := do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 200 && r.header.Get("X-Ratelimit-Remaining") == "0" && r.header.Get("X-Ratelimit-Reset") == "10", "after the token: %v", r.header)
	clk.Advance(2500 * time.Millisecond)
	r = do(t, "GET", p.URL()+"/x", nil)
	must(t, r.code == 429 && r.header.Get("X-Ratelimit-Reset") == "7", "7.5 s to the next token: %v", r.header)
}

func TestLocalDescriptorConfigErrors(t *testing.T) {
	tb := TokenBucket{MaxTokens: 1, FillInterval: Duration(time.Second)}
	for _, c := range []struct {
		l    LocalRateLimit
		want string
	}{
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), Descriptors: []LocalDescriptor{{TokenBucket: tb}}}, "at least one entry"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), Descriptors: []LocalDescriptor{{Entries: entries("a", "1"), TokenBucket: tb}, {Entries: entries("a", "1"), TokenBucket: tb}}}, "duplicate"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), Descriptors: []LocalDescriptor{{Entries: entries("a", "1"), TokenBucket: TokenBucket{MaxTokens: 1, FillInterval: Duration(time.Millisecond)}}}}, "fill_interval"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), PerDownstreamConnection: true, Descriptors: []LocalDescriptor{{Entries: entries("a", ""), TokenBucket: tb}}}, "per_downstream_connection"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), TokenBucketMode: TokenBucketTimer, Descriptors: []LocalDescriptor{{Entries: entries("a", "1"), TokenBucket: TokenBucket{MaxTokens: 1, FillInterval: Duration(1500 * time.Millisecond)}}}}, "multiple"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), TokenBucketMode: "sometimes"}, "token_bucket_mode"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), RateLimits: []descriptor.RateLimitEntry{{}}}, "at least one action"},
		{LocalRateLimit{MaxTokens: 1, FillInterval: 0}, "fill_interval"},
	} {
		err := c.l.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.l, err, c.want)
		}
	}
	// No default bucket (fill_interval 0) is allowed with descriptors:
	// unmatched requests pass.
	be := startBackend(t)
	p := startProxy(t, Config{Upstream: be.URL(), Clock: newTestClock(), Local: localCfg(LocalRateLimit{MaxTokens: 1, RateLimits: userAction(),
		Descriptors: []LocalDescriptor{{Entries: entries("user", "A"), TokenBucket: tb}}})})
	must(t, count(codesFor(t, p, 5, nil), 200) == 5, "no default bucket")
	must(t, count(codesFor(t, p, 3, map[string]string{"X-User": "A"}), 200) == 1, "descriptor bucket")
}

// header_value_match and several entries build the descriptors the RLS
// gets; request_headers uses the first value of a repeated header.
func TestGlobalActionsDescriptors(t *testing.T) {
	f := false
	g := &GlobalRateLimit{GlobalFilter: GlobalFilter{Domain: "d", RateLimits: []descriptor.RateLimitEntry{
		{Actions: []descriptor.RateLimitAction{
			{GenericKey: &descriptor.GenericKeyAction{DescriptorValue: "all"}},
			{HeaderValueMatch: &descriptor.HeaderValueMatchAction{DescriptorValue: "premium", Headers: []descriptor.HeaderMatcher{{Name: "x-plan", ExactMatch: ptr("gold")}}}},
		}},
		{Actions: []descriptor.RateLimitAction{{HeaderValueMatch: &descriptor.HeaderValueMatchAction{DescriptorKey: "anon", DescriptorValue: "yes", ExpectMatch: &f,
			Headers: []descriptor.HeaderMatcher{{Name: "authorization", PresentMatch: ptr(true)}}}}}},
		{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: "x-user", DescriptorKey: "user"}}, {RemoteAddress: &descriptor.RemoteAddressAction{}}}},
		{Actions: []descriptor.RateLimitAction{{HeaderValueMatch: &descriptor.HeaderValueMatchAction{DescriptorValue: "api", Headers: []descriptor.HeaderMatcher{
			{Name: "x-path", StringMatch: &descriptor.StringMatcher{Prefix: ptr("/API/"), IgnoreCase: true}},
			{Name: "x-v", SafeRegexMatch: &descriptor.RegexMatcher{Regex: `v[0-9]+`}},
		}}}}},
	}}, RLS: "x"}
	if err := g.validate(); err != nil {
		t.Fatal(err)
	}
	got := func(h http.Header) string {
		var parts []string
		es, err := g.compile()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range globalDescriptors(es, h, "10.0.0.9") {
			var es []string
			for _, e := range d.GetEntries() {
				es = append(es, e.GetKey()+"="+e.GetValue())
			}
			parts = append(parts, strings.Join(es, ","))
		}
		return strings.Join(parts, " | ")
	}
	h := http.Header{}
	h.Set("X-Plan", "gold")
	h.Add("X-User", "alice")
	h.Add("X-User", "bob")
	h.Set("X-Path", "/api/items")
	h.Set("X-V", "v12")
	want := "generic_key=all,header_match=premium | anon=yes | user=alice,remote_address=10.0.0.9 | header_match=api"
	must(t, got(h) == want, "descriptors\n got %s\nwant %s", got(h), want)
	h2 := http.Header{}
	h2.Set("Authorization", "x")
	h2.Set("X-V", "v1x") // the regex must match the whole value
	must(t, got(h2) == "", "no descriptor expected, got %q", got(h2))

	bad := &GlobalRateLimit{GlobalFilter: GlobalFilter{Domain: "d", RateLimits: []descriptor.RateLimitEntry{{Actions: []descriptor.RateLimitAction{{HeaderValueMatch: &descriptor.HeaderValueMatchAction{DescriptorValue: "v",
		Headers: []descriptor.HeaderMatcher{{Name: "x", SafeRegexMatch: &descriptor.RegexMatcher{Regex: "("}}}}}}}}}}
	err := bad.Validate()
	must(t, err != nil && strings.Contains(err.Error(), "rate_limits[0].actions[0].header_value_match.headers[0]"), "bad regex error %v", err)
}

// HeaderMatcher follows HeaderUtility::matchHeaders for absent headers,
// inversion and the deprecated exact_match "".
func TestHeaderMatcherSemantics(t *testing.T) {
	h := http.Header{}
	h.Set("X-A", "val")
	h.Add("X-M", "1")
	h.Add("X-M", "2")
	for _, c := range []struct {
		m    descriptor.HeaderMatcher
		want bool
	}{
		{descriptor.HeaderMatcher{Name: "x-a"}, true}, // no specifier: present
		{descriptor.HeaderMatcher{Name: "x-b"}, false},
		{descriptor.HeaderMatcher{Name: "x-b", InvertMatch: true}, true},
		{descriptor.HeaderMatcher{Name: "x-b", PresentMatch: ptr(false)}, true},
		{descriptor.HeaderMatcher{Name: "x-b", PresentMatch: ptr(true), InvertMatch: true}, true},
		{descriptor.HeaderMatcher{Name: "x-a", ExactMatch: ptr("")}, true},
		{descriptor.HeaderMatcher{Name: "x-a", StringMatch: &descriptor.StringMatcher{Exact: ptr("")}}, false},
		{descriptor.HeaderMatcher{Name: "x-a", ExactMatch: ptr("val"), InvertMatch: true}, false},
		{descriptor.HeaderMatcher{Name: "x-m", ExactMatch: ptr("1,2")}, true},
		{descriptor.HeaderMatcher{Name: "x-b", TreatMissingHeaderAsEmpty: true, StringMatch: &descriptor.StringMatcher{Exact: ptr("")}}, true},
		{descriptor.HeaderMatcher{Name: "x-a", SuffixMatch: ptr("al")}, true},
		{descriptor.HeaderMatcher{Name: "x-a", ContainsMatch: ptr("z")}, false},
		{descriptor.HeaderMatcher{Name: "x-n", RangeMatch: &descriptor.Int64Range{Start: 1, End: 5}}, false},
	} {
		c2, err := c.m.Compile("m")
		if err != nil {
			t.Fatal(err)
		}
		must(t, c2.Matches(h) == c.want, "%+v: got %v", c.m, !c.want)
	}
	h.Set("X-N", "4")
	c3, _ := (&descriptor.HeaderMatcher{Name: "x-n", RangeMatch: &descriptor.Int64Range{Start: 1, End: 5}}).Compile("m")
	must(t, c3.Matches(h), "range")
	if _, err := (&descriptor.HeaderMatcher{Name: "x", ExactMatch: ptr("a"), PrefixMatch: ptr("b")}).Compile("m"); err == nil {
		t.Error("two specifiers accepted")
	}
}

func ptr[T any](v T) *T { return &v }
