package attack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
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
	targets []*target
	timeout time.Duration
	keep    bool // keep-alive
	paced   bool

	stop     atomic.Bool // take no further IDs (interrupt or write failure)
	abortCtx context.Context
	abortFn  context.CancelFunc
	next     atomic.Int64 // unpaced: next ID index to take

	mu       sync.Mutex
	workers  []*worker
	writeErr error

	lat, pace, fromIntended, burst hist
	// Paced: the first sizingSample latencies, summed (package doc, "Fixed
	// rates").
	sampleN, sampleSum atomic.Int64
	warm               atomic.Int64 // connections warmed before the start
	// released is the barrier's release instant (unix ns), written before
	// the barrier opens; burstMin/Max bound the released requests' SentNs.
	released           int64
	burstMin, burstMax atomic.Int64
}

// target is one target's connection pool and request template.
type target struct {
	name, url string
	addr      string
	tlsConf   *tls.Config // nil for http
	// A request is prefix + ID + suffix: (*http.Request).Write's bytes with
	// a marker as the ID header value, split at the marker.
	prefix, suffix []byte
	req            *http.Request // read-only: tells http.ReadResponse the method
	idle           chan *hconn
	slots          chan struct{} // one token per open connection; nil = no cap
	dialer         net.Dialer
	timeout        time.Duration
	testDial       func(ctx context.Context, addr string) (net.Conn, error)
}

// hconn is one HTTP/1.1 client connection.
type hconn struct {
	net.Conn
	br        *bufio.Reader
	raw       syscall.RawConn // the TCP socket, for the liveness peek
	t         *target
	isTLS     bool
	used      bool      // has carried a request
	idleSince time.Time // when it was put back idle
}

// close closes the connection and frees its slot.
func (c *hconn) close() {
	c.Conn.Close()
	if c.t.slots != nil {
		<-c.t.slots
	}
}

// staleAfter is how long a connection may sit idle before it is peeked
// (package doc, "No replays").
const staleAfter = time.Millisecond

func newEngine(p *prepared, out *evidence.Writer) (*engine, error) {
	e := &engine{p: p, out: out, timeout: p.opts.Timeout, keep: !p.opts.DisableKeepAlives}
	e.paced = p.opts.Rate.Freq > 0 && p.opts.Rate.Per > 0
	marker := make([]byte, 12)
	if _, err := rand.Read(marker); err != nil {
		return nil, err
	}
	mark := "rlbench-id-" + hex.EncodeToString(marker)
	idleCap := p.maxWork
	if p.opts.MaxConnections > 0 {
		idleCap = min(idleCap, p.opts.MaxConnections)
	}
	for k, t := range p.opts.Targets {
		tg, err := newTarget(p, t, p.urls[k], mark)
		if err != nil {
			return nil, err
		}
		tg.name = p.tnames[k]
		tg.idle = make(chan *hconn, idleCap)
		if p.opts.MaxConnections > 0 {
			tg.slots = make(chan struct{}, p.opts.MaxConnections)
		}
		e.targets = append(e.targets, tg)
	}
	return e, nil
}

