package proxy

import (
	"bufio"
	crand "crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/internal/lab/h1"
)

// The downstream side is a plain HTTP/1.1 server on net/http's wire code
// (h1.RequestReader, which is http.ReadRequest's result for parsing and
// body framing; httputil's chunked writer): one goroutine per connection reads a request, runs the filters
// and the router in that goroutine, and writes the response into a
// buffered writer flushed when no pipelined request is waiting. No
// goroutine, timer or header map is created per request on the way.

// dsConn is one downstream connection.
type dsConn struct {
	p        *Proxy
	c        net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	rr       *h1.RequestReader
	tc       *h1.TurnConn
	remoteIP string // peer IP, %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%
	alogBuf  []byte // the access log line being encoded (writeAccessLog)
	limiter  *localLimiter
}

var cpPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (p *Proxy) serve() {
	defer close(p.served)
	p.conns.Serve(p.ln, func(c net.Conn) net.Conn { return c }, p.serveConn)
}

func (p *Proxy) serveConn(c net.Conn) {
	defer c.Close()
	dc := &dsConn{p: p, c: c}
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		dc.remoteIP = ta.IP.String()
	}
	if l := p.cfg.Local; l != nil && l.PerDownstreamConnection {
		dc.limiter = newLocalLimiter(l, p.clock.Now())
	}
	var release func()
	dc.tc = h1.NewTurnConn(c)
	dc.br, dc.bw, release = h1.Buffers(dc.tc, dc.tc)
	defer release()
	dc.rr = h1.NewRequestReader(dc.br)
	for {
		req, err := dc.rr.Read()
		if err != nil {
			if dc.tc.DeferredWriteErr() != nil {
				return // the last response did not go: a failed flush
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !h1.ConnGone(err) {
				// A malformed request: Envoy's codec answers 400 and closes.
				h1.CloseReply(dc.bw, http.StatusBadRequest)
				_ = dc.bw.Flush()
			}
			return
		}
		keep := p.handle(dc, req)
		if !keep {
			_ = dc.bw.Flush()
			return
		}
		if dc.br.Buffered() == 0 {
			// The response goes with the next read (h1.TurnConn).
			dc.tc.DeferNextWrite()
			if err := dc.bw.Flush(); err != nil {
				return
			}
		}
	}
}

// reqState is one request's state as it passes the filters and the router
// (Envoy's StreamInfo plus what the filters keep for encodeHeaders).
type reqState struct {
	dc       *dsConn
	req      *http.Request
	start    time.Time
	arrived  time.Time // wall clock at arrival, when max_stream_duration is set: it counts from here
	code     int
	flags    flagSet
	details  string
	upHost   string
	attempts int
	sent     int64 // response body bytes
	recv     int64 // request body bytes
	extra    []hdr // response headers added by the filters (x-ratelimit-*, RLS headers)
	rlBucket *bucket
	closeDS  bool   // close the downstream connection after this response
	reqID    string // x-request-id
	genID    bool   // reqID was generated (the request had none)
	body     []byte // the request body, buffered when a retry policy may resend it
	retry    retryState
	// The access log's limiter and forward times (AccessLogEntry), unix ns
	// on the proxy's Clock; 0 until the request gets there.
	localNs, rlsStartNs, rlsEndNs, upstreamStartNs int64
}

type hdr struct{ k, v string }

var rsPool = sync.Pool{New: func() any { return new(reqState) }}

// handle runs one request and writes its response; it reports whether the
// connection may carry another request.
func (p *Proxy) handle(dc *dsConn, req *http.Request) bool {
	p.inflight.RLock()
	defer p.inflight.RUnlock()
	rs := rsPool.Get().(*reqState)
	*rs = reqState{dc: dc, req: req, start: p.clock.Now(), extra: rs.extra[:0]}
	if p.cfg.MaxStreamDuration > 0 {
		rs.arrived = time.Now() // read only for max_stream_duration
	}
	p.st.dsTotal.inc()
	p.st.dsActive.v.Add(1)
	if req.Close || (req.ProtoMajor == 1 && req.ProtoMinor == 0 && !strings.EqualFold(req.Header.Get("Connection"), "keep-alive")) {
		rs.closeDS = true
	}
	// Envoy's connection manager generates x-request-id when absent
	// (generate_request_id defaults to true).
	if vs := req.Header["X-Request-Id"]; len(vs) > 0 {
		rs.reqID = vs[0]
	} else {
		rs.reqID, rs.genID = newRequestID(), true
	}
	p.process(rs)
	// Drain what the response did not consume so that the next request on
	// this connection starts at a request line (as net/http's server does).
	if req.Body != nil && req.Body != http.NoBody {
		n, err := io.CopyN(io.Discard, req.Body, 256<<10)
		rs.recv += n
		if err == nil {
			rs.closeDS = true
		}
	}
	p.st.dsActive.dec()
	p.st.dsCompleted.inc()
	if c := rs.code / 100; c >= 1 && c <= 5 {
		p.st.dsClass[c].inc()
	}
	if p.alog != nil {
		p.writeAccessLog(rs)
	}
	keep := !rs.closeDS
	rs.dc, rs.req, rs.body, rs.rlBucket = nil, nil, nil, nil
	rsPool.Put(rs)
	return keep
}

// newRequestID returns a random UUID v4 string.
func newRequestID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	j := 0
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hexDigits[x>>4], hexDigits[x&0xf]
		j += 2
	}
	return string(out[:])
}

