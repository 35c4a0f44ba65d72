package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/testfix"
)

type syncBuf = testfix.SyncBuffer

func startBackend(t *testing.T) *backend.Backend {
	t.Helper()
	b, err := backend.Start(t.Context(), backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func startProxy(t testing.TB, cfg Config) *Proxy {
	t.Helper()
	p, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

type result struct {
	code   int
	body   string
	header http.Header
}

func do(t *testing.T, method, url string, hdr map[string]string) result {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return result{resp.StatusCode, string(b), resp.Header}
}

func get(t *testing.T, url string) string {
	t.Helper()
	r := do(t, "GET", url, nil)
	if r.code != 200 {
		t.Fatalf("GET %s: %d %s", url, r.code, r.body)
	}
	return r.body
}

var textLine = regexp.MustCompile(`^([^\s:][^:]*?): (.*)$`)

// textStats parses Envoy /stats text into name -> raw value.
func textStats(t *testing.T, p *Proxy) map[string]string {
	t.Helper()
	body := get(t, p.AdminURL()+"/stats")
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	var prev string
	for sc.Scan() {
		m := textLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("/stats line %q does not parse", sc.Text())
		}
		out[m[1]] = m[2]
		_ = prev
	}
	return out
}

// textCounter returns an integer stat from /stats text, -1 if absent.
func textCounter(m map[string]string, name string) int64 {
	v, ok := m[name]
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -2
	}
	return n
}

func jsonStats(t *testing.T, p *Proxy) map[string]any {
	t.Helper()
	var doc struct {
		Stats []map[string]any `json:"stats"`
	}
	if err := json.Unmarshal([]byte(get(t, p.AdminURL()+"/stats?format=json")), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, e := range doc.Stats {
		if n, ok := e["name"].(string); ok {
			out[n] = e["value"]
		}
	}
	return out
}

var promLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$`)

// promStats parses Prometheus text into "name{labels}" -> value and checks
// every series follows a # TYPE line for its family.
func promStats(t *testing.T, url string) map[string]float64 {
	t.Helper()
	body := get(t, url)
	out := map[string]float64{}
	typed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		if strings.HasPrefix(l, "# TYPE ") {
			f := strings.Fields(l)
			if len(f) != 4 || (f[3] != "counter" && f[3] != "gauge") {
				t.Fatalf("bad TYPE line %q", l)
			}
			typed[f[2]] = true
			continue
		}
		m := promLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("prometheus line %q does not parse", l)
		}
		if !typed[m[1]] {
			t.Fatalf("series %q has no # TYPE line before it", l)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatal(err)
		}
		out[m[1]+"{"+m[2]+"}"] = v
	}
	return out
}

// fixture returns the bytes of a fixture, preferring testdata/ and falling
// back to <repo>/../shared/fixtures/envoy (see testfix.ReadFixture).
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	return testfix.ReadFixture(t, "envoy", name)
}

func pct(v float64) *float64 { return &v }

func must(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Errorf(format, args...)
	}
}

var _ = fmt.Sprintf

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func httptestRequest(remote string, hdr map[string]string) *http.Request {
	r, _ := http.NewRequest("GET", "http://lab/x", nil)
	r.RemoteAddr = remote
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	return r
}

func remoteIPOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return host
}

// testClock is a Clock whose time moves only by Advance, which runs the
// AfterFunc callbacks that fall due (in time order, in the caller's
// goroutine), so back-offs and outlier sweeps happen exactly when a test
// says.
type testClock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*testTimer
}

type testTimer struct {
	at   time.Time
	f    func()
	done bool
}

func newTestClock() *testClock { return &testClock{t: time.Unix(1796031180, 0)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &testTimer{at: c.t.Add(d), f: f}
	c.timers = append(c.timers, tm)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if tm.done {
			return false
		}
		tm.done = true
		return true
	}
}

// Advance moves the clock by d, firing due timers one by one.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.t.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *testTimer
		for _, tm := range c.timers {
			if !tm.done && !tm.at.After(end) && (next == nil || tm.at.Before(next.at)) {
				next = tm
			}
		}
		if next == nil {
			c.t = end
			c.mu.Unlock()
			return
		}
		next.done = true
		if next.at.After(c.t) {
			c.t = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// scripted is an upstream whose handler a test writes; it records the
// x-envoy-attempt-count of every request it receives.
type scripted struct {
	srv      *httptest.Server
	n        atomic.Int64
	mu       sync.Mutex
	attempts []string
}

func newScripted(t testing.TB, h func(n int64, w http.ResponseWriter, r *http.Request)) *scripted {
	t.Helper()
	s := &scripted{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.n.Add(1)
		s.mu.Lock()
		s.attempts = append(s.attempts, r.Header.Get("X-Envoy-Attempt-Count"))
		s.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		h(n, w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) URL() string  { return s.srv.URL }
func (s *scripted) Addr() string { return strings.TrimPrefix(s.srv.URL, "http://") }
func (s *scripted) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.attempts...)
}

// resetConn closes the request's connection with an RST after the request
// was read: no response at all.
func resetConn(w http.ResponseWriter) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// accessLog flushes p's access log and parses buf's lines.
func accessLog(t *testing.T, p *Proxy, buf *syncBuf) []AccessLogEntry {
	t.Helper()
	if err := p.FlushAccessLog(); err != nil {
		t.Fatal(err)
	}
	var out []AccessLogEntry
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var e AccessLogEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("access log line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// waitFor polls cond (bounded) until it holds: a condition the test waits
// on, not a sleep standing in for one.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

func u32(v uint32) *uint32 { return &v }

// deadAddr returns a 127.0.0.1 address that was free a moment ago: nothing
// listens there (connections are refused).
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// hanging is an upstream that never answers (until its request or the
// test ends).
func hanging(t *testing.T) *scripted {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
}
