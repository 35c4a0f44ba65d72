package h1

import (
	"bufio"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

var requestSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /bench?x=1&y=%20 HTTP/1.1\r\nHost: 127.0.0.1:80\r\nX-Rlbench-Id: r-1\r\nUser-Agent: t\r\n\r\n",
	"GET /p? HTTP/1.1\r\nhost: a\r\nx-request-id:  abc \t\r\nAccept: */*\r\n\r\nGET /2 HTTP/1.1\r\nHost: b\r\n\r\n",
	"POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n",
	"POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\nhello",
	"POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	"POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n",
	"GET / HTTP/1.0\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.1\r\nX-A: 1\r\nX-A: 2\r\nx-a: 3\r\n\r\n",
	"GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",
	"GET /a%2Fb HTTP/1.1\r\n\r\n",
	"GET /a(b)!*' HTTP/1.1\r\n\r\n",
	"GET //x/../y;p=1:@$&+,= HTTP/1.1\r\n\r\n",
	"GET /q?a#b HTTP/1.1\r\n\r\n",
	"CONNECT a:443 HTTP/1.1\r\n\r\n",
	"get / HTTP/1.1\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\n\n",
	"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	"GET / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx",
	"GET / HTTP/1.1\r\nPragma: no-cache\r\n\r\n",
	"GET / HTTP/1.1\r\nX-Bad: a\x01b\r\n\r\n",
	"GET / HTTP/1.1\r\nX-High: caf\xc3\xa9\r\n\r\n",
	"GET / HTTP/1.1\r\nX-Empty:\r\n\r\n",
	"GET / HTTP/1.1\r\n: nokey\r\n\r\n",
	"GET / HTTP/1.1\r\nBad Key: v\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n",
	"",
}

var responseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n",
	"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nX-Envoy-Ratelimited: true\r\n\r\n",
	"HTTP/1.1 503\r\ncontent-length: 2\r\ndate: x\r\n\r\nhiHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 06 Dec 2026 10:00:00 GMT\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n",
	"HTTP/1.1 200 OK\r\n\r\nuntil close",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nconnection: close\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
	"HTTP/1.1 20x OK\r\n\r\n",
	"HTTP/1.1 200 O\x01K\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n",
	"",
}

// reqView is what the proxy reads of a request, body and what follows
// included.
type reqView struct {
	Method, Proto, Host, RequestURI, URI string
	Major, Minor                         int
	URL                                  any
	Header                               http.Header
	ContentLength                        int64
	Close                                bool
	TE                                   []string
	Trailer                              http.Header
	Body                                 string
	BodyErr, Err                         string
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func viewRequest(req *http.Request, err error) reqView {
	if err != nil {
		return reqView{Err: err.Error()}
	}
	b, berr := io.ReadAll(req.Body)
	u := *req.URL
	return reqView{Method: req.Method, Proto: req.Proto, Host: req.Host, RequestURI: req.RequestURI, URI: req.URL.RequestURI(),
		Major: req.ProtoMajor, Minor: req.ProtoMinor, URL: u, Header: req.Header.Clone(), ContentLength: req.ContentLength,
		Close: req.Close, TE: req.TransferEncoding, Trailer: req.Trailer, Body: string(b), BodyErr: errString(berr)}
}

// compareRequests reads up to three requests from in with a
// RequestReader and with http.ReadRequest and fails on any difference; it
// returns how many took the fast path.
func compareRequests(t *testing.T, in string) (fast int) {
	rr := NewRequestReader(bufio.NewReader(strings.NewReader(in)))
	ref := bufio.NewReader(strings.NewReader(in))
	for i := 0; i < 3; i++ {
		req, err := rr.Read()
		if err == nil && req == &rr.req {
			fast++
		}
		got := viewRequest(req, err)
		want := viewRequest(http.ReadRequest(ref))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d of %q:\n got  %+v\n want %+v", i, in, got, want)
		}
		if err != nil {
			break
		}
	}
	return fast
}

type respView struct {
	Status, Proto        string
	Code, Major, Minor   int
	Header, Trailer      http.Header
	ContentLength        int64
	Close                bool
	TE                   []string
	Body, BodyErr, Err   string
	CloseErr, ReadClosed string
}

