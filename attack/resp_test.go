package attack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// fastVsNetHTTP reads data with readFastHead/readFastBody and with
// http.ReadResponse, and fails t when the fast path accepted a response
// that net/http reads differently (code, status, close, captured headers,
// body, what is left on the wire) or reported an error net/http does not.
// It returns whether the fast path took the response.
func fastVsNetHTTP(t *testing.T, data []byte) bool {
	t.Helper()
	// On a connection the server may send nothing more until the next
	// request: when net/http decides (a response or an error) from data
	// alone, the fast path must not wait for more either.
	nr := &stallReader{data: data}
	http.ReadResponse(bufio.NewReaderSize(nr, 4096), &http.Request{Method: http.MethodGet})
	if !nr.stalled {
		fr := &stallReader{data: data}
		var f fastResp
		f.readFastHead(bufio.NewReaderSize(fr, 4096), nil)
		if fr.stalled {
			t.Fatalf("%q: the fast path waits for bytes net/http does not need", data)
		}
	}
	var f fastResp
	br := bufio.NewReaderSize(bytes.NewReader(data), 4096)
	ok, ferr := f.readFastHead(br, func([]byte) bool { return true })
	nbr := bufio.NewReaderSize(bytes.NewReader(data), 4096)
	resp, nerr := http.ReadResponse(nbr, &http.Request{Method: http.MethodGet})
	if ferr != nil {
		if ok {
			t.Fatalf("%q: ok and error %v", data, ferr)
		}
		if nerr == nil || nerr.Error() != ferr.Error() {
			t.Fatalf("%q: fast error %v, net/http %v", data, ferr, nerr)
		}
		return false
	}
	if !ok {
		// Nothing consumed: net/http reads from the same first byte.
		if br.Buffered() > 0 {
			b, _ := br.Peek(br.Buffered())
			if !bytes.HasPrefix(data, b) {
				t.Fatalf("%q: fallback left %q buffered", data, b)
			}
		}
		return false
	}
	if nerr != nil {
		t.Fatalf("%q: fast path took a response net/http refuses: %v", data, nerr)
	}
	if resp.StatusCode != f.code || resp.Status != string(f.status) || resp.Close != f.close {
		t.Fatalf("%q: fast %d %q close=%v, net/http %d %q close=%v", data, f.code, f.status, f.close, resp.StatusCode, resp.Status, resp.Close)
	}
	want := map[string]string{}
	for k, vs := range resp.Header {
		want[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	got := map[string]string{}
	for _, c := range f.caps {
		if v, dup := got[string(c.name)]; dup {
			got[string(c.name)] = v + ", " + string(c.value)
		} else {
			got[string(c.name)] = string(c.value)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%q: fast headers %q, net/http %q", data, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%q: header %s: fast %q, net/http %q", data, k, got[k], v)
		}
	}
	keep := make([]byte, 8)
	k, n, berr := f.readFastBody(br, keep)
	nbody, nberr := io.ReadAll(resp.Body)
	if (berr == nil) != (nberr == nil) || (berr != nil && !errors.Is(berr, io.ErrUnexpectedEOF)) || (nberr != nil && !errors.Is(nberr, io.ErrUnexpectedEOF)) {
		t.Fatalf("%q: body errors: fast %v, net/http %v", data, berr, nberr)
	}
	if int(n) != len(nbody) || !bytes.Equal(keep[:k], nbody[:min(len(nbody), 8)]) {
		t.Fatalf("%q: body: fast %d bytes %q, net/http %q", data, n, keep[:k], nbody)
	}
	if berr == nil {
		rest, _ := io.ReadAll(br)
		nrest, _ := io.ReadAll(nbr)
		if !bytes.Equal(rest, nrest) {
			t.Fatalf("%q: left on the wire: fast %q, net/http %q", data, rest, nrest)
		}
	}
	return true
}

var fastHeadSeeds = []struct {
	resp string
	fast bool
}{
	{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n", true},
	// Envoy's local rate limit rejection (local_ratelimit filter).
	{"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 18\r\ncontent-type: text/plain\r\nx-envoy-ratelimited: true\r\nx-ratelimit-limit: 5\r\nx-ratelimit-remaining: 0\r\ndate: Tue, 01 Dec 2026 15:00:00 GMT\r\nserver: envoy\r\n\r\nlocal_rate_limited", true},
	{"HTTP/1.1 503 Service Temporarily Unavailable\r\nServer: nginx\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", true},
	{"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\nHTTP/1.1", true},
	{"HTTP/1.1 200\r\nContent-Length: 2\r\nX-A: 1\r\nx-a:  2 \r\n\r\nhi", true},
	{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", true},
	{"HTTP/1.1 200 OK\r\nContent-Length: 007\r\n\r\n1234567", true},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false},
	{"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false},
	{"HTTP/1.1 204 No Content\r\n\r\n", false},
	{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", false},
	{"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n", false},
	{"HTTP/1.1 200 OK\nContent-Length: 0\n\n", false},
	// Bare LF line ends with nothing after the head (the server waits for
	// the next request): net/http reads it at once, so must the fast path.
	{"HTTP/1.1 200 OK\r\nContent-Length: 0\n\n", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n", false},
	{"HTTP/1.1 200 OK\r\nBad Name: x\r\n", false},
	{"garbage\r\n", false},
	{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", false},
	{"HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n", false},
	{"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", false},
	{"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n", false},
	{"HTTP/1.1 200 OK\r\n\r\n", false},
	{"", false},
	{"garbage\r\n\r\n", false},
}

// stallReader returns data, then errStall: the reader would have had to
// wait for more (stalled).
type stallReader struct {
	data    []byte
	stalled bool
}

var errStall = errors.New("stall: waiting for more bytes")

func (r *stallReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		r.stalled = true
		return 0, errStall
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestFastHeadAgreesWithNetHTTP(t *testing.T) {
	for _, s := range fastHeadSeeds {
		if got := fastVsNetHTTP(t, []byte(s.resp)); got != s.fast {
			t.Errorf("%q: fast path %v, want %v", s.resp, got, s.fast)
		}
	}
}

// TestFastHeadLongHead: a head longer than the reader's buffer goes to
// net/http, unconsumed.
func TestFastHeadLongHead(t *testing.T) {
	data := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 5000) + "\r\nContent-Length: 0\r\n\r\n"
	if fastVsNetHTTP(t, []byte(data)) {
		t.Fatal("a 5 KB head took the fast path")
	}
}

// TestFastHeadSplitReads: a head arriving a byte at a time is still read
// on the fast path (readFastHead waits for the blank line).
func TestFastHeadSplitReads(t *testing.T) {
	data := fastHeadSeeds[1].resp
	var f fastResp
	br := bufio.NewReaderSize(io.MultiReader(byteReaders(data)...), 4096)
	ok, err := f.readFastHead(br, func(n []byte) bool { return bytes.HasPrefix(n, []byte("x-ratelimit-")) })
	if !ok || err != nil || f.code != 429 || len(f.caps) != 2 || string(f.caps[1].value) != "0" {
		t.Fatalf("ok %v err %v code %d caps %q", ok, err, f.code, f.caps)
	}
}

func byteReaders(s string) []io.Reader {
	rs := make([]io.Reader, len(s))
	for i := range s {
		rs[i] = strings.NewReader(s[i : i+1])
	}
	return rs
}

func TestFastHeadAllocs(t *testing.T) {
	data := []byte(fastHeadSeeds[1].resp)
	var f fastResp
	rd := bytes.NewReader(data)
	br := bufio.NewReaderSize(rd, 4096)
	keep := make([]byte, 64)
	capt := func(n []byte) bool { return string(n) == "x-ratelimit-limit" }
	allocs := testing.AllocsPerRun(100, func() {
		rd.Reset(data)
		br.Reset(rd)
		if ok, _ := f.readFastHead(br, capt); !ok {
			t.Fatal("not fast")
		}
		if _, _, err := f.readFastBody(br, keep); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per response", allocs)
	}
}

func FuzzFastHead(f *testing.F) {
	for _, s := range fastHeadSeeds {
		f.Add([]byte(s.resp))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fastVsNetHTTP(t, data)
	})
}

// TestHeadInAgreesWithReadFastHead: headIn (the event loop's parse of the
// bytes received so far) decides as readFastHead over a reader holding the
// same bytes and then nothing more, for every prefix of every seed: a head
// (same length, code, status, close, length, captured headers), wait for
// more bytes (readFastHead stalls), or net/http; and a head read again from
// the memo (the previous head's bytes) or after another head is the same.
func TestHeadInAgreesWithReadFastHead(t *testing.T) {
	capt := func(n []byte) bool { return bytes.HasPrefix(n, []byte("x-ratelimit-")) }
	summary := func(f *fastResp) string {
		s := fmt.Sprintf("%d %q %v %d", f.code, f.status, f.close, f.length)
		for _, c := range f.caps {
			s += fmt.Sprintf(" %s=%s", c.name, c.value)
		}
		return s
	}
	var memo fastResp // reused across all calls: its memo must never answer wrongly
	resps := []string{"HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 4100) + "\r\nContent-Length: 0\r\n\r\n"}
	for _, s := range fastHeadSeeds {
		resps = append(resps, s.resp)
	}
	for _, resp := range resps {
		for k := 0; k <= len(resp); k++ {
			data := []byte(resp[:k])
			var f, g fastResp
			sr := &stallReader{data: data}
			br := bufio.NewReaderSize(sr, 4096)
			ok, err := f.readFastHead(br, capt)
			consumed := k - br.Buffered() - len(sr.data)
			for _, h := range []*fastResp{&g, &memo, &memo} {
				end, more := h.headIn(data, capt)
				switch {
				case ok:
					if end != consumed || summary(h) != summary(&f) {
						t.Fatalf("%q: headIn end %d %s, readFastHead %d %s", data, end, summary(h), consumed, summary(&f))
					}
				case sr.stalled && err == nil || errors.Is(err, errStall):
					if end != 0 || !more {
						t.Fatalf("%q: headIn end %d more %v, readFastHead waits", data, end, more)
					}
				default:
					if end != 0 || more {
						t.Fatalf("%q: headIn end %d more %v, readFastHead leaves it to net/http (err %v)", data, end, more, err)
					}
				}
			}
		}
	}
}
