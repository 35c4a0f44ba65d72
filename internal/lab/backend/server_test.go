package backend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/testfix"
)

// wire starts a backend with opts and dials its first endpoint.
func wire(t *testing.T, opts Options) (*Backend, net.Conn, *bufio.Reader) {
	t.Helper()
	b, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return b, c, bufio.NewReader(c)
}

func readResp(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(body)
}

// expectClosed requires the server to have closed c (EOF after what br holds).
func expectClosed(t *testing.T, br *bufio.Reader) {
	t.Helper()
	b, err := br.ReadByte()
	if err == nil {
		t.Fatalf("connection still open: read %q", b)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open: %v", err)
	}
}

// TestWirePipelined: requests written back to back on one connection are
// answered in order, each with its own receipt, and the connection stays
// open.
func TestWirePipelined(t *testing.T) {
	b, c, br := wire(t, Options{})
	var req strings.Builder
	for i := range 3 {
		fmt.Fprintf(&req, "GET /p%d HTTP/1.1\r\nHost: x\r\nX-Rlbench-Id: id-%d\r\n\r\n", i, i)
	}
	if _, err := io.WriteString(c, req.String()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		resp, body := readResp(t, br, "GET")
		if resp.StatusCode != 200 || body != fmt.Sprintf(`{"id":"id-%d"}`, i) || resp.Header.Get("Content-Type") != "application/json" || resp.Close {
			t.Fatalf("response %d: %d %q %v close=%v", i, resp.StatusCode, body, resp.Header, resp.Close)
		}
		if resp.Header.Get("Date") == "" {
			t.Fatalf("response %d has no Date", i)
		}
	}
	rs := readReceipts(t, "receipts", b.Receipts())
	if len(rs) != 3 || rs[0].Path != "/p0" || rs[2].Path != "/p2" || rs[1].Remote != c.LocalAddr().String() {
		t.Fatalf("receipts %+v", rs)
	}
}

// TestWireHTTP10: an HTTP/1.0 request is answered and closed; with
// "Connection: keep-alive" it stays open and the answer says keep-alive.
func TestWireHTTP10(t *testing.T) {
	_, c, br := wire(t, Options{})
	io.WriteString(c, "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp, _ := readResp(t, br, "GET")
	if resp.StatusCode != 200 || resp.Header.Get("Connection") != "keep-alive" {
		t.Fatalf("keep-alive: %d %v", resp.StatusCode, resp.Header)
	}
	io.WriteString(c, "GET /b HTTP/1.0\r\n\r\n")
	resp, body := readResp(t, br, "GET")
	if resp.StatusCode != 200 || !resp.Close || body != `{"id":null}` {
		t.Fatalf("HTTP/1.0: %d close=%v %q", resp.StatusCode, resp.Close, body)
	}
	expectClosed(t, br)
}

// TestWireExpectContinue: a client that waits for 100 Continue gets it
// before it sends the body, and the body is read.
func TestWireExpectContinue(t *testing.T) {
	b, c, br := wire(t, Options{})
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("interim: %q %v", line, err)
	}
	if blank, _ := br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("interim head not ended: %q", blank)
	}
	io.WriteString(c, "hello")
	resp, _ := readResp(t, br, "POST")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// The connection carries the next request (the body was consumed).
	io.WriteString(c, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := readResp(t, br, "GET"); resp.StatusCode != 200 {
		t.Fatalf("next: %d", resp.StatusCode)
	}
	if rs := readReceipts(t, "receipts", b.Receipts()); len(rs) != 2 || rs[0].Method != "POST" {
		t.Fatalf("receipts %+v", rs)
	}
}

// TestWireBadRequests: a malformed request line gets 400 and an oversized
// head 431, each closing the connection and recording nothing.
func TestWireBadRequests(t *testing.T) {
	for _, tc := range []struct {
		name, req string
		code      int
	}{
		{"malformed", "GARBAGE\r\n\r\n", 400},
		{"no version", "GET /\r\n\r\n", 400},
		{"HTTP/0.9", "GET / HTTP/0.9\r\n\r\n", 505},
		{"oversized head", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", maxHeaderBytes+4096) + "\r\n\r\n", 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c, br := wire(t, Options{})
			go io.WriteString(c, tc.req) // the server may close before reading it all
			resp, _ := readResp(t, br, "GET")
			if resp.StatusCode != tc.code || !resp.Close {
				t.Fatalf("status %d close=%v, want %d and a close", resp.StatusCode, resp.Close, tc.code)
			}
			expectClosed(t, br)
			if n := b.Count(); n != 0 {
				t.Fatalf("%d receipts for a bad request", n)
			}
		})
	}
}

