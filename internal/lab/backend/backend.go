// Package backend is the lab upstream: one or more HTTP endpoints (each its
// own listener and name, backend-0, backend-1, ...) that record one
// evidence.Receipt (a line of receipts.jsonl) for every request they really
// receive, including those answered with an injected fault (Faults:
// latency, an error status, a concurrency cap, connection resets), so that
// admissions claimed by a proxy can be checked against deliveries. Faults
// can be changed while it runs (SetFaults, or PUT /_rlbench/faults). It
// never prints and never exits; errors are returned.
//
// # Durable receipts
//
// A receipt is written through to the receipts file (evidence.CreateSync:
// one write(2) per batch of concurrent requests) before its request is
// answered, so a backend killed at any moment has every receipt of every
// request it answered on the file, and its seal says "open" (evidence,
// seal.go): analyze reports the scenario NOT_RUN naming receipts.jsonl,
// never "admitted without receipt (lost)". A receipt that cannot be
// written (a full disk) fails its request with 500 at once, and every
// request after it, never 200; the receipts of its batch that did fit are
// cut off the file (evidence.Writer), so no receipt claims the status of
// an answer that was a 500; Failed is closed and Err says why, so
// `rlbench backend` exits non-zero within that request. The backend keeps
// no receipt in memory: GET /_rlbench/receipts serves the file.
package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/h1"
)

// Paths served by the backend that are NOT recorded as receipts.
const (
	// HealthPath returns 200 with body "ok".
	HealthPath = "/healthz"
	// FaultsPath returns every endpoint's faults (GET) and sets them (PUT
	// or POST a FaultsUpdate); the answer is the new FaultsState.
	FaultsPath = "/_rlbench/faults"
)

// MaxEndpoints bounds Options.Endpoints.
const MaxEndpoints = 64

// EndpointName returns the name of the i-th endpoint (0-based): backend-0,
// backend-1, ...; it is Receipt.Endpoint.
func EndpointName(i int) string { return "backend-" + strconv.Itoa(i) }

// DefaultHeaders are the request headers copied into Receipt.Headers when
// Options.Headers is nil: the ones an Envoy in front of the backend sets or
// forwards (x-envoy-attempt-count when include_request_attempt_count is on,
// x-forwarded-for, x-request-id).
var DefaultHeaders = []string{"x-envoy-attempt-count", "x-forwarded-for", "x-request-id"}

// Options configures a Backend. The zero value is usable.
type Options struct {
	// Listen is the TCP address of the first endpoint; default
	// "127.0.0.1:0" (a free port). The other endpoints bind the next ports
	// on the same host (endpoint i on port+i), or free ports when the port
	// is 0.
	Listen string
	// Endpoints is the number of endpoints, 1..MaxEndpoints; 0 means 1.
	Endpoints int
	// Faults are every endpoint's faults at start.
	Faults Faults
	// Seed seeds the fault draws (latency, probabilities); 0 draws one.
	Seed uint64
	// After returns a channel that delivers after d: the injected latency
	// waits on it. Default: a timer (stopped when the backend closes).
	// Tests inject one to check the delays without waiting for them.
	After func(d time.Duration) <-chan time.Time
	// ReceiptsFile is the receipts file (receipts.jsonl), created
	// (truncated) with its seal by evidence.CreateSync and sealed on Close.
	// Empty: a temporary file, removed on Close.
	ReceiptsFile string
	// Receipts, if non-nil and ReceiptsFile is empty, also receives every
	// receipt line, written through after the temporary file's copy, in
	// the same order; a write error of either fails the request. It is
	// never closed.
	Receipts io.Writer
	// Headers lists the request header names (case-insensitive) recorded in
	// Receipt.Headers, keyed by lower-case name, when present on the request.
	// nil means DefaultHeaders; an empty non-nil slice records none.
	Headers []string
	// Status is the HTTP status of recorded requests, 200..999; default 200.
	Status int
	// Body, if non-nil, is the response body of recorded requests instead of
	// the default `{"id":<id or null>}` JSON.
	Body []byte
	// Now returns the receive time; default time.Now.
	Now func() time.Time
	// Replica is recorded in every receipt (evidence.Receipt.Replica): the
	// identity of this backend among several replicas; "" records none.
	Replica string
}

