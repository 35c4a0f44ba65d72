// Package gateway is rlbench's lab gateway: a small HTTP server on a private
// loopback port in front of the lab backend's endpoints that asks a Limiter
// for every request and answers a rejection itself or forwards the request
// (its headers, the request ID header evidence.IDHeader among them, kept).
// It stands for the gateways people put in front of their services with a
// limiter of their own: a Redis + Lua script (Lua), GCRA on Redis through
// go-redis/redis_rate (GCRA), golang.org/x/time/rate middleware (XRate).
//
// It writes its own JSON Lines access log in the lab proxy's record format
// (internal/lab/proxy.AccessLogEntry, read by evidence/envoyrec), one write
// per line, so that analyze's checks read its times as they read the lab
// proxy's: start_ns when it had read the request, local_ns when its limiter
// decided (the time the limiter was given), upstream_start_ns when it began
// forwarding. A rejection is logged with flag RL and details
// local_rate_limited, a limiter error under FailureModeDeny with RLSE and
// rate_limiter_error, as Envoy logs its own limiters' answers. Every limiter
// error (also one whose request was forwarded, fail open, which Envoy logs
// without a flag: the ratelimit filter's failure_mode_allowed) is in the
// record's extra field limiter_error, which the access log readers ignore:
// the request's class stays what it was answered. Stats counts them.
//
// The package never prints and never exits.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/proxy"
)

// Decision is a limiter's answer for one request.
type Decision struct {
	// Allowed admits the request.
	Allowed bool
	// At is the time the limiter decided by when it is not the now it was
	// given (XRate never moves its clock backwards); zero: now.
	At time.Time
	// Answer is the limiter's own answer as text (a Lua script's reply),
	// for errors and tests; "" when it has none.
	Answer string
}

// Limiter decides whether the request with key may pass at now. An error
// is the limiter's failure (Redis down, a script error): the gateway then
// answers per Options.FailureModeDeny. Implementations are safe for
// concurrent use.
type Limiter interface {
	Allow(ctx context.Context, key string, now time.Time) (Decision, error)
}

// Key kinds (Key.Kind).
const (
	// KeyHeader keys by a request header's first value.
	KeyHeader = "header"
	// KeyClient keys by the client's IP address (the connection's peer,
	// as Envoy's remote_address action with use_remote_address).
	KeyClient = "client"
	// KeyRoute keys by the request's URL path (without the query).
	KeyRoute = "route"
)

// Key is what a request's limiter key is taken from: "header:<name>",
// "client" or "route" (ParseKey).
type Key struct {
	// Kind is KeyHeader, KeyClient or KeyRoute.
	Kind string
	// Header is the header name of KeyHeader (canonical form).
	Header string
}

// ParseKey parses "header:<name>", "client" or "route".
func ParseKey(s string) (Key, error) {
	switch {
	case s == KeyClient || s == KeyRoute:
		return Key{Kind: s}, nil
	case strings.HasPrefix(s, KeyHeader+":"):
		name := strings.TrimPrefix(s, KeyHeader+":")
		if name == "" || strings.ContainsFunc(name, func(r rune) bool { return !isTokenChar(r) }) {
			return Key{}, fmt.Errorf("key %q: want header:<name> with an HTTP header name", s)
		}
		return Key{Kind: KeyHeader, Header: http.CanonicalHeaderKey(name)}, nil
	}
	return Key{}, fmt.Errorf("key %q: want header:<name>, client or route", s)
}

// isTokenChar reports whether r may appear in an HTTP header name (RFC 9110 token).
func isTokenChar(r rune) bool {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// String is the key as ParseKey reads it.
func (k Key) String() string {
	if k.Kind == KeyHeader {
		return KeyHeader + ":" + strings.ToLower(k.Header)
	}
	return k.Kind
}

// Of returns request r's key; ok is false when a KeyHeader's header is
// absent: as Envoy's request_headers action drops its descriptor then, the
// request is not limited.
func (k Key) Of(r *http.Request) (key string, ok bool) {
	switch k.Kind {
	case KeyHeader:
		vs := r.Header[k.Header]
		if len(vs) == 0 {
			return "", false
		}
		return vs[0], true
	case KeyClient:
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr, true
		}
		return host, true
	default:
		return r.URL.Path, true
	}
}

