// Package proxy is the lab stand-in for an Envoy proxy: an HTTP/1.1 reverse
// proxy to one upstream cluster of one or more hosts, with Envoy's HTTP
// local rate limit filter (envoy.filters.http.local_ratelimit, with
// descriptors), global rate limit filter (envoy.filters.http.ratelimit,
// calling a RateLimitService over gRPC) and router (retry_policy, timeouts,
// x-envoy-attempt-count), the cluster's circuit breakers, round robin load
// balancing with the panic threshold, and outlier detection; and an admin
// listener whose /stats, /stats?format=json, /stats/prometheus,
// /server_info, /ready and /reset_counters look like Envoy's to a collector.
//
// Filter order is local first, then global, then the router. Semantics,
// stat names and increments follow the Envoy sources cited on each type
// (https://github.com/envoyproxy/envoy: source/extensions/filters/http/
// local_ratelimit, source/extensions/filters/http/ratelimit,
// source/common/router, source/common/conn_pool, source/common/upstream,
// source/server/admin).
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/lab/h1"

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
	// Upstream is the backend base URL, e.g. "http://127.0.0.1:8080", when
	// the cluster has one host; the request path and query are appended to
	// its path.
	Upstream string `json:"upstream,omitempty"`
	// Upstreams are the cluster's hosts, "http://host:port" each with the
	// same path, when it has several (the backend endpoints). Give Upstream
	// or Upstreams, not both.
	Upstreams []string `json:"upstreams,omitempty"`
	// Cluster is the route target cluster name used in cluster.<name>.*
	// stats; default DefaultCluster. It must not contain '.'.
	Cluster string `json:"cluster,omitempty"`
	// Local enables the local rate limit filter when non-nil.
	Local *LocalRateLimit `json:"local,omitempty"`
	// Global enables the global rate limit filter when non-nil.
	Global *GlobalRateLimit `json:"global,omitempty"`
	// Retry is the route's retry_policy; nil means no retries.
	Retry *RetryPolicy `json:"retry_policy,omitempty"`
	// CircuitBreakers are the cluster's thresholds; nil means Envoy's
	// defaults (1024 connections, 1024 pending, 1024 requests, 3 retries).
	CircuitBreakers *CircuitBreakers `json:"circuit_breakers,omitempty"`
	// OutlierDetection enables the cluster's outlier detection when non-nil.
	OutlierDetection *OutlierDetection `json:"outlier_detection,omitempty"`
	// HealthyPanicThreshold is common_lb_config.healthy_panic_threshold in
	// percent; nil means 50, 0 disables panic routing.
	HealthyPanicThreshold *float64 `json:"healthy_panic_threshold,omitempty"`
	// ConnectTimeout is the cluster connect_timeout; default 5 s.
	ConnectTimeout time.Duration `json:"connect_timeout,omitempty"`
	// MaxRequestsPerConnection is the cluster's
	// common_http_protocol_options.max_requests_per_connection: an upstream
	// connection is closed once it carried that many requests
	// (upstream_cx_max_requests); 0 means no limit (Envoy's default).
	MaxRequestsPerConnection uint32 `json:"max_requests_per_connection,omitempty"`
	// MaxStreamDuration is the route's max_stream_duration.max_stream_duration
	// (config.route.v3.RouteAction.MaxStreamDuration): counted from the
	// request's arrival, through every retry; when it passes before the
	// response, the client gets 408 "downstream duration timeout" and
	// http.<prefix>.downstream_rq_max_duration_reached grows (Envoy
	// source/common/http/conn_manager_impl.cc onStreamMaxDurationReached).
	// 0 means none.
	MaxStreamDuration time.Duration `json:"max_stream_duration,omitempty"`
	// AccessLog, if non-nil, gets one JSON object per request and line (see
	// AccessLogEntry), through a buffer flushed at least every
	// evidence.FlushEvery and on Close. AccessLog is never closed.
	AccessLog io.Writer `json:"-"`
	// Now is the wall clock of the token buckets and the access log when
	// Clock is nil; default time.Now.
	Now func() time.Time `json:"-"`
	// Clock, if non-nil, is the time source of the token buckets, the
	// access log, the retry back-off and the outlier detection sweep
	// (tests drive it). I/O deadlines always use the wall clock.
	Clock Clock `json:"-"`
	// Seed seeds the proxy's random source (runtime percentages, retry
	// back-off jitter, the round robin start); 0 draws one.
	Seed uint64 `json:"seed,omitempty"`
	// UpstreamTimeout is the route timeout; default 15 s (Envoy's). When it
	// expires the client gets 504 "upstream request timeout" (flag UT).
	UpstreamTimeout time.Duration `json:"upstream_timeout,omitempty"`
	// IncludeAttemptCount adds x-envoy-attempt-count ("1", then "2", ... on
	// retries) to upstream requests (route include_request_attempt_count).
	IncludeAttemptCount bool `json:"include_attempt_count,omitempty"`
	// IncludeAttemptCountInResponse adds x-envoy-attempt-count to the
	// downstream response once the router tried an upstream
	// (include_attempt_count_in_response).
	IncludeAttemptCountInResponse bool `json:"include_attempt_count_in_response,omitempty"`
	// HTTPStatPrefix is the HTTP connection manager stat_prefix used for
	// http.<prefix>.downstream_rq_* stats; default "ingress_http".
	HTTPStatPrefix string `json:"http_stat_prefix,omitempty"`
}

