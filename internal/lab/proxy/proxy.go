// Package proxy is the lab stand-in for an Envoy proxy: an HTTP reverse proxy
// to one upstream cluster with Envoy's HTTP local rate limit filter
// (envoy.filters.http.local_ratelimit) and global rate limit filter
// (envoy.filters.http.ratelimit, calling a RateLimitService over gRPC), and
// an admin listener whose /stats, /stats?format=json, /stats/prometheus,
// /server_info, /ready and /reset_counters look like Envoy's to a collector.
//
// Filter order is local first, then global, then the router; the router
// never retries. Stat names and increments follow the Envoy sources:
// source/extensions/filters/http/local_ratelimit/local_ratelimit.cc,
// source/extensions/filters/http/ratelimit/ratelimit.cc,
// source/common/router/router.cc and source/server/admin/stats_handler.cc
// (https://github.com/envoyproxy/envoy).
package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
)

// Config configures one lab proxy.
type Config struct {
	// Name identifies the proxy (node id in /server_info), e.g. "proxy-a".
	Name string `json:"name"`
	// Listen and AdminListen are TCP addresses; default "127.0.0.1:0" each.
	Listen      string `json:"listen,omitempty"`
	AdminListen string `json:"admin_listen,omitempty"`
	// Upstream is the backend base URL, e.g. "http://127.0.0.1:8080"
	// (required); the request path and query are appended.
	Upstream string `json:"upstream"`
	// Cluster is the route target cluster name used in cluster.<name>.*
	// stats; default DefaultCluster. It must not contain '.'.
	Cluster string `json:"cluster,omitempty"`
	// Local enables the local rate limit filter when non-nil.
	Local *LocalRateLimit `json:"local,omitempty"`
	// Global enables the global rate limit filter when non-nil.
	Global *GlobalRateLimit `json:"global,omitempty"`
	// AccessLog, if non-nil, gets one JSON object per request and line (see
	// AccessLogEntry). Writes are serialized; AccessLog is never closed.
	AccessLog io.Writer `json:"-"`
	// Now is the clock for the token bucket and access log; default time.Now.
	Now func() time.Time `json:"-"`
	// UpstreamTimeout is the route timeout; default 15 s (Envoy's). When it
	// expires the client gets 504 "upstream request timeout" (flag UT).
	UpstreamTimeout time.Duration `json:"upstream_timeout,omitempty"`
	// IncludeAttemptCount adds x-envoy-attempt-count: 1 to upstream requests
	// (route include_request_attempt_count).
	IncludeAttemptCount bool `json:"include_attempt_count,omitempty"`
	// HTTPStatPrefix is the HTTP connection manager stat_prefix used for
	// http.<prefix>.downstream_rq_* stats; default "ingress_http".
	HTTPStatPrefix string `json:"http_stat_prefix,omitempty"`
}

// DefaultCluster is Config.Cluster when empty.
const DefaultCluster = "backend"

