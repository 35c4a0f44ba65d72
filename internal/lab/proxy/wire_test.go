package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
)

// What the upstream receives: the router's headers, the client's kept,
// hop-by-hop and the x-envoy control headers a client sends stripped.
func TestUpstreamRequestHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	up := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("Host", r.Host)
		h.Set("X-Test-Body", r.Method)
		got <- h
		w.Header().Set("Connection", "x-drop")
		w.Header().Set("X-Drop", "1")
		w.Header().Set("Server", "backend")
		w.Header().Set("X-Kept", "k")
		_, _ = w.Write([]byte("ok"))
	})
	// The route timeout is told upstream in ms; it is a minute, which the
	// answer does not wait for on a loaded host either.
	p := startProxy(t, Config{Upstream: up.URL(), UpstreamTimeout: 60000 * 1e6})
	r := do(t, "GET", p.URL()+"/a/b?q=1", map[string]string{"X-Forwarded-For": "1.2.3.4", "Connection": "x-secret", "X-Secret": "s",
		"X-Envoy-Max-Retries": "5", "X-Custom": "c"})
	h := <-got
	must(t, h.Get("X-Forwarded-For") == "1.2.3.4, 127.0.0.1", "xff %q", h.Get("X-Forwarded-For"))
	must(t, h.Get("X-Forwarded-Proto") == "http" && h.Get("X-Envoy-Expected-Rq-Timeout-Ms") == "60000", "router headers %v", h)
	must(t, h.Get("X-Secret") == "" && h.Get("X-Envoy-Max-Retries") == "" && h.Get("X-Custom") == "c", "stripped/kept %v", h)
	must(t, len(h.Get("X-Request-Id")) == 36 && h.Get("X-Envoy-Attempt-Count") == "", "x-request-id %q", h.Get("X-Request-Id"))
	must(t, h.Get("Host") == p.Addr(), "host %q: the downstream :authority is kept", h.Get("Host"))
	must(t, r.code == 200 && r.header.Get("X-Drop") == "" && r.header.Get("X-Kept") == "k" && r.header.Get("Server") == "envoy" &&
		r.header.Get("X-Envoy-Upstream-Service-Time") != "" && r.header.Get("Date") != "", "response headers %v", r.header)
}

