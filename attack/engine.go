package attack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// engine runs one attack (package doc, "Engine").
type engine struct {
	p       *prepared
	out     *evidence.Writer
	flows   []*flowRun
	timeout time.Duration
	prog    *Progress

	stop atomic.Bool // take no further IDs (interrupt or write failure)
	// done is the attack's context's Done channel (run): read with stop by
	// stopped, so a cancelled attack claims no more IDs even before the
	// AfterFunc that sets stop has run (a loaded host may run it late).
	done     <-chan struct{}
	abortCtx context.Context
	abortFn  context.CancelFunc

	mu       sync.Mutex
	workers  []*worker
	writeErr error

	// released is the start instant (unix ns) and proceed whether the
	// attack goes on (false: interrupted while warming), both written
	// before the barrier opens; warmNs is how long warming took.
	released int64
	proceed  bool
	warmNs   int64
	// conns numbers the connections the attack opens (evidence.Request.Conn).
	conns atomic.Int64
}

// flowRun is one flow's state while the attack runs.
type flowRun struct {
	e     *engine
	f     *flowPrep
	idx   int
	tmpls []*tmpl
	pools []*pool // per attack target; nil when the flow sends none there
	// onLoops: the flow runs on event loops (startLoops), recorded as
	// AttackConfig.Engine; peekLoops peeks their warm connections
	// (evLoop.peekWarm), set by startLoops.
	onLoops   bool
	peekLoops func()
	// next is the next ID to claim: the next unsent ID of a burst's
	// workers; the next due ID of a paced flow, claimed by the dispatcher
	// or its relief (compare-and-swap).
	next atomic.Int64

	lat, pace, fromIntended, burst hist
	// Paced: the first sizingSample latencies, summed (package doc, "Fixed
	// rates").
	sampleN, sampleSum atomic.Int64
	warm               atomic.Int64 // connections warmed before the start
	burstMin, burstMax atomic.Int64
	burstN             int // requests released by the barrier (first writes)
	// Paced: the workers alive (job workers and parked ones), and a
	// signal that a parked worker exited (cap 1).
	alive   atomic.Int64
	exited  chan struct{}
	direct  bool         // paced sends go direct (directPools, decided by warmPaced)
	directN atomic.Int64 // requests the dispatcher or its relief wrote itself (direct.go)
	reliefN int          // of which the relief (relief.go)
	// testHold, if set, runs before the dispatcher waits for ID k;
	// testWait, before it blocks for a worker for ID k.
	testHold, testWait func(k int)
	// Paced results.
	peak, bound int
	sizedBy     time.Duration
	jobs        chan job
}

// pool is one flow's connections to one target.
type pool struct {
	name    string
	addr    string
	tlsConf *tls.Config // nil for http
	h2      *h2pool     // HTTP/2 (h2, h2c); nil for HTTP/1.1
	idle    chan *hconn
	slots   chan struct{} // one token per open connection; nil = no cap
	dialer  net.Dialer
	timeout time.Duration
	// lot holds the parked workers of a direct paced flow (direct.go); nil
	// otherwise.
	lot *lot
	// parked counts the parked workers on the pool's connections (each
	// holds a slot).
	parked atomic.Int32
	// testDial replaces the TCP dial (Options.testDial).
	testDial func(ctx context.Context, addr string) (net.Conn, error)
	// conns numbers the attack's connections (engine.conns).
	conns *atomic.Int64
}

// tmpl is one request shape (a target of a split, or a request template)
// ready for the wire.
type tmpl struct {
	pool   *pool
	target int // attack target index
	url    string
	method string
	// HTTP/1.1: a request is prefix + ID + suffix: (*http.Request).Write's
	// bytes with a marker as the ID header value, split at the marker.
	prefix, suffix []byte
	// req tells http.ReadResponse the method (HTTP/1.1); for HTTP/2 it is
	// the template each request is copied from (h2.go).
	req  *http.Request
	body []byte
}

// appendRequest appends the HTTP/1.1 request of ID id to b (prefix + ID +
// suffix): every sender's bytes on the wire (worker.build, buildPipe, the
// event loops' build).
func (t *tmpl) appendRequest(b []byte, id string) []byte {
	return append(append(append(b, t.prefix...), id...), t.suffix...)
}

// hconn is one HTTP/1.1 client connection.
type hconn struct {
	net.Conn
	name      string // evidence.Request.Conn
	br        *bufio.Reader
	raw       syscall.RawConn // the TCP socket, for the liveness peek and rawWrite
	rs        rawState        // rawWrite's callback, made once
	p         *pool
	isTLS     bool
	used      bool      // has carried a request
	idleSince time.Time // when it was put back idle
	closed    bool      // close ran (by its owner only)
}

// close closes the connection and frees its slot, once: a pipelined
// connection's later requests are finished after an earlier one closed it
// (readPipe).
func (c *hconn) close() {
	if c.closed {
		return
	}
	c.closed = true
	c.Conn.Close()
	if c.p.slots != nil {
		<-c.p.slots
	}
}

// staleAfter is how long a connection may sit idle before it is peeked
// (package doc, "No replays").
const staleAfter = time.Millisecond

func newEngine(p *prepared, out *evidence.Writer) (*engine, error) {
	e := &engine{p: p, out: out, timeout: p.opts.Timeout, prog: p.opts.Progress}
	marker := make([]byte, 12)
	if _, err := rand.Read(marker); err != nil {
		return nil, err
	}
	mark := "rlbench-id-" + hex.EncodeToString(marker)
	for fi, fp := range p.flows {
		fr := &flowRun{e: e, f: fp, idx: fi, pools: make([]*pool, len(p.opts.Targets)), testHold: p.opts.testHold, testWait: p.opts.testWait}
		idleCap := fp.maxWork
		if p.opts.MaxConnections > 0 {
			idleCap = min(idleCap, p.opts.MaxConnections)
		}
		for _, tp := range fp.tmpls {
			pl := fr.pools[tp.target]
			if pl == nil {
				var err error
				if pl, err = newPool(p, tp.target, idleCap, !fp.keep); err != nil {
					return nil, err
				}
				pl.conns = &e.conns
				fr.pools[tp.target] = pl
			}
			t, err := newTmpl(p, fp, tp, pl, mark)
			if err != nil {
				return nil, err
			}
			fr.tmpls = append(fr.tmpls, t)
		}
		e.flows = append(e.flows, fr)
	}
	return e, nil
}