// Validate checks what cfg says about the proxy itself: the Cluster name,
// and the Local and Global filters (LocalRateLimit.Validate,
// GlobalRateLimit.Validate). It does not check where the proxy connects
// (Upstream, Global.RLS): a lab validates a template before those exist.
// Start checks them too.
func (cfg *Config) Validate() error {
	if strings.ContainsAny(cfg.Cluster, ". ") {
		return fmt.Errorf("cluster name %q must not contain '.' or spaces", cfg.Cluster)
	}
	if cfg.Local != nil {
		if err := cfg.Local.Validate(); err != nil {
			return err
		}
	}
	if cfg.Global != nil {
		if err := cfg.Global.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Version is the build version this proxy reports in /server_info and the
// server.version_text text readout: Envoy's
// "<sha>/<x.y.z>/<Clean|Modified>/<RELEASE|DEBUG>/<TLS>" shape, with a
// version field that names rlbench-lab; semantics follow Envoy 1.40. The
// sha is sha1("rlbench-lab"), not an Envoy commit.
const Version = "3ce6e452bb0c1b967c8e1ca776bf0d3a42bdc8a2/1.40.0-rlbench-lab/Clean/RELEASE/BoringSSL"

// Proxy is a running lab proxy. Its methods are safe for concurrent use.
type Proxy struct {
	cfg      Config
	name     string
	cluster  string
	upstream *url.URL
	now      func() time.Time
	started  time.Time

	ln, adminLn  net.Listener
	srv, admin   *http.Server
	served       chan struct{}
	adminServed  chan struct{}
	transport    *http.Transport
	client       *http.Client
	rlsConn      *grpc.ClientConn
	rls          rlsv3.RateLimitServiceClient
	bucket       *bucket
	stats        *store
	logMu        sync.Mutex
	inflight     sync.RWMutex
	closeOnce    sync.Once
	closeErr     error
	cancelWatch  context.CancelFunc
	st           proxyStats
	statusOnErr  int
	rateLimitedS int
	localStatus  int
	rlsTimeout   time.Duration
}

type proxyStats struct {
	dsTotal, dsCompleted, dsActive *stat
	dsClass                        [6]*stat
	upTotal, upCompleted, upActive *stat
	upTimeout, upConnectFail       *stat
	lEnabled, lOK, lLimited, lEnf  *stat
}

// Start validates cfg, binds both listeners and serves until Close or until
// ctx is done. It fails on a missing or non-http Upstream, a bad Local or
// Global config (the error names the field), a Cluster containing '.', or
// a failed bind (the error names the address). The RLS need not be up:
// calls to an unreachable RLS count as errors, as in Envoy.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	if cfg.Upstream == "" {
		return nil, errors.New("proxy: upstream URL is required")
	}
	u, err := url.Parse(cfg.Upstream)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("proxy: upstream %q is not an http://host:port URL", cfg.Upstream)
	}
	if cfg.Cluster == "" {
		cfg.Cluster = DefaultCluster
	}
	if err := cfg.Validate(); err != nil {
		name := orDefault(cfg.Name, "proxy")
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	cluster := cfg.Cluster
	if cfg.HTTPStatPrefix == "" {
		cfg.HTTPStatPrefix = "ingress_http"
	}
	if cfg.UpstreamTimeout == 0 {
		cfg.UpstreamTimeout = 15 * time.Second
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	p := &Proxy{cfg: cfg, name: cfg.Name, cluster: cluster, upstream: u, now: now, started: now(), stats: newStore(),
		served: make(chan struct{}), adminServed: make(chan struct{})}
	if p.name == "" {
		p.name = "proxy"
	}
	if cfg.Local != nil {
		l := *cfg.Local
		if l.StatPrefix == "" {
			l.StatPrefix = DefaultLocalStatPrefix
		}
		p.cfg.Local = &l
		p.bucket = newBucket(&l, p.started)
		p.localStatus = errorCode(l.Status, http.StatusTooManyRequests)
	}
	if cfg.Global != nil {
		g := *cfg.Global
		if err := g.validateRLS(); err != nil {
			return nil, fmt.Errorf("proxy %s: %w", p.name, err)
		}
		if g.Timeout == 0 {
			g.Timeout = DefaultRLSTimeout
		}
		p.cfg.Global = &g
		p.rlsTimeout = g.Timeout
		p.statusOnErr = errorCode(g.StatusOnError, http.StatusInternalServerError)
		p.rateLimitedS = errorCode(g.RateLimitedStatus, http.StatusTooManyRequests)
	}
	p.initStats()

	var lc net.ListenConfig
	listen := orDefault(cfg.Listen, "127.0.0.1:0")
	if p.ln, err = lc.Listen(ctx, "tcp", listen); err != nil {
		return nil, fmt.Errorf("proxy %s: listen %s: %w", p.name, listen, err)
	}
	adminListen := orDefault(cfg.AdminListen, "127.0.0.1:0")
	if p.adminLn, err = lc.Listen(ctx, "tcp", adminListen); err != nil {
		p.ln.Close()
		return nil, fmt.Errorf("proxy %s: admin listen %s: %w", p.name, adminListen, err)
	}
	if p.cfg.Global != nil {
		if p.rlsConn, err = dialRLS(ctx, p.cfg.Global.RLS, time.Second); err != nil {
			p.ln.Close()
			p.adminLn.Close()
			return nil, fmt.Errorf("proxy %s: %w", p.name, err)
		}
		p.rls = rlsv3.NewRateLimitServiceClient(p.rlsConn)
	}
	p.transport = &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     60 * time.Second,
		DisableCompression:  true,
	}
	p.client = &http.Client{Transport: p.transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	p.srv = &http.Server{Handler: http.HandlerFunc(p.serveHTTP), ReadHeaderTimeout: 30 * time.Second}
	p.admin = &http.Server{Handler: p.adminMux(), ReadHeaderTimeout: 30 * time.Second}
	go func() { defer close(p.served); _ = p.srv.Serve(p.ln) }()
	go func() { defer close(p.adminServed); _ = p.admin.Serve(p.adminLn) }()
	wctx, cancel := context.WithCancel(ctx)
	p.cancelWatch = cancel
	go func() {
		<-wctx.Done()
		if ctx.Err() != nil {
			_ = p.Close()
		}
	}()
	return p, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// errorCode mirrors Envoy's toErrorCode: codes below 400 become def.
func errorCode(code, def int) int {
	if code < 400 || code > 599 {
		return def
	}
	return code
}

func (p *Proxy) initStats() {
	s := p.stats
	hp := "http." + p.cfg.HTTPStatPrefix + "."
	p.st.dsTotal = s.counter(hp + "downstream_rq_total")
	p.st.dsCompleted = s.counter(hp + "downstream_rq_completed")
	p.st.dsActive = s.gauge(hp + "downstream_rq_active")
	for i := 1; i <= 5; i++ {
		p.st.dsClass[i] = s.counter(fmt.Sprintf("%sdownstream_rq_%dxx", hp, i))
	}
	cp := "cluster." + p.cluster + "."
	p.st.upTotal = s.counter(cp + "upstream_rq_total")
	p.st.upCompleted = s.counter(cp + "upstream_rq_completed")
	p.st.upActive = s.gauge(cp + "upstream_rq_active")
	p.st.upTimeout = s.counter(cp + "upstream_rq_timeout")
	p.st.upConnectFail = s.counter(cp + "upstream_cx_connect_fail")
	if l := p.cfg.Local; l != nil {
		lp := l.StatPrefix + ".http_local_rate_limit."
		p.st.lEnabled = s.counter(lp + "enabled")
		p.st.lOK = s.counter(lp + "ok")
		p.st.lLimited = s.counter(lp + "rate_limited")
		p.st.lEnf = s.counter(lp + "enforced")
	}
	s.gauge("server.live").set(1)
	s.gauge("server.state").set(0) // LIVE
	s.gauge("server.concurrency").set(1)
	v, _ := strconv.ParseUint(Version[:6], 16, 64)
	s.gauge("server.version").set(v)
	clusters := uint64(1)
	if p.cfg.Global != nil {
		clusters = 2 // the RLS cluster
	}
	s.gauge("cluster_manager.active_clusters").set(clusters)
	s.setText("server.version_text", Version)
}

// Addr returns the proxy listener host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns "http://" + Addr().
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// AdminAddr returns the admin listener host:port.
func (p *Proxy) AdminAddr() string { return p.adminLn.Addr().String() }

// AdminURL returns "http://" + AdminAddr().
func (p *Proxy) AdminURL() string { return "http://" + p.AdminAddr() }

// Name returns Config.Name (or "proxy").
func (p *Proxy) Name() string { return p.name }

// Close closes both listeners and all their connections, waits for
// requests already being handled, and closes the RLS connection. It is
// idempotent; later calls return the first result.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.cancelWatch()
		err := p.srv.Close()
		if aerr := p.admin.Close(); err == nil {
			err = aerr
		}
		<-p.served
		<-p.adminServed
		p.inflight.Lock()
		p.transport.CloseIdleConnections()
		if p.rlsConn != nil {
			if cerr := p.rlsConn.Close(); err == nil {
				err = cerr
			}
		}
		p.inflight.Unlock()
		p.closeErr = err
	})
	return p.closeErr
}

