package attack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestCapturedHeadersRedacted: response headers captured with
// --capture-header that carry a credential (Set-Cookie, X-Auth-Token, a
// Location with a password and ?token=) are recorded redacted, on the
// direct HTTP/1.1 path and on the net/http-based HTTP/2 path; the
// rate-limit headers are recorded as received.
func TestCapturedHeadersRedacted(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "sid=COOKIESECRET; Path=/")
		w.Header().Set("X-Auth-Token", "AUTHSECRET")
		w.Header().Set("Location", "http://u:PWSECRET@example.test/next?token=TOKSECRET&page=2")
		w.Header().Set("X-Ratelimit-Remaining", "3")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	h2 := httptest.NewUnstartedServer(h)
	h2.EnableHTTP2 = true
	h2.StartTLS()
	defer h2.Close()
	capture := []string{"set-cookie", "x-auth-token", "location", "x-ratelimit-remaining"}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"http1", Options{IDs: IDs(3, "c"), Targets: []Target{{URL: plain.URL}}, CaptureHeaders: capture}},
		{"h2", Options{IDs: IDs(3, "d"), Targets: []Target{{URL: h2.URL}}, CaptureHeaders: capture, Protocol: ProtoH2,
			TLSConfig: h2.Client().Transport.(*http.Transport).TLSClientConfig}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, err, lines := runToLines(t, context.Background(), tc.opts)
			if err != nil || sum == nil || len(lines) != 3 {
				t.Fatalf("run: %v %+v %d lines", err, sum, len(lines))
			}
			for _, l := range lines {
				if l.Code != http.StatusTooManyRequests {
					t.Fatalf("line %+v", l)
				}
				want := map[string]string{
					"set-cookie":            "xxxxx",
					"x-auth-token":          "xxxxx",
					"location":              "http://u:xxxxx@example.test/next?token=xxxxx&page=2",
					"x-ratelimit-remaining": "3",
				}
				for k, v := range want {
					if l.Headers[k] != v {
						t.Errorf("%s: header %s = %q, want %q", l.ID, k, l.Headers[k], v)
					}
				}
				for k, v := range l.Headers {
					if strings.Contains(v, "SECRET") {
						t.Errorf("%s: header %s holds a secret: %q", l.ID, k, v)
					}
				}
			}
		})
	}
}

// TestCapMemoMatchesRedactCaptured: a worker's memory of captured values
// (capMemo) gives, response after response, exactly what redactCaptured
// gives on fresh maps (values that repeat, change, come back, are joined
// for a repeated header, carry a credential), and reuses a repeated value
// without allocating.
func TestCapMemoMatchesRedactCaptured(t *testing.T) {
	type field struct{ name, value string }
	responses := [][]field{
		{{"server", "nginx"}, {"location", "http://u:PW@h/?token=T"}, {"x-ratelimit-remaining", "3"}},
		{{"server", "nginx"}, {"location", "http://u:PW@h/?token=T"}, {"x-ratelimit-remaining", "2"}},
		{{"server", "nginx"}, {"location", "http://h/plain"}, {"x-auth-token", "SECRET"}},
		{{"server", "nginx"}, {"location", "http://u:PW@h/?token=T"}, {"x-auth-token", "SECRET"}},
		{{"set-cookie", "a=1"}, {"set-cookie", "b=2"}, {"server", "envoy"}},
		{{"set-cookie", "a=1"}, {"server", "nginx"}},
	}
	m := capMemo{}
	for k, resp := range responses {
		got, want := map[string]string{}, map[string]string{}
		for _, f := range resp {
			if v, dup := got[f.name]; dup {
				got[f.name] = v + ", " + f.value
				want[f.name] = got[f.name]
			} else {
				got[f.name] = m.value(f.name, []byte(f.value))
				want[f.name] = f.value
			}
		}
		m.redact(got)
		redactCaptured(want)
		for n, v := range want {
			if got[n] != v {
				t.Errorf("response %d: %s = %q, want %q", k, n, got[n], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("response %d: %v, want %v", k, got, want)
		}
	}
	b := []byte("nginx/1.22.1")
	h := map[string]string{}
	m.value("server", b)
	if allocs := testing.AllocsPerRun(100, func() {
		h["server"] = m.value("server", b)
		m.redact(h)
	}); allocs != 0 {
		t.Fatalf("a repeated value allocates %.1f times, want 0", allocs)
	}
}

// TestCapturedHeadersPerResponse: one worker's responses whose captured
// fields repeat, change, repeat a name, carry a credential or capture
// none each record exactly their own headers (the worker reuses the last
// response's map only when every field is the same).
func TestCapturedHeadersPerResponse(t *testing.T) {
	type field struct{ name, value string }
	per := map[string][]field{ // by ID
		"s-1": {{"X-Ratelimit-Remaining", "3"}, {"Server", "a"}},
		"s-2": {{"X-Ratelimit-Remaining", "3"}, {"Server", "a"}},
		"s-3": {{"X-Ratelimit-Remaining", "2"}, {"Server", "a"}},
		"s-4": {{"X-Ratelimit-Remaining", "2"}, {"X-Ratelimit-Remaining", "9"}, {"Server", "a"}},
		"s-5": {{"X-Ratelimit-Remaining", "2"}, {"Server", "a"}},
		"s-6": {{"Location", "http://u:PW@h/x"}},
		"s-7": {},
		"s-8": {{"X-Ratelimit-Remaining", "2"}, {"Server", "a"}},
	}
	want := map[string]map[string]string{
		"s-1": {"x-ratelimit-remaining": "3", "server": "a"},
		"s-2": {"x-ratelimit-remaining": "3", "server": "a"},
		"s-3": {"x-ratelimit-remaining": "2", "server": "a"},
		"s-4": {"x-ratelimit-remaining": "2, 9", "server": "a"},
		"s-5": {"x-ratelimit-remaining": "2", "server": "a"},
		"s-6": {"location": "http://u:xxxxx@h/x"},
		"s-7": nil,
		"s-8": {"x-ratelimit-remaining": "2", "server": "a"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, f := range per[r.Header.Get(evidence.IDHeader)] {
			w.Header().Add(f.name, f.value)
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	ids := []string{"s-1", "s-2", "s-3", "s-4", "s-5", "s-6", "s-7", "s-8"}
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: ids, Targets: []Target{{URL: srv.URL}}, Concurrency: 1,
		CaptureHeaders: []string{"x-ratelimit-remaining", "server", "location"}})
	if err != nil || sum.Recorded != len(ids) {
		t.Fatalf("run: %v, %+v", err, sum)
	}
	for _, l := range lines {
		w := want[l.ID]
		if len(l.Headers) != len(w) {
			t.Errorf("%s: headers %v, want %v", l.ID, l.Headers, w)
			continue
		}
		for k, v := range w {
			if l.Headers[k] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", l.ID, k, l.Headers[k], v, l.Headers)
			}
		}
	}
}