func newPool(p *prepared, ti, idleCap int, single bool) (*pool, error) {
	u, err := url.Parse(p.turls[ti])
	if err != nil {
		return nil, invalid("url %q: %v", evidence.RedactText(p.turls[ti]), evidence.RedactText(err.Error()))
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	pl := &pool{name: p.tnames[ti], addr: net.JoinHostPort(u.Hostname(), port), timeout: p.opts.Timeout}
	pl.dialer = net.Dialer{Timeout: p.opts.Timeout, KeepAlive: 30 * time.Second}
	pl.testDial = p.opts.testDial
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if p.opts.TLSConfig != nil {
			cfg = p.opts.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		if p.opts.Protocol == ProtoH2 {
			cfg.NextProtos = []string{"h2"}
		}
		pl.tlsConf = cfg
	}
	if p.opts.Protocol != ProtoHTTP1 {
		pl.h2 = newH2Pool(pl, p.opts.MaxConnections, single)
		return pl, nil
	}
	pl.idle = make(chan *hconn, idleCap)
	if p.opts.MaxConnections > 0 {
		pl.slots = make(chan struct{}, p.opts.MaxConnections)
	}
	return pl, nil
}

func newTmpl(p *prepared, fp *flowPrep, tp tmplPrep, pl *pool, mark string) (*tmpl, error) {
	base := p.turls[tp.target]
	full := base + tp.path
	u, err := url.Parse(base)
	if err == nil && tp.path == "" && u.Path == "" && u.RawPath == "" {
		full += "/"
	}
	// The URL recorded (evidence.Request.URL, errors) never carries the
	// password of a user:password@ target (evidence.RedactURL).
	t := &tmpl{pool: pl, target: tp.target, url: evidence.RedactURL(full), method: tp.method, body: tp.body}
	req, err := http.NewRequest(tp.method, full, nil)
	if err != nil {
		return nil, invalid("%v", evidence.RedactText(err.Error()))
	}
	h := http.Header{}
	for k, vs := range tp.header {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case ck == p.idKey:
		case ck == "Host":
			if len(vs) > 0 {
				req.Host = vs[0]
			}
		default:
			h[ck] = append(h[ck], vs...)
		}
	}
	// A user:password@ target sends basic auth, as net/http's client does
	// for a URL with userinfo and no Authorization header (client.go send;
	// RFC 7617); neither (*http.Request).Write nor the HTTP/2 framer writes
	// userinfo.
	if ui := req.URL.User; ui != nil && h.Get("Authorization") == "" {
		pw, _ := ui.Password()
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(ui.Username()+":"+pw)))
	}
	if pl.h2 != nil {
		req.Header = h
		req.ContentLength = int64(len(tp.body))
		t.req = req
		return t, nil
	}
	h[p.idKey] = []string{mark}
	req.Header = h
	req.Close = !fp.keep
	if len(tp.body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(tp.body))
		req.ContentLength = int64(len(tp.body))
	}
	var b bytes.Buffer
	if err := req.Write(&b); err != nil {
		return nil, invalid("building the request for %s: %v", t.url, evidence.RedactText(err.Error()))
	}
	wire := b.Bytes()
	at := bytes.Index(wire, []byte(mark))
	if at < 0 || bytes.Count(wire, []byte(mark)) != 1 {
		return nil, fmt.Errorf("attack: request template for %s: id marker not found once", t.url)
	}
	t.prefix = append([]byte(nil), wire[:at]...)
	t.suffix = append([]byte(nil), wire[at+len(mark):]...)
	req.Body, req.GetBody = nil, nil
	t.req = req
	return t, nil
}

// get returns an idle live connection or opens a new one (waiting for an
// idle one or a free slot when MaxConnections is reached).
func (t *pool) get(ctx context.Context) (*hconn, error) {
	for {
		var c *hconn
		select {
		case c = <-t.idle:
		default:
			if t.slots == nil {
				return t.dial(ctx)
			}
			select {
			case c = <-t.idle:
			case t.slots <- struct{}{}:
				return t.dial(ctx)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if c.live() {
			return c, nil
		}
		c.close()
	}
}

// warm opens a connection for a worker's first request without waiting for
// a slot; nil when the cap is reached (the worker then waits after the
// release) or the dial failed (it is tried again then, and recorded).
func (t *pool) warm(ctx context.Context) *hconn {
	if t.slots != nil {
		select {
		case t.slots <- struct{}{}:
		default:
			return nil
		}
	}
	c, err := t.dial(ctx)
	if err != nil {
		return nil
	}
	return c
}

// dialConn opens the transport: TCP connect and, for https, the TLS
// handshake (checking the ALPN protocol HTTP/2 needs).
func (t *pool) dialConn(ctx context.Context) (net.Conn, syscall.RawConn, error) {
	var nc net.Conn
	var err error
	if t.testDial != nil {
		nc, err = t.testDial(ctx, t.addr)
	} else {
		nc, err = t.dialer.DialContext(ctx, "tcp", t.addr)
	}
	if err != nil {
		return nil, nil, err
	}
	var raw syscall.RawConn
	if tc, ok := nc.(*net.TCPConn); ok {
		raw, _ = tc.SyscallConn()
	}
	if t.tlsConf != nil {
		tc := tls.Client(nc, t.tlsConf)
		nc.SetDeadline(time.Now().Add(t.timeout))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, nil, err
		}
		nc.SetDeadline(time.Time{})
		if t.h2 != nil {
			if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
				tc.Close()
				return nil, nil, fmt.Errorf("the server did not negotiate HTTP/2 (ALPN %q, want \"h2\")", p)
			}
		}
		nc = tc
	}
	return nc, raw, nil
}

// dial opens an HTTP/1.1 connection (holding a slot already when t.slots is
// set, which it frees on error).
func (t *pool) dial(ctx context.Context) (*hconn, error) {
	nc, raw, err := t.dialConn(ctx)
	if err != nil {
		if t.slots != nil {
			<-t.slots
		}
		return nil, err
	}
	c := &hconn{p: t, raw: raw, isTLS: t.tlsConf != nil, name: t.connName(nc)}
	c.Conn = nc
	c.br = bufio.NewReaderSize(nc, 4096)
	return c, nil
}