// AccessLogEntry is one line of the JSON access log, named after Envoy's
// command operators.
type AccessLogEntry struct {
	// StartTime is %START_TIME% in RFC 3339 with milliseconds, UTC.
	StartTime string `json:"start_time"`
	// StartNs is the same instant in unix ns.
	StartNs int64 `json:"start_ns"`
	// Method is %REQ(:METHOD)%.
	Method string `json:"method"`
	// Path is the request path with query (%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%).
	Path string `json:"path"`
	// Protocol is %PROTOCOL%, e.g. "HTTP/1.1".
	Protocol string `json:"protocol"`
	// ResponseCode is %RESPONSE_CODE%.
	ResponseCode int `json:"response_code"`
	// ResponseFlags is %RESPONSE_FLAGS%: "RL", "RLSE", "UF", "UC", "UT" or "-".
	ResponseFlags string `json:"response_flags"`
	// ResponseCodeDetails is %RESPONSE_CODE_DETAILS%: local_rate_limited,
	// request_rate_limited, rate_limiter_error, via_upstream or an
	// upstream_reset_before_response_started{...} / response_timeout detail.
	ResponseCodeDetails string `json:"response_code_details"`
	// BytesReceived and BytesSent are %BYTES_RECEIVED% / %BYTES_SENT%
	// (bodies only).
	BytesReceived int64 `json:"bytes_received"`
	BytesSent     int64 `json:"bytes_sent"`
	// DurationMs is %DURATION% in ms.
	DurationMs int64 `json:"duration"`
	// UpstreamHost is %UPSTREAM_HOST% (host:port), empty when none was used.
	UpstreamHost string `json:"upstream_host,omitempty"`
	// RlbenchID is %REQ(X-RLBENCH-ID)%.
	RlbenchID string `json:"x_rlbench_id,omitempty"`
	// RequestID is %REQ(X-REQUEST-ID)% (generated by the proxy when absent).
	RequestID string `json:"x_request_id,omitempty"`
	// ForwardedFor is the downstream %REQ(X-FORWARDED-FOR)%.
	ForwardedFor string `json:"x_forwarded_for,omitempty"`
	// Proxy is Config.Name of the proxy that logged the line.
	Proxy string `json:"proxy"`
}