func newTarget(p *prepared, t Target, full, mark string) (*target, error) {
	u, err := url.Parse(full)
	if err != nil {
		return nil, invalid("url %q: %v", full, err)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	tg := &target{url: full, addr: net.JoinHostPort(u.Hostname(), port), timeout: p.opts.Timeout}
	tg.dialer = net.Dialer{Timeout: p.opts.Timeout, KeepAlive: 30 * time.Second}
	tg.testDial = p.opts.testDial
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if p.opts.TLSConfig != nil {
			cfg = p.opts.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		tg.tlsConf = cfg
	}
	req, err := http.NewRequest(p.opts.Method, full, nil)
	if err != nil {
		return nil, invalid("%v", err)
	}
	h := http.Header{}
	for k, vs := range p.opts.Header {
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
	h[p.idKey] = []string{mark}
	req.Header = h
	req.Close = p.opts.DisableKeepAlives
	if len(p.opts.Body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(p.opts.Body))
		req.ContentLength = int64(len(p.opts.Body))
	}
	var b bytes.Buffer
	if err := req.Write(&b); err != nil {
		return nil, invalid("building the request for %s: %v", full, err)
	}
	wire := b.Bytes()
	at := bytes.Index(wire, []byte(mark))
	if at < 0 || bytes.Count(wire, []byte(mark)) != 1 {
		return nil, fmt.Errorf("attack: request template for %s: id marker not found once", full)
	}
	tg.prefix = append([]byte(nil), wire[:at]...)
	tg.suffix = append([]byte(nil), wire[at+len(mark):]...)
	req.Body, req.GetBody = nil, nil
	tg.req = req
	return tg, nil
}

// get returns an idle live connection or opens a new one (waiting for an
// idle one or a free slot when MaxConnections is reached).
func (t *target) get(ctx context.Context) (*hconn, error) {
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
func (t *target) warm(ctx context.Context) *hconn {
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

// dial opens a connection (holding a slot already when t.slots is set, which
// it frees on error): TCP connect and, for https, the TLS handshake.
func (t *target) dial(ctx context.Context) (*hconn, error) {
	var nc net.Conn
	var err error
	if t.testDial != nil {
		nc, err = t.testDial(ctx, t.addr)
	} else {
		nc, err = t.dialer.DialContext(ctx, "tcp", t.addr)
	}
	if err != nil {
		if t.slots != nil {
			<-t.slots
		}
		return nil, err
	}
	c := &hconn{t: t}
	if tc, ok := nc.(*net.TCPConn); ok {
		c.raw, _ = tc.SyscallConn()
	}
	if t.tlsConf != nil {
		tc := tls.Client(nc, t.tlsConf)
		nc.SetDeadline(time.Now().Add(t.timeout))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			if t.slots != nil {
				<-t.slots
			}
			return nil, err
		}
		nc.SetDeadline(time.Time{})
		nc = tc
		c.isTLS = true
	}
	c.Conn = nc
	c.br = bufio.NewReaderSize(nc, 4096)
	return c, nil
}

// put returns a reusable connection to the idle pool.
func (t *target) put(c *hconn, now time.Time) {
	c.used, c.idleSince = true, now
	select {
	case t.idle <- c:
	default:
		c.close()
	}
}

// live reports whether an idle connection may carry a request: nothing
// unread is buffered and, after staleAfter idle, the server has not closed
// it or sent anything (peekClosed).
func (c *hconn) live() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	// A TLS connection not used yet may hold the server's post-handshake
	// messages (TLS 1.3 session tickets), which tls.Conn reads with the
	// first response: the peek would take them for unsolicited data.
	if c.raw == nil || (c.isTLS && !c.used) || time.Since(c.idleSince) < staleAfter {
		return true
	}
	return !peekClosed(c.raw)
}

// worker is one request loop; its buffers are reused for every request.
type worker struct {
	e     *engine
	wbuf  []byte // the request on the wire
	lbuf  []byte // the evidence line
	body  []byte // body prefix
	hdrs  map[string]string
	line  evidence.Request
	cur   atomic.Pointer[hconn]
	codes []map[int]int // per target
	// burst is the first request of an unpaced attack, written by a
	// sender; sentCh is closed when it was.
	burst  *attempt
	sentCh chan struct{}

	attempted, recorded, notSent, resent int
	firstNotSent                         string
	sends                                int
	minSent, maxSent                     int64
}

func (e *engine) newWorker() *worker {
	w := &worker{e: e, codes: make([]map[int]int, len(e.targets)), minSent: math.MaxInt64}
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

// build puts ID i's request bytes into w.wbuf.
func (w *worker) build(i int) {
	tg := w.e.targets[w.e.p.assign[i]]
	w.wbuf = append(append(append(w.wbuf[:0], tg.prefix...), w.e.p.opts.IDs[i]...), tg.suffix...)
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
}

// attempt is one ID's trip through a worker.
type attempt struct {
	i           int
	intended    int64 // paced: the schedule's send time, unix ns; 0 otherwise
	inBurst     bool  // released by the barrier
	c           *hconn
	start, sent time.Time
	resp        *http.Response
	err         error
	writes      int // writes that put at least one byte on the wire
	notSent     bool
	// Set by a burst sender (runUnpaced): the result of its write.
	wn   int
	werr error
}

// do sends ID i (whose bytes build put in w.wbuf) on c, or on a connection
// from the pool when c is nil, reads the response and records the line.
// intended is the schedule's send time (paced attacks), 0 otherwise.
func (w *worker) do(i int, intended int64, c *hconn, inBurst bool) {
	e := w.e
	tg := e.targets[e.p.assign[i]]
	a := attempt{i: i, intended: intended, inBurst: inBurst, c: c, start: time.Now()}
	for try := 0; ; try++ {
		if a.c == nil {
			if a.c, a.err = tg.get(e.abortCtx); a.err != nil {
				a.notSent = true
				break
			}
		}
		w.cur.Store(a.c)
		a.sent = time.Now()
		a.c.SetDeadline(a.sent.Add(e.timeout))
		if e.abortCtx.Err() != nil {
			a.c.SetDeadline(time.Unix(1, 0))
		}
		n, werr := a.c.Write(w.wbuf)
		if n > 0 {
			a.writes++
		}
		if werr != nil {
			reused := a.c.used
			a.c.close()
			a.c = nil
			if n == 0 && reused && try == 0 {
				continue // not one byte left: the request was not sent
			}
			a.err, a.notSent = werr, n == 0
			break
		}
		a.resp, a.err = readResponse(a.c.br, tg.req)
		if a.err != nil && e.p.opts.testResend && a.c.used && try == 0 {
			a.c.close()
			a.c = nil
			continue // what net/http's Transport would do (tests only)
		}
		break
	}
	w.finish(&a)
}

// finish reads the body of a's response, releases or closes its
// connection, and records the evidence line and the statistics.
func (w *worker) finish(a *attempt) {
	e := w.e
	tg := e.targets[e.p.assign[a.i]]
	r := &w.line
	*r = evidence.Request{ID: e.p.opts.IDs[a.i], Target: tg.name, URL: tg.url, Method: e.p.opts.Method,
		Phase: e.p.opts.Name, IntendedNs: a.intended}
	w.attempted++
	c := a.c
	var end time.Time
	switch {
	case a.notSent:
		end = time.Now()
		a.sent = a.start
		r.NotSent = true
		r.Error = requestError(r.Method, r.URL, a.err, e.timeout)
		w.notSent++
		if w.firstNotSent == "" {
			w.firstNotSent = r.Error
		}
		if c != nil {
			c.close()
		}
	case a.err != nil:
		end = time.Now()
		r.Error = requestError(r.Method, r.URL, a.err, e.timeout)
		if c != nil {
			c.close()
		}
	default:
		nb, berr := w.readBody(a.resp)
		end = time.Now()
		if berr != nil {
			r.Error = requestError(r.Method, r.URL, berr, e.timeout)
			c.close()
			break
		}
		r.Code, r.BytesIn = a.resp.StatusCode, nb
		if r.Code < 200 || r.Code >= 400 {
			r.Error = a.resp.Status
		}
		w.capture(a.resp.Header)
		if e.keep && !a.resp.Close && r.Code != http.StatusSwitchingProtocols && e.abortCtx.Err() == nil {
			tg.put(c, end)
		} else {
			c.close()
		}
	}
	w.cur.Store(nil)
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
			e.burst.add(r.SentNs - e.released)
			atomicMin(&e.burstMin, r.SentNs)
			atomicMax(&e.burstMax, r.SentNs)
		}
		if a.intended != 0 {
			e.pace.add(r.SentNs - a.intended)
			if r.Code != 0 {
				e.fromIntended.add(end.UnixNano() - a.intended)
			}
		}
	}
	if r.Code != 0 {
		e.lat.add(r.LatencyNs)
		if e.paced && e.sampleN.Load() < sizingSample {
			if e.sampleN.Add(1) <= sizingSample {
				e.sampleSum.Add(r.LatencyNs)
			}
		}
	}
	w.codes[e.p.assign[a.i]][r.Code]++
	w.lbuf = evidence.AppendRequestJSON(w.lbuf[:0], r)
	if werr := e.out.WriteRaw(w.lbuf); werr != nil {
		e.fail(fmt.Errorf("attack: writing request %q: %w", r.ID, werr))
	} else {
		w.recorded++
	}
}

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
		w.line.Body = string(w.body[:k])
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