// Backend is a running lab upstream. Its methods are safe for concurrent use.
type Backend struct {
	eps      []*endpoint
	headers  []recorded
	status   int
	body     []byte
	bodyType string // Content-Type of body (sniffed, as net/http does)
	now      func() time.Time

	jw      *evidence.Writer // write-through (evidence.CreateSync or NewSyncWriter)
	path    string           // the receipts file GET evidence.ReceiptsPath serves
	tmp     bool             // path is a temporary file, removed on Close
	tmpFile *os.File
	rnd     *seededRand
	replica string
	after   func(time.Duration) <-chan time.Time
	done    chan struct{} // closed by Close: injected latencies end

	failOnce sync.Once
	failed   chan struct{} // closed at the first receipt write error
	ferr     atomic.Pointer[error]

	inflight  sync.RWMutex
	closeOnce sync.Once
	closeErr  error
}

// endpoint is one listener of the backend, with its own faults.
type endpoint struct {
	b        *Backend
	i        int
	name     string
	ln       net.Listener
	served   chan struct{} // closed when the accept loop returned (server.go)
	faults   atomic.Pointer[Faults]
	inflight atomic.Int64 // requests being answered

	conns h1.Conns[*conn] // server.go
}

// Endpoint describes one endpoint of a running backend.
type Endpoint struct {
	// Name is EndpointName(i), the receipts' endpoint field.
	Name string `json:"name"`
	// URL is "http://127.0.0.1:PORT".
	URL string `json:"url"`
}

// Start binds the endpoints and serves until Close or until ctx is done
// (then it closes as Close does). It returns an error naming the address
// when a bind fails, when Status is outside 200..999 (a 1xx is not a
// final answer: the client would wait for one), when Endpoints is
// outside 0..MaxEndpoints or when Faults do not validate.
func Start(ctx context.Context, opts Options) (*Backend, error) {
	listen := opts.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	status := opts.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status < 200 || status > 999 {
		return nil, fmt.Errorf("backend: invalid status %d (want 200..999: a 1xx is not a final answer)", status)
	}
	n := opts.Endpoints
	if n == 0 {
		n = 1
	}
	if n < 1 || n > MaxEndpoints {
		return nil, fmt.Errorf("backend: %d endpoints, want 1..%d", opts.Endpoints, MaxEndpoints)
	}
	if err := opts.Faults.Validate(); err != nil {
		return nil, err
	}
	hdrs := opts.Headers
	if hdrs == nil {
		hdrs = DefaultHeaders
	}
	lower := make([]recorded, 0, len(hdrs))
	for _, h := range hdrs {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		lower = append(lower, recorded{lower: strings.ToLower(h), key: http.CanonicalHeaderKey(h)})
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) | 1
	}
	b := &Backend{headers: lower, status: status, body: opts.Body, bodyType: sniff(opts.Body), now: now, after: opts.After, done: make(chan struct{}), replica: opts.Replica,
		failed: make(chan struct{}), rnd: &seededRand{r: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}}
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("backend: listen %s: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port+n-1 > 65535 {
		return nil, fmt.Errorf("backend: listen %s: want a port number with room for %d endpoint(s) below 65536", listen, n)
	}
	if err := b.openReceipts(opts); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	for i := range n {
		addr := listen
		if i > 0 {
			next := 0
			if port != 0 {
				next = port + i
			}
			addr = net.JoinHostPort(host, strconv.Itoa(next))
		}
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			// No accept loop runs yet: close the listeners bound so far
			// (closeEndpoints would wait for their loops).
			for _, ep := range b.eps {
				_ = ep.ln.Close()
			}
			b.closeReceipts()
			return nil, fmt.Errorf("backend: listen %s: %w", addr, err)
		}
		ep := &endpoint{b: b, i: i, name: EndpointName(i), served: make(chan struct{})}
		f := opts.Faults
		ep.faults.Store(&f)
		ep.ln = &refusingListener{Listener: ln, ep: ep}
		b.eps = append(b.eps, ep)
	}
	for _, ep := range b.eps {
		go ep.serve()
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = b.Close()
		case <-b.eps[0].served:
		}
	}()
	return b, nil
}