// outcome is filled as a request passes the filters.
type outcome struct {
	code         int
	flags        string
	details      string
	upstreamHost string
	bytesSent    int64
	bytesRecv    int64
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p.inflight.RLock()
	defer p.inflight.RUnlock()
	start := p.now()
	p.st.dsTotal.inc()
	p.st.dsActive.v.Add(1)
	defer p.st.dsActive.dec()
	// Envoy's connection manager generates x-request-id when absent
	// (generate_request_id defaults to true).
	if r.Header.Get("X-Request-Id") == "" {
		r.Header.Set("X-Request-Id", newRequestID())
	}
	out := p.handle(w, r)
	p.st.dsCompleted.inc()
	if c := out.code / 100; c >= 1 && c <= 5 {
		p.st.dsClass[c].inc()
	}
	if p.cfg.AccessLog != nil {
		p.writeAccessLog(r, start, out)
	}
}

func (p *Proxy) handle(w http.ResponseWriter, r *http.Request) outcome {
	var extra http.Header // x-ratelimit-* to add to the final response
	// 1. Local rate limit filter.
	if l := p.cfg.Local; l != nil && percentHit(l.FilterEnabled) {
		p.st.lEnabled.inc()
		ok, remaining, reset := p.bucket.take(p.now())
		if l.EnableXRateLimitHeaders {
			extra = http.Header{}
			extra.Set("x-ratelimit-limit", strconv.FormatUint(uint64(l.MaxTokens), 10))
			extra.Set("x-ratelimit-remaining", strconv.FormatUint(uint64(remaining), 10))
			extra.Set("x-ratelimit-reset", strconv.FormatInt(int64(reset/time.Second), 10))
		}
		if ok {
			p.st.lOK.inc()
		} else {
			p.st.lLimited.inc()
			if percentHit(l.FilterEnforced) {
				p.st.lEnf.inc()
				copyHeader(w.Header(), extra)
				return p.localReply(w, p.localStatus, LocalRateLimitedBody, "RL", "local_rate_limited")
			}
		}
	}
	// 2. Global rate limit filter.
	if g := p.cfg.Global; g != nil {
		if d := g.descriptor(r); d != nil {
			out, done, hdrs := p.global(w, r, g, d, extra)
			if done {
				return out
			}
			if hdrs != nil {
				if extra == nil {
					extra = http.Header{}
				}
				copyHeader(extra, hdrs)
			}
		}
	}
	// 3. Router.
	return p.forward(w, r, extra)
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// localReply sends an Envoy local reply: text/plain body (may be empty).
func (p *Proxy) localReply(w http.ResponseWriter, code int, body, flags, details string) outcome {
	h := w.Header()
	if body != "" {
		h.Set("Content-Type", "text/plain")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Server", "envoy")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
	return outcome{code: code, flags: flags, details: details, bytesSent: int64(len(body))}
}

// global runs the ratelimit filter for one descriptor. done reports that a
// reply was sent; hdrs are x-ratelimit-* / RLS headers for the upstream reply.
func (p *Proxy) global(w http.ResponseWriter, r *http.Request, g *GlobalRateLimit, d *rlcommon.RateLimitDescriptor, local http.Header) (outcome, bool, http.Header) {
	prefix := "cluster." + p.cluster + ".ratelimit."
	if g.StatPrefix != "" {
		prefix += g.StatPrefix + "."
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.rlsTimeout)
	resp, err := p.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: g.Domain, Descriptors: []*rlcommon.RateLimitDescriptor{d}})
	cancel()
	if err != nil {
		p.stats.counter(prefix + "error").inc()
		if g.FailureModeDeny {
			copyHeader(w.Header(), local)
			return p.localReply(w, p.statusOnErr, "", "RLSE", "rate_limiter_error"), true, nil
		}
		p.stats.counter(prefix + "failure_mode_allowed").inc()
		return outcome{}, false, nil
	}
	var hdrs http.Header
	if g.EnableXRateLimitHeaders {
		hdrs = xRateLimitHeaders(resp.GetStatuses())
	}
	if resp.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
		// OK (and UNKNOWN, which Envoy's client maps to OK).
		p.stats.counter(prefix + "ok").inc()
		return outcome{}, false, hdrs
	}
	p.stats.counter(prefix + "over_limit").inc()
	// Envoy charges the rate limited status to the cluster's response code
	// stats as an internal request (CodeStats::chargeResponseStat).
	p.chargeCode(p.rateLimitedS, "internal.")
	h := w.Header()
	copyHeader(h, local)
	copyHeader(h, hdrs)
	copyHeader(h, headerValues(resp.GetResponseHeadersToAdd()))
	h.Set("X-Envoy-Ratelimited", "true")
	return p.localReply(w, p.rateLimitedS, string(resp.GetRawBody()), "RL", "request_rate_limited"), true, nil
}