// Bodies in both directions, chunked and sized, and HEAD, over one
// keep-alive connection (the next request must start at a request line).
func TestBodiesAndKeepAlive(t *testing.T) {
	up := newScripted(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if r.Method == "HEAD" {
			w.Header().Set("Content-Length", "5")
			return
		}
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no length: chunked
		}
		_, _ = io.WriteString(w, strings.Repeat("z", 100))
	})
	var alog syncBuf
	p := startProxy(t, Config{Upstream: up.URL(), AccessLog: &alog, Retry: fastRetry("5xx", 1)})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	send := func(raw string) *http.Response {
		t.Helper()
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		req, _ := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := send("POST /sized HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
	b, _ := io.ReadAll(resp.Body)
	must(t, resp.StatusCode == 200 && len(b) == 100, "sized %d %d", resp.StatusCode, len(b))
	resp = send("POST /chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	b, _ = io.ReadAll(resp.Body)
	must(t, resp.StatusCode == 200 && len(b) == 100 && len(resp.TransferEncoding) == 1, "chunked %d %d %v", resp.StatusCode, len(b), resp.TransferEncoding)
	resp = send("HEAD /h HTTP/1.1\r\nHost: h\r\n\r\n")
	b, _ = io.ReadAll(resp.Body)
	must(t, resp.StatusCode == 200 && len(b) == 0 && resp.ContentLength == 5, "head %d %d %d", resp.StatusCode, len(b), resp.ContentLength)
	resp = send("GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	_, _ = io.ReadAll(resp.Body)
	must(t, resp.Close, "Connection: close not honored")
	log := accessLog(t, p, &alog)
	must(t, len(log) == 4 && log[0].BytesReceived == 5 && log[1].BytesReceived == 3 && log[0].BytesSent == 100, "log %+v", log)
}

// The flags come out in the order they were set, joined by ",".
func TestFlagSetOrder(t *testing.T) {
	var f flagSet
	must(t, f.String() == "-", "empty %q", f.String())
	f.add(flagURX)
	f.add(flagUC)
	f.add(flagURX)
	must(t, f.String() == "URX,UC", "order %q", f.String())
}

func randString(r *rand.Rand) string {
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "<", ">", "&", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "é", "\u2028", "\u2029", "😀", "\xff", "\xc3"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// appendAccessLog writes exactly encoding/json's bytes.
func TestAppendAccessLogMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		e := AccessLogEntry{StartTime: randString(r), StartNs: r.Int64() - r.Int64(), Method: randString(r), Path: randString(r), Protocol: randString(r),
			ResponseCode: r.IntN(600), ResponseFlags: randString(r), ResponseCodeDetails: randString(r), BytesReceived: r.Int64N(1 << 40),
			BytesSent: r.Int64N(1 << 40), DurationMs: r.Int64N(1e6), Proxy: randString(r)}
		if i%2 == 0 {
			e.UpstreamHost, e.UpstreamRequestAttemptCount, e.RlbenchID, e.RequestID, e.ForwardedFor = randString(r), r.IntN(5), randString(r), randString(r), randString(r)
		}
		if i%3 != 0 {
			e.LocalNs, e.RLSStartNs, e.RLSEndNs, e.UpstreamStartNs = r.Int64()*int64(r.IntN(2)), r.Int64()-r.Int64(), r.Int64()*int64(r.IntN(2)), r.Int64()
		}
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendAccessLog(nil, &e); string(got) != string(want) {
			t.Fatalf("entry %+v\n got %s\nwant %s", e, got, want)
		}
	}
}

// BenchmarkAppendAccessLog measures the access log line encoder.
func BenchmarkAppendAccessLog(b *testing.B) {
	e := AccessLogEntry{StartTime: "2026-12-01T10:00:00.000Z", StartNs: 1796120255563742051, Method: "GET", Path: "/r/8", Protocol: "HTTP/1.1",
		ResponseCode: 200, ResponseFlags: "-", ResponseCodeDetails: "via_upstream", BytesSent: 12, UpstreamHost: "127.0.0.1:36919",
		UpstreamRequestAttemptCount: 1, RlbenchID: "c-8", RequestID: "2b8d6f0e-5b7e-4f0f-9c1a-0e6c2b1f1a2b", Proxy: "proxy-a"}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendAccessLog(buf[:0], &e)
	}
}

// The access log encoder allocates nothing once its buffer has room.
func TestAppendAccessLogAllocs(t *testing.T) {
	e := AccessLogEntry{StartTime: "2026-12-01T10:00:00.000Z", Method: "GET", Path: "/r/<8>", Protocol: "HTTP/1.1", ResponseCode: 503,
		ResponseFlags: "URX,UC", UpstreamHost: "127.0.0.1:1", RlbenchID: "c-8", Proxy: "proxy-a",
		StartNs: 1796120255563742051, LocalNs: 1796120255563751002, RLSStartNs: 1796120255563760003, RLSEndNs: 1796120255564760004,
		UpstreamStartNs: 1796120255564770005}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = appendAccessLog(buf[:0], &e) }); n != 0 {
		t.Fatalf("%v allocations per line", n)
	}
}

// FuzzAppendAccessLog: appendAccessLog writes exactly encoding/json's bytes
// for any field values.
func FuzzAppendAccessLog(f *testing.F) {
	f.Add("2026-12-01T10:00:00.000Z", "GET", "/r/8", "c-8\u2028\xff", int64(1796120255563742051), int64(1796120255563751002), int64(0), int64(-1), 200, 1)
	f.Fuzz(func(t *testing.T, start, method, path, id string, startNs, localNs, rlsNs, upNs int64, code, attempts int) {
		e := AccessLogEntry{StartTime: start, StartNs: startNs, Method: method, Path: path, Protocol: "HTTP/1.1", ResponseCode: code,
			ResponseFlags: method, ResponseCodeDetails: path, BytesReceived: localNs, BytesSent: upNs, DurationMs: rlsNs, UpstreamHost: path,
			UpstreamRequestAttemptCount: attempts, RlbenchID: id, RequestID: start, ForwardedFor: id, Proxy: method,
			LocalNs: localNs, RLSStartNs: rlsNs, RLSEndNs: rlsNs / 2, UpstreamStartNs: upNs}
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendAccessLog(nil, &e); string(got) != string(want) {
			t.Fatalf("entry %+v\n got %s\nwant %s", e, got, want)
		}
	})
}