// connName names a new connection for evidence.Request.Conn: its local
// address and its ordinal among the attack's connections ("127.0.0.1:50412/3").
func (t *pool) connName(nc net.Conn) string { return t.nameConn(nc.LocalAddr()) }

// nameConn is the name (evidence.Request.Conn) of the pool's next
// connection, from its local address la: "la/N", N counting the pool's
// connections from 1 (la "?" when unknown).
func (t *pool) nameConn(la net.Addr) string {
	s := "?"
	if la != nil {
		s = la.String()
	}
	return s + "/" + strconv.FormatInt(t.conns.Add(1), 10)
}

// put returns a reusable connection to the idle pool.
func (t *pool) put(c *hconn, now time.Time) {
	c.used, c.idleSince = true, now
	select {
	case t.idle <- c:
	default:
		c.close()
	}
}

// putIdle is put for a connection idle since c.idleSince already.
func (t *pool) putIdle(c *hconn) {
	select {
	case t.idle <- c:
	default:
		c.close()
	}
}

// closeIdle closes the idle connections (at the end of a Run).
func (t *pool) closeIdle() {
	if t.h2 != nil {
		t.h2.closeAll()
		return
	}
	for {
		select {
		case c := <-t.idle:
			c.close()
		default:
			return
		}
	}
}

// live reports whether an idle connection may carry a request: nothing
// unread is buffered and, after staleAfter idle, the server has not closed
// it or sent anything (peekClosed).
func (c *hconn) live() bool { return c.liveAt(time.Now()) }

// liveAt is live with the time now already read.
func (c *hconn) liveAt(now time.Time) bool {
	if c.br.Buffered() > 0 {
		return false
	}
	// A TLS connection not used yet may hold the server's post-handshake
	// messages (TLS 1.3 session tickets), which tls.Conn reads with the
	// first response: the peek would take them for unsolicited data.
	if c.raw == nil || (c.isTLS && !c.used) || now.Sub(c.idleSince) < staleAfter {
		return true
	}
	return !peekClosed(c.raw)
}

// worker is one request loop of one flow; its buffers are reused for
// every request.
type worker struct {
	e    *engine
	fr   *flowRun
	wbuf []byte // the request on the wire
	offs []int  // pipelined: where each request begins in wbuf (buildPipe)
	lbuf []byte // the evidence line
	body []byte // body prefix
	hdrs map[string]string
	fast fastResp          // the last response's head, when readFastHead took it
	strs map[string]string // intern's cache
	caps capMemo           // captureFast's values and redactions
	// lastCaps are the captured fields (name, value as received) that
	// made w.hdrs, when captureFast made it (capsValid): a response with
	// the same fields records the same map, not rebuilt.
	lastCaps  []capRaw
	capsValid bool
	// lastBody is the last body prefix recorded (setBody reuses it while
	// the bytes repeat).
	lastBody string
	line     evidence.Request
	cur      atomic.Pointer[hconn]
	codes    []map[int]int // per target
	// burst is the first request of an unpaced attack, written by a
	// sender; sentCh is closed when it was.
	burst  *attempt
	sentCh chan struct{}
	// h2burst is an HTTP/2 worker's stream slot for its first request.
	h2burst *h2conn
	// own is the connection of a closed-loop worker's last request, kept
	// for its next one (keepOwn: an unpaced flow's worker, on a pool
	// without a connection cap) instead of a round trip through the
	// pool's idle channel; it is checked as an idle one (live) before it
	// is used, and put back in its pool when the worker ends (dropOwn).
	own     *hconn
	keepOwn bool
	// A parked worker's connection, state and current attempt (direct.go).
	pc   *hconn
	park atomic.Int32
	pa   attempt

	attempted, recorded, notSent, resent int
	firstNotSent                         string
	sends                                int
	minSent, maxSent                     int64
}

func (fr *flowRun) newWorker() *worker {
	e := fr.e
	w := &worker{e: e, fr: fr, codes: make([]map[int]int, len(e.p.opts.Targets)), minSent: math.MaxInt64}
	for i := range w.codes {
		w.codes[i] = map[int]int{}
	}
	if e.p.opts.BodyPrefix > 0 {
		w.body = make([]byte, e.p.opts.BodyPrefix)
	}
	w.lbuf = make([]byte, 0, 512)
	e.mu.Lock()
	e.workers = append(e.workers, w)
	e.mu.Unlock()
	return w
}

// build puts ID i's request bytes into w.wbuf (HTTP/1.1).
func (w *worker) build(i int) {
	t := w.fr.tmpls[w.fr.f.assign[i]]
	if t.pool.h2 != nil {
		return
	}
	w.wbuf = t.appendRequest(w.wbuf[:0], w.fr.f.ids[i])
}

// buildPipe puts the requests of IDs lo..hi-1 back to back into w.wbuf
// (Options.Pipeline; one HTTP/1.1 pool), w.offs[k] where ID lo+k's begin.
func (w *worker) buildPipe(lo, hi int) {
	w.wbuf, w.offs = w.wbuf[:0], w.offs[:0]
	for i := lo; i < hi; i++ {
		t := w.fr.tmpls[w.fr.f.assign[i]]
		w.offs = append(w.offs, len(w.wbuf))
		w.wbuf = t.appendRequest(w.wbuf, w.fr.f.ids[i])
	}
}

// doPipe sends IDs lo..hi-1 pipelined (Options.Pipeline): their requests
// (buildPipe) in one write on w's own connection or one from the pool,
// then reads and records each response in order (readPipe). A write that
// put not one byte on a reused connection is made once more on a new one,
// as do does (writeOnce); nothing else is written again. inBurst: the barrier
// released it (a first write that had no warm connection).
func (w *worker) doPipe(lo, hi int, inBurst bool) {
	tg := w.fr.tmpls[w.fr.f.assign[lo]]
	w.buildPipe(lo, hi)
	a := attempt{i: lo, inBurst: inBurst, start: time.Now()}
	if w.own != nil {
		a.c = w.takeOwn(tg.pool, a.start)
	}
	w.writeOnce(&a, tg.pool, lo, true)
	w.readPipe(&a, lo, hi, tg)
}

