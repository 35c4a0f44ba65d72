package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/internal/lab/h1"
)

// CircuitBreakers is the cluster's circuit_breakers thresholds for the
// DEFAULT routing priority (config.cluster.v3.CircuitBreakers.Thresholds),
// with Envoy's semantics (docs intro/arch_overview/upstream/
// circuit_breaking; source/common/conn_pool/conn_pool_base.cc):
//
//   - max_connections: connections to all hosts; a new connection beyond
//     it counts upstream_cx_overflow and is not made (the request waits as
//     pending), except that a host with no connection at all still gets
//     one.
//   - max_pending_requests: requests waiting for a connection; one more is
//     refused (upstream_rq_pending_overflow).
//   - max_requests: requests attached to a connection; one more is refused
//     when it would attach (upstream_rq_pending_overflow too).
//   - max_retries: retries in flight; one more is refused
//     (upstream_rq_retry_overflow, flag UO, no x-envoy-overloaded).
//
// A refused request gets a 503 local reply "upstream connect error or
// disconnect/reset before headers. reset reason: overflow" with
// x-envoy-overloaded: true and flag UO; it is never retried and never fed to
// outlier detection (since Envoy 1.26).
type CircuitBreakers struct {
	// MaxConnections; nil means 1024.
	MaxConnections *uint32 `json:"max_connections,omitempty"`
	// MaxPendingRequests; nil means 1024.
	MaxPendingRequests *uint32 `json:"max_pending_requests,omitempty"`
	// MaxRequests; nil means 1024.
	MaxRequests *uint32 `json:"max_requests,omitempty"`
	// MaxRetries; nil means 3.
	MaxRetries *uint32 `json:"max_retries,omitempty"`
	// TrackRemaining is track_remaining: publish the
	// circuit_breakers.default.remaining_{cx,pending,rq,retries} gauges.
	TrackRemaining bool `json:"track_remaining,omitempty"`
}

// Envoy's default circuit breaker thresholds.
const (
	DefaultMaxConnections     = 1024
	DefaultMaxPendingRequests = 1024
	DefaultMaxRequests        = 1024
	DefaultMaxRetries         = 3
)

// DefaultConnectTimeout is the cluster connect_timeout when 0 (Envoy's 5 s).
const DefaultConnectTimeout = 5 * time.Second

// DefaultHealthyPanicThreshold is common_lb_config.healthy_panic_threshold
// when unset (Envoy's 50%).
const DefaultHealthyPanicThreshold = 50.0

func orU32(p *uint32, d uint32) int64 {
	if p == nil {
		return int64(d)
	}
	return int64(*p)
}

// clusterStats are the cluster.<c>.* counters and gauges the router and the
// pool move, resolved once.
type clusterStats struct {
	rqTotal, rqActive, rqTimeout, rqPerTryTimeout                  *stat
	rqPendingTotal, rqPendingActive, rqPendingOverflow             *stat
	cxTotal, cxActive, cxConnectFail, cxOverflow, cxDestroy        *stat
	cxMaxRequests                                                  *stat
	retry, retrySuccess, retryLimitExceeded, retryOverflow         *stat
	retryBackoffExp, retryAbandoned, lbHealthyPanic                *stat
	membershipTotal, membershipHealthy                             *stat
	cbCxOpen, cbCxPoolOpen, cbRqPendingOpen, cbRqOpen, cbRqRetryOp *stat
	cbRemCx, cbRemPending, cbRemRq, cbRemRetries                   *stat
	codes, external, internal, retryCodes                          *codeFamily
}

