package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// fakeLimiter answers from a table by key and records the calls.
type fakeLimiter struct {
	mu     sync.Mutex
	keys   []string
	nows   []time.Time
	allow  map[string]bool
	failOn string
}

func (f *fakeLimiter) Allow(_ context.Context, key string, now time.Time) (Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys, f.nows = append(f.keys, key), append(f.nows, now)
	if key == f.failOn {
		return Decision{}, errors.New("redis down")
	}
	return Decision{Allowed: f.allow[key]}, nil
}

// stepClock returns base, base+1ms, base+2ms, ... on each call.
func stepClock(base time.Time) func() time.Time {
	var n atomic.Int64
	return func() time.Time { return base.Add(time.Duration(n.Add(1)-1) * time.Millisecond) }
}

// syncBuffer is a bytes.Buffer safe for the gateway's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startTest(t *testing.T, lim Limiter, key string, mod func(*Options)) (*Gateway, *syncBuffer, *[]http.Header) {
	t.Helper()
	var mu sync.Mutex
	var got []http.Header
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(be.Close)
	k, err := ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	o := Options{Name: "gateway", Upstreams: []string{be.URL}, Limiter: lim, Key: k, AccessLog: log,
		Now: stepClock(time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC))}
	if mod != nil {
		mod(&o)
	}
	g, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, log, &got
}

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestGatewayDecides(t *testing.T) {
	lim := &fakeLimiter{allow: map[string]bool{"alice": true, "bob": false}, failOn: "carol"}
	g, log, got := startTest(t, lim, "header:x-user", nil)

	resp, body := get(t, g.URL()+"/p?q=1", map[string]string{"x-user": "alice", evidence.IDHeader: "id-1"})
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("alice: %d %q, want 200 ok", resp.StatusCode, body)
	}
	resp, body = get(t, g.URL()+"/p", map[string]string{"x-user": "bob", evidence.IDHeader: "id-2"})
	if resp.StatusCode != 429 || resp.Header.Get(DecisionHeader) != DecisionRateLimited {
		t.Fatalf("bob: %d %s=%q, want 429 %s", resp.StatusCode, DecisionHeader, resp.Header.Get(DecisionHeader), DecisionRateLimited)
	}
	resp, _ = get(t, g.URL()+"/p", map[string]string{"x-user": "carol", evidence.IDHeader: "id-3"})
	if resp.StatusCode != 200 {
		t.Fatalf("carol (limiter error, fail open): %d, want 200", resp.StatusCode)
	}
	resp, _ = get(t, g.URL()+"/p", map[string]string{evidence.IDHeader: "id-4"})
	if resp.StatusCode != 200 {
		t.Fatalf("no x-user (no key, not limited): %d, want 200", resp.StatusCode)
	}
	if want := []string{"alice", "bob", "carol"}; strings.Join(lim.keys, ",") != strings.Join(want, ",") {
		t.Errorf("limiter keys %v, want %v (a request without the header is not limited)", lim.keys, want)
	}
	if len(*got) != 3 {
		t.Fatalf("backend got %d requests, want 3 (alice, carol, no key)", len(*got))
	}
	if id := (*got)[0].Get(evidence.IDHeader); id != "id-1" {
		t.Errorf("forwarded %s %q, want id-1", evidence.IDHeader, id)
	}
	if xff := (*got)[0].Get("X-Forwarded-For"); xff != "127.0.0.1" {
		t.Errorf("forwarded X-Forwarded-For %q, want 127.0.0.1", xff)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	es, err := envoyrec.ParseAccessLog(strings.NewReader(log.String()), "gateway.log")
	if err != nil {
		t.Fatalf("access log does not parse as the lab proxy's: %v\n%s", err, log.String())
	}
	if len(es) != 4 {
		t.Fatalf("%d access log lines, want 4:\n%s", len(es), log.String())
	}
	byID := map[string]envoyrec.AccessLogEntry{}
	for _, e := range es {
		byID[e.RlbenchID] = e
	}
	a, b, c, d := byID["id-1"], byID["id-2"], byID["id-3"], byID["id-4"]
	if a.Code != 200 || a.LocalNs == 0 || a.UpstreamStartNs < a.LocalNs || a.LocalNs < a.StartNs || a.Path != "/p?q=1" {
		t.Errorf("admitted line: %+v, want 200 with start_ns <= local_ns <= upstream_start_ns", a)
	}
	if envoyrec.Producer(b) != envoyrec.ProducerLocalLimiter || b.Code != 429 || b.LocalNs == 0 || b.UpstreamStartNs != 0 {
		t.Errorf("rejected line: %+v (producer %s), want a local limiter's 429 with local_ns and no forward", b, envoyrec.Producer(b))
	}
	if c.Code != 200 || c.LocalNs != 0 || c.UpstreamStartNs == 0 {
		t.Errorf("fail-open line: %+v, want forwarded without local_ns (the limiter's decision did not apply)", c)
	}
	if d.Code != 200 || d.LocalNs != 0 || d.UpstreamStartNs == 0 {
		t.Errorf("unkeyed line: %+v, want forwarded without local_ns", d)
	}
	if envoyrec.Producer(c) != envoyrec.ProducerBackend {
		t.Errorf("fail-open line producer %s, want %s (its class stays admitted)", envoyrec.Producer(c), envoyrec.ProducerBackend)
	}
	limErrs := limiterErrors(t, log.String())
	if len(limErrs) != 1 || limErrs["id-3"] != "redis down" {
		t.Errorf("limiter_error fields %v, want only id-3: redis down", limErrs)
	}
	if st := g.Stats(); st != (Stats{Calls: 3, Errors: 1, FirstError: "redis down"}) {
		t.Errorf("stats %+v, want 3 calls, 1 error (redis down)", st)
	}
	for _, e := range es {
		if e.StartNs == 0 || e.Time.IsZero() {
			t.Errorf("line %d has no start time: %+v", e.Line, e)
		}
	}
}