// TestWireBodies: HEAD has a length and no body; a 204 status has
// neither; a chunked request body is read and the connection reused; a
// body over maxDrain is answered and then the connection closes.
func TestWireBodies(t *testing.T) {
	t.Run("head", func(t *testing.T) {
		_, c, br := wire(t, Options{})
		io.WriteString(c, "HEAD /h HTTP/1.1\r\nHost: x\r\nX-Rlbench-Id: h1\r\n\r\nGET /g HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, body := readResp(t, br, "HEAD")
		if resp.StatusCode != 200 || body != "" || resp.ContentLength != int64(len(`{"id":"h1"}`)) {
			t.Fatalf("HEAD: %d length %d body %q", resp.StatusCode, resp.ContentLength, body)
		}
		if resp, body := readResp(t, br, "GET"); resp.StatusCode != 200 || body != `{"id":null}` {
			t.Fatalf("after HEAD: %d %q", resp.StatusCode, body)
		}
	})
	t.Run("204", func(t *testing.T) {
		_, c, br := wire(t, Options{Status: 204})
		io.WriteString(c, "GET /n HTTP/1.1\r\nHost: x\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n")
		for range 2 {
			resp, body := readResp(t, br, "GET")
			if resp.StatusCode != 204 || body != "" || len(resp.Header["Content-Length"]) != 0 {
				t.Fatalf("204: %d %q %v", resp.StatusCode, body, resp.Header)
			}
		}
	})
	t.Run("chunked request", func(t *testing.T) {
		b, c, br := wire(t, Options{})
		io.WriteString(c, "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n")
		for _, p := range []string{"POST", "GET"} {
			if resp, _ := readResp(t, br, p); resp.StatusCode != 200 {
				t.Fatalf("%s: %d", p, resp.StatusCode)
			}
		}
		if rs := readReceipts(t, "receipts", b.Receipts()); len(rs) != 2 || rs[1].Path != "/d" {
			t.Fatalf("receipts %+v", rs)
		}
	})
	t.Run("body over the drain limit", func(t *testing.T) {
		b, c, br := wire(t, Options{})
		n := maxDrain + maxLeftover + 64<<10
		go func() {
			fmt.Fprintf(c, "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", n)
			c.Write(bytes.Repeat([]byte("x"), n))
		}()
		resp, _ := readResp(t, br, "POST")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		expectClosed(t, br)
		if b.Count() != 1 {
			t.Fatalf("%d receipts", b.Count())
		}
	})
	t.Run("own body", func(t *testing.T) {
		_, c, br := wire(t, Options{Body: []byte("<html>hi</html>")})
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, body := readResp(t, br, "GET")
		if body != "<html>hi</html>" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("body %q type %q", body, resp.Header.Get("Content-Type"))
		}
	})
}

// TestWireControlPaths: the control paths answer on the same connection
// as recorded requests and record nothing: health, faults (PUT, then GET),
// receipts with a Range (206), and receipts over HTTP/1.0 (no chunking:
// the close ends the body).
func TestWireControlPaths(t *testing.T) {
	b, c, br := wire(t, Options{})
	io.WriteString(c, "GET /r HTTP/1.1\r\nHost: x\r\nX-Rlbench-Id: one\r\n\r\n")
	readResp(t, br, "GET")
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := readResp(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("health: %d %q", resp.StatusCode, body)
	}
	put := `{"faults":{"error_status":503}}`
	fmt.Fprintf(c, "PUT /_rlbench/faults HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(put), put)
	if resp, body := readResp(t, br, "PUT"); resp.StatusCode != 200 || !strings.Contains(body, `"error_status":503`) {
		t.Fatalf("faults: %d %q", resp.StatusCode, body)
	}
	io.WriteString(c, "GET /_rlbench/receipts HTTP/1.1\r\nHost: x\r\nRange: bytes=0-5\r\n\r\n")
	all := string(b.Receipts())
	if resp, body := readResp(t, br, "GET"); resp.StatusCode != 206 || body != all[:6] {
		t.Fatalf("range: %d %q (file %q)", resp.StatusCode, body, all)
	}
	io.WriteString(c, "GET /_rlbench/receipts HTTP/1.0\r\n\r\n")
	resp, body := readResp(t, br, "GET")
	if resp.StatusCode != 200 || body != all || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("HTTP/1.0 receipts: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if n := b.Count(); n != 1 {
		t.Fatalf("%d receipts, want the one recorded request", n)
	}
}

// TestCloseWithIdleConnections: Close returns while clients hold idle
// keep-alive connections, and they see the close.
func TestCloseWithIdleConnections(t *testing.T) {
	b, c, br := wire(t, Options{})
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	readResp(t, br, "GET")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, br)
}

// FuzzServeConn writes arbitrary bytes on a connection and half-closes
// it: the endpoint must answer with well-formed HTTP/1.1 responses (as
// http.ReadResponse reads them) and close, never hang or panic, and record
// no more receipts than it sent responses.
func FuzzServeConn(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\nX-Rlbench-Id: a\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc",
		"GET /_rlbench/receipts HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\n",
		"PUT /_rlbench/faults HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
		"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		"\r\n\r\nGET",
	} {
		f.Add([]byte(s))
	}
	b, err := Start(f.Context(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer b.Close()
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Contains(in, []byte("HEAD")) {
			t.Skip("a HEAD answer has a length and no body: its framing needs the request (TestWireBodies)")
		}
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		before := b.Count()
		go func() {
			c.Write(in)
			c.(*net.TCPConn).CloseWrite()
		}()
		br := bufio.NewReader(c)
		responses := 0
		for {
			if _, err := br.Peek(1); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("no close after %d responses", responses)
				}
				break
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("response %d: %v", responses+1, err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil && resp.StatusCode != 100 {
				t.Fatalf("response %d body: %v", responses+1, err)
			}
			if resp.StatusCode != 100 {
				responses++
			}
		}
		if got := b.Count() - before; got > responses {
			t.Fatalf("%d receipts for %d responses", got, responses)
		}
	})
}

