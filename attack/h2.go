package attack

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// HTTP/2 (package doc, "HTTP/2"): rlbench dials and warms every connection
// itself and hands it to golang.org/x/net/http2 as a ClientConn
// (Transport.NewClientConn). Requests go through ClientConn.RoundTrip,
// which sends a request's HEADERS once and never re-sends it; the retry
// loop of http2.Transport.RoundTrip (transport_common.go roundTripViaPool,
// shouldRetryRequest / canRetryError: a stream refused with
// REFUSED_STREAM, a GOAWAY, an unusable connection) is never on the path.

// h2Transport configures the ClientConns: no gzip (as for HTTP/1.1,
// rlbench sends exactly the configured headers) and cleartext allowed for
// h2c. Its own dialing and pooling are never used.
var h2Transport = &http2.Transport{AllowHTTP: true, DisableCompression: true}

// h2StreamCap bounds the streams rlbench opens on one connection whatever
// the server's SETTINGS_MAX_CONCURRENT_STREAMS allows.
const h2StreamCap = 1000

// h2pool is one flow's HTTP/2 connections to one target. A connection
// carries up to its limit of streams at once (the server's
// SETTINGS_MAX_CONCURRENT_STREAMS, learnt while warming); when every open
// connection is full a new one is dialed, up to maxConns (0: no cap), so
// a request never waits inside the ClientConn for a stream slot.
type h2pool struct {
	p        *pool
	maxConns int
	single   bool // one stream per connection (DisableKeepAlives)

	mu      sync.Mutex
	cond    *sync.Cond
	conns   []*h2conn
	dialing int
	waiting int
	limit   int // streams per connection, once one connection told
	aborted bool
}

// h2conn is one HTTP/2 connection with rlbench's count of its open streams.
type h2conn struct {
	cc     *http2.ClientConn
	nc     net.Conn
	name   string // evidence.Request.Conn
	active int
	limit  int
	used   bool // has carried a stream
}

func newH2Pool(p *pool, maxConns int, single bool) *h2pool {
	h := &h2pool{p: p, maxConns: maxConns, single: single}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// dial opens and warms one connection: TCP, TLS with ALPN h2 (or cleartext
// for h2c), the client preface and SETTINGS (NewClientConn), and a PING
// round trip, which the server answers after its own SETTINGS: the
// connection is then ready and its stream limit known, and no request was
// sent.
func (h *h2pool) dial(ctx context.Context) (*h2conn, error) {
	nc, _, err := h.p.dialConn(ctx)
	if err != nil {
		return nil, err
	}
	cc, err := h2Transport.NewClientConn(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, h.p.timeout)
	err = cc.Ping(pctx)
	cancel()
	if err != nil {
		cc.Close()
		return nil, err
	}
	limit := int(cc.State().MaxConcurrentStreams)
	if limit <= 0 || limit > h2StreamCap {
		limit = min(max(limit, 100), h2StreamCap)
	}
	if h.single {
		limit = 1
	}
	return &h2conn{cc: cc, nc: nc, limit: limit, name: h.p.connName(nc)}, nil
}

// acquire returns a connection with a stream slot taken for the caller,
// dialing one when all are full (dialed reports that). Until the first
// connection told its stream limit, one dial runs at a time; then as many
// as the waiting requests need.
func (h *h2pool) acquire(ctx context.Context) (c *h2conn, dialed bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if h.aborted {
			return nil, false, context.Canceled
		}
		for _, c := range h.conns {
			if c.active < c.limit && (!h.single || !c.used) && c.cc.CanTakeNewRequest() {
				c.active++
				return c, false, nil
			}
		}
		canOpen := h.maxConns == 0 || len(h.conns)+h.dialing < h.maxConns
		wantMore := h.dialing == 0 || (h.limit > 0 && h.waiting >= h.dialing*h.limit)
		if canOpen && wantMore {
			h.dialing++
			h.mu.Unlock()
			c, err := h.dial(ctx)
			h.mu.Lock()
			h.dialing--
			h.cond.Broadcast()
			if err != nil {
				return nil, true, err
			}
			h.limit = c.limit
			c.active = 1
			h.conns = append(h.conns, c)
			return c, true, nil
		}
		h.waiting++
		h.cond.Wait()
		h.waiting--
	}
}

// release frees c's stream slot; a connection that can take no new
// request (GOAWAY, closed, single use) is closed once idle.
func (h *h2pool) release(c *h2conn) {
	h.mu.Lock()
	c.active--
	c.used = true
	if c.active == 0 && (h.single || !c.cc.CanTakeNewRequest()) {
		h.removeLocked(c)
		c.cc.Close()
	}
	h.cond.Broadcast()
	h.mu.Unlock()
}