// xRateLimitLocal adds the local filter's DRAFT_VERSION_03 headers for the
// bucket that decided, read when the response is sent (Envoy
// local_ratelimit.cc encodeHeaders reads the bucket context then).
func (p *Proxy) xRateLimitLocal(w *bufio.Writer, rs *reqState) {
	if rs.rlBucket == nil {
		return
	}
	limit, remaining, reset := rs.rlBucket.headers(p.clock.Now())
	h1.HeaderInt(w, "X-Ratelimit-Limit", int64(limit))
	h1.HeaderInt(w, "X-Ratelimit-Remaining", int64(remaining))
	h1.HeaderInt(w, "X-Ratelimit-Reset", reset)
}

// localReply sends an Envoy local reply (sendLocalReply): text/plain body
// (no content-type when empty), the filters' extra headers, and the given
// code, body, flag and details.
func (p *Proxy) localReply(rs *reqState, code int, body string, f respFlag, details string, more ...hdr) {
	w := rs.dc.bw
	h1.StatusLine(w, code)
	if body != "" {
		h1.Header(w, "Content-Type", "text/plain")
	}
	h1.HeaderInt(w, "Content-Length", int64(len(body)))
	h1.Header(w, "Date", h1.Date(p.clock.Now()))
	h1.Header(w, "Server", "envoy")
	p.xRateLimitLocal(w, rs)
	for _, h := range rs.extra {
		h1.Header(w, h.k, h.v)
	}
	for _, h := range more {
		h1.Header(w, h.k, h.v)
	}
	if rs.closeDS {
		h1.Header(w, "Connection", "close")
	}
	_, _ = w.WriteString("\r\n")
	if rs.req.Method != http.MethodHead {
		_, _ = w.WriteString(body)
		rs.sent = int64(len(body))
	}
	rs.code = code
	rs.flags.add(f)
	rs.details = details
}

// hop-by-hop headers never forwarded (RFC 9110 7.6.1).
var hopHeaders = map[string]bool{"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true}

// connectionListed reports whether the Connection header of h names k (a
// canonical key): one of its comma-separated fields canonicalizes to k. A
// field that does not equal k up to case cannot, so only those are
// canonicalized (http.CanonicalHeaderKey allocates for a field that is not
// canonical already, e.g. "keep-alive").
func connectionListed(h http.Header, k string) bool {
	for _, v := range h["Connection"] {
		for v != "" {
			f, rest, _ := strings.Cut(v, ",")
			v = rest
			if f = strings.TrimSpace(f); strings.EqualFold(f, k) && http.CanonicalHeaderKey(f) == k {
				return true
			}
		}
	}
	return false
}

// writeUpstreamResponse forwards the upstream response head and body to
// the client; it returns false if the upstream body failed midway (the
// downstream connection is then closed: the response was cut).
func (p *Proxy) writeUpstreamResponse(rs *reqState, resp *http.Response, serviceMs int64, attemptHeader bool) (bodyOK bool) {
	w := rs.dc.bw
	h1.StatusLine(w, resp.StatusCode)
	hasConn := len(resp.Header["Connection"]) > 0
	for k, vs := range resp.Header {
		if hopHeaders[k] || k == "Content-Length" || k == "Server" || k == "Date" || (hasConn && connectionListed(resp.Header, k)) {
			continue
		}
		for _, v := range vs {
			h1.Header(w, k, v)
		}
	}
	if d := resp.Header["Date"]; len(d) > 0 {
		h1.Header(w, "Date", d[0])
	} else {
		h1.Header(w, "Date", h1.Date(p.clock.Now()))
	}
	h1.Header(w, "Server", "envoy")
	h1.HeaderInt(w, "X-Envoy-Upstream-Service-Time", serviceMs)
	if attemptHeader {
		h1.HeaderInt(w, "X-Envoy-Attempt-Count", int64(rs.attempts))
	}
	p.xRateLimitLocal(w, rs)
	for _, h := range rs.extra {
		h1.Header(w, h.k, h.v)
	}
	noBody := rs.req.Method == http.MethodHead || !h1.BodyAllowed(resp.StatusCode)
	chunked := false
	switch {
	case noBody:
		if resp.ContentLength >= 0 && rs.req.Method == http.MethodHead {
			h1.HeaderInt(w, "Content-Length", resp.ContentLength)
		}
	case resp.ContentLength >= 0:
		h1.HeaderInt(w, "Content-Length", resp.ContentLength)
	case rs.req.ProtoAtLeast(1, 1):
		h1.Header(w, "Transfer-Encoding", "chunked")
		chunked = true
	default:
		rs.closeDS = true // HTTP/1.0 without a length: the close ends the body
	}
	if rs.closeDS {
		h1.Header(w, "Connection", "close")
	}
	_, _ = w.WriteString("\r\n")
	rs.code = resp.StatusCode
	if noBody {
		_, err := io.Copy(io.Discard, resp.Body)
		return err == nil
	}
	bp := cpPool.Get().(*[]byte)
	defer cpPool.Put(bp)
	var dst io.Writer = w
	var cw io.WriteCloser
	if chunked {
		cw = httputil.NewChunkedWriter(w)
		dst = cw
	}
	// resp.Body is net/http's body or h1's (neither is an io.WriterTo; a
	// NoBody's WriteTo copies nothing): no wrapper, which would be
	// allocated per response.
	n, err := io.CopyBuffer(dst, resp.Body, *bp)
	rs.sent = n
	if cw != nil {
		_ = cw.Close()
		_, _ = w.WriteString("\r\n")
	}
	if err != nil {
		rs.closeDS = true
		return false
	}
	return true
}