func viewResponse(resp *http.Response, err error, drain bool) respView {
	if err != nil {
		return respView{Err: err.Error()}
	}
	v := respView{Status: resp.Status, Proto: resp.Proto, Code: resp.StatusCode, Major: resp.ProtoMajor, Minor: resp.ProtoMinor,
		Header: resp.Header.Clone(), Trailer: resp.Trailer, ContentLength: resp.ContentLength, Close: resp.Close, TE: resp.TransferEncoding}
	if drain {
		b, berr := io.ReadAll(resp.Body)
		v.Body, v.BodyErr = string(b), errString(berr)
	} else {
		// Read one byte, then Close (which reads the rest).
		b := make([]byte, 1)
		n, berr := resp.Body.Read(b)
		v.Body, v.BodyErr = string(b[:n]), errString(berr)
	}
	v.CloseErr = errString(resp.Body.Close())
	_, rerr := resp.Body.Read(make([]byte, 1))
	v.ReadClosed = errString(rerr)
	return v
}

func compareResponses(t *testing.T, in string, method string) (fast int) {
	req := &http.Request{Method: method}
	rr := NewResponseReader(bufio.NewReader(strings.NewReader(in)))
	ref := bufio.NewReader(strings.NewReader(in))
	for i := 0; i < 3; i++ {
		drain := i%2 == 0
		resp, err := rr.Read(req)
		if err == nil && resp == &rr.resp {
			fast++
		}
		got := viewResponse(resp, err, drain)
		wresp, werr := http.ReadResponse(ref, req)
		want := viewResponse(wresp, werr, drain)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("response %d of %q (%s):\n got  %+v\n want %+v", i, in, method, got, want)
		}
		if err != nil {
			break
		}
	}
	return fast
}

// TestReadRequestMatchesNetHTTP: for each seed, RequestReader returns what
// http.ReadRequest returns (fields, header, body, the requests that
// follow), and the common shapes take the fast path.
func TestReadRequestMatchesNetHTTP(t *testing.T) {
	for _, in := range requestSeeds {
		compareRequests(t, in)
	}
	for _, in := range requestSeeds[:6] {
		if compareRequests(t, in) == 0 {
			t.Errorf("%q did not take the fast path", in)
		}
	}
	for _, in := range responseSeeds {
		for _, m := range []string{"GET", "HEAD", "POST"} {
			compareResponses(t, in, m)
		}
	}
	for _, in := range responseSeeds[:5] {
		if compareResponses(t, in, "GET") == 0 {
			t.Errorf("%q did not take the fast path", in)
		}
	}
}

// TestReadAllocs: a request and a response in the fast shape cost one
// allocation each (the head's string).
func TestReadAllocs(t *testing.T) {
	reqs := strings.Repeat("GET /bench?x=1 HTTP/1.1\r\nHost: 127.0.0.1:80\r\nX-Rlbench-Id: r-1\r\n\r\n", 200)
	src := strings.NewReader(reqs)
	rr := NewRequestReader(bufio.NewReader(src))
	if n := testing.AllocsPerRun(100, func() {
		if src.Len() == 0 {
			src.Reset(reqs)
		}
		if _, err := rr.Read(); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("%v allocations per request", n)
	}
	resps := strings.Repeat("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n", 200)
	rsrc := strings.NewReader(resps)
	sr := NewResponseReader(bufio.NewReader(rsrc))
	buf := make([]byte, 64)
	if n := testing.AllocsPerRun(100, func() {
		if rsrc.Len() == 0 {
			rsrc.Reset(resps)
		}
		resp, err := sr.Read(nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := io.ReadFull(resp.Body, buf[:3]); n != 3 {
			t.Fatal("short body")
		}
		_ = resp.Body.Close()
	}); n > 1 {
		t.Errorf("%v allocations per response", n)
	}
}

func FuzzReadRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { compareRequests(t, in) })
}

func FuzzReadResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, in string, head bool) {
		m := "GET"
		if head {
			m = "HEAD"
		}
		compareResponses(t, in, m)
	})
}
