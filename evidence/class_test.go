package evidence

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		r    Request
		want Class
	}{
		{Request{Code: 0}, ClassNoResponse},
		{Request{Code: 200}, ClassAdmitted},
		{Request{Code: 204}, ClassAdmitted},
		{Request{Code: 429, Body: "local_rate_limited"}, ClassLocal429},
		{Request{Code: 429, Headers: map[string]string{"x-envoy-ratelimited": "true"}}, ClassGlobal429},
		{Request{Code: 429, Headers: map[string]string{"x-envoy-ratelimited": "TRUE"}}, ClassGlobal429},
		{Request{Code: 429, Body: "slow down", BytesIn: 9}, ClassOther4xx},
		{Request{Code: 500}, ClassRLSError},
		{Request{Code: 500, BytesIn: 3, Body: "err"}, ClassOther5xx},
		{Request{Code: 500, Headers: map[string]string{"x-envoy-upstream-service-time": "2"}}, ClassBackend5xx},
		{Request{Code: 500, Headers: map[string]string{"x-envoy-upstream-service-time": ""}}, ClassBackend5xx},
		{Request{Code: 429, Headers: map[string]string{"x-envoy-upstream-service-time": "1"}}, ClassBackend429},
		{Request{Code: 404, Body: `{"id":"x"}`, BytesIn: 10}, ClassBackend4xx},
		{Request{Code: 503, Headers: map[string]string{"x-envoy-overloaded": "true"}}, ClassCircuitBreaker},
		{Request{Code: 503, Body: "upstream connect error or disconnect/reset before headers. reset reason: overflow",
			Headers: map[string]string{"x-envoy-overloaded": "true"}}, ClassCircuitBreaker},
		{Request{Code: 503}, ClassOther5xx},
		{Request{Code: 404}, ClassOther4xx},
		{Request{Code: 302}, ClassOther},
		{Request{Code: 101}, ClassOther},
	}
	for _, c := range cases {
		if got := c.r.Classify(); got != c.want {
			t.Errorf("Classify(%d %q %v) = %s, want %s", c.r.Code, c.r.Body, c.r.Headers, got, c.want)
		}
		if n, ok := ParseClass(c.want.String()); !ok || n != c.want {
			t.Errorf("ParseClass(%s) = %v %v", c.want, n, ok)
		}
	}
	if _, ok := ParseClass("sent"); ok {
		t.Error(`ParseClass("sent") is not a class`)
	}
}

// TestClassifyEnvoyGateway429Fixture uses the Envoy Gateway 429 capture
// (moved here from collect/envoy.ClassifyResponse): with no body captured,
// content-length 18 = len("local_rate_limited") and text/plain mark the
// local limiter; x-envoy-ratelimited marks the global one; a backend 429
// and a 200 with the same headers are neither.
func TestClassifyEnvoyGateway429Fixture(t *testing.T) {
	data := testfix.ReadFixture(t, "envoy", "gh_envoygateway_issue5693_429_headers_2025.txt")
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan()
	status := strings.Fields(sc.Text())
	if len(status) != 2 || status[1] != "429" {
		t.Fatalf("status line %q", sc.Text())
	}
	h := http.Header{}
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if ok {
			h.Add(k, v)
		}
	}
	n, _ := strconv.Atoi(h.Get("Content-Length"))
	m := Marks{Code: 429, BytesIn: uint64(n), ContentType: h.Get("Content-Type"), RateLimited: h.Get("X-Envoy-Ratelimited")}
	if got := m.Classify(); got != ClassLocal429 {
		t.Errorf("fixture headers classified %s, want local_429", got)
	}
	if got := (Marks{Code: 429, Body: "local_rate_limited"}).Classify(); got != ClassLocal429 {
		t.Errorf("body classified %s", got)
	}
	if got := (Marks{Code: 429, RateLimited: "true"}).Classify(); got != ClassGlobal429 {
		t.Errorf("global 429 classified %s", got)
	}
	if got := (Marks{Code: 429, Body: "too many requests", BytesIn: 17, ContentType: "text/plain"}).Classify(); got != ClassOther4xx {
		t.Errorf("backend 429 classified %s", got)
	}
	m.Code = 200
	if got := m.Classify(); got != ClassAdmitted {
		t.Errorf("200 classified %s", got)
	}
}