// cluster is the route's upstream cluster: its hosts (the backend
// endpoints), one HTTP/1.1 connection pool per host, the circuit breaker
// resources, round robin load balancing with the panic threshold, and the
// outlier detector. One mutex guards the pools, the resource counts and the
// hosts' health.
type cluster struct {
	p     *Proxy
	name  string
	hosts []*host
	st    clusterStats

	maxCx, maxPending, maxRq, maxRetries int64
	trackRemaining                       bool
	panicThreshold                       float64
	connectTimeout                       time.Duration
	dialer                               net.Dialer
	maxRqPerConn                         uint32 // 0: no limit

	mu                         sync.Mutex
	cx, pending, rq, retries   int64
	rrHealthy, rrAll           uint64
	closed                     bool
	conns                      map[*upConn]struct{}
	od                         *outlierDetector
	stopSweep                  func() bool
	dialWG                     sync.WaitGroup
	closeCh                    chan struct{}
	ejectedCount, healthyCount int
}

// host is one upstream endpoint and its connection pool (ConnPoolImplBase):
// ready (idle) connections, connections being established, and the FIFO
// of requests waiting for one.
type host struct {
	cl         *cluster
	addr       string // host:port, %UPSTREAM_HOST%
	idle       []*upConn
	connecting int
	pending    []*waiter
	od         hostOutlier
}

type waiter struct {
	ch chan waitResult // buffered 1
}

type waitResult struct {
	uc     *upConn
	reason resetReason
	tfr    string // transport failure reason
}

// upConn is one upstream HTTP/1.1 connection.
type upConn struct {
	h        *host
	c        net.Conn
	rc       syscall.RawConn
	br       *bufio.Reader
	bw       *bufio.Writer
	rr       *h1.ResponseReader
	tc       *h1.TurnConn // under br and bw: the request goes with the response's first read
	deadline time.Time
	peek     [1]byte
	peekOK   bool
	peekFn   func(fd uintptr) bool // made once: rc.Read would allocate a closure per check
	served   uint32                // requests this connection carried (max_requests_per_connection)
}

