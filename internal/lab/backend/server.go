package backend

import (
	"bufio"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/h1"
)

// Each endpoint serves HTTP/1.1 itself, on net/http's wire code
// (http.ReadRequest parses a request and frames its body): one goroutine
// per connection reads a request, answers it in that goroutine into a
// buffered writer, and flushes when no pipelined request is waiting. A
// recorded request creates no goroutine, timer, header map or response
// writer of its own; the backend shares the two cores of a benchmark with
// the client it answers, and its cost shows in the client's pacing. The
// control paths (evidence.ReceiptsPath, FaultsPath, HealthPath) run net/http
// handlers on ctlWriter, a small http.ResponseWriter.

const (
	// headerTimeout bounds the reading of a request head once its first
	// byte arrived (net/http's Server.ReadHeaderTimeout); an idle
	// keep-alive connection waits without a deadline.
	headerTimeout = 10 * time.Second
	// maxHeaderBytes bounds a request head (net/http's
	// DefaultMaxHeaderBytes); a longer one is answered 431.
	maxHeaderBytes = http.DefaultMaxHeaderBytes
	// maxDrain is the most of a request body read (and discarded) so that
	// the connection can carry the next request; past it, the connection
	// closes after the answer.
	maxDrain = 1 << 20
	// maxLeftover is the most of a body a control path left unread that
	// is read after its answer (net/http's server reads 256 KB).
	maxLeftover = 256 << 10
)

// conn is one client connection of an endpoint.
type conn struct {
	ep     *endpoint
	c      net.Conn
	lr     io.LimitedReader // under br: caps a request head at maxHeaderBytes
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string      // RemoteAddr, "ip:port"
	linger bool        // a request body is left unread: close after lingering
	busy   atomic.Bool // a request is being answered (closeConns)
}

// flushReader is what a connection's requests are read from: before it
// waits on the connection for more bytes (the rest of a pipelined request
// head or body), it sends the answers written so far, so that no answer
// waits for the request after it (net/http's server flushes every answer).
// Pipelined requests already received are still answered in one write.
type flushReader struct{ cn *conn }

func (r flushReader) Read(p []byte) (int, error) {
	if r.cn.bw.Buffered() > 0 {
		if err := r.cn.bw.Flush(); err != nil {
			return 0, err
		}
	}
	return r.cn.c.Read(p)
}

// lingerFor is how long a connection closed with a request body unread
// keeps reading it after its write side closed, so that the client reads
// the answer before the reset an unread receive queue would cause
// (net/http's server waits as long, rstAvoidanceDelay).
const lingerFor = 500 * time.Millisecond

// lingeringClose half-closes c and discards what the client still sends,
// until it closes or lingerFor passes.
func (cn *conn) lingeringClose() {
	tc, ok := cn.c.(*net.TCPConn)
	if !ok {
		return
	}
	_ = tc.CloseWrite()
	_ = tc.SetReadDeadline(time.Now().Add(lingerFor))
	_, _ = io.Copy(io.Discard, tc)
}

// serve accepts connections until the listener closes.
func (ep *endpoint) serve() {
	defer close(ep.served)
	ep.conns.Serve(ep.ln, func(c net.Conn) *conn { return &conn{ep: ep, c: c} }, ep.serveConn)
}

// closeWrite is how long Close lets a request being answered write its
// answer.
const closeWrite = time.Second

// closeConns closes the listener and every idle connection, and waits for
// the connection goroutines. A connection whose request is being answered
// is not closed under it: its reads end at once (a body still arriving is
// cut), its answer may take closeWrite to leave, and its goroutine closes
// it after the answer, so an answer given before Failed closes (a 500 for
// a receipt not written) is not lost to the close it causes.
func (ep *endpoint) closeConns() error {
	err := ep.ln.Close()
	past := time.Unix(1, 0)
	ep.conns.Close(func(cn *conn) {
		if cn.busy.Load() {
			_ = cn.c.SetReadDeadline(past)
			_ = cn.c.SetWriteDeadline(time.Now().Add(closeWrite))
			return
		}
		_ = cn.c.Close()
	})
	<-ep.served
	ep.conns.Wait()
	return err
}

