// Package backend is the lab upstream: one or more HTTP endpoints (each its
// own listener and name, backend-0, backend-1, ...) that record one
// evidence.Receipt (a line of receipts.jsonl) for every request they really
// receive, including those answered with an injected fault (Faults:
// latency, an error status, a concurrency cap, connection resets), so that
// admissions claimed by a proxy can be checked against deliveries. Faults
// can be changed while it runs (SetFaults, or PUT /_rlbench/faults). It
// never prints and never exits; errors are returned.
package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// IDHeader is the request header whose value becomes Receipt.ID. A request
// without it is still recorded, with "id": null.
const IDHeader = "X-Rlbench-Id"

// Paths served by the backend that are NOT recorded as receipts.
const (
	// ReceiptsPath returns every receipt line recorded so far (JSON Lines,
	// content-type application/x-ndjson), in receive order.
	ReceiptsPath = "/_rlbench/receipts"
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
	// "127.0.0.1:0" (a free port). The other endpoints bind port 0 on the
	// same host.
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
	// Receipts, if non-nil, receives the receipt lines through an
	// evidence.Writer owned by the Backend (flushed every
	// evidence.FlushEvery and on Close). Receipts itself is never closed.
	Receipts io.Writer
	// ReceiptWriter, if non-nil, receives the receipt lines instead of
	// Receipts. It is flushed on Close but not closed: the caller owns it.
	ReceiptWriter *evidence.Writer
	// Headers lists the request header names (case-insensitive) recorded in
	// Receipt.Headers, keyed by lower-case name, when present on the request.
	// nil means DefaultHeaders; an empty non-nil slice records none.
	Headers []string
	// Status is the HTTP status of recorded requests; default 200.
	Status int
	// Body, if non-nil, is the response body of recorded requests instead of
	// the default `{"id":<id or null>}` JSON.
	Body []byte
	// Now returns the receive time; default time.Now.
	Now func() time.Time
}

// Backend is a running lab upstream. Its methods are safe for concurrent use.
type Backend struct {
	eps     []*endpoint
	headers []string
	status  int
	body    []byte
	now     func() time.Time

	jw    *evidence.Writer
	ownJW bool
	rnd   *seededRand
	after func(time.Duration) <-chan time.Time
	done  chan struct{} // closed by Close: injected latencies end

	mu     sync.Mutex
	mem    bytes.Buffer // every receipt line, newline-terminated
	count  int
	closed bool
	werr   error

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
	srv      *http.Server
	served   chan struct{}
	faults   atomic.Pointer[Faults]
	inflight atomic.Int64 // requests being answered
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
// when a bind fails, when Status is outside 100..999, when Endpoints is
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
	if status < 100 || status > 999 {
		return nil, fmt.Errorf("backend: invalid status %d (want 100..999)", status)
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
	lower := make([]string, 0, len(hdrs))
	for _, h := range hdrs {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		lower = append(lower, strings.ToLower(h))
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) | 1
	}
	b := &Backend{headers: lower, status: status, body: opts.Body, now: now, after: opts.After, done: make(chan struct{}),
		rnd: &seededRand{r: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}}
	switch {
	case opts.ReceiptWriter != nil:
		b.jw = opts.ReceiptWriter
	case opts.Receipts != nil:
		b.jw = evidence.NewWriter(noCloser{opts.Receipts})
		b.ownJW = true
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("backend: listen %s: %w", listen, err)
	}
	var lc net.ListenConfig
	for i := range n {
		addr := listen
		if i > 0 {
			addr = net.JoinHostPort(host, "0")
		}
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			b.closeEndpoints()
			return nil, fmt.Errorf("backend: listen %s: %w", addr, err)
		}
		ep := &endpoint{b: b, i: i, name: EndpointName(i), served: make(chan struct{})}
		f := opts.Faults
		ep.faults.Store(&f)
		ep.ln = &refusingListener{Listener: ln, ep: ep}
		mux := http.NewServeMux()
		mux.HandleFunc(ReceiptsPath, b.serveReceipts)
		mux.HandleFunc(HealthPath, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "ok")
		})
		mux.HandleFunc(FaultsPath, b.serveFaults)
		mux.HandleFunc("/", ep.serveRecord)
		ep.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b.inflight.RLock()
			defer b.inflight.RUnlock()
			mux.ServeHTTP(w, r)
		}), ReadHeaderTimeout: 10 * time.Second}
		b.eps = append(b.eps, ep)
	}
	for _, ep := range b.eps {
		go func() {
			defer close(ep.served)
			_ = ep.srv.Serve(ep.ln)
		}()
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

type noCloser struct{ io.Writer }

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
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count
}