func newCluster(p *Proxy, name string, addrs []string, cb *CircuitBreakers, od *OutlierDetection, panicThreshold *float64, connectTimeout time.Duration) *cluster {
	if cb == nil {
		cb = &CircuitBreakers{}
	}
	cl := &cluster{p: p, name: name, conns: map[*upConn]struct{}{}, closeCh: make(chan struct{}),
		maxCx: orU32(cb.MaxConnections, DefaultMaxConnections), maxPending: orU32(cb.MaxPendingRequests, DefaultMaxPendingRequests),
		maxRq: orU32(cb.MaxRequests, DefaultMaxRequests), maxRetries: orU32(cb.MaxRetries, DefaultMaxRetries), trackRemaining: cb.TrackRemaining,
		panicThreshold: DefaultHealthyPanicThreshold, connectTimeout: connectTimeout}
	if panicThreshold != nil {
		cl.panicThreshold = min(*panicThreshold, 100)
	}
	if cl.connectTimeout == 0 {
		cl.connectTimeout = DefaultConnectTimeout
	}
	cl.dialer = net.Dialer{Timeout: cl.connectTimeout}
	for _, a := range addrs {
		cl.hosts = append(cl.hosts, &host{cl: cl, addr: a})
	}
	s, cp := p.stats, "cluster."+name+"."
	cl.st = clusterStats{
		rqTotal: s.counter(cp + "upstream_rq_total"), rqActive: s.gauge(cp + "upstream_rq_active"),
		rqTimeout: s.counter(cp + "upstream_rq_timeout"), rqPerTryTimeout: s.counter(cp + "upstream_rq_per_try_timeout"),
		rqPendingTotal: s.counter(cp + "upstream_rq_pending_total"), rqPendingActive: s.gauge(cp + "upstream_rq_pending_active"),
		rqPendingOverflow: s.counter(cp + "upstream_rq_pending_overflow"),
		cxTotal:           s.counter(cp + "upstream_cx_total"), cxActive: s.gauge(cp + "upstream_cx_active"),
		cxConnectFail: s.counter(cp + "upstream_cx_connect_fail"), cxOverflow: s.counter(cp + "upstream_cx_overflow"),
		cxDestroy: s.counter(cp + "upstream_cx_destroy"), cxMaxRequests: s.counter(cp + "upstream_cx_max_requests"),
		retry: s.counter(cp + "upstream_rq_retry"), retrySuccess: s.counter(cp + "upstream_rq_retry_success"),
		retryLimitExceeded: s.counter(cp + "upstream_rq_retry_limit_exceeded"), retryOverflow: s.counter(cp + "upstream_rq_retry_overflow"),
		retryBackoffExp: s.counter(cp + "upstream_rq_retry_backoff_exponential"), retryAbandoned: s.counter(cp + "retry_or_shadow_abandoned"),
		lbHealthyPanic:  s.counter(cp + "lb_healthy_panic"),
		membershipTotal: s.gauge(cp + "membership_total"), membershipHealthy: s.gauge(cp + "membership_healthy"),
		cbCxOpen: s.gauge(cp + "circuit_breakers.default.cx_open"), cbCxPoolOpen: s.gauge(cp + "circuit_breakers.default.cx_pool_open"),
		cbRqPendingOpen: s.gauge(cp + "circuit_breakers.default.rq_pending_open"), cbRqOpen: s.gauge(cp + "circuit_breakers.default.rq_open"),
		cbRqRetryOp: s.gauge(cp + "circuit_breakers.default.rq_retry_open"),
		codes:       newCodeFamily(s, cp), external: newCodeFamily(s, cp+"external."), internal: newCodeFamily(s, cp+"internal."),
		retryCodes: newCodeFamily(s, cp+"retry."),
	}
	if cl.trackRemaining {
		cl.st.cbRemCx = s.gauge(cp + "circuit_breakers.default.remaining_cx")
		cl.st.cbRemPending = s.gauge(cp + "circuit_breakers.default.remaining_pending")
		cl.st.cbRemRq = s.gauge(cp + "circuit_breakers.default.remaining_rq")
		cl.st.cbRemRetries = s.gauge(cp + "circuit_breakers.default.remaining_retries")
	}
	cl.healthyCount = len(cl.hosts)
	cl.st.membershipTotal.set(uint64(len(cl.hosts)))
	cl.st.membershipHealthy.set(uint64(len(cl.hosts)))
	cl.st.cbCxPoolOpen.set(0)
	cl.mu.Lock()
	cl.gaugesLocked()
	cl.rrHealthy = p.rand.Uint64()
	cl.rrAll = cl.rrHealthy
	cl.mu.Unlock()
	if od != nil {
		cl.od = newOutlierDetector(cl, od)
		cl.armSweep()
	}
	return cl
}

// gaugesLocked publishes the breaker gauges (0/1 *_open, remaining_*).
func (cl *cluster) gaugesLocked() {
	st := &cl.st
	st.cbCxOpen.setBool(cl.cx >= cl.maxCx)
	st.cbRqPendingOpen.setBool(cl.pending >= cl.maxPending)
	st.cbRqOpen.setBool(cl.rq >= cl.maxRq)
	st.cbRqRetryOp.setBool(cl.retries >= cl.maxRetries)
	if cl.trackRemaining {
		st.cbRemCx.set(uint64(max(cl.maxCx-cl.cx, 0)))
		st.cbRemPending.set(uint64(max(cl.maxPending-cl.pending, 0)))
		st.cbRemRq.set(uint64(max(cl.maxRq-cl.rq, 0)))
		st.cbRemRetries.set(uint64(max(cl.maxRetries-cl.retries, 0)))
	}
}

func (cl *cluster) tryAcquireRetry() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.retries >= cl.maxRetries {
		return false
	}
	cl.retries++
	cl.gaugesLocked()
	return true
}

func (cl *cluster) releaseRetry() {
	cl.mu.Lock()
	cl.retries--
	cl.gaugesLocked()
	cl.mu.Unlock()
}