func TestGatewayFailureModeDeny(t *testing.T) {
	lim := &fakeLimiter{failOn: "1.2.3.4"}
	g, log, got := startTest(t, lim, "header:x-client", func(o *Options) { o.FailureModeDeny = true; o.DenyStatus = 503 })
	resp, _ := get(t, g.URL()+"/", map[string]string{"x-client": "1.2.3.4"})
	if resp.StatusCode != 500 || resp.Header.Get(DecisionHeader) != DecisionLimiterError {
		t.Fatalf("limiter error under failure_mode_deny: %d %q, want 500 %s", resp.StatusCode, resp.Header.Get(DecisionHeader), DecisionLimiterError)
	}
	resp, _ = get(t, g.URL()+"/", map[string]string{"x-client": "5.6.7.8"})
	if resp.StatusCode != 503 {
		t.Fatalf("denied with deny status 503: got %d", resp.StatusCode)
	}
	if len(*got) != 0 {
		t.Errorf("backend got %d requests, want 0", len(*got))
	}
	_ = g.Close()
	es, err := envoyrec.ParseAccessLog(strings.NewReader(log.String()), "gateway.log")
	if err != nil || len(es) != 2 {
		t.Fatalf("log: %v, %d lines", err, len(es))
	}
	if envoyrec.Producer(es[0]) != envoyrec.ProducerRLSError {
		t.Errorf("limiter error logged as %s, want %s", envoyrec.Producer(es[0]), envoyrec.ProducerRLSError)
	}
}