// DefaultCluster is Config.Cluster when empty.
const DefaultCluster = "backend"

// Validate checks what cfg says about the proxy itself: the Cluster name,
// the Local and Global filters (LocalRateLimit.Validate,
// GlobalRateLimit.Validate), the retry policy, circuit breakers, outlier
// detection and panic threshold, and the upstream URLs when given. It does
// not require the upstream or Global.RLS (a lab validates a template before
// those exist); Start does.
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
	if cfg.Retry != nil {
		if err := cfg.Retry.Validate(); err != nil {
			return err
		}
	}
	if cfg.OutlierDetection != nil {
		if err := cfg.OutlierDetection.Validate(); err != nil {
			return err
		}
	}
	if cfg.MaxStreamDuration < 0 {
		return fmt.Errorf("max_stream_duration %v is negative", cfg.MaxStreamDuration)
	}
	if t := cfg.HealthyPanicThreshold; t != nil && (*t < 0 || *t > 100 || *t != *t) {
		return fmt.Errorf("healthy_panic_threshold %v is not a percentage in 0..100", *t)
	}
	if cfg.Upstream != "" && len(cfg.Upstreams) > 0 {
		return errors.New("give upstream or upstreams, not both")
	}
	if cfg.Upstream != "" || len(cfg.Upstreams) > 0 {
		if _, _, err := cfg.hosts(); err != nil {
			return err
		}
	}
	return nil
}

// hosts returns the cluster's host:port addresses and the common path
// prefix of Upstream or Upstreams.
func (cfg *Config) hosts() (addrs []string, prefix string, err error) {
	us := cfg.Upstreams
	if cfg.Upstream != "" {
		us = []string{cfg.Upstream}
	}
	if len(us) == 0 {
		return nil, "", errors.New("upstream URL is required")
	}
	for i, raw := range us {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, "", fmt.Errorf("upstream %q is not an http://host:port URL", raw)
		}
		p := strings.TrimSuffix(u.Path, "/")
		if i == 0 {
			prefix = p
		} else if p != prefix {
			return nil, "", fmt.Errorf("upstreams %q and %q have different paths", us[0], raw)
		}
		addrs = append(addrs, u.Host)
	}
	return addrs, prefix, nil
}

