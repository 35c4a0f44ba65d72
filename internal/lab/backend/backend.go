// Package backend is the lab upstream: an HTTP server that records one
// evidence.Receipt (a line of receipts.jsonl) for every request it really
// receives, so that admissions claimed by a proxy can be checked against
// deliveries. It never prints and never exits; errors are returned.
package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
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
)

// DefaultHeaders are the request headers copied into Receipt.Headers when
// Options.Headers is nil: the ones an Envoy in front of the backend sets or
// forwards (x-envoy-attempt-count when include_request_attempt_count is on,
// x-forwarded-for, x-request-id).
var DefaultHeaders = []string{"x-envoy-attempt-count", "x-forwarded-for", "x-request-id"}

// Options configures a Backend. The zero value is usable.
type Options struct {
	// Listen is the TCP address to bind; default "127.0.0.1:0" (a free port).
	Listen string
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
	ln      net.Listener
	srv     *http.Server
	headers []string
	status  int
	body    []byte
	now     func() time.Time

	jw     *evidence.Writer
	ownJW  bool
	served chan struct{}

	mu     sync.Mutex
	mem    bytes.Buffer // every receipt line, newline-terminated
	count  int
	closed bool
	werr   error

	inflight  sync.RWMutex
	closeOnce sync.Once
	closeErr  error
}

// Start binds opts.Listen and serves until Close or until ctx is done (then
// it closes as Close does). It returns an error naming the address when the
// bind fails or when Status is outside 100..999.
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
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("backend: listen %s: %w", listen, err)
	}
	b := &Backend{ln: ln, headers: lower, status: status, body: opts.Body, now: now, served: make(chan struct{})}
	switch {
	case opts.ReceiptWriter != nil:
		b.jw = opts.ReceiptWriter
	case opts.Receipts != nil:
		b.jw = evidence.NewWriter(noCloser{opts.Receipts})
		b.ownJW = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc(ReceiptsPath, b.serveReceipts)
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/", b.serveRecord)
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.inflight.RLock()
		defer b.inflight.RUnlock()
		mux.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(b.served)
		_ = b.srv.Serve(ln)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = b.Close()
		case <-b.served:
		}
	}()
	return b, nil
}

type noCloser struct{ io.Writer }

// Addr returns the bound host:port, e.g. "127.0.0.1:40123".
func (b *Backend) Addr() string { return b.ln.Addr().String() }

// URL returns "http://" + Addr().
func (b *Backend) URL() string { return "http://" + b.Addr() }

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

// Close stops the server (closing its connections; handlers already running
// finish and their receipts are kept), then
// flushes the receipts: an owned evidence.Writer is closed (Options.Receipts
// itself stays open), a caller's ReceiptWriter is flushed. It returns the
// first write or flush error. Close is idempotent: later (or concurrent)
// calls wait for the first to finish and return its result.
func (b *Backend) Close() error {
	b.closeOnce.Do(b.doClose)
	return b.closeErr
}

func (b *Backend) doClose() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	// Close the listener and every connection at once (Shutdown would wait
	// up to 5 s for connections a client dialed but never used), then wait
	// for handlers already running, so every receipt they record is flushed.
	err := b.srv.Close()
	<-b.served
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

func (b *Backend) serveRecord(w http.ResponseWriter, r *http.Request) {
	t := b.now()
	rc := evidence.Receipt{
		RecvNs:   t.UnixNano(),
		RecvTime: t.UTC().Format(time.RFC3339Nano),
		Method:   r.Method,
		Path:     r.URL.Path,
		Query:    r.URL.RawQuery,
		Remote:   r.RemoteAddr,
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

	body := b.body
	if body == nil {
		idb, _ := json.Marshal(rc.ID)
		body = append(append([]byte(`{"id":`), idb...), '}')
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(body)
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