// limiterErrors returns the limiter_error field of every access log line
// that has one, by request ID.
func limiterErrors(t *testing.T, log string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec struct {
			ID  string `json:"x_rlbench_id"`
			Err string `json:"limiter_error"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if rec.Err != "" {
			out[rec.ID] = rec.Err
		}
	}
	return out
}

// hangingLimiter never answers until release is closed (it ignores its context).
type hangingLimiter struct{ release chan struct{} }

func (h *hangingLimiter) Allow(context.Context, string, time.Time) (Decision, error) {
	<-h.release
	return Decision{Allowed: true}, nil
}

// A limiter that never answers (a Lua script in an endless loop) is a
// limiter error after the timeout, even when it ignores its context: the
// request is forwarded (fail open) or answered 500 (failure_mode_deny),
// logged with its limiter_error and counted.
func TestGatewayLimiterTimeout(t *testing.T) {
	for _, deny := range []bool{false, true} {
		lim := &hangingLimiter{release: make(chan struct{})}
		g, log, got := startTest(t, lim, "client", func(o *Options) { o.LimiterTimeout = time.Millisecond; o.FailureModeDeny = deny })
		resp, _ := get(t, g.URL()+"/", map[string]string{evidence.IDHeader: "id-1"})
		want := 200
		if deny {
			want = 500
		}
		if resp.StatusCode != want {
			t.Errorf("deny=%v: %d, want %d", deny, resp.StatusCode, want)
		}
		_ = g.Close()
		close(lim.release)
		if errs := limiterErrors(t, log.String()); !strings.Contains(errs["id-1"], "no answer within the timeout 1ms") {
			t.Errorf("deny=%v: limiter_error %v, want the timeout", deny, errs)
		}
		if st := g.Stats(); st.Calls != 1 || st.Errors != 1 || !strings.Contains(st.FirstError, "timeout") {
			t.Errorf("deny=%v: stats %+v, want 1 of 1 failed (timeout)", deny, st)
		}
		if n := len(*got); n != map[bool]int{false: 1, true: 0}[deny] {
			t.Errorf("deny=%v: backend got %d", deny, n)
		}
	}
}

func TestGatewayKeys(t *testing.T) {
	for _, tc := range []struct {
		key, want string
	}{
		{"client", "127.0.0.1"},
		{"route", "/a/b"},
		{"header:X-Tenant", "t1"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			lim := &fakeLimiter{allow: map[string]bool{tc.want: true}}
			g, _, _ := startTest(t, lim, tc.key, nil)
			resp, _ := get(t, g.URL()+"/a/b?x=1", map[string]string{"x-tenant": "t1"})
			if resp.StatusCode != 200 || len(lim.keys) != 1 || lim.keys[0] != tc.want {
				t.Fatalf("key %s: status %d, limiter keys %v, want [%s]", tc.key, resp.StatusCode, lim.keys, tc.want)
			}
		})
	}
}

func TestGatewayLimiterGetsClock(t *testing.T) {
	lim := &fakeLimiter{allow: map[string]bool{"/": true}}
	base := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	g, log, _ := startTest(t, lim, "route", nil)
	get(t, g.URL()+"/", nil)
	_ = g.Close()
	// the clock: start (base), the limiter's now (base+1ms), the forward, the end
	if len(lim.nows) != 1 || !lim.nows[0].Equal(base.Add(time.Millisecond)) {
		t.Fatalf("limiter now %v, want %v", lim.nows, base.Add(time.Millisecond))
	}
	es, _ := envoyrec.ParseAccessLog(strings.NewReader(log.String()), "gateway.log")
	if len(es) != 1 || es[0].StartNs != base.UnixNano() || es[0].LocalNs != base.Add(time.Millisecond).UnixNano() ||
		es[0].UpstreamStartNs != base.Add(2*time.Millisecond).UnixNano() {
		t.Fatalf("log times %+v, want start base, local base+1ms, upstream base+2ms", es)
	}
}

func TestParseKey(t *testing.T) {
	for _, s := range []string{"client", "route", "header:x-user"} {
		k, err := ParseKey(s)
		if err != nil || k.String() != s {
			t.Errorf("ParseKey(%q) = %v, %v; String %q", s, k, err, k.String())
		}
	}
	for _, s := range []string{"", "header:", "header:a b", "ip", "Client"} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q): no error", s)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{Name: "g", Upstreams: []string{"http://127.0.0.1:1"}, Limiter: &fakeLimiter{}, Key: Key{Kind: KeyClient}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Options){
		"no name":     func(o *Options) { o.Name = "" },
		"no limiter":  func(o *Options) { o.Limiter = nil },
		"no upstream": func(o *Options) { o.Upstreams = nil },
		"bad url":     func(o *Options) { o.Upstreams = []string{"grpc://x"} },
		"bad key":     func(o *Options) { o.Key = Key{Kind: "ip"} },
		"bad status":  func(o *Options) { o.DenyStatus = 200 },
	} {
		o := ok
		mod(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestGatewayCloseLogsInFlight: a request still forwarded when Close's
// grace ends is cut off, and its access log line is written before Close
// returns (nothing is written to the log after).
func TestGatewayCloseLogsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer be.Close()
	defer close(release)
	log := &syncBuffer{}
	g, err := Start(context.Background(), Options{Name: "gateway", Upstreams: []string{be.URL}, Limiter: &fakeLimiter{allow: map[string]bool{"/slow": true}}, Key: Key{Kind: KeyRoute},
		AccessLog: log})
	if err != nil {
		t.Fatal(err)
	}
	g.grace = time.Millisecond
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get(g.URL() + "/slow")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived
	if err := g.Close(); err == nil {
		t.Log("Close: no error (the server ended within the grace)")
	}
	lines := strings.Count(log.String(), "\n")
	if lines != 1 {
		t.Fatalf("%d access log lines when Close returned, want 1 (the cut-off request):\n%s", lines, log.String())
	}
	<-done
	if got := strings.Count(log.String(), "\n"); got != 1 {
		t.Fatalf("%d lines after the client ended, want 1", got)
	}
}