// Version is the build version this proxy reports in /server_info and the
// server.version_text text readout: Envoy's
// "<sha>/<x.y.z>/<Clean|Modified>/<RELEASE|DEBUG>/<TLS>" shape, with a
// version field that names rlbench-lab; semantics follow Envoy 1.40. The
// sha is sha1("rlbench-lab"), not an Envoy commit.
const Version = "3ce6e452bb0c1b967c8e1ca776bf0d3a42bdc8a2/1.40.0-rlbench-lab/Clean/RELEASE/BoringSSL"

// Proxy is a running lab proxy. Its methods are safe for concurrent use.
type Proxy struct {
	cfg   Config
	name  string
	now   func() time.Time
	clock Clock
	// localMu orders the local rate limit filter's decisions with the
	// times they are logged at (process).
	localMu sync.Mutex
	rand    *lockedRand
	seed    uint64
	started time.Time

	ln, adminLn   net.Listener
	admin         *httpServer
	served        chan struct{}
	cluster       *cluster
	pathPrefix    string
	hostAddrs     []string
	rlsConn       *grpc.ClientConn
	rls           rlsv3.RateLimitServiceClient
	globalEntries []descriptor.CompiledRateLimit
	localEntries  []descriptor.CompiledRateLimit
	limiter       *localLimiter
	retry         *compiledRetry
	stats         *store
	alog          *evidence.Writer
	inflight      sync.RWMutex
	conns         h1.Conns[net.Conn] // downstream connections (server.go)
	closeOnce     sync.Once
	closeErr      error
	cancelWatch   context.CancelFunc
	st            proxyStats
	statusOnErr   int
	rateLimitedS  int
	localStatus   int
	rlsTimeout    time.Duration
}

type proxyStats struct {
	dsTotal, dsCompleted, dsActive     *stat
	dsMaxDuration                      *stat
	dsClass                            [6]*stat
	lEnabled, lOK, lLimited, lEnf      *stat
	gOK, gError, gOverLimit, gFailOpen *stat
}

type noCloser struct{ io.Writer }