// requestError formats a transport error like net/http does (a *url.Error:
// `Get "URL": ...`), naming a timeout as such.
func requestError(method, u string, err error, timeout time.Duration) string {
	op := method[:1] + strings.ToLower(method[1:])
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("timeout after %s (%w)", timeout, err)
	}
	return (&url.Error{Op: op, URL: u, Err: err}).Error()
}

func (e *engine) fail(err error) {
	e.mu.Lock()
	if e.writeErr == nil {
		e.writeErr = err
	}
	e.mu.Unlock()
	e.stop.Store(true)
}

// run executes the attack and builds the Summary.
func (e *engine) run(ctx context.Context) (*Summary, error) {
	p := e.p
	n := len(p.opts.IDs)
	grace := p.opts.InterruptGrace
	if grace <= 0 {
		grace = time.Second
	}
	e.abortCtx, e.abortFn = context.WithCancel(context.WithoutCancel(ctx))
	defer e.abortFn()
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
		for _, tg := range e.targets {
			for {
				select {
				case c := <-tg.idle:
					c.close()
					continue
				default:
				}
				break
			}
		}
	}()

	sum := &Summary{Schema: Schema, Config: p.config, CodesByTarget: map[string]map[string]int{}}
	for _, tc := range p.config.Targets {
		sum.CodesByTarget[tc.Name] = map[string]int{}
	}
	var start time.Time
	if e.paced {
		start = e.runPaced(ctx, sum)
	} else {
		start = e.runUnpaced(ctx, sum)
	}
	end := time.Now()

	attempted, recorded := 0, 0
	first, last := int64(math.MaxInt64), int64(0)
	sends := 0
	firstNotSent := ""
	e.mu.Lock()
	for _, w := range e.workers {
		attempted += w.attempted
		recorded += w.recorded
		sum.NotSent += w.notSent
		sum.Resent += w.resent
		sends += w.sends
		if w.sends > 0 {
			first, last = min(first, w.minSent), max(last, w.maxSent)
		}
		if firstNotSent == "" {
			firstNotSent = w.firstNotSent
		}
		for t, m := range w.codes {
			for code, c := range m {
				sum.CodesByTarget[p.tnames[t]][strconv.Itoa(code)] += c
			}
		}
	}
	writeErr := e.writeErr
	e.mu.Unlock()

	sum.Sent, sum.Recorded = attempted, recorded
	sum.StartNs, sum.EndNs = start.UnixNano(), end.UnixNano()
	sum.Start, sum.End = start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano)
	if sends > 0 {
		sum.FirstSendNs, sum.LastSendNs = first, last
		sum.SendSpreadNs = last - first
	}
	sum.LatencyNs = e.lat.quantiles()
	if sum.Burst != nil {
		sum.Burst.SendNs = e.burst.quantiles()
		if sum.Burst.SendNs.N > 1 {
			sum.Burst.SpreadNs = e.burstMax.Load() - e.burstMin.Load()
		}
		sum.Burst.WarmConnections = int(e.warm.Load())
	}
	if sum.Pacing != nil {
		if sends > 1 && last > first {
			sum.Pacing.AchievedPerSec = float64(sends-1) / (float64(last-first) / 1e9)
		}
		sum.Pacing.ErrorNs = e.pace.quantiles()
		sum.Pacing.LatencyFromIntendedNs = e.fromIntended.quantiles()
	}
	stopWatch()
	sum.Interrupted = interrupted.Load()
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