// Response header the gateway sets on its own replies (a rejection or a
// limiter error), with the values DecisionRateLimited and
// DecisionLimiterError: classification rules (evidence.ClassRule) tell its
// replies from the backend's by it.
const (
	DecisionHeader       = "X-Rlbench-Gateway"
	DecisionRateLimited  = "rate_limited"
	DecisionLimiterError = "limiter_error"
)

// Defaults of Options.
const (
	DefaultDenyStatus      = http.StatusTooManyRequests
	DefaultErrorStatus     = http.StatusInternalServerError
	DefaultLimiterTimeout  = time.Second
	DefaultUpstreamTimeout = 15 * time.Second
)

// Options configure Start.
type Options struct {
	// Name is the gateway's name: the attack target's and the access log
	// records' proxy; required.
	Name string
	// Listen is the TCP address; default "127.0.0.1:0" (a free loopback port).
	Listen string
	// Upstreams are the backend endpoints' base URLs ("http://127.0.0.1:PORT"),
	// at least one; requests are spread over them round robin.
	Upstreams []string
	// Limiter decides every request that has a key; required.
	Limiter Limiter
	// Key is what each request's key is taken from.
	Key Key
	// DenyStatus is the status of a rejection; default 429.
	DenyStatus int
	// FailureModeDeny answers a limiter error with ErrorStatus (Envoy's
	// ratelimit filter failure_mode_deny); false forwards the request (fail
	// open).
	FailureModeDeny bool
	// ErrorStatus is the status of a limiter error under FailureModeDeny; default 500.
	ErrorStatus int
	// LimiterTimeout bounds one limiter call; default 1s. A call that
	// takes longer is a limiter error.
	LimiterTimeout time.Duration
	// UpstreamTimeout bounds one forward; default 15s (a timeout is a 504).
	UpstreamTimeout time.Duration
	// AccessLog receives one JSON line per request (proxy.AccessLogEntry),
	// one Write each; nil: none. The gateway does not close it.
	AccessLog io.Writer
	// Now is the clock of the access log and the limiter's now; default time.Now.
	Now func() time.Time
}

// Gateway is a running gateway; Close stops it.
type Gateway struct {
	opts      Options
	ln        net.Listener
	srv       *http.Server
	client    *http.Client
	upstreams []*url.URL
	next      atomic.Uint64
	logMu     sync.Mutex
	logErr    error
	stop      chan struct{} // closed by Close
	// inflight counts the requests being served (and logged); closed,
	// set by Close under logMu, turns new ones away.
	inflight  sync.WaitGroup
	closed    bool
	grace     time.Duration // Close's wait before it cuts connections; 0: 5 s (tests shorten it)
	closeOnce sync.Once
	closeErr  error
	// statsMu guards stats.
	statsMu sync.Mutex
	stats   Stats
}

// Stats counts the gateway's limiter calls.
type Stats struct {
	// Calls is the number of requests the limiter was asked about (those
	// with a key).
	Calls int64
	// Errors is the number of those calls that failed (Limiter.Allow
	// returned an error, a timeout among them): the limiter did not decide.
	Errors int64
	// FirstError is the text of the first failed call's error ("" without one).
	FirstError string
}

// Stats returns the limiter calls so far; after Close, all of them.
func (g *Gateway) Stats() Stats {
	g.statsMu.Lock()
	defer g.statsMu.Unlock()
	return g.stats
}

// count records one limiter call and its error (nil: it decided).
func (g *Gateway) count(err error) {
	g.statsMu.Lock()
	defer g.statsMu.Unlock()
	g.stats.Calls++
	if err != nil {
		g.stats.Errors++
		if g.stats.FirstError == "" {
			g.stats.FirstError = err.Error()
		}
	}
}

// logRecord is one access log line: the lab proxy's record and the
// gateway's own limiter_error (the failed limiter call's error text,
// omitted when the limiter decided or was not asked).
type logRecord struct {
	proxy.AccessLogEntry
	LimiterError string `json:"limiter_error,omitempty"`
}