// Start validates cfg, binds both listeners and serves until Close or until
// ctx is done. It fails on a missing or non-http upstream, a bad filter,
// retry, breaker or outlier config (the error names the field), a Cluster
// containing '.', or a failed bind (the error names the address). The RLS
// and the upstream hosts need not be up: calls to an unreachable RLS count
// as errors and connection failures as UF, as in Envoy.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	if cfg.Cluster == "" {
		cfg.Cluster = DefaultCluster
	}
	name := orDefault(cfg.Name, "proxy")
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	addrs, prefix, err := cfg.hosts()
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
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
	clock := cfg.Clock
	if clock == nil {
		clock = realClock{now: now}
	}
	rnd, seed := newRand(cfg.Seed)
	p := &Proxy{cfg: cfg, name: name, now: clock.Now, clock: clock, rand: rnd, seed: seed, started: clock.Now(), stats: newStore(),
		served: make(chan struct{}), pathPrefix: prefix, hostAddrs: addrs}
	if cfg.Local != nil {
		l := *cfg.Local
		if l.StatPrefix == "" {
			l.StatPrefix = DefaultLocalStatPrefix
		}
		p.cfg.Local = &l
		p.limiter = newLocalLimiter(&l, p.started)
		if p.localEntries, err = descriptor.CompileRateLimits("local rate limit: rate_limits", l.RateLimits); err != nil {
			return nil, fmt.Errorf("proxy %s: %w", p.name, err)
		}
		p.localStatus = errorCode(l.Status, 429)
	}
	if cfg.Global != nil {
		g := *cfg.Global
		if err := g.validateRLS(); err != nil {
			return nil, fmt.Errorf("proxy %s: %w", p.name, err)
		}
		if g.Timeout == 0 {
			g.Timeout = Duration(DefaultRLSTimeout)
		}
		p.cfg.Global = &g
		if p.globalEntries, err = g.compile(); err != nil {
			return nil, fmt.Errorf("proxy %s: %w", p.name, err)
		}
		p.rlsTimeout = time.Duration(g.Timeout)
		p.statusOnErr = errorCode(g.StatusOnError, 500)
		p.rateLimitedS = errorCode(g.RateLimitedStatus, 429)
	}
	if cfg.Retry != nil {
		if p.retry, err = compileRetry(cfg.Retry); err != nil {
			return nil, fmt.Errorf("proxy %s: %w", p.name, err)
		}
	}
	p.initStats()
	p.cluster = newCluster(p, cfg.Cluster, addrs, cfg.CircuitBreakers, cfg.OutlierDetection, cfg.HealthyPanicThreshold, cfg.ConnectTimeout)
	p.cluster.maxRqPerConn = cfg.MaxRequestsPerConnection
	if cfg.AccessLog != nil {
		p.alog = evidence.NewWriter(noCloser{cfg.AccessLog})
	}

	fail := func(err error) (*Proxy, error) {
		p.cluster.close()
		if p.alog != nil {
			_ = p.alog.Close()
		}
		return nil, err
	}
	var lc net.ListenConfig
	listen := orDefault(cfg.Listen, "127.0.0.1:0")
	if p.ln, err = lc.Listen(ctx, "tcp", listen); err != nil {
		return fail(fmt.Errorf("proxy %s: listen %s: %w", p.name, listen, err))
	}
	adminListen := orDefault(cfg.AdminListen, "127.0.0.1:0")
	if p.adminLn, err = lc.Listen(ctx, "tcp", adminListen); err != nil {
		p.ln.Close()
		return fail(fmt.Errorf("proxy %s: admin listen %s: %w", p.name, adminListen, err))
	}
	if p.cfg.Global != nil {
		if p.rlsConn, err = dialRLS(ctx, p.cfg.Global.RLS, time.Second); err != nil {
			p.ln.Close()
			p.adminLn.Close()
			return fail(fmt.Errorf("proxy %s: %w", p.name, err))
		}
		p.rls = rlsv3.NewRateLimitServiceClient(p.rlsConn)
	}
	p.admin = startHTTPServer(p.adminLn, p.adminMux())
	go p.serve()
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
	if p.cfg.MaxStreamDuration > 0 {
		p.st.dsMaxDuration = s.counter(hp + "downstream_rq_max_duration_reached")
	}
	for i := 1; i <= 5; i++ {
		p.st.dsClass[i] = s.counter(hp + "downstream_rq_" + strconv.Itoa(i) + "xx")
	}
	if l := p.cfg.Local; l != nil {
		lp := l.StatPrefix + ".http_local_rate_limit."
		p.st.lEnabled = s.counter(lp + "enabled")
		p.st.lOK = s.counter(lp + "ok")
		p.st.lLimited = s.counter(lp + "rate_limited")
		p.st.lEnf = s.counter(lp + "enforced")
	}
	if g := p.cfg.Global; g != nil {
		gp := "cluster." + p.cfg.Cluster + ".ratelimit."
		if g.StatPrefix != "" {
			gp += g.StatPrefix + "."
		}
		p.st.gOK = s.counter(gp + "ok")
		p.st.gError = s.counter(gp + "error")
		p.st.gOverLimit = s.counter(gp + "over_limit")
		p.st.gFailOpen = s.counter(gp + "failure_mode_allowed")
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

// Seed returns the seed of the proxy's random source (Config.Seed, or the
// one drawn when it was 0).
func (p *Proxy) Seed() uint64 { return p.seed }

// Started returns when the proxy started (Config.Now at Start): its local
// token buckets were full then and a timer refill runs from then.
func (p *Proxy) Started() time.Time { return p.started }

// Close closes both listeners and every downstream connection, waits for
// the requests being handled, stops the cluster (its connections and
// timers), flushes the access log and closes the RLS connection. It is
// idempotent; later calls return the first result.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.cancelWatch()
		err := p.ln.Close()
		if aerr := p.admin.close(); err == nil {
			err = aerr
		}
		<-p.served
		p.conns.Close(func(c net.Conn) { _ = c.Close() })
		p.cluster.close()
		p.conns.Wait()
		p.inflight.Lock()
		if p.alog != nil {
			if cerr := p.alog.Close(); err == nil {
				err = cerr
			}
		}
		if p.rlsConn != nil {
			if cerr := p.rlsConn.Close(); err == nil {
				err = cerr
			}
		}
		p.inflight.Unlock()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		p.closeErr = err
	})
	return p.closeErr
}