func (h *h2pool) removeLocked(c *h2conn) {
	for i, x := range h.conns {
		if x == c {
			h.conns = append(h.conns[:i], h.conns[i+1:]...)
			return
		}
	}
}

// prewarm opens enough connections for streams concurrent requests (a
// paced flow's initial bound) and returns how many it opened.
func (h *h2pool) prewarm(ctx context.Context, streams int) int {
	c, err := h.dial(ctx)
	if err != nil {
		return 0
	}
	need := (streams + c.limit - 1) / c.limit
	if h.maxConns > 0 {
		need = min(need, h.maxConns)
	}
	conns := []*h2conn{c}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range need - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, err := h.dial(ctx); err == nil {
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	h.mu.Lock()
	h.limit = c.limit
	h.conns = append(h.conns, conns...)
	h.cond.Broadcast()
	h.mu.Unlock()
	return len(conns)
}

// abort wakes every waiter (the attack is being cancelled).
func (h *h2pool) abort() {
	h.mu.Lock()
	h.aborted = true
	h.cond.Broadcast()
	h.mu.Unlock()
}

// closeAll closes every connection (at the end of a Run).
func (h *h2pool) closeAll() {
	h.mu.Lock()
	conns := h.conns
	h.conns = nil
	h.mu.Unlock()
	for _, c := range conns {
		c.cc.Close()
	}
}

// h2request is the request for one ID: a copy of the template with the ID
// header, a context bounding it by the timeout, and a trace that tells
// whether its HEADERS were written.
func (t *tmpl) h2request(ctx context.Context, idKey, id string, wrote *atomic.Bool) *http.Request {
	r := new(http.Request)
	*r = *t.req
	h := make(http.Header, len(t.req.Header)+1)
	for k, v := range t.req.Header {
		h[k] = v
	}
	h[idKey] = []string{id}
	r.Header = h
	if len(t.body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(t.body))
	}
	trace := &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}
	return r.WithContext(httptrace.WithClientTrace(ctx, trace))
}

// doH2 sends ID i on HTTP/2, on the stream slot c when not nil (a burst
// worker's, taken while warming) or one from the pool, and records the
// line. A request whose HEADERS were never written (the connection had
// become unusable between the slot and the send: a GOAWAY, a close) is
// tried once more on another connection — nothing of it left the client;
// once its HEADERS were written it is never sent again, whatever happens
// (a GOAWAY, RST_STREAM with REFUSED_STREAM, the connection closed): it is
// then recorded with code 0, indeterminate.
func (w *worker) doH2(i int, intended int64, c *h2conn, inBurst bool) {
	e := w.e
	tg := w.fr.tmpls[w.fr.f.assign[i]]
	h := tg.pool.h2
	a := attempt{i: i, intended: intended, inBurst: inBurst, start: time.Now()}
	w.sending(&a)
	r := w.startLine(&a, tg)
	var resp *http.Response
	for try := 0; ; try++ {
		fresh := false // dialed for this request (else reused or warmed earlier)
		if c == nil {
			var err error
			if c, fresh, err = h.acquire(e.abortCtx); err != nil {
				a.err, a.notSent = err, true
				break
			}
		}
		var wrote atomic.Bool
		ctx, cancel := context.WithTimeout(e.abortCtx, e.timeout)
		req := tg.h2request(ctx, e.p.idKey, w.fr.f.ids[i], &wrote)
		a.sent = time.Now()
		r.Conn = c.name
		var err error
		resp, err = c.cc.RoundTrip(req)
		if err != nil {
			// RoundTrip returned before the stream ended only when ctx was
			// done; otherwise the stream's writer has finished and wrote
			// is final (x/net/http2 internalRoundTrip waits for cs.donec).
			written := wrote.Load() || ctx.Err() != nil
			cancel()
			h.release(c)
			c = nil
			if written {
				a.writes = 1
			}
			if !written && !fresh && try == 0 {
				r.Conn = ""
				continue // nothing of it left: try another connection
			}
			a.err, a.notSent = err, !written
			break
		}
		a.writes = 1
		a.resp = resp
		nb, berr := w.readBody(resp)
		cancel()
		h.release(c)
		if berr != nil {
			a.err = berr
		} else {
			r.Code, r.BytesIn = resp.StatusCode, nb
			w.capture(resp.Header)
		}
		break
	}
	w.record(&a, r, time.Now())
}