// writeOnce writes w.wbuf (ID i's request, or a pipelined chunk's from ID
// i) on a.c, or on a connection from pl when a.c is nil: none could be had,
// a.c is nil with a.err and a.notSent. A write that put not one byte on a
// reused connection (the server had closed it: nothing was sent) is made
// once more on a new one when retry; nothing else is written again
// (package doc, "No replays"). a.wn and a.werr are the last write's; a.c is
// left open for the caller, whatever they are.
func (w *worker) writeOnce(a *attempt, pl *pool, i int, retry bool) {
	e := w.e
	for {
		if a.c == nil {
			if a.c, a.err = pl.get(e.abortCtx); a.err != nil {
				a.c, a.notSent, a.wn, a.werr = nil, true, 0, nil // the dial's error, not an earlier write's
				return
			}
		}
		if h := e.p.opts.testReuse; h != nil && a.c.used && a.c.raw != nil && retry {
			a.c.raw.Control(func(fd uintptr) { h(i, fd) })
		}
		w.cur.Store(a.c)
		e.writeAwait(a, a.c, w.wbuf)
		if a.werr == nil || a.wn > 0 || !a.c.used || !retry {
			return
		}
		a.c.close()
		a.c = nil
		retry = false
	}
}

// errPipeClosed is the error of a pipelined request whose response never
// came because the one before it on the connection ended the connection
// without an error: "Connection: close" (RFC 9112 section 9.6: the server
// does not process requests after it), an HTTP/1.0 response without
// keep-alive, or a body ended by the close.
var errPipeClosed = errors.New("rlbench: no response: an earlier pipelined response on this connection ended it (Connection: close, HTTP/1.0 or a body ended by the close)")

// readPipe reads and records the responses to IDs lo..hi-1, written back
// to back (w.offs) by one write whose result is a0 (its connection, send
// time, bytes written and error; a0.notSent when no connection was had):
// a request not one byte of which left is recorded not sent; a request
// after one whose response failed or closed the connection is recorded
// sent, with that error (its response cannot be read), and never written
// again. The connection stays with w until the last response.
func (w *worker) readPipe(a0 *attempt, lo, hi int, tg *tmpl) {
	c := a0.c
	var gone error // why no response after this point can be read
	for j := lo; j < hi; j++ {
		a := attempt{i: j, inBurst: a0.inBurst, c: c, start: a0.start, sent: a0.sent}
		if j == lo {
			a.counted = a0.counted
		}
		w.sending(&a)
		switch {
		case a0.notSent && a0.werr == nil:
			a.err, a.notSent = a0.err, true
		case a0.werr != nil && a0.wn <= w.offs[j-lo]:
			a.err, a.notSent = a0.werr, true
		case a0.werr != nil:
			a.err, a.writes = a0.werr, 1
		case gone != nil:
			a.err, a.writes = gone, 1
		default:
			a.writes = 1
			w.readResp(&a, c.br, tg.req)
			a.held = j < hi-1
		}
		w.finish(&a)
		if gone == nil && c != nil && c.closed {
			if gone = a.err; gone == nil {
				gone = errPipeClosed
			}
		}
	}
}

// takeOwn returns w.own for a request on pl when it is pl's and still live
// at now (as pool.get checks an idle connection), nil otherwise; w.own is then
// put back in its own pool (or closed, when no longer live).
func (w *worker) takeOwn(pl *pool, now time.Time) *hconn {
	c := w.own
	w.own = nil
	if c.p != pl {
		c.p.putIdle(c)
		return nil
	}
	if !c.liveAt(now) {
		c.close()
		return nil
	}
	return c
}

// dropOwn puts w.own back in its pool when the worker ends (closeIdle
// closes it at the end of the Run).
func (w *worker) dropOwn() {
	if c := w.own; c != nil {
		w.own = nil
		c.p.putIdle(c)
	}
}

// abortAll makes every request in flight fail at once (their deadline is
// moved to the past) and cancels dials.
func (e *engine) abortAll() {
	e.abortFn()
	past := time.Unix(1, 0)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.workers {
		if c := w.cur.Load(); c != nil {
			c.SetDeadline(past)
		}
	}
	for _, fr := range e.flows {
		for _, pl := range fr.pools {
			if pl != nil && pl.h2 != nil {
				pl.h2.abort()
			}
		}
	}
}

// attempt is one ID's trip through a worker.
type attempt struct {
	i           int
	intended    int64 // paced: the schedule's send time, unix ns; 0 otherwise
	inBurst     bool  // released by the barrier
	c           *hconn
	start, sent time.Time
	resp        *http.Response
	fast        bool // the response is in worker.fast (readFastHead), resp is nil
	err         error
	writes      int // writes that put at least one byte on the wire
	notSent     bool
	// The result of the write (writeRequest, or a burst sender's
	// sendBurst): bytes written, and its error.
	wn   int
	werr error
	// Direct sends: the connection is w.pc, parked again after the
	// response; retracted when not one byte was written on it.
	park, retracted bool
	// counted: Progress.sending counted the attempt as begun.
	counted bool
	// stale: a burst's warm connection the server ended or wrote on before
	// the release (peekWarm): nothing is written on it.
	stale bool
	// held: a pipelined request's response with more to read after it on
	// its connection (readPipe): finish neither puts nor closes the
	// connection when the response leaves it open.
	held bool
}

// sending counts attempt a as begun in the live Progress (when there is
// one): from here until record it is in flight.
func (w *worker) sending(a *attempt) {
	if p := w.e.prog; p != nil && !a.counted {
		a.counted = true
		p.sending(w.fr.tmpls[w.fr.f.assign[a.i]].target)
	}
}

// send sends ID i: build then do (HTTP/1.1) or doH2.
func (w *worker) send(i int, intended int64) {
	if w.fr.tmpls[w.fr.f.assign[i]].pool.h2 != nil {
		w.doH2(i, intended, nil, false)
		return
	}
	w.build(i)
	w.do(i, intended, nil, false)
}

