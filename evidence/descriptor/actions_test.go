package descriptor

import (
	"net/http"
	"strings"
	"testing"
)

// TestDescriptorActions follows Envoy's router: entries in order, a missing
// header drops the descriptor unless skip_if_absent, remote_address needs
// the client's address, one descriptor per rate_limits entry.
func TestDescriptorActions(t *testing.T) {
	compile := func(es ...RateLimitEntry) []CompiledRateLimit {
		t.Helper()
		c, err := CompileRateLimits("rate_limits", es)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	acts := []RateLimitAction{{GenericKey: &GenericKeyAction{DescriptorValue: "lab"}},
		{RequestHeaders: &RequestHeadersAction{HeaderName: "X-Tenant", DescriptorKey: "tenant"}}}
	d := Descriptors(compile(RateLimitEntry{Actions: acts}), http.Header{"X-Tenant": {"a"}}, "")
	if len(d) != 1 || len(d[0]) != 2 || d[0][0] != (DescriptorEntry{"generic_key", "lab"}) || d[0][1] != (DescriptorEntry{"tenant", "a"}) {
		t.Fatalf("%v", d)
	}
	if d := Descriptors(compile(RateLimitEntry{Actions: acts}), http.Header{}, ""); len(d) != 0 {
		t.Fatalf("missing header: %v", d)
	}
	skip := []RateLimitAction{acts[0], {RequestHeaders: &RequestHeadersAction{HeaderName: "X-Tenant", DescriptorKey: "tenant", SkipIfAbsent: true}}}
	if d := Descriptors(compile(RateLimitEntry{Actions: skip}), nil, ""); len(d) != 1 || len(d[0]) != 1 {
		t.Fatalf("skip_if_absent: %v", d)
	}
	ra := RateLimitEntry{Actions: []RateLimitAction{{RemoteAddress: &RemoteAddressAction{}}}}
	if d := Descriptors(compile(ra), nil, ""); len(d) != 0 {
		t.Fatal("remote_address without an address")
	}
	if d := Descriptors(compile(ra, RateLimitEntry{Actions: acts}), http.Header{"X-Tenant": {"b"}}, "127.0.0.1"); len(d) != 2 || d[0][0].Value != "127.0.0.1" || d[1][1].Value != "b" {
		t.Fatalf("two entries: %v", d)
	}
	yes := "gold"
	hv := RateLimitEntry{Actions: []RateLimitAction{{HeaderValueMatch: &HeaderValueMatchAction{DescriptorValue: "gold",
		Headers: []HeaderMatcher{{Name: "x-plan", ExactMatch: &yes}}}}}}
	if d := Descriptors(compile(hv), http.Header{"X-Plan": {"gold"}}, ""); len(d) != 1 || d[0][0] != (DescriptorEntry{"header_match", "gold"}) {
		t.Fatalf("header_value_match: %v", d)
	}
	if d := Descriptors(compile(hv), http.Header{"X-Plan": {"free"}}, ""); len(d) != 0 {
		t.Fatalf("header_value_match, no match: %v", d)
	}
	if _, err := CompileRateLimits("rate_limits", []RateLimitEntry{{}}); err == nil {
		t.Fatal("an entry without actions compiled")
	}
}

// TestDescriptorOfUnknownHeader: a header sent without its value recorded
// leaves the descriptor unknown (not dropped, not built as if missing),
// unless an earlier action or a known failing matcher settles it.
func TestDescriptorOfUnknownHeader(t *testing.T) {
	unknown := func(name string) bool { return name == "X-Tenant" }
	one := func(acts ...RateLimitAction) *CompiledRateLimit {
		t.Helper()
		c, err := CompileRateLimit("rate_limits[0]", acts)
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	tenant := RateLimitAction{RequestHeaders: &RequestHeadersAction{HeaderName: "x-tenant", DescriptorKey: "tenant", SkipIfAbsent: true}}
	if _, ok, h := one(tenant).DescriptorOf(nil, http.Header{}, "", unknown); ok || h != "x-tenant" {
		t.Fatalf("request_headers: ok %v header %q", ok, h)
	}
	// remote_address without an address drops it first: known.
	if _, ok, h := one(RateLimitAction{RemoteAddress: &RemoteAddressAction{}}, tenant).DescriptorOf(nil, nil, "", unknown); ok || h != "" {
		t.Fatalf("dropped before: ok %v header %q", ok, h)
	}
	gold := "gold"
	hv := func(names ...string) RateLimitAction {
		var ms []HeaderMatcher
		for _, n := range names {
			ms = append(ms, HeaderMatcher{Name: n, ExactMatch: &gold})
		}
		return RateLimitAction{HeaderValueMatch: &HeaderValueMatchAction{DescriptorValue: "gold", Headers: ms}}
	}
	// a known matcher that fails settles the AND; one that holds does not
	if _, ok, h := one(hv("x-tenant", "x-plan")).DescriptorOf(nil, http.Header{"X-Plan": {"free"}}, "", unknown); ok || h != "" {
		t.Fatalf("known failing matcher: ok %v header %q", ok, h)
	}
	if _, ok, h := one(hv("x-tenant", "x-plan")).DescriptorOf(nil, http.Header{"X-Plan": {"gold"}}, "", unknown); ok || h != "x-tenant" {
		t.Fatalf("known matching matcher: ok %v header %q", ok, h)
	}
	// nothing unknown: Descriptor's result
	if d, ok, h := one(tenant).DescriptorOf(nil, http.Header{"X-Tenant": {"a"}}, "", nil); !ok || h != "" || d[0].Value != "a" {
		t.Fatalf("known: %v %v %q", d, ok, h)
	}
	if a := hv("X-Plan", "x-tenant"); strings.Join(a.HeadersRead(), ",") != "x-plan,x-tenant" {
		t.Fatalf("headers read %v", a.HeadersRead())
	}
}