// chargeCode counts a response code against cluster.<c>.upstream_rq_<code>,
// _<N>xx and _completed, plus the same under cluster.<c>.<category>.
func (p *Proxy) chargeCode(code int, category string) {
	cp := "cluster." + p.cluster + "."
	p.st.upCompleted.inc()
	p.stats.counter(fmt.Sprintf("%supstream_rq_%d", cp, code)).inc()
	p.stats.counter(fmt.Sprintf("%supstream_rq_%dxx", cp, code/100)).inc()
	p.stats.counter(cp + category + "upstream_rq_completed").inc()
	p.stats.counter(fmt.Sprintf("%s%supstream_rq_%d", cp, category, code)).inc()
	p.stats.counter(fmt.Sprintf("%s%supstream_rq_%dxx", cp, category, code/100)).inc()
}

// hop-by-hop headers never forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// nonReplayable wraps a request body so net/http never considers the
// request replayable and therefore never retries it on another connection.
type nonReplayable struct{ io.ReadCloser }

// countingReader counts request body bytes read.
type countingReader struct {
	io.ReadCloser
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n += int64(n)
	return n, err
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, extra http.Header) outcome {
	target := *p.upstream
	target.Path = strings.TrimSuffix(p.upstream.Path, "/") + r.URL.Path
	target.RawPath = ""
	target.RawQuery = r.URL.RawQuery
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.UpstreamTimeout)
	defer cancel()
	body := &countingReader{ReadCloser: r.Body}
	out, err := http.NewRequestWithContext(ctx, r.Method, target.String(), nonReplayable{body})
	if err != nil {
		return p.localReply(w, http.StatusBadRequest, "bad request", "-", "invalid_url")
	}
	out.ContentLength = r.ContentLength
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if c := r.Header.Get("Connection"); c != "" {
		for _, f := range strings.Split(c, ",") {
			out.Header.Del(strings.TrimSpace(f))
		}
	}
	out.Host = r.Host
	// use_remote_address: true — append the peer IP to x-forwarded-for.
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := out.Header.Values("X-Forwarded-For"); len(prior) > 0 {
			out.Header.Set("X-Forwarded-For", strings.Join(prior, ", ")+", "+host)
		} else {
			out.Header.Set("X-Forwarded-For", host)
		}
	}
	out.Header.Set("X-Forwarded-Proto", "http")
	out.Header.Set("X-Envoy-Expected-Rq-Timeout-Ms", strconv.FormatInt(p.cfg.UpstreamTimeout.Milliseconds(), 10))
	if p.cfg.IncludeAttemptCount {
		out.Header.Set("X-Envoy-Attempt-Count", "1")
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header.Set("User-Agent", "") // do not let Go add its own
	}
	host := p.upstream.Host
	p.st.upActive.v.Add(1)
	defer p.st.upActive.dec()
	sent := p.now()
	resp, err := p.client.Do(out)
	if err != nil {
		var code int
		var flags, details, msg string
		var ne *net.OpError
		switch {
		case errors.As(err, &ne) && ne.Op == "dial":
			p.st.upConnectFail.inc()
			code, flags, details = http.StatusServiceUnavailable, "UF", "upstream_reset_before_response_started{connection_failure}"
			msg = "upstream connect error or disconnect/reset before headers. reset reason: connection failure"
		case ctx.Err() == context.DeadlineExceeded && r.Context().Err() == nil:
			p.st.upTotal.inc()
			p.st.upTimeout.inc()
			code, flags, details = http.StatusGatewayTimeout, "UT", "response_timeout"
			msg = "upstream request timeout"
		case r.Context().Err() != nil:
			// Downstream went away: Envoy logs DC and 0 / no reply.
			p.st.upTotal.inc()
			return outcome{code: 0, flags: "DC", details: "downstream_remote_disconnect", upstreamHost: host, bytesRecv: body.n}
		default:
			p.st.upTotal.inc()
			code, flags, details = http.StatusServiceUnavailable, "UC", "upstream_reset_before_response_started{connection_termination}"
			msg = "upstream connect error or disconnect/reset before headers. reset reason: connection termination"
		}
		p.chargeCode(code, "external.")
		copyHeader(w.Header(), extra)
		o := p.localReply(w, code, msg, flags, details)
		o.upstreamHost, o.bytesRecv = host, body.n
		return o
	}
	defer resp.Body.Close()
	p.st.upTotal.inc()
	p.chargeCode(resp.StatusCode, "external.")
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	for _, hh := range hopHeaders {
		h.Del(hh)
	}
	copyHeader(h, extra)
	h.Set("Server", "envoy")
	h.Set("X-Envoy-Upstream-Service-Time", strconv.FormatInt(p.now().Sub(sent).Milliseconds(), 10))
	w.WriteHeader(resp.StatusCode)
	n, _ := io.Copy(w, resp.Body)
	return outcome{code: resp.StatusCode, flags: "-", details: "via_upstream", upstreamHost: host, bytesSent: n, bytesRecv: body.n}
}

func (p *Proxy) writeAccessLog(r *http.Request, start time.Time, o outcome) {
	e := AccessLogEntry{
		StartTime:           start.UTC().Format("2006-01-02T15:04:05.000Z"),
		StartNs:             start.UnixNano(),
		Method:              r.Method,
		Path:                r.URL.RequestURI(),
		Protocol:            r.Proto,
		ResponseCode:        o.code,
		ResponseFlags:       o.flags,
		ResponseCodeDetails: o.details,
		BytesReceived:       o.bytesRecv,
		BytesSent:           o.bytesSent,
		DurationMs:          p.now().Sub(start).Milliseconds(),
		UpstreamHost:        o.upstreamHost,
		RlbenchID:           r.Header.Get("X-Rlbench-Id"),
		RequestID:           r.Header.Get("X-Request-Id"),
		ForwardedFor:        r.Header.Get("X-Forwarded-For"),
		Proxy:               p.name,
	}
	if e.ResponseFlags == "" {
		e.ResponseFlags = "-"
	}
	b, _ := json.Marshal(&e)
	b = append(b, '\n')
	p.logMu.Lock()
	_, _ = p.cfg.AccessLog.Write(b)
	p.logMu.Unlock()
}