// Receipts returns a copy of every receipt line recorded so far (JSON Lines).
func (b *Backend) Receipts() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.mem.Bytes())
}

// Close stops the endpoints (closing their connections and ending injected
// latencies; handlers already running finish and their receipts are kept),
// then flushes the receipts: an owned evidence.Writer is closed
// (Options.Receipts itself stays open), a caller's ReceiptWriter is
// flushed. It returns the first write or flush error. Close is idempotent:
// later (or concurrent) calls wait for the first to finish and return its
// result.
func (b *Backend) Close() error {
	b.closeOnce.Do(b.doClose)
	return b.closeErr
}

func (b *Backend) closeEndpoints() error {
	var err error
	for _, ep := range b.eps {
		if cerr := ep.srv.Close(); err == nil {
			err = cerr
		}
	}
	for _, ep := range b.eps {
		<-ep.served
	}
	return err
}

func (b *Backend) doClose() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	close(b.done)
	// Close the listeners and every connection at once (Shutdown would wait
	// up to 5 s for connections a client dialed but never used), then wait
	// for handlers already running, so every receipt they record is flushed.
	err := b.closeEndpoints()
	b.inflight.Lock() // waits for running handlers (they hold RLock)
	defer b.inflight.Unlock()
	if b.jw != nil {
		var ferr error
		if b.ownJW {
			ferr = b.jw.Close()
		} else {
			ferr = b.jw.Flush()
		}
		if err == nil {
			err = ferr
		}
	}
	b.mu.Lock()
	if err == nil {
		err = b.werr
	}
	b.mu.Unlock()
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

func (ep *endpoint) serveRecord(w http.ResponseWriter, r *http.Request) {
	b := ep.b
	t := b.now()
	inflight := int(ep.inflight.Add(1)) - 1
	defer ep.inflight.Add(-1)
	dec := ep.faults.Load().decide(b.rnd, inflight, b.status)
	rc := evidence.Receipt{
		RecvNs:   t.UnixNano(),
		RecvTime: t.UTC().Format(time.RFC3339Nano),
		Method:   r.Method,
		Path:     r.URL.Path,
		Query:    r.URL.RawQuery,
		Remote:   r.RemoteAddr,
		Endpoint: ep.name,
		Status:   dec.status,
		Fault:    dec.fault,
		DelayNs:  int64(dec.delay),
	}
	if vs, ok := r.Header[http.CanonicalHeaderKey(IDHeader)]; ok && len(vs) > 0 {
		id := vs[0]
		rc.ID = &id
	}
	for _, h := range b.headers {
		if vs := r.Header.Values(h); len(vs) > 0 {
			if rc.Headers == nil {
				rc.Headers = make(map[string]string, len(b.headers))
			}
			rc.Headers[h] = strings.Join(vs, ",")
		}
	}
	line, err := json.Marshal(&rc)
	if err != nil { // cannot happen for these field types
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// Drain the request body so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	b.mu.Lock()
	b.mem.Write(line)
	b.mem.WriteByte('\n')
	b.count++
	if b.jw != nil {
		if werr := b.jw.WriteRaw(line); werr != nil && b.werr == nil {
			b.werr = werr
		}
	}
	b.mu.Unlock()

	b.wait(dec.delay)
	if dec.reset {
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			rst(c)
		}
		return
	}
	body := b.body
	if body == nil {
		idb, _ := json.Marshal(rc.ID)
		body = append(append([]byte(`{"id":`), idb...), '}')
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(dec.status)
	_, _ = w.Write(body)
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
	if b.jw != nil {
		if err := b.jw.Flush(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
			http.Error(w, "flush receipts: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	data := b.Receipts()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	_, _ = w.Write(data)
}
