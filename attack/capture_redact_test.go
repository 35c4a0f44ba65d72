package attack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