// TestWirePipelinedNotHeldBack: the answer to a pipelined request goes
// out while the request after it is still being received or answered, as
// net/http's server flushes each answer: here the second request is held
// in its injected latency (and, on a second connection, its head is
// incomplete), and the first answer must reach the client meanwhile.
func TestWirePipelinedNotHeldBack(t *testing.T) {
	t.Run("latency of the next request", func(t *testing.T) {
		hold := make(chan time.Time)
		calls := 0
		after := func(time.Duration) <-chan time.Time {
			calls++ // one connection: the calls come one after another
			if calls == 1 {
				c := make(chan time.Time, 1)
				c <- time.Time{}
				return c
			}
			return hold
		}
		l, err := ParseLatency("uniform:1s..2s")
		if err != nil {
			t.Fatal(err)
		}
		_, c, br := wire(t, Options{After: after, Faults: Faults{Latency: l}})
		defer close(hold)
		io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\nX-Rlbench-Id: a\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nX-Rlbench-Id: b\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if resp, body := readResp(t, br, "GET"); resp.StatusCode != 200 || body != `{"id":"a"}` {
			t.Fatalf("first: %d %q", resp.StatusCode, body)
		}
	})
	t.Run("incomplete next head", func(t *testing.T) {
		_, c, br := wire(t, Options{})
		io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\nX-Rlbench-Id: a\r\n\r\nGET /b HTTP/1.1\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if resp, body := readResp(t, br, "GET"); resp.StatusCode != 200 || body != `{"id":"a"}` {
			t.Fatalf("first: %d %q", resp.StatusCode, body)
		}
		io.WriteString(c, "Host: x\r\nX-Rlbench-Id: b\r\n\r\n")
		if resp, body := readResp(t, br, "GET"); resp.StatusCode != 200 || body != `{"id":"b"}` {
			t.Fatalf("second: %d %q", resp.StatusCode, body)
		}
	})
}

// TestStartBusyNextPort: when the port of a later endpoint is taken,
// Start returns an error naming it (and frees the ports it bound) instead
// of waiting for accept loops it never started.
func TestStartBusyNextPort(t *testing.T) {
	base := testfix.FreePortSpan(t, 2)
	busy, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+1))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	type result struct {
		b   *Backend
		err error
	}
	got := make(chan result, 1)
	go func() {
		b, err := Start(t.Context(), Options{Listen: fmt.Sprintf("127.0.0.1:%d", base), Endpoints: 2})
		got <- result{b, err}
	}()
	select {
	case r := <-got:
		if r.err == nil {
			r.b.Close()
			t.Fatal("Start succeeded with the second port taken")
		}
		if !strings.Contains(r.err.Error(), fmt.Sprint(base+1)) {
			t.Fatalf("error does not name the busy port: %v", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return with the second port taken")
	}
	// The first port was released.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base))
	if err != nil {
		t.Fatalf("first port still bound: %v", err)
	}
	ln.Close()
}

// TestWireRequestChecks: requests net/http's server refuses before any
// handler runs are refused here too, and record nothing: a malformed Host
// (RFC 9112 section 3.2: 400), an Expect other than 100-continue (RFC
// 9110 section 10.1.1: 417), a transfer coding it does not know (RFC 9112
// section 6.1: 501). An empty Host and an HTTP/1.0 request without one
// are answered and recorded.
func TestWireRequestChecks(t *testing.T) {
	for _, tc := range []struct {
		name, req string
		code      int
	}{
		{"malformed Host", "GET /a HTTP/1.1\r\nHost: x y\r\n\r\n", 400},
		{"unknown expectation", "GET /a HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n", 417},
		{"unknown transfer coding", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c, br := wire(t, Options{})
			io.WriteString(c, tc.req)
			resp, _ := readResp(t, br, "GET")
			if resp.StatusCode != tc.code || !resp.Close {
				t.Fatalf("status %d close=%v, want %d and a close", resp.StatusCode, resp.Close, tc.code)
			}
			expectClosed(t, br)
			if n := b.Count(); n != 0 {
				t.Fatalf("%d receipts for a refused request", n)
			}
		})
	}
	b, c, br := wire(t, Options{})
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost:\r\nExpect: 100-continue\r\n\r\nGET /b HTTP/1.0\r\n\r\n")
	for _, p := range []string{"empty Host", "HTTP/1.0 without Host"} {
		if resp, _ := readResp(t, br, "GET"); resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
	}
	if n := b.Count(); n != 2 {
		t.Fatalf("%d receipts, want 2", n)
	}
}