// do sends ID i (whose bytes build put in w.wbuf) on c, or on a connection
// from the pool when c is nil, reads the response and records the line.
// intended is the schedule's send time (paced attacks), 0 otherwise.
func (w *worker) do(i int, intended int64, c *hconn, inBurst bool) {
	e := w.e
	tg := w.fr.tmpls[w.fr.f.assign[i]]
	a := attempt{i: i, intended: intended, inBurst: inBurst, c: c, start: time.Now()}
	w.sending(&a)
	if a.c == nil && w.own != nil {
		now := a.start
		if h := e.p.opts.testIdle; h != nil && w.own.used && w.own.raw != nil {
			w.own.raw.Control(func(fd uintptr) { h(i, fd) })
			now = time.Now()
		}
		a.c = w.takeOwn(tg.pool, now)
	}
	for try := 0; ; try++ {
		w.writeOnce(&a, tg.pool, i, try == 0)
		if a.c == nil {
			break // no connection: a.err, a.notSent
		}
		if a.werr != nil {
			a.c.close()
			a.c = nil
			a.err, a.notSent = a.werr, a.wn == 0
			break
		}
		w.readResp(&a, a.c.br, tg.req)
		if a.err != nil && e.p.opts.testResend && a.c.used && try == 0 {
			a.c.close()
			a.c = nil
			continue // what net/http's Transport would do (tests only)
		}
		break
	}
	w.finish(&a)
}

// writeRequest stamps a's send time, writes b on c once (one raw write,
// sendRaw, then through c what it left, sendRest) and sets c's deadline
// from the send time (setDeadline): a.wn and a.werr are the write's
// result, and a.writes counts it when a byte left. Every HTTP/1.1 send
// goes through it (a worker's, the dispatcher's direct send) or, for a
// burst sender, through the same three steps (sendBurst).
func (e *engine) writeRequest(a *attempt, c *hconn, b []byte) {
	if e.sendRaw(a, c, b) {
		e.setDeadline(a, c)
	} else {
		e.sendRest(a, c, b) // sets the deadline before it writes
	}
}

// writeAwait is writeRequest for a sender that reads the response itself
// (a worker's do): the deadline is set from the send time first, and the
// raw write then waits for the response's first bytes (rawWriteAwait), so
// that the worker's read of the response does not begin with a read(2)
// that finds nothing. What the raw write left is written through c
// (sendRest). Once the attack is aborted, the deadline set is in the past
// and the raw write takes nothing: sendRest's Write then fails at once.
func (e *engine) writeAwait(a *attempt, c *hconn, b []byte) {
	a.sent = time.Now()
	a.wn, a.werr = 0, nil
	e.setDeadline(a, c)
	a.wn, a.werr = rawWriteAwait(c, b)
	if a.wn > 0 {
		a.writes++
	}
	if a.werr == nil && a.wn < len(b) {
		e.sendRest(a, c, b)
	}
}

// sendRaw stamps a's send time and, unless the attack is aborted, writes b
// on c in one raw non-blocking write (rawWrite); a.wn and a.werr are its
// result, whatever an earlier try left there. It reports whether the send
// is over: every byte written, or an error from the kernel (a reset
// connection, say), after which nothing more is written.
func (e *engine) sendRaw(a *attempt, c *hconn, b []byte) bool {
	a.sent = time.Now()
	a.wn, a.werr = 0, nil
	if e.abortCtx.Err() == nil {
		a.wn, a.werr = rawWrite(c, b)
	}
	if a.wn > 0 {
		a.writes++
	}
	return a.werr != nil || a.wn == len(b)
}

// sendRest writes what sendRaw left of b through c, its deadline set first
// (the write may wait for the peer to read); when the raw write took
// nothing, the send begins here, and a's send time is stamped again. Once
// the attack is aborted the deadline is in the past, so the Write fails at
// once with not one more byte written.
func (e *engine) sendRest(a *attempt, c *hconn, b []byte) {
	if a.wn == 0 {
		a.sent = time.Now()
	}
	e.setDeadline(a, c)
	m, err := c.Write(b[a.wn:])
	if a.wn == 0 && m > 0 {
		a.writes++
	}
	a.wn += m
	a.werr = err
}

// setDeadline sets c's deadline to a's send time plus the timeout, or in
// the past once the attack is aborted, so that the response read fails at
// once. The abort is checked after the deadline is set, not before: an
// abort (abortAll) between a check and the set would have its past
// deadline overwritten, and the read would wait for the timeout.
func (e *engine) setDeadline(a *attempt, c *hconn) {
	c.SetDeadline(a.sent.Add(e.timeout))
	if e.abortCtx.Err() != nil {
		c.SetDeadline(time.Unix(1, 0))
	}
}

// finish reads the body of a's response, releases or closes its
// connection, and records the evidence line and the statistics. It
// reports whether a parked worker's connection is kept (a.park).
func (w *worker) finish(a *attempt) (kept bool) {
	e := w.e
	tg := w.fr.tmpls[w.fr.f.assign[a.i]]
	r := w.startLine(a, tg)
	c := a.c
	if c != nil {
		r.Conn = c.name
	}
	var end time.Time
	switch {
	case a.notSent:
		end = time.Now()
		if c != nil {
			c.close()
		}
	case a.err != nil:
		end = time.Now()
		if c != nil {
			c.close()
		}
	default:
		var nb uint64
		var berr error
		code, closes := 0, false
		if a.fast {
			var k int
			k, nb, berr = w.fast.readFastBody(c.br, w.body)
			w.setBody(k)
			code, closes = w.fast.code, w.fast.close
		} else {
			nb, berr = w.readBody(a.resp)
			code, closes = a.resp.StatusCode, a.resp.Close
		}
		end = time.Now()
		if berr != nil {
			a.err = berr
			c.close()
			break
		}
		r.Code, r.BytesIn = code, nb
		if a.fast {
			w.captureFast()
		} else {
			w.capture(a.resp.Header)
		}
		if w.fr.f.keep && !closes && r.Code != http.StatusSwitchingProtocols && e.abortCtx.Err() == nil {
			if a.held {
				c.used = true
				w.record(a, r, end)
				return false
			} else if a.park {
				c.used, kept = true, true
			} else if w.keepOwn && tg.pool.slots == nil {
				c.used, c.idleSince = true, end
				w.own = c
			} else {
				tg.pool.put(c, end)
			}
		} else {
			c.close()
		}
	}
	w.cur.Store(nil)
	w.record(a, r, end)
	return kept
}