func (ep *endpoint) serveConn(cn *conn) {
	c := cn.c
	defer c.Close()
	cn.remote = c.RemoteAddr().String()
	cn.lr = io.LimitedReader{R: flushReader{cn}, N: math.MaxInt64}
	var release func()
	cn.br, cn.bw, release = h1.Buffers(&cn.lr, c)
	defer release()
	for {
		if _, err := cn.br.Peek(1); err != nil {
			return // closed or reset while idle
		}
		_ = c.SetReadDeadline(time.Now().Add(headerTimeout))
		cn.lr.N = maxHeaderBytes
		req, err := http.ReadRequest(cn.br)
		limited := cn.lr.N <= 0
		cn.lr.N = math.MaxInt64
		if err != nil {
			switch {
			case limited:
				h1.CloseReply(cn.bw, http.StatusRequestHeaderFieldsTooLarge)
			case unsupportedTE(err):
				// RFC 9112 section 6.1: a transfer coding the server does
				// not understand is answered 501, as net/http's server does.
				h1.CloseReply(cn.bw, http.StatusNotImplemented)
			case !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !h1.ConnGone(err) && !isTimeout(err):
				h1.CloseReply(cn.bw, http.StatusBadRequest)
			}
			if cn.bw.Flush() == nil && limited {
				// The client is likely still writing its head: linger, so
				// that it reads the 431 before a reset (as net/http's server
				// does for it).
				cn.lingeringClose()
			}
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		if req.ProtoMajor != 1 {
			// HTTP/0.x or 2.0 on this wire (as net/http's server answers).
			h1.CloseReply(cn.bw, http.StatusHTTPVersionNotSupported)
			_ = cn.bw.Flush()
			return
		}
		if code := refused(req); code != 0 {
			h1.CloseReply(cn.bw, code)
			_ = cn.bw.Flush()
			return
		}
		req.RemoteAddr = cn.remote
		cn.busy.Store(true)
		if !ep.handle(cn, req) || ep.conns.Closing() {
			// Flushed while still busy: closeConns leaves the connection
			// to this goroutine until the answer is out.
			err := cn.bw.Flush()
			cn.busy.Store(false)
			if err == nil && cn.linger && !ep.conns.Closing() {
				cn.lingeringClose()
			}
			return
		}
		cn.busy.Store(false)
		if cn.br.Buffered() == 0 {
			if err := cn.bw.Flush(); err != nil {
				return
			}
		}
	}
}

// unsupportedTE reports http.ReadRequest's error for a Transfer-Encoding
// other than chunked (net/http's unsupportedTEError, unexported: its
// messages, net/http/transfer.go).
func unsupportedTE(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unsupported transfer encoding") || strings.HasPrefix(s, "too many transfer encodings")
}

// refused is the status net/http's server answers, with no handler run,
// a request http.ReadRequest read (net/http/server.go, conn.readRequest
// and conn.serve); 0 for a request to answer: a malformed Host (RFC 9112
// section 3.2: 400), an expectation other than 100-continue, the only one
// a server meets (RFC 9110 section 10.1.1: 417). http.ReadRequest drops
// the Host header, so an HTTP/1.1 request without one cannot be told from
// one with an empty Host (valid, RFC 9112 section 3.2): both are answered.
func refused(req *http.Request) int {
	if !httpguts.ValidHostHeader(req.Host) {
		return http.StatusBadRequest
	}
	if len(req.Header["Expect"]) > 0 && !expectsContinue(req) {
		return http.StatusExpectationFailed
	}
	return 0
}

// expectsContinue reports whether req's Expect holds 100-continue.
func expectsContinue(req *http.Request) bool {
	return httpguts.HeaderValuesContainsToken(req.Header["Expect"], "100-continue")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// handle answers req; it reports whether the connection may carry another
// request.
func (ep *endpoint) handle(cn *conn, req *http.Request) bool {
	b := ep.b
	b.inflight.RLock()
	defer b.inflight.RUnlock()
	closing := req.Close
	var keep bool
	switch req.URL.Path {
	case evidence.ReceiptsPath, FaultsPath, HealthPath:
		keep = ep.control(cn, req, closing)
	default:
		keep = ep.record(cn, req, closing)
	}
	if !keep {
		return false
	}
	// What the answer left of the body is read, up to maxLeftover, so that
	// the next request starts at a request line; a longer rest closes the
	// connection (as net/http's server does).
	if req.Body != nil && req.Body != http.NoBody {
		if _, err := io.CopyN(io.Discard, req.Body, maxLeftover+1); err == nil {
			cn.linger = true
			return false
		}
	}
	return !closing
}

// continue100 answers "Expect: 100-continue" before a body is read (RFC
// 9110 section 10.1.1), as net/http's server does when a handler reads
// the body.
func (cn *conn) continue100(req *http.Request) {
	if req.ProtoAtLeast(1, 1) && req.ContentLength != 0 && expectsContinue(req) {
		_, _ = io.WriteString(cn.bw, "HTTP/1.1 100 Continue\r\n\r\n")
		_ = cn.bw.Flush()
	}
}

// writeHead writes a response head: status line, the given content type
// (none if ""), Content-Length n (none if n < 0), Date, and Connection:
// close or, for an HTTP/1.0 keep-alive request, keep-alive.
func (cn *conn) writeHead(req *http.Request, code int, ctype string, n int64, closing bool) {
	w := cn.bw
	h1.StatusLine(w, code)
	if ctype != "" {
		h1.Header(w, "Content-Type", ctype)
	}
	if n >= 0 {
		h1.HeaderInt(w, "Content-Length", n)
	}
	h1.Header(w, "Date", h1.Date(time.Now()))
	switch {
	case closing:
		h1.Header(w, "Connection", "close")
	case !req.ProtoAtLeast(1, 1):
		h1.Header(w, "Connection", "keep-alive")
	}
	_, _ = w.WriteString("\r\n")
}

// control runs a control path's net/http handler.
func (ep *endpoint) control(cn *conn, req *http.Request, closing bool) bool {
	cn.continue100(req)
	w := &ctlWriter{cn: cn, req: req, h: http.Header{}, closing: closing}
	switch req.URL.Path {
	case evidence.ReceiptsPath:
		ep.b.serveReceipts(w, req)
	case FaultsPath:
		ep.b.serveFaults(w, req)
	default:
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
	}
	return w.finish()
}

// ctlWriter is the http.ResponseWriter of the control paths: the head goes
// out at the first Write (or WriteHeader), with the handler's
// Content-Length or else chunked (HTTP/1.0: the close ends the body).
type ctlWriter struct {
	cn      *conn
	req     *http.Request
	h       http.Header
	code    int
	wrote   bool
	noBody  bool
	chunked io.WriteCloser
	closing bool
	n       int64 // body bytes written
}

func (w *ctlWriter) Header() http.Header { return w.h }

func (w *ctlWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote, w.code = true, code
	bw := w.cn.bw
	w.noBody = w.req.Method == http.MethodHead || !h1.BodyAllowed(code)
	w.h.Del("Connection")
	w.h.Del("Transfer-Encoding")
	if w.h.Get("Content-Length") == "" && !w.noBody {
		if w.req.ProtoAtLeast(1, 1) {
			w.h.Set("Transfer-Encoding", "chunked")
			w.chunked = httputil.NewChunkedWriter(bw)
		} else {
			w.closing = true
		}
	}
	h1.StatusLine(bw, code)
	for k, vs := range w.h {
		for _, v := range vs {
			h1.Header(bw, k, v)
		}
	}
	if w.h.Get("Date") == "" {
		h1.Header(bw, "Date", h1.Date(time.Now()))
	}
	if w.closing {
		h1.Header(bw, "Connection", "close")
	} else if !w.req.ProtoAtLeast(1, 1) {
		h1.Header(bw, "Connection", "keep-alive")
	}
	_, _ = bw.WriteString("\r\n")
}

func (w *ctlWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		if w.h.Get("Content-Type") == "" {
			w.h.Set("Content-Type", http.DetectContentType(p))
		}
		w.WriteHeader(http.StatusOK)
	}
	if w.noBody {
		return len(p), nil
	}
	w.n += int64(len(p))
	if w.chunked != nil {
		return w.chunked.Write(p)
	}
	return w.cn.bw.Write(p)
}

// finish ends the response; false when the connection must close.
func (w *ctlWriter) finish() bool {
	if !w.wrote {
		w.h.Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	}
	if w.chunked != nil {
		_ = w.chunked.Close()
		_, _ = w.cn.bw.WriteString("\r\n")
	}
	return !w.closing
}