// Validate checks the options after their defaults: a name, a limiter, at
// least one http upstream, a key, statuses within 400..599, timeouts >= 0.
func (o Options) Validate() error {
	o = o.withDefaults()
	if o.Name == "" {
		return errors.New("gateway: name is required")
	}
	if o.Limiter == nil {
		return errors.New("gateway: a limiter is required")
	}
	if len(o.Upstreams) == 0 {
		return errors.New("gateway: no upstream")
	}
	for _, u := range o.Upstreams {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "http" || pu.Host == "" {
			return fmt.Errorf("gateway: upstream %q: want http://host:port", u)
		}
	}
	switch o.Key.Kind {
	case KeyClient, KeyRoute:
	case KeyHeader:
		if o.Key.Header == "" {
			return errors.New("gateway: key header: no header name")
		}
	default:
		return fmt.Errorf("gateway: key kind %q: want header, client or route", o.Key.Kind)
	}
	for _, s := range []struct {
		name string
		v    int
	}{{"deny status", o.DenyStatus}, {"error status", o.ErrorStatus}} {
		if s.v < 400 || s.v > 599 {
			return fmt.Errorf("gateway: %s %d: want 400..599", s.name, s.v)
		}
	}
	if o.LimiterTimeout < 0 || o.UpstreamTimeout < 0 {
		return errors.New("gateway: timeouts must be >= 0")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.DenyStatus == 0 {
		o.DenyStatus = DefaultDenyStatus
	}
	if o.ErrorStatus == 0 {
		o.ErrorStatus = DefaultErrorStatus
	}
	if o.LimiterTimeout == 0 {
		o.LimiterTimeout = DefaultLimiterTimeout
	}
	if o.UpstreamTimeout == 0 {
		o.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Start validates opts and serves on opts.Listen until Close (or ctx is done).
func Start(ctx context.Context, opts Options) (*Gateway, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	g := &Gateway{opts: o, stop: make(chan struct{})}
	for _, u := range o.Upstreams {
		pu, _ := url.Parse(u)
		g.upstreams = append(g.upstreams, pu)
	}
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 0, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	g.client = &http.Client{Transport: tr, Timeout: o.UpstreamTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %w", o.Name, err)
	}
	g.ln = ln
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = g.srv.Serve(ln) }()
	go func() {
		select {
		case <-ctx.Done():
			_ = g.Close()
		case <-g.stop:
		}
	}()
	return g, nil
}

// URL is the gateway's base URL, "http://127.0.0.1:PORT".
func (g *Gateway) URL() string { return "http://" + g.ln.Addr().String() }

// Name is Options.Name.
func (g *Gateway) Name() string { return g.opts.Name }

// Err is the first access log write error (nil: every line was written).
func (g *Gateway) Err() error {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.logErr
}

// Close stops accepting requests, waits (up to 5 s) for those in flight to
// be answered, then closes their connections (their forwards are
// cancelled) and waits until every one is logged, so that nothing is
// written to the access log after Close returns; it closes the idle
// upstream connections.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.logMu.Lock()
		g.closed = true
		g.logMu.Unlock()
		grace := g.grace
		if grace == 0 {
			grace = 5 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		err := g.srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, g.srv.Close())
		}
		g.inflight.Wait()
		g.client.CloseIdleConnections()
		close(g.stop)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		g.closeErr = err
	})
	return g.closeErr
}

// ServeHTTP decides the request and answers it or forwards it.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.logMu.Lock()
	if g.closed {
		g.logMu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	g.inflight.Add(1)
	g.logMu.Unlock()
	defer g.inflight.Done()
	o := &g.opts
	start := o.Now()
	var limErr string
	e := proxy.AccessLogEntry{StartTime: start.UTC().Format("2006-01-02T15:04:05.000Z"), StartNs: start.UnixNano(),
		Method: r.Method, Path: evidence.RedactURL(r.URL.RequestURI()), Protocol: r.Proto, ResponseFlags: "-",
		RlbenchID: r.Header.Get(evidence.IDHeader), RequestID: r.Header.Get("X-Request-Id"),
		ForwardedFor: r.Header.Get("X-Forwarded-For"), Proxy: o.Name}
	if r.ContentLength > 0 {
		e.BytesReceived = r.ContentLength
	}
	defer func() {
		e.DurationMs = o.Now().Sub(start).Milliseconds()
		g.log(&logRecord{AccessLogEntry: e, LimiterError: limErr})
	}()
	if key, ok := o.Key.Of(r); ok {
		now := o.Now()
		d, err := g.decide(r.Context(), key, now)
		g.count(err)
		if err != nil {
			limErr = err.Error()
		}
		switch {
		case err != nil && o.FailureModeDeny:
			e.ResponseFlags, e.ResponseCodeDetails = "RLSE", "rate_limiter_error"
			e.ResponseCode = o.ErrorStatus
			e.BytesSent = g.reply(w, o.ErrorStatus, DecisionLimiterError)
			return
		case err != nil: // fail open: forwarded, the limiter's decision did not apply
		case !d.Allowed:
			e.LocalNs = decidedAt(d, now)
			e.ResponseFlags, e.ResponseCodeDetails = "RL", "local_rate_limited"
			e.ResponseCode = o.DenyStatus
			e.BytesSent = g.reply(w, o.DenyStatus, DecisionRateLimited)
			return
		default:
			e.LocalNs = decidedAt(d, now)
		}
	}
	g.forward(w, r, &e)
}