// startLine resets w.line for attempt a on template tg.
func (w *worker) startLine(a *attempt, tg *tmpl) *evidence.Request {
	r := &w.line
	proto := "HTTP/1.1"
	if tg.pool.h2 != nil {
		proto = "HTTP/2.0"
	}
	*r = evidence.Request{ID: w.fr.f.ids[a.i], Target: tg.pool.name, URL: tg.url, Method: tg.method,
		Phase: w.e.p.opts.Name, IntendedNs: a.intended, Flow: w.fr.f.name, Proto: proto}
	return r
}

// record completes the line of attempt a (its code, bytes and headers set
// by the caller; a.err is the transport error, if any) ended at end,
// writes it, and counts it.
func (w *worker) record(a *attempt, r *evidence.Request, end time.Time) {
	e, fr := w.e, w.fr
	w.attempted++
	if a.notSent {
		a.sent = a.start
		r.NotSent = true
		r.Code = 0
		r.Error = e.requestError(r, a, end)
		w.notSent++
		if w.firstNotSent == "" {
			w.firstNotSent = r.Error
		}
	} else if a.err != nil {
		r.Code = 0
		r.Error = e.requestError(r, a, end)
	} else if r.Code < 200 || r.Code >= 400 {
		if a.fast {
			r.Error = w.statusText(w.fast.status)
		} else {
			r.Error = a.resp.Status
		}
	}
	r.SentNs = a.sent.UnixNano()
	r.LatencyNs = int64(end.Sub(a.sent))
	if a.writes > 1 {
		w.resent++
		msg := fmt.Sprintf("rlbench: this request was written %d times", a.writes)
		if r.Error != "" {
			msg = r.Error + "; " + msg
		}
		r.Error = msg
	}
	if !a.notSent {
		w.sends++
		w.minSent, w.maxSent = min(w.minSent, r.SentNs), max(w.maxSent, r.SentNs)
		if a.inBurst {
			fr.burst.add(r.SentNs - e.released)
			atomicMin(&fr.burstMin, r.SentNs)
			atomicMax(&fr.burstMax, r.SentNs)
		}
		if a.intended != 0 {
			fr.pace.add(r.SentNs - a.intended)
			if e.prog != nil {
				e.prog.paced(r.SentNs - a.intended)
			}
			if r.Code != 0 {
				fr.fromIntended.add(end.UnixNano() - a.intended)
			}
		}
	}
	if r.Code != 0 {
		fr.lat.add(r.LatencyNs)
		if fr.f.paced && fr.sampleN.Load() < sizingSample {
			if fr.sampleN.Add(1) <= sizingSample {
				fr.sampleSum.Add(r.LatencyNs)
			}
		}
	}
	tgt := fr.tmpls[fr.f.assign[a.i]].target
	w.codes[tgt][r.Code]++
	if e.prog != nil {
		e.prog.record(tgt, r, a.counted)
	}
	w.lbuf = evidence.AppendRequestJSON(w.lbuf[:0], r)
	if werr := e.out.WriteRaw(w.lbuf); werr != nil {
		e.fail(fmt.Errorf("attack: writing request %q: %w", r.ID, werr))
	} else {
		w.recorded++
	}
}

// readResp reads the response to a's request from br: its head into w.fast
// (a.fast) when it is in the common form, else with readResponse.
func (w *worker) readResp(a *attempt, br *bufio.Reader, req *http.Request) {
	a.fast, a.resp = false, nil
	if canFast(req) {
		ok, err := w.fast.readFastHead(br, w.e.p.capturesBytes)
		if err != nil {
			a.err = err
			return
		}
		if ok {
			a.fast, a.err = true, nil
			return
		}
	}
	a.resp, a.err = readResponse(br, req)
}

// captureFast is capture for a response in w.fast.
func (w *worker) captureFast() {
	if len(w.fast.caps) == 0 {
		return
	}
	if w.sameCaps() {
		w.line.Headers = w.hdrs
		return
	}
	if w.hdrs == nil {
		w.hdrs = map[string]string{}
	}
	clear(w.hdrs)
	if w.caps == nil {
		w.caps = capMemo{}
	}
	w.lastCaps = w.lastCaps[:0]
	for _, c := range w.fast.caps {
		k := w.intern(c.name)
		v := w.caps.value(k, c.value)
		w.lastCaps = append(w.lastCaps, capRaw{name: k, value: v})
		if old, dup := w.hdrs[k]; dup {
			w.hdrs[k] = old + ", " + v
		} else {
			w.hdrs[k] = v
		}
	}
	w.caps.redact(w.hdrs)
	w.capsValid = true
	w.line.Headers = w.hdrs
}

// capRaw is one captured header field as received: lower-case name, value.
type capRaw struct{ name, value string }

// sameCaps reports whether the response in w.fast captured exactly the
// fields (names, values, order) that made w.hdrs (w.lastCaps).
func (w *worker) sameCaps() bool {
	if !w.capsValid || len(w.lastCaps) != len(w.fast.caps) {
		return false
	}
	for i, c := range w.fast.caps {
		if l := w.lastCaps[i]; string(c.name) != l.name || string(c.value) != l.value {
			return false
		}
	}
	return true
}

// intern returns b as a string from the worker's bounded cache (header
// names and status lines repeat: no allocation after the first).
func (w *worker) intern(b []byte) string {
	if s, ok := w.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if w.strs == nil {
		w.strs = map[string]string{}
	}
	if len(w.strs) < 256 && len(b) <= 128 {
		w.strs[s] = s
	}
	return s
}

// statusText is http.Response.Status for a fast response's status bytes.
func (w *worker) statusText(b []byte) string { return w.intern(b) }

// readResponse reads the response to one request, skipping 1xx interim
// responses other than 101 (as net/http's Transport does).
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, nil
	}
}

// readBody keeps the first len(w.body) bytes of the body in w.line.Body,
// reads the rest to its end (so the connection can be reused) and returns
// the body's length.
func (w *worker) readBody(resp *http.Response) (uint64, error) {
	defer resp.Body.Close()
	k := 0
	for k < len(w.body) {
		m, err := resp.Body.Read(w.body[k:])
		k += m
		if err == io.EOF {
			w.setBody(k)
			return uint64(k), nil
		}
		if err != nil {
			return uint64(k), err
		}
	}
	w.setBody(k)
	rest, err := io.Copy(io.Discard, resp.Body)
	return uint64(k) + uint64(rest), err
}

func (w *worker) setBody(k int) {
	if k > 0 {
		if w.lastBody != string(w.body[:k]) {
			w.lastBody = string(w.body[:k])
		}
		w.line.Body = w.lastBody
	}
}