// choose is the round robin load balancer with the panic threshold
// (LoadBalancerBase::isHostSetInPanic, recalculatePerPriorityPanic,
// ZoneAwareLoadBalancerBase::hostSourceToUse): the priority's health is
// min(100, 140·healthy/total) (overprovisioning factor 1.4, integer); when
// it is below 100 and the healthy share is below the threshold the LB is
// in panic and picks among all hosts, ejected ones included
// (lb_healthy_panic). A threshold of 0 disables panic: with no healthy host
// choose returns nil (503 "no healthy upstream", flag UH).
func (cl *cluster) choose() *host {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	total := len(cl.hosts)
	healthy := cl.healthyCount
	avail := min(100, 140*healthy/total)
	panicMode := false
	if !(cl.panicThreshold == 0 && avail == 0) && avail != 100 {
		panicMode = 100*float64(healthy)/float64(total) < cl.panicThreshold
	}
	if panicMode {
		cl.st.lbHealthyPanic.inc()
		h := cl.hosts[cl.rrAll%uint64(total)]
		cl.rrAll++
		return h
	}
	if healthy == 0 {
		return nil
	}
	if healthy == total {
		h := cl.hosts[cl.rrHealthy%uint64(total)]
		cl.rrHealthy++
		return h
	}
	i := int(cl.rrHealthy % uint64(healthy))
	cl.rrHealthy++
	for _, h := range cl.hosts {
		if !h.od.ejected {
			if i == 0 {
				return h
			}
			i--
		}
	}
	return nil
}

// errPoolTimeout is returned by newStream when the attempt's deadline
// passed while the request waited for a connection.
var errPoolTimeout = errors.New("timed out waiting for an upstream connection")

// errPendingOverflow comes with resetOverflow when max_pending_requests
// refused the request before any host connection was involved (Envoy's
// onPoolFailure without a host: %UPSTREAM_HOST% is empty).
var errPendingOverflow = errors.New("max pending requests overflow")

// errClosed is returned when the proxy closed while a request waited.
var errClosed = errors.New("proxy closed")

// newStream is ConnPoolImplBase::newStreamImpl for h: an idle connection
// if there is one (refused with overflow at max_requests), else the request
// becomes pending (refused at max_pending_requests) and a connection is
// created if the pool's connecting capacity is short, within
// max_connections. It waits until deadline (zero: none) for a connection.
// On a pool failure it returns the reset reason (overflow, connection
// failure or timeout) and the transport failure reason.
func (cl *cluster) newStream(h *host, deadline time.Time) (*upConn, resetReason, string, error) {
	for {
		cl.mu.Lock()
		if cl.closed {
			cl.mu.Unlock()
			return nil, resetNone, "", errClosed
		}
		if n := len(h.idle); n > 0 {
			uc := h.idle[n-1]
			h.idle = h.idle[:n-1]
			cl.mu.Unlock()
			if !uc.alive() {
				// The upstream closed it while idle: Envoy sees the close
				// event and drops it from the pool; so does the lab.
				cl.destroy(uc)
				continue
			}
			cl.mu.Lock()
			if cl.rq >= cl.maxRq {
				h.idle = append(h.idle, uc)
				cl.st.rqPendingOverflow.inc()
				cl.mu.Unlock()
				return nil, resetOverflow, "", nil
			}
			cl.attachLocked()
			cl.mu.Unlock()
			return uc, resetNone, "", nil
		}
		if cl.pending >= cl.maxPending {
			cl.st.rqPendingOverflow.inc()
			cl.mu.Unlock()
			return nil, resetOverflow, "", errPendingOverflow
		}
		w := &waiter{ch: make(chan waitResult, 1)}
		h.pending = append(h.pending, w)
		cl.pending++
		cl.st.rqPendingTotal.inc()
		cl.st.rqPendingActive.v.Add(1)
		cl.gaugesLocked()
		cl.tryCreateConnectionLocked(h)
		cl.mu.Unlock()
		return cl.wait(h, w, deadline)
	}
}