// refusingListener resets new connections while its endpoint is at its
// concurrency cap with over_capacity "refuse".
type refusingListener struct {
	net.Listener
	ep *endpoint
}

func (l *refusingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		f := l.ep.faults.Load()
		if f.MaxConcurrent > 0 && f.OverCapacity == OverCapacityRefuse && int(l.ep.inflight.Load()) >= f.MaxConcurrent {
			rst(c)
			continue
		}
		return c, nil
	}
}

// rst closes c with a TCP reset (SO_LINGER 0).
func rst(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Addr returns the first endpoint's host:port, e.g. "127.0.0.1:40123".
func (b *Backend) Addr() string { return b.eps[0].ln.Addr().String() }

// URL returns "http://" + Addr().
func (b *Backend) URL() string { return "http://" + b.Addr() }

// Endpoints lists the endpoints in order.
func (b *Backend) Endpoints() []Endpoint {
	out := make([]Endpoint, len(b.eps))
	for i, ep := range b.eps {
		out[i] = Endpoint{Name: ep.name, URL: "http://" + ep.ln.Addr().String()}
	}
	return out
}

// SetFaults replaces the faults of the given endpoints (all of them when
// endpoints is empty) for the requests that arrive from now on, and returns
// what each had before, in the order given. It fails on an unknown
// endpoint or invalid faults, changing nothing.
func (b *Backend) SetFaults(endpoints []int, f Faults) ([]Faults, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		for i := range b.eps {
			endpoints = append(endpoints, i)
		}
	}
	for _, i := range endpoints {
		if i < 0 || i >= len(b.eps) {
			return nil, fmt.Errorf("backend: no endpoint %d (have %d)", i, len(b.eps))
		}
	}
	prev := make([]Faults, len(endpoints))
	for k, i := range endpoints {
		nf := f
		prev[k] = *b.eps[i].faults.Swap(&nf)
	}
	return prev, nil
}

// RestoreFaults puts back what SetFaults returned for the same endpoints.
func (b *Backend) RestoreFaults(endpoints []int, prev []Faults) {
	if len(endpoints) == 0 {
		for i := range b.eps {
			endpoints = append(endpoints, i)
		}
	}
	for k, i := range endpoints {
		if k < len(prev) && i >= 0 && i < len(b.eps) {
			f := prev[k]
			b.eps[i].faults.Store(&f)
		}
	}
}

// FaultsOf returns endpoint i's current faults.
func (b *Backend) FaultsOf(i int) Faults { return *b.eps[i].faults.Load() }

// Count returns the number of receipts recorded so far.
func (b *Backend) Count() int {
	n, _ := b.jw.Written()
	return int(n)
}