// capture copies the captured response headers into w.line.Headers (a
// reused map), values of a repeated header joined with ", ".
func (w *worker) capture(h http.Header) {
	p := w.e.p
	if len(h) == 0 || (len(p.capture) == 0 && len(p.prefixes) == 0) {
		return
	}
	if w.hdrs == nil {
		w.hdrs = map[string]string{}
	}
	clear(w.hdrs)
	w.capsValid = false
	for k, vs := range h {
		lk := lowerKey(k)
		if !p.captures(lk) {
			continue
		}
		v := ""
		if len(vs) == 1 {
			v = vs[0]
		} else {
			v = strings.Join(vs, ", ")
		}
		w.hdrs[lk] = v
	}
	redactCaptured(w.hdrs)
	if len(w.hdrs) > 0 {
		w.line.Headers = w.hdrs
	}
}

// lowerKeys caches the lower-case forms of canonical header names, so that
// capturing a header costs no allocation after its first sighting.
var lowerKeys sync.Map

var lowerKeysN atomic.Int32

func lowerKey(k string) string {
	if v, ok := lowerKeys.Load(k); ok {
		return v.(string)
	}
	lk := strings.ToLower(k)
	if len(k) <= 64 && lowerKeysN.Load() < 4096 { // bounded: header names are few
		lowerKeysN.Add(1)
		lowerKeys.Store(k, lk)
	}
	return lk
}

// requestError formats a's transport error (ended at end) for r, as
// formatRequestError does; a deadline that passed before the timeout, once
// the attack is aborted, was abortAll's.
func (e *engine) requestError(r *evidence.Request, a *attempt, end time.Time) string {
	aborted := e.abortCtx.Err() != nil && end.Sub(a.sent) < e.timeout
	return formatRequestError(r.Method, r.URL, a.err, e.timeout, aborted)
}

// formatRequestError formats a transport error like net/http does (a
// *url.Error: `Get "URL": ...`), naming a timeout as such, or, when aborted
// (the attack was interrupted and its InterruptGrace ended before the
// timeout: abortAll's deadline in the past), the abort.
func formatRequestError(method, u string, err error, timeout time.Duration, aborted bool) string {
	op := method[:1] + strings.ToLower(method[1:])
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		if aborted {
			err = fmt.Errorf("aborted: the attack was interrupted and its interrupt grace ended (%w)", err)
		} else {
			err = fmt.Errorf("timeout after %s (%w)", timeout, err)
		}
	}
	return (&url.Error{Op: op, URL: u, Err: err}).Error()
}