func (cl *cluster) wait(h *host, w *waiter, deadline time.Time) (*upConn, resetReason, string, error) {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case r := <-w.ch:
		return r.uc, r.reason, r.tfr, nil
	case <-timeout:
	case <-cl.closeCh:
	}
	cl.mu.Lock()
	for i, x := range h.pending {
		if x == w {
			h.pending = append(h.pending[:i], h.pending[i+1:]...)
			cl.pendingDoneLocked()
			cl.mu.Unlock()
			if cl.isClosed() {
				return nil, resetNone, "", errClosed
			}
			return nil, resetNone, "", errPoolTimeout
		}
	}
	cl.mu.Unlock()
	// The waiter was served while the timer fired: take its result.
	r := <-w.ch
	return r.uc, r.reason, r.tfr, nil
}

func (cl *cluster) isClosed() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.closed
}

func (cl *cluster) pendingDoneLocked() {
	cl.pending--
	cl.st.rqPendingActive.dec()
	cl.gaugesLocked()
}

// attachLocked counts a request attached to a connection.
func (cl *cluster) attachLocked() {
	cl.rq++
	cl.st.rqTotal.inc()
	cl.st.rqActive.v.Add(1)
	cl.gaugesLocked()
}

// tryCreateConnectionLocked is ConnPoolImplBase::tryCreateNewConnection for
// one HTTP/1.1 pool (one stream per connection): connect when the pending
// requests outnumber the connections being established, within
// max_connections (upstream_cx_overflow otherwise), except that a host
// without any connection always gets one.
func (cl *cluster) tryCreateConnectionLocked(h *host) {
	if len(h.pending) <= h.connecting {
		return
	}
	can := cl.cx < cl.maxCx
	if !can {
		cl.st.cxOverflow.inc()
		if len(h.idle) > 0 || h.connecting > 0 || cl.hostConnsLocked(h) > 0 {
			return
		}
	}
	cl.cx++
	h.connecting++
	cl.st.cxTotal.inc()
	cl.st.cxActive.v.Add(1)
	cl.gaugesLocked()
	cl.dialWG.Add(1)
	go cl.connect(h)
}

func (cl *cluster) hostConnsLocked(h *host) int {
	n := 0
	for uc := range cl.conns {
		if uc.h == h {
			n++
		}
	}
	return n
}