// Receipts reads every receipt line recorded so far (JSON Lines) from the
// receipts file, for tests and small runs: it holds them all in memory
// (GET evidence.ReceiptsPath streams them). nil after Close when the file was
// temporary.
func (b *Backend) Receipts() []byte {
	_, n := b.jw.Written()
	f, err := os.Open(b.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := make([]byte, n)
	k, _ := io.ReadFull(f, out)
	return out[:k]
}

// ReceiptsFile is the path of the receipts file (Options.ReceiptsFile, or
// the temporary file).
func (b *Backend) ReceiptsFile() string { return b.path }

// Failed is closed when a receipt could not be written: from then on every
// request is answered 500 and recorded nowhere; Err says why. A process
// serving the backend stops on it (`rlbench backend` exits non-zero).
func (b *Backend) Failed() <-chan struct{} { return b.failed }

// Err returns the first receipt write error, nil while every receipt was written.
func (b *Backend) Err() error {
	if p := b.ferr.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records the first receipt write error and closes Failed.
func (b *Backend) fail(err error) {
	b.failOnce.Do(func() {
		err = fmt.Errorf("backend: receipt not recorded: %w", err)
		b.ferr.Store(&err)
		close(b.failed)
	})
}

// openReceipts opens the receipts file: Options.ReceiptsFile sealed, or a
// temporary file (teed to Options.Receipts).
func (b *Backend) openReceipts(opts Options) error {
	if opts.ReceiptsFile != "" {
		if opts.Receipts != nil {
			return errors.New("backend: give Options.ReceiptsFile or Options.Receipts, not both")
		}
		w, err := evidence.CreateSync(opts.ReceiptsFile)
		if err != nil {
			return fmt.Errorf("backend: receipts: %w", err)
		}
		b.jw, b.path = w, opts.ReceiptsFile
		return nil
	}
	f, err := os.CreateTemp("", "rlbench-receipts-*.jsonl")
	if err != nil {
		return fmt.Errorf("backend: receipts: %w", err)
	}
	var out io.Writer = struct{ io.Writer }{f} // closed by closeReceipts
	if opts.Receipts != nil {
		out = io.MultiWriter(f, opts.Receipts)
	}
	b.jw, b.path, b.tmp = evidence.NewSyncWriter(out), f.Name(), true
	b.tmpFile = f
	return nil
}

// closeReceipts closes (and seals) the receipts file, removing a temporary one.
func (b *Backend) closeReceipts() error {
	err := b.jw.Close()
	if b.tmp {
		if cerr := b.tmpFile.Close(); err == nil {
			err = cerr
		}
		_ = os.Remove(b.path)
	}
	return err
}

// Close stops the endpoints (closing their connections and ending injected
// latencies; handlers already running finish and their receipts are kept),
// then closes the receipts file, sealing it (Options.Receipts stays open;
// a temporary file is removed). It returns the first receipt write error,
// or the close's. Close is idempotent: later (or concurrent) calls wait for
// the first to finish and return its result.
func (b *Backend) Close() error {
	b.closeOnce.Do(b.doClose)
	return b.closeErr
}

func (b *Backend) closeEndpoints() error {
	var err error
	for _, ep := range b.eps {
		if cerr := ep.closeConns(); err == nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	}
	return err
}

func (b *Backend) doClose() {
	close(b.done)
	// Close the listeners and every connection at once (Shutdown would wait
	// up to 5 s for connections a client dialed but never used), then wait
	// for handlers already running, so every receipt they record is written.
	err := b.closeEndpoints()
	b.inflight.Lock() // waits for running handlers (they hold RLock)
	defer b.inflight.Unlock()
	rerr := b.closeReceipts()
	if ferr := b.Err(); ferr != nil {
		rerr = ferr
	}
	if rerr != nil {
		err = rerr
	}
	b.closeErr = err
}

// wait blocks for d (the injected latency) or until the backend closes.
func (b *Backend) wait(d time.Duration) {
	if d <= 0 {
		return
	}
	if b.after != nil {
		select {
		case <-b.after(d):
		case <-b.done:
		}
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.done:
	}
}

// lineBufs holds the buffers receipts are encoded into (the writer copies
// each line).
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// recorded is a request header recorded in receipts: its receipt key
// (lower case) and its canonical form, as http.ReadRequest keys it.
type recorded struct{ lower, key string }

// idKey is evidence.IDHeader in canonical form: its value becomes
// Receipt.ID; a request without it is still recorded, with "id": null.
var idKey = http.CanonicalHeaderKey(evidence.IDHeader)

// sniff is the Content-Type net/http's server gives a body written without
// one (http.DetectContentType); "" for nil (the default JSON body).
func sniff(body []byte) string {
	if body == nil {
		return ""
	}
	return http.DetectContentType(body)
}

// record records req's receipt and answers it (server.go calls it); it
// reports whether the connection may carry another request.
func (ep *endpoint) record(cn *conn, req *http.Request, closing bool) bool {
	b := ep.b
	t := b.now()
	inflight := int(ep.inflight.Add(1)) - 1
	defer ep.inflight.Add(-1)
	dec := ep.faults.Load().decide(b.rnd, inflight, b.status)
	rc := evidence.Receipt{
		RecvNs:   t.UnixNano(),
		RecvTime: t.UTC().Format(time.RFC3339Nano),
		Method:   req.Method,
		Path:     req.URL.Path,
		Query:    evidence.RedactQuery(req.URL.RawQuery), // a receipt holds no query credential
		Remote:   req.RemoteAddr,
		Endpoint: ep.name,
		Status:   dec.status,
		Fault:    dec.fault,
		DelayNs:  int64(dec.delay),
		Replica:  b.replica,
	}
	if vs := req.Header[idKey]; len(vs) > 0 {
		id := vs[0]
		rc.ID = &id
	}
	for _, h := range b.headers {
		if vs := req.Header[h.key]; len(vs) > 0 {
			if rc.Headers == nil {
				rc.Headers = make(map[string]string, len(b.headers))
			}
			rc.Headers[h.lower] = evidence.RedactHeader(h.lower, strings.Join(vs, ",")) // no credential in a receipt
		}
	}
	bp := lineBufs.Get().(*[]byte)
	defer lineBufs.Put(bp)
	line := evidence.AppendReceiptJSON((*bp)[:0], &rc)
	*bp = line
	// Read the request body (up to maxDrain) so the connection can be reused.
	cn.continue100(req)
	_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, maxDrain))
	// The receipt is on the file before the request is answered; one that
	// is not is a 500, never a 200 (package doc, "Durable receipts").
	werr := b.Err()
	if werr == nil {
		if werr = b.jw.WriteRaw(line); werr != nil {
			// Answer 500, then close Failed, then flush: a client that
			// reads the 500 finds Failed closed, and the close of every
			// connection that Failed causes leaves this one until its
			// answer is out (closeConns).
			cn.writeError(req, http.StatusInternalServerError, fmt.Sprintf("backend: receipt not recorded: %v", werr), true)
			b.fail(werr)
			return false
		}
	}
	if werr != nil {
		cn.writeError(req, http.StatusInternalServerError, werr.Error(), closing)
		return true
	}

	if dec.delay > 0 {
		_ = cn.bw.Flush() // earlier pipelined answers do not wait with this one
	}
	b.wait(dec.delay)
	if dec.reset {
		_ = cn.bw.Flush() // the answers to earlier pipelined requests
		rst(cn.c)
		return false
	}
	body, ctype := b.body, b.bodyType
	if body == nil {
		// {"id":"..."} (null without an ID), as encoding/json would write it.
		body = append(line[:0], `{"id":`...)
		if rc.ID == nil {
			body = append(body, "null"...)
		} else {
			body = evidence.AppendJSONString(body, *rc.ID)
		}
		body = append(body, '}')
		*bp = body
		ctype = "application/json"
	}
	n := int64(len(body))
	if !h1.BodyAllowed(dec.status) {
		n = -1
	}
	cn.writeHead(req, dec.status, ctype, n, closing)
	if req.Method != http.MethodHead && n >= 0 {
		_, _ = cn.bw.Write(body)
	}
	return true
}