// stopped reports whether no more IDs may be claimed: a write failed or
// the attack was interrupted (stop), or its context is done, read here
// directly (a non-blocking receive) rather than through the interrupt's
// AfterFunc alone, which a loaded host may run only after a loop has sent
// many more.
func (e *engine) stopped() bool {
	if e.stop.Load() {
		return true
	}
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

func (e *engine) fail(err error) {
	e.mu.Lock()
	if e.writeErr == nil {
		e.writeErr = err
	}
	e.mu.Unlock()
	e.stop.Store(true)
}

// run executes the attack and builds the evidence.AttackSummary.
func (e *engine) run(ctx context.Context) (*evidence.AttackSummary, error) {
	p := e.p
	grace := p.opts.InterruptGrace
	if grace <= 0 {
		grace = time.Second
	}
	e.abortCtx, e.abortFn = context.WithCancel(context.WithoutCancel(ctx))
	defer e.abortFn()
	e.done = ctx.Done()
	var interrupted atomic.Bool
	var graceTimer atomic.Pointer[time.Timer]
	stopWatch := context.AfterFunc(ctx, func() {
		interrupted.Store(true)
		e.stop.Store(true)
		graceTimer.Store(time.AfterFunc(grace, e.abortAll))
	})
	defer func() {
		stopWatch()
		if t := graceTimer.Load(); t != nil {
			t.Stop()
		}
		for _, fr := range e.flows {
			for _, pl := range fr.pools {
				if pl != nil {
					pl.closeIdle()
				}
			}
		}
	}()

	sum := &evidence.AttackSummary{Schema: evidence.AttackSummarySchema, Config: p.config, CodesByTarget: map[string]map[string]int{}, Shard: p.shard}
	sum.Host, _ = os.Hostname()
	sum.Node = p.opts.Node
	for _, tc := range p.config.Targets {
		sum.CodesByTarget[tc.Name] = map[string]int{}
	}
	if e.prog != nil {
		e.prog.begin(p)
	}
	start := e.execute(ctx, sum)
	end := time.Now()
	if e.prog != nil {
		e.prog.finish()
	}

	type counts struct {
		attempted, recorded, notSent, resent, sends int
		first, last                                 int64
		codes                                       map[string]map[string]int
	}
	per := make([]counts, len(e.flows))
	for i := range per {
		per[i].first = math.MaxInt64
		per[i].codes = map[string]map[string]int{}
		for _, tc := range p.config.Targets {
			per[i].codes[tc.Name] = map[string]int{}
		}
	}
	firstNotSent := ""
	e.mu.Lock()
	for _, w := range e.workers {
		c := &per[w.fr.idx]
		c.attempted += w.attempted
		c.recorded += w.recorded
		c.notSent += w.notSent
		c.resent += w.resent
		c.sends += w.sends
		if w.sends > 0 {
			c.first, c.last = min(c.first, w.minSent), max(c.last, w.maxSent)
		}
		if firstNotSent == "" {
			firstNotSent = w.firstNotSent
		}
		for t, m := range w.codes {
			for code, n := range m {
				c.codes[p.tnames[t]][strconv.Itoa(code)] += n
			}
		}
	}
	writeErr := e.writeErr
	e.mu.Unlock()

	attempted, recorded, sends := 0, 0, 0
	first, last := int64(math.MaxInt64), int64(0)
	var lat, pace, fromIntended, burst hist
	var burstMin, burstMax int64 = math.MaxInt64, 0
	var pacing *evidence.AttackPacing
	var pacedSends int
	pacedFirst, pacedLast := int64(math.MaxInt64), int64(0)
	for i, fr := range e.flows {
		c := per[i]
		attempted += c.attempted
		recorded += c.recorded
		sum.NotSent += c.notSent
		sum.Resent += c.resent
		sends += c.sends
		if c.sends > 0 {
			first, last = min(first, c.first), max(last, c.last)
		}
		for t, m := range c.codes {
			for code, n := range m {
				sum.CodesByTarget[t][code] += n
			}
		}
		lat.merge(&fr.lat)
		fs := evidence.AttackFlow{Config: fr.f.config, Sent: c.attempted, NotSent: c.notSent, Recorded: c.recorded,
			CodesByTarget: c.codes, LatencyNs: fr.lat.quantiles()}
		if fr.onLoops {
			fs.Config.Engine = evidence.EngineEventLoop
			if !p.multi {
				sum.Config.Engine = evidence.EngineEventLoop
			}
		}
		if c.sends > 0 {
			fs.FirstSendNs, fs.LastSendNs = c.first, c.last
		}
		if fr.f.paced {
			pc := fr.pacing(c.sends, c.first, c.last)
			fs.Pacing = pc
			pace.merge(&fr.pace)
			fromIntended.merge(&fr.fromIntended)
			if pacing == nil {
				pacing = &evidence.AttackPacing{}
			}
			pacing.WorkersPeak += pc.WorkersPeak
			pacing.WorkersBound += pc.WorkersBound
			pacing.WarmConnections += pc.WarmConnections
			pacing.DirectSends += pc.DirectSends
			pacing.ReliefSends += pc.ReliefSends
			pacing.SizingLatencyNs = max(pacing.SizingLatencyNs, pc.SizingLatencyNs)
			pacedSends += c.sends
			if c.sends > 0 {
				pacedFirst, pacedLast = min(pacedFirst, c.first), max(pacedLast, c.last)
			}
		} else {
			fs.Burst = fr.burstSummary(e.released)
			burst.merge(&fr.burst)
			burstMin, burstMax = min(burstMin, fr.burstMin.Load()), max(burstMax, fr.burstMax.Load())
		}
		if p.multi {
			sum.Flows = append(sum.Flows, fs)
		} else {
			sum.Burst, sum.Pacing = fs.Burst, fs.Pacing
		}
	}
	if p.multi {
		if sum.Burst = e.burstTotal(&burst, burstMin, burstMax); sum.Burst != nil {
			sum.Burst.WarmNs = e.warmNs
		}
		if pacing != nil {
			if pacedSends > 1 && pacedLast > pacedFirst {
				pacing.AchievedPerSec = float64(pacedSends-1) / (float64(pacedLast-pacedFirst) / 1e9)
			}
			pacing.ErrorNs = pace.quantiles()
			pacing.LatencyFromIntendedNs = fromIntended.quantiles()
			sum.Pacing = pacing
		}
	}

	sum.Sent, sum.Recorded = attempted, recorded
	sum.StartNs, sum.EndNs = start.UnixNano(), end.UnixNano()
	sum.Start, sum.End = start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano)
	if sends > 0 {
		sum.FirstSendNs, sum.LastSendNs = first, last
		sum.SendSpreadNs = last - first
	}
	sum.LatencyNs = lat.quantiles()
	if sa := sum.StartAt; sa != nil {
		sa.LateNs = max(0, sum.StartNs-sa.AtNs)
	}
	stopWatch()
	// ctx.Err: the loops may have stopped on the context itself before
	// the AfterFunc ran (stopped)
	sum.Interrupted = interrupted.Load() || ctx.Err() != nil
	n := p.ids
	sum.Complete = writeErr == nil && attempted == n && recorded == n && sum.NotSent == 0 && !sum.Interrupted
	switch {
	case writeErr != nil:
		sum.Error = writeErr.Error()
		return sum, writeErr
	case sum.Interrupted:
		sum.Error = context.Cause(ctx).Error()
	case sum.NotSent > 0:
		sum.Error = fmt.Sprintf("%d of %d requests were not sent (first: %s)", sum.NotSent, attempted, firstNotSent)
	}
	return sum, nil
}

// pacing is a paced flow's evidence.AttackPacing from its counts.
func (fr *flowRun) pacing(sends int, first, last int64) *evidence.AttackPacing {
	pc := &evidence.AttackPacing{WorkersPeak: fr.peak, WorkersBound: fr.bound, SizingLatencyNs: int64(fr.sizedBy), WarmConnections: int(fr.warm.Load()),
		DirectSends: int(fr.directN.Load()), ReliefSends: fr.reliefN}
	if sends > 1 && last > first {
		pc.AchievedPerSec = float64(sends-1) / (float64(last-first) / 1e9)
	}
	pc.ErrorNs = fr.pace.quantiles()
	pc.LatencyFromIntendedNs = fr.fromIntended.quantiles()
	return pc
}

// burstSummary is an unpaced flow's evidence.AttackBurst.
func (fr *flowRun) burstSummary(released int64) *evidence.AttackBurst {
	b := &evidence.AttackBurst{Requests: fr.burstN, ReleaseNs: released, WarmNs: fr.e.warmNs, WarmConnections: int(fr.warm.Load())}
	b.SendNs = fr.burst.quantiles()
	if b.SendNs.N > 1 {
		b.SpreadNs = fr.burstMax.Load() - fr.burstMin.Load()
	}
	return b
}

// burstTotal is a multi-flow attack's evidence.AttackBurst over all unpaced flows (one
// barrier); nil when every flow is paced.
func (e *engine) burstTotal(h *hist, lo, hi int64) *evidence.AttackBurst {
	var b *evidence.AttackBurst
	for _, fr := range e.flows {
		if fr.f.paced {
			continue
		}
		if b == nil {
			b = &evidence.AttackBurst{ReleaseNs: e.released}
		}
		b.Requests += fr.burstN
		b.WarmConnections += int(fr.warm.Load())
	}
	if b != nil {
		b.SendNs = h.quantiles()
		if b.SendNs.N > 1 {
			b.SpreadNs = hi - lo
		}
	}
	return b
}

func atomicMin(a *atomic.Int64, v int64) {
	for {
		m := a.Load()
		if v >= m || a.CompareAndSwap(m, v) {
			return
		}
	}
}

func atomicMax(a *atomic.Int64, v int64) {
	for {
		m := a.Load()
		if v <= m || a.CompareAndSwap(m, v) {
			return
		}
	}
}