// FlushAccessLog writes the buffered access log lines to Config.AccessLog.
func (p *Proxy) FlushAccessLog() error {
	if p.alog == nil {
		return nil
	}
	return p.alog.Flush()
}

// writeAccessLog encodes rs's access log line into its connection's
// buffer (one per connection, reused: no pool round trip per request) and
// hands it to the access log writer.
func (p *Proxy) writeAccessLog(rs *reqState) {
	end := p.clock.Now()
	e := AccessLogEntry{
		StartTime:           startTime(rs.start),
		StartNs:             rs.start.UnixNano(),
		LocalNs:             rs.localNs,
		RLSStartNs:          rs.rlsStartNs,
		RLSEndNs:            rs.rlsEndNs,
		UpstreamStartNs:     rs.upstreamStartNs,
		Method:              rs.req.Method,
		Path:                evidence.RedactURL(rs.req.URL.RequestURI()), // no query credential in the log
		Protocol:            rs.req.Proto,
		ResponseCode:        rs.code,
		ResponseFlags:       rs.flags.String(),
		ResponseCodeDetails: rs.details,
		BytesReceived:       rs.recv,
		BytesSent:           rs.sent,
		DurationMs:          end.Sub(rs.start).Milliseconds(),
		UpstreamHost:        rs.upHost,
		RlbenchID:           headerFirst(rs.req.Header, "X-Rlbench-Id"),
		RequestID:           rs.reqID,
		ForwardedFor:        headerFirst(rs.req.Header, "X-Forwarded-For"),
		Proxy:               p.name,
	}
	if rs.upHost != "" {
		e.UpstreamRequestAttemptCount = rs.attempts
	}
	rs.dc.alogBuf = appendAccessLog(rs.dc.alogBuf[:0], &e)
	_ = p.alog.WriteRaw(rs.dc.alogBuf)
}

// startTime formats %START_TIME% (RFC 3339, ms, UTC), caching the last
// millisecond's string: requests of the same millisecond share it.
func startTime(t time.Time) string {
	ms := t.UnixMilli()
	if c := startCache.Load(); c != nil && c.ms == ms {
		return c.s
	}
	c := &msString{ms: ms, s: t.UTC().Format("2006-01-02T15:04:05.000Z")}
	startCache.Store(c)
	return c.s
}

type msString struct {
	ms int64
	s  string
}

var startCache atomic.Pointer[msString]

func headerFirst(h map[string][]string, k string) string {
	if vs := h[k]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// configDump is the JSON of /config_dump.
func (p *Proxy) configDump() any {
	return struct {
		Name             string            `json:"name"`
		Version          string            `json:"version"`
		Cluster          string            `json:"cluster"`
		Hosts            []string          `json:"hosts"`
		Seed             uint64            `json:"seed"`
		Local            *LocalRateLimit   `json:"local_ratelimit,omitempty"`
		Global           *GlobalRateLimit  `json:"ratelimit,omitempty"`
		Retry            *RetryPolicy      `json:"retry_policy,omitempty"`
		CircuitBreakers  *CircuitBreakers  `json:"circuit_breakers,omitempty"`
		OutlierDetection *OutlierDetection `json:"outlier_detection,omitempty"`
		PanicThreshold   float64           `json:"healthy_panic_threshold"`
	}{p.name, Version, p.cfg.Cluster, p.hostAddrs, p.seed, p.cfg.Local, p.cfg.Global, p.cfg.Retry, p.cfg.CircuitBreakers,
		p.cfg.OutlierDetection, p.cluster.panicThreshold}
}