// writeError answers code with msg as http.Error does (text/plain, nosniff,
// msg and a newline).
func (cn *conn) writeError(req *http.Request, code int, msg string, closing bool) {
	w := &ctlWriter{cn: cn, req: req, h: http.Header{}, closing: closing}
	http.Error(w, msg, code)
	w.finish()
}

// FaultsState is the JSON of GET /_rlbench/faults.
type FaultsState struct {
	Endpoints []EndpointFaults `json:"endpoints"`
}

// EndpointFaults is one endpoint's faults in FaultsState.
type EndpointFaults struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Faults Faults `json:"faults"`
}

// FaultsUpdate is the body of PUT /_rlbench/faults: the endpoints' indexes
// (all when empty) and their new faults.
type FaultsUpdate struct {
	Endpoints []int  `json:"endpoints,omitempty"`
	Faults    Faults `json:"faults"`
}

func (b *Backend) serveFaults(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPut, http.MethodPost:
		var u FaultsUpdate
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&u); err != nil {
			http.Error(w, "faults: "+err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := b.SetFaults(u.Endpoints, u.Faults); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	st := FaultsState{}
	for i, ep := range b.Endpoints() {
		st.Endpoints = append(st.Endpoints, EndpointFaults{Name: ep.Name, URL: ep.URL, Faults: b.FaultsOf(i)})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

func (b *Backend) serveReceipts(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := b.Err(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// Every receipt written so far, up to a line boundary (later ones are
	// appended past it while this is served).
	_, n := b.jw.Written()
	f, err := os.Open(b.path)
	if err != nil {
		http.Error(w, "receipts: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(f, 0, n))
}