// connect establishes one connection for h's pool and hands it to the
// first pending request, or purges h's pending requests on failure (Envoy
// purgePendingStreams on a connect failure).
func (cl *cluster) connect(h *host) {
	defer cl.dialWG.Done()
	ctx, cancel := context.WithTimeout(context.Background(), cl.connectTimeout)
	go func() {
		select {
		case <-cl.closeCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, err := cl.dialer.DialContext(ctx, "tcp", h.addr)
	cancel()
	cl.mu.Lock()
	h.connecting--
	if err == nil && cl.closed {
		_ = c.Close()
		err = errClosed
	}
	if err != nil {
		cl.cx--
		cl.st.cxActive.dec()
		cl.st.cxConnectFail.inc()
		cl.gaugesLocked()
		reason, tfr := dialReason(err)
		pend := h.pending
		h.pending = nil
		for _, w := range pend {
			cl.pendingDoneLocked()
			w.ch <- waitResult{reason: reason, tfr: tfr}
		}
		cl.mu.Unlock()
		return
	}
	tc := h1.NewTurnConn(c)
	uc := &upConn{h: h, c: c, tc: tc, br: bufio.NewReaderSize(tc, 4096), bw: bufio.NewWriterSize(tc, 4096)}
	uc.rr = h1.NewResponseReader(uc.br)
	if sc, ok := c.(syscall.Conn); ok {
		uc.rc, _ = sc.SyscallConn()
		uc.peekFn = func(fd uintptr) bool {
			// EAGAIN: open and silent. Anything else (EOF as n == 0, a
			// byte, an error) means the connection cannot carry a request.
			_, _, err := syscall.Recvfrom(int(fd), uc.peek[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			uc.peekOK = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
			return true
		}
	}
	cl.conns[uc] = struct{}{}
	h.idle = append(h.idle, uc)
	cl.upstreamReadyLocked(h)
	cl.mu.Unlock()
}

// dialReason maps a dial error to the pool failure's reset reason and
// transport failure reason (refused: "delayed connect error: 111", as
// Envoy's connection reports errno ECONNREFUSED).
func dialReason(err error) (resetReason, string) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return resetConnectionTimeout, ""
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return resetRemoteConnectionFailure, fmt.Sprintf("delayed connect error: %d", int(errno))
	}
	return resetLocalConnectionFailure, ""
}

// upstreamReadyLocked is ConnPoolImplBase::onUpstreamReady: while requests
// are pending and connections are ready, attach them in FIFO order (a
// request that would exceed max_requests is refused with overflow), then
// create connections for what is still pending.
func (cl *cluster) upstreamReadyLocked(h *host) {
	for len(h.pending) > 0 && len(h.idle) > 0 {
		w := h.pending[0]
		h.pending = h.pending[1:]
		cl.pendingDoneLocked()
		if cl.rq >= cl.maxRq {
			cl.st.rqPendingOverflow.inc()
			w.ch <- waitResult{reason: resetOverflow}
			continue
		}
		uc := h.idle[len(h.idle)-1]
		h.idle = h.idle[:len(h.idle)-1]
		cl.attachLocked()
		w.ch <- waitResult{uc: uc}
	}
	if len(h.pending) > 0 {
		cl.tryCreateConnectionLocked(h)
	}
}

// release ends the request on uc: back to the pool when reuse is true
// (the response was read to its end on a keep-alive connection), closed
// otherwise.
func (cl *cluster) release(uc *upConn, reuse bool) {
	cl.mu.Lock()
	uc.served++
	if reuse && cl.maxRqPerConn > 0 && uc.served >= cl.maxRqPerConn {
		// The connection's remaining streams reached 0: Envoy closes it
		// once its last stream is done (upstream_cx_max_requests).
		reuse = false
		cl.st.cxMaxRequests.inc()
	}
	cl.rq--
	cl.st.rqActive.dec()
	cl.gaugesLocked()
	if reuse && !cl.closed {
		uc.h.idle = append(uc.h.idle, uc)
		cl.upstreamReadyLocked(uc.h)
		cl.mu.Unlock()
		return
	}
	cl.mu.Unlock()
	cl.destroy(uc)
}

// destroy closes uc and frees its connection resource; pending requests of
// its host may then get a new connection.
func (cl *cluster) destroy(uc *upConn) {
	_ = uc.c.Close()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, ok := cl.conns[uc]; !ok {
		return
	}
	delete(cl.conns, uc)
	cl.cx--
	cl.st.cxActive.dec()
	cl.st.cxDestroy.inc()
	cl.gaugesLocked()
	if !cl.closed && len(uc.h.pending) > 0 {
		cl.tryCreateConnectionLocked(uc.h)
	}
}

// alive reports whether an idle connection is still open: no byte pending
// (an idle HTTP/1.1 connection must be silent) and no EOF, checked with a
// non-blocking MSG_PEEK.
func (uc *upConn) alive() bool {
	if uc.br.Buffered() > 0 {
		return false
	}
	if uc.rc == nil {
		return true
	}
	uc.peekOK = false
	_ = uc.rc.Read(uc.peekFn)
	return uc.peekOK
}

// close stops the pools: every connection is closed and waiting requests
// are released with errClosed.
func (cl *cluster) close() {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return
	}
	cl.closed = true
	close(cl.closeCh)
	if cl.stopSweep != nil {
		cl.stopSweep()
	}
	var all []*upConn
	for uc := range cl.conns {
		all = append(all, uc)
	}
	cl.mu.Unlock()
	for _, uc := range all {
		_ = uc.c.Close()
	}
	cl.dialWG.Wait()
}