// decide asks the limiter about key at now and waits for its answer at
// most Options.LimiterTimeout, whether or not the limiter heeds its
// context: a call without an answer by then is an error (the limiter did
// not decide), its late answer is dropped.
func (g *Gateway) decide(parent context.Context, key string, now time.Time) (Decision, error) {
	type answer struct {
		d   Decision
		err error
	}
	ctx, cancel := context.WithTimeout(parent, g.opts.LimiterTimeout)
	defer cancel()
	ch := make(chan answer, 1)
	go func() {
		d, err := g.opts.Limiter.Allow(ctx, key, now)
		ch <- answer{d, err}
	}()
	select {
	case a := <-ch:
		return a.d, a.err
	case <-ctx.Done():
		if parent.Err() != nil {
			return Decision{}, fmt.Errorf("limiter: the request ended before the limiter answered: %w", parent.Err())
		}
		return Decision{}, fmt.Errorf("limiter: no answer within the timeout %s", g.opts.LimiterTimeout)
	}
}

// decidedAt is the decision's time in unix ns: d.At, or now.
func decidedAt(d Decision, now time.Time) int64 {
	if !d.At.IsZero() {
		return d.At.UnixNano()
	}
	return now.UnixNano()
}

// reply answers the gateway's own response: status, DecisionHeader set to
// what, a short text body; it returns the body's length.
func (g *Gateway) reply(w http.ResponseWriter, status int, what string) int64 {
	h := w.Header()
	h.Set(DecisionHeader, what)
	h.Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	n, _ := io.WriteString(w, what)
	return int64(n)
}

// hopHeaders are not forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward sends the request to the next upstream and copies the answer.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, e *proxy.AccessLogEntry) {
	up := g.upstreams[(g.next.Add(1)-1)%uint64(len(g.upstreams))]
	u := *up
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), r.Body)
	if err != nil {
		e.ResponseCode, e.ResponseCodeDetails = http.StatusBadGateway, "bad_request_url"
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	out.ContentLength = r.ContentLength
	for k, vs := range r.Header {
		out.Header[k] = append([]string(nil), vs...)
	}
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header.Get("X-Forwarded-For"); prior != "" {
			host = prior + ", " + host
		}
		out.Header.Set("X-Forwarded-For", host)
	}
	e.UpstreamHost = up.Host
	e.UpstreamRequestAttemptCount = 1
	e.UpstreamStartNs = g.opts.Now().UnixNano()
	resp, err := g.client.Do(out)
	if err != nil {
		code, flag, details := http.StatusServiceUnavailable, "UF", "upstream_reset_before_response_started{connection_failure}"
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			code, flag, details = http.StatusGatewayTimeout, "UT", "response_timeout"
		}
		e.ResponseCode, e.ResponseFlags, e.ResponseCodeDetails = code, flag, details
		w.WriteHeader(code)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	w.WriteHeader(resp.StatusCode)
	n, _ := io.Copy(w, resp.Body)
	e.ResponseCode, e.ResponseCodeDetails, e.BytesSent = resp.StatusCode, "via_upstream", n
}

// log writes e as one JSON line, in one Write.
func (g *Gateway) log(e *logRecord) {
	if g.opts.AccessLog == nil {
		return
	}
	b, err := json.Marshal(e)
	if err == nil {
		b = append(b, '\n')
	}
	g.logMu.Lock()
	defer g.logMu.Unlock()
	if err == nil {
		_, err = g.opts.AccessLog.Write(b)
	}
	if err != nil && g.logErr == nil {
		g.logErr = fmt.Errorf("gateway %s: access log: %w", g.opts.Name, err)
	}
}
