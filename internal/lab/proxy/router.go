package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/internal/lab/h1"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// respFlag is one %RESPONSE_FLAGS% value (source/common/stream_info/utility.h).
type respFlag uint8

const (
	flagNone respFlag = iota
	flagUH            // NoHealthyUpstream
	flagUT            // UpstreamRequestTimeout
	flagLR            // LocalReset
	flagUR            // UpstreamRemoteReset
	flagUF            // UpstreamConnectionFailure
	flagUC            // UpstreamConnectionTermination
	flagUO            // UpstreamOverflow
	flagRL            // RateLimited
	flagRLSE          // RateLimitServiceError
	flagDC            // DownstreamConnectionTermination
	flagURX           // UpstreamRetryLimitExceeded
	flagUPE           // UpstreamProtocolError
)

var flagNames = [...]string{flagNone: "-", flagUH: "UH", flagUT: "UT", flagLR: "LR", flagUR: "UR", flagUF: "UF", flagUC: "UC", flagUO: "UO",
	flagRL: "RL", flagRLSE: "RLSE", flagDC: "DC", flagURX: "URX", flagUPE: "UPE"}

// flagSet holds the response flags in the order they were set (Envoy
// StreamInfoImpl::setResponseFlag appends a flag not yet present;
// ResponseFlagUtils::toString joins them with ",").
type flagSet struct {
	n int
	f [4]respFlag
}

func (s *flagSet) add(f respFlag) {
	if f == flagNone || s.n == len(s.f) {
		return
	}
	for i := 0; i < s.n; i++ {
		if s.f[i] == f {
			return
		}
	}
	s.f[s.n] = f
	s.n++
}

func (s *flagSet) String() string {
	switch s.n {
	case 0:
		return "-"
	case 1:
		return flagNames[s.f[0]]
	}
	var b strings.Builder
	for i := 0; i < s.n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(flagNames[s.f[i]])
	}
	return b.String()
}

// process runs the filter chain: local rate limit, global rate limit, router.
func (p *Proxy) process(rs *reqState) {
	// 1. Local rate limit filter (local_ratelimit.cc Filter::decodeHeaders).
	if l := p.cfg.Local; l != nil && p.rand.hit(l.FilterEnabled) {
		p.st.lEnabled.inc()
		lim := p.limiter
		if rs.dc.limiter != nil {
			lim = rs.dc.limiter
		}
		var descs [][]descriptor.DescriptorEntry
		if lim.hasDescrip {
			for i := range p.localEntries {
				if d, ok := p.localEntries[i].Descriptor(nil, rs.req.Header, rs.dc.remoteIP); ok {
					descs = append(descs, d)
				}
			}
		}
		// The clock is read under localMu, so the logged times are in the
		// order the buckets decided: a request whose goroutine was
		// preempted between reading the time and taking a bucket's lock
		// would otherwise be logged before requests the bucket decided
		// first, and a model judging by those times would see tokens
		// taken out of order (a false "must admit" on a loaded host).
		p.localMu.Lock()
		now := p.clock.Now()
		ok, b := lim.decide(descs, now)
		p.localMu.Unlock()
		rs.localNs = now.UnixNano() // the buckets' time, logged as is
		if l.EnableXRateLimitHeaders {
			rs.rlBucket = b
		}
		if ok {
			p.st.lOK.inc()
		} else {
			p.st.lLimited.inc()
			if p.rand.hit(l.FilterEnforced) {
				p.st.lEnf.inc()
				p.localReply(rs, p.localStatus, envoyrec.LocalRateLimitedBody, flagRL, "local_rate_limited")
				return
			}
		}
	}
	// 2. Global rate limit filter.
	if g := p.cfg.Global; g != nil {
		if descs := globalDescriptors(p.globalEntries, rs.req.Header, rs.dc.remoteIP); len(descs) > 0 {
			if p.global(rs, g, descs) {
				return
			}
		}
	}
	// 3. Router.
	p.route(rs)
}

// global runs the ratelimit filter (ratelimit.cc Filter::complete); it
// reports whether it sent a local reply.
func (p *Proxy) global(rs *reqState, g *GlobalRateLimit, descs []*rlcommon.RateLimitDescriptor) bool {
	ctx, cancel := context.WithTimeout(context.Background(), p.rlsTimeout)
	rs.rlsStartNs = p.clock.Now().UnixNano()
	resp, err := p.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: g.Domain, Descriptors: descs})
	rs.rlsEndNs = p.clock.Now().UnixNano()
	cancel()
	if err != nil {
		p.st.gError.inc()
		if g.FailureModeDeny {
			p.localReply(rs, p.statusOnErr, "", flagRLSE, "rate_limiter_error")
			return true
		}
		p.st.gFailOpen.inc()
		return false
	}
	var hdrs []hdr
	if g.EnableXRateLimitHeaders {
		hdrs = xRateLimitHeaders(resp.GetStatuses())
	}
	if resp.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
		// OK (and UNKNOWN, which Envoy's client maps to OK).
		p.st.gOK.inc()
		rs.extra = append(rs.extra, hdrs...)
		return false
	}
	p.st.gOverLimit.inc()
	// Envoy charges the rate limited status to the cluster's response code
	// stats as an internal request (CodeStats::chargeResponseStat).
	p.cluster.st.codes.charge(p.rateLimitedS)
	p.cluster.st.internal.charge(p.rateLimitedS)
	rs.extra = append(rs.extra, hdrs...)
	for _, hv := range resp.GetResponseHeadersToAdd() {
		v := hv.GetValue()
		if v == "" && len(hv.GetRawValue()) > 0 {
			v = string(hv.GetRawValue())
		}
		rs.extra = append(rs.extra, hdr{http.CanonicalHeaderKey(hv.GetKey()), v})
	}
	rs.extra = append(rs.extra, hdr{"X-Envoy-Ratelimited", "true"})
	p.localReply(rs, p.rateLimitedS, string(resp.GetRawBody()), flagRL, "request_rate_limited")
	return true
}

// maxRetryBody is the most request body the router buffers to be able to
// resend it (Envoy's retry_shadow_buffer_limit is the listener's buffer
// limit, 1 MiB by default); a larger body abandons the retries.
const maxRetryBody = 1 << 20

// route is the router filter (router.cc): host selection, the connection
// pool, the upstream request and its timeouts, retries with back-off, the
// response code stats, outlier detection reports, and the local replies
// when no upstream response can be forwarded. Each attempt is one
// routing.try; its outcomes are handled by onTimeout, onReset and
// onHeaders.
func (p *Proxy) route(rs *reqState) {
	r := routing{p: p, rs: rs, cl: p.cluster, global: p.cfg.UpstreamTimeout}
	if p.retry != nil {
		rs.retry = *newRetryState(p.retry, r.cl)
		r.rst = &rs.retry
		defer r.rst.release()
		r.perTry = p.retry.perTry
		if r.global > 0 && r.perTry >= r.global {
			r.perTry = 0 // finalTimeout: a per-try timeout >= the route timeout is ignored
		}
	}
	r.start = time.Now()
	if r.global > 0 {
		r.globalDL = r.start.Add(r.global)
	}
	if d := p.cfg.MaxStreamDuration; d > 0 {
		r.streamDL = rs.arrived.Add(d)
	}
	if !r.prepareBody() {
		return
	}
	rs.attempts = 1
	for r.try() {
	}
}

// routing is the router filter's state for one downstream request.
type routing struct {
	p  *Proxy
	rs *reqState
	cl *cluster
	// rst is the request's retry state; nil without a retry policy or once
	// the retries are abandoned (a body over maxRetryBody).
	rst *retryState
	// global is the route timeout and perTry the per-try timeout (0: none).
	global, perTry time.Duration
	// start is when routing began; globalDL is start+global (zero: none).
	start, globalDL time.Time
	// streamDL is the request's arrival plus max_stream_duration (zero: none).
	streamDL time.Time
	// stream is the request body when it is streamed, not buffered.
	stream io.Reader
	// isRetry is set once a retry was granted.
	isRetry bool
}

// prepareBody buffers the request body when a retry may resend it and
// streams it otherwise; a body over maxRetryBody abandons the retries
// (cluster stat retry_or_shadow_abandoned). It returns
// false when reading the body failed and a 400 was sent.
func (r *routing) prepareBody() bool {
	rs, req := r.rs, r.rs.req
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	if r.rst == nil {
		r.stream = &countReader{r: req.Body, n: &rs.recv}
		return true
	}
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, req.Body, maxRetryBody+1)
	rs.recv += n
	if err != nil && !errors.Is(err, io.EOF) {
		r.p.localReply(rs, http.StatusBadRequest, "", flagNone, "downstream_remote_disconnect")
		rs.closeDS = true
		return false
	}
	if n > maxRetryBody {
		r.cl.st.retryAbandoned.inc()
		r.rst.release()
		r.rst = nil
		r.stream = io.MultiReader(&buf, &countReader{r: req.Body, n: &rs.recv})
	} else {
		rs.body = buf.Bytes()
	}
	return true
}

// nextAttempt waits a granted retry's back-off (doRetry); false: the
// route timeout passed first and its 504 was sent.
func (r *routing) nextAttempt() bool {
	dl, stream := r.globalDL, false
	if !r.streamDL.IsZero() && (dl.IsZero() || r.streamDL.Before(dl)) {
		dl, stream = r.streamDL, true
	}
	if !r.p.backoff(r.rs, r.rst, dl) {
		if stream {
			r.p.maxDurationReached(r.rs)
		} else {
			r.p.globalTimeout(r.rs)
		}
		return false
	}
	r.isRetry = true
	r.rs.attempts++
	return true
}

// deadlines returns an attempt's deadline (the route timeout's or, when
// earlier, the per-try timeout's, then perTryFired), and the timeout the
// upstream is told to expect (x-envoy-expected-rq-timeout-ms: the per-try
// timeout, else the route timeout, on a retry at most what is left of the
// route timeout and at least 1 ms).
func (r *routing) deadlines() (attemptDL time.Time, perTryFired, streamFired bool, expected time.Duration) {
	attemptDL = r.globalDL
	if r.perTry > 0 {
		if perTryDL := time.Now().Add(r.perTry); attemptDL.IsZero() || perTryDL.Before(attemptDL) {
			attemptDL, perTryFired = perTryDL, true
		}
	}
	if !r.streamDL.IsZero() && (attemptDL.IsZero() || r.streamDL.Before(attemptDL)) {
		attemptDL, perTryFired, streamFired = r.streamDL, false, true
	}
	switch {
	case r.perTry > 0:
		expected = r.perTry
	case r.global > 0:
		expected = r.global
	}
	if r.global > 0 && r.isRetry {
		// setTimeoutHeaders with the elapsed time: what is left of the
		// route timeout, at least 1 ms.
		expected = min(expected, max(time.Until(r.globalDL), time.Millisecond))
	}
	return attemptDL, perTryFired, streamFired, expected
}

// try makes one attempt on a chosen host and handles its outcome; it
// returns true when a retry was granted and its back-off waited, false
// once the downstream request got its response.
func (r *routing) try() bool {
	p, rs, cl := r.p, r.rs, r.cl
	h := cl.choose()
	if h == nil {
		cl.st.codes.charge(http.StatusServiceUnavailable)
		cl.st.external.charge(http.StatusServiceUnavailable)
		// A first attempt without a host replies before the router set
		// up x-envoy-attempt-count for the response; a retry after it.
		p.routerReply(rs, http.StatusServiceUnavailable, "no healthy upstream", flagUH, "no_healthy_upstream", r.isRetry)
		return false
	}
	rs.upHost = h.addr
	attemptDL, perTryFired, streamFired, expected := r.deadlines()
	res := p.attempt(rs, h, attemptDL, expected, r.stream)
	switch {
	case res.closed:
		p.routerReply(rs, http.StatusServiceUnavailable, "upstream connect error or disconnect/reset before headers. reset reason: local reset", flagLR,
			"upstream_reset_before_response_started{local_reset}", true)
		return false
	case res.timedOut && streamFired:
		// The HTTP connection manager's stream timer: the upstream
		// request is reset (no outlier report) and the client gets 408.
		p.maxDurationReached(rs)
		return false
	case res.timedOut:
		return r.onTimeout(h, res, perTryFired)
	case res.reason != resetNone:
		return r.onReset(h, res)
	}
	return r.onHeaders(h, res)
}

// onTimeout handles an attempt that timed out: a per-try timeout
// (onPerTryTimeout) may be retried, else it is a 504 "upstream request
// timeout"; the route timeout (onResponseTimeout) ends every attempt, no
// retry. It returns true when the next attempt may start.
func (r *routing) onTimeout(h *host, res attemptResult, perTryFired bool) bool {
	p, rs, cl := r.p, r.rs, r.cl
	if !perTryFired {
		if res.hadConn {
			cl.putLocalOriginOr(h, http.StatusGatewayTimeout)
		}
		p.globalTimeout(rs)
		return false
	}
	cl.st.rqPerTryTimeout.inc()
	if res.hadConn {
		cl.putLocalOriginOr(h, http.StatusGatewayTimeout) // LocalOriginTimeout
	}
	if p.maybeRetryReset(rs, r.rst, resetLocalReset, true) {
		return r.nextAttempt()
	}
	cl.st.codes.charge(http.StatusGatewayTimeout)
	cl.st.external.charge(http.StatusGatewayTimeout)
	p.routerReply(rs, http.StatusGatewayTimeout, "upstream request timeout", flagUT, "upstream_per_try_timeout", true)
	return false
}

// onReset handles an attempt reset before its response headers
// (onUpstreamReset): it may be retried, else the client gets a 503 (502 on
// a protocol error) local reply naming the reset reason. It returns true
// when the next attempt may start.
func (r *routing) onReset(h *host, res attemptResult) bool {
	p, rs, cl := r.p, r.rs, r.cl
	if res.noHost {
		rs.upHost = ""
	}
	if res.reason != resetOverflow {
		// LocalOriginConnectFailed, reported as 503 without the
		// external/local split; overflow is not the host's fault.
		cl.putLocalOriginOr(h, http.StatusServiceUnavailable)
	}
	if p.maybeRetryReset(rs, r.rst, res.reason, res.started) {
		return r.nextAttempt()
	}
	code := http.StatusServiceUnavailable
	if res.reason == resetProtocolError {
		code = http.StatusBadGateway
	}
	cl.st.codes.charge(code)
	cl.st.external.charge(code)
	reason := res.reason.String()
	body := "upstream connect error or disconnect/reset before headers. "
	if r.isRetry {
		body += "retried and the latest "
	}
	body += "reset reason: " + reason
	det := reason
	if res.tfr != "" {
		body += ", transport failure reason: " + res.tfr
		det += "|" + res.tfr
	}
	var more []hdr
	if res.reason == resetOverflow {
		more = append(more, hdr{"X-Envoy-Overloaded", "true"})
	}
	p.routerReply(rs, code, body, res.reason.flag(), "upstream_reset_before_response_started{"+strings.ReplaceAll(det, " ", "_")+"}", true, more...)
	return false
}

// onHeaders handles an attempt's response headers (onUpstreamHeaders): a
// retriable response is discarded and retried, anything else is forwarded
// downstream. It returns true when the next attempt may start.
func (r *routing) onHeaders(h *host, res attemptResult) bool {
	p, rs, cl, rst := r.p, r.rs, r.cl, r.rst
	resp := res.resp
	code := resp.StatusCode
	cl.putHTTPCode(h, code)
	if rst != nil {
		switch rst.shouldRetry(rst.wouldRetryFromHeaders(code, len(resp.Header["X-Envoy-Ratelimited"]) > 0)) {
		case retryYes:
			cl.st.retryCodes.charge(code)
			// Envoy resets the upstream stream unless the response
			// ended with its headers: on HTTP/1.1 that closes the
			// connection.
			reuse := resp.ContentLength == 0 && !resp.Close
			_ = resp.Body.Close()
			cl.release(res.uc, reuse)
			return r.nextAttempt()
		case retryNoOverflow:
			rs.flags.add(flagUO)
		case retryNoLimitExceeded:
			rs.flags.add(flagURX)
		}
	}
	cl.st.codes.charge(code)
	cl.st.external.charge(code)
	rs.details = "via_upstream"
	ok := p.writeUpstreamResponse(rs, resp, time.Since(r.start).Milliseconds(), p.cfg.IncludeAttemptCountInResponse)
	_ = resp.Body.Close()
	if !ok {
		// The upstream reset after the response started: the client's
		// response is cut (Envoy resets the downstream stream).
		rs.flags.add(flagUC)
		rs.details = "upstream_reset_after_response_started{connection_termination}"
	}
	cl.release(res.uc, ok && !resp.Close && !res.uc.dirty())
	return false
}

// routerReply is a local reply sent by the router; with withAttempt it
// carries x-envoy-attempt-count when include_attempt_count_in_response is
// on (every router reply but a first attempt's "no healthy upstream").
func (p *Proxy) routerReply(rs *reqState, code int, body string, f respFlag, details string, withAttempt bool, more ...hdr) {
	if p.cfg.IncludeAttemptCountInResponse && withAttempt {
		more = append(more, hdr{"X-Envoy-Attempt-Count", strconv.Itoa(rs.attempts)})
	}
	p.localReply(rs, code, body, f, details, more...)
}

// maxDurationReached is ActiveStream::onStreamMaxDurationReached: 408
// "downstream duration timeout", details max_duration_timeout, no
// response flag, no upstream code charged.
func (p *Proxy) maxDurationReached(rs *reqState) {
	p.st.dsMaxDuration.inc()
	p.localReply(rs, http.StatusRequestTimeout, "downstream duration timeout", flagNone, "max_duration_timeout")
}

// globalTimeout is onResponseTimeout's reply: 504, flag UT.
func (p *Proxy) globalTimeout(rs *reqState) {
	cl := p.cluster
	cl.st.rqTimeout.inc()
	cl.st.codes.charge(http.StatusGatewayTimeout)
	cl.st.external.charge(http.StatusGatewayTimeout)
	p.routerReply(rs, http.StatusGatewayTimeout, "upstream request timeout", flagUT, "response_timeout", true)
}

// maybeRetryReset is Filter::maybeRetryReset.
func (p *Proxy) maybeRetryReset(rs *reqState, rst *retryState, r resetReason, started bool) bool {
	if rst == nil {
		return false
	}
	switch rst.shouldRetry(rst.wouldRetryFromReset(r, started)) {
	case retryYes:
		return true
	case retryNoOverflow:
		rs.flags.add(flagUO)
	case retryNoLimitExceeded:
		rs.flags.add(flagURX)
	}
	return false
}

// backoff waits the retry's back-off (RetryStateImpl::enableBackoffTimer)
// on the proxy clock; it returns false when the route timeout passes first.
func (p *Proxy) backoff(rs *reqState, rst *retryState, globalDL time.Time) bool {
	ms := rst.backoff.nextMs(p.rand.Uint64())
	p.cluster.st.retryBackoffExp.inc()
	d := time.Duration(ms) * time.Millisecond
	if !globalDL.IsZero() && time.Now().Add(d).After(globalDL) {
		if w := time.Until(globalDL); w > 0 {
			t := time.NewTimer(w)
			<-t.C
		}
		return false
	}
	if d <= 0 {
		return true
	}
	done := make(chan struct{})
	stop := p.clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-p.cluster.closeCh:
		stop()
		return true // the next attempt sees the closed pool
	}
}

// countReader counts the bytes read through it into *n.
type countReader struct {
	r io.Reader
	n *int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	*c.n += int64(n)
	return n, err
}

type attemptResult struct {
	resp     *http.Response
	uc       *upConn
	reason   resetReason
	tfr      string
	started  bool // request bytes went upstream
	hadConn  bool // a connection was attached (the host saw the attempt)
	noHost   bool // refused before a host was involved (pending overflow)
	timedOut bool
	closed   bool
}

// attempt gets a connection for h and sends the request on it; it returns
// the response head (the connection stays the caller's), or why there is
// none (the connection, if any, is already given back).
func (p *Proxy) attempt(rs *reqState, h *host, deadline time.Time, expected time.Duration, stream io.Reader) attemptResult {
	cl := p.cluster
	uc, reason, tfr, err := cl.newStream(h, deadline)
	switch {
	case errors.Is(err, errClosed):
		return attemptResult{closed: true}
	case errors.Is(err, errPoolTimeout):
		return attemptResult{timedOut: true}
	case errors.Is(err, errPendingOverflow):
		return attemptResult{reason: reason, noHost: true}
	case reason != resetNone:
		return attemptResult{reason: reason, tfr: tfr}
	}
	if !deadline.Equal(uc.deadline) {
		_ = uc.c.SetDeadline(deadline)
		uc.deadline = deadline
	}
	// onPoolReady: LocalOriginConnectSuccess (split mode only).
	cl.putLocalOrigin(h, false)
	if rs.upstreamStartNs == 0 {
		rs.upstreamStartNs = p.clock.Now().UnixNano()
	}
	p.writeRequest(uc, rs, expected, stream)
	uc.tc.DeferNextWrite() // sent by the response's first read
	if err := uc.bw.Flush(); err != nil {
		return p.writeFailed(uc, err)
	}
	resp, err := uc.rr.Read(rs.req)
	if err != nil {
		if werr := uc.tc.DeferredWriteErr(); werr != nil {
			return p.writeFailed(uc, werr)
		}
		cl.release(uc, false)
		if isTimeout(err) {
			return attemptResult{timedOut: true, hadConn: true, started: true}
		}
		return attemptResult{reason: ioReason(err), hadConn: true, started: true}
	}
	return attemptResult{resp: resp, uc: uc, started: true, hadConn: true}
}

// writeFailed is an attempt whose request could not be written: no byte
// of it counts as sent.
func (p *Proxy) writeFailed(uc *upConn, err error) attemptResult {
	p.cluster.release(uc, false)
	if isTimeout(err) {
		return attemptResult{timedOut: true, hadConn: true}
	}
	return attemptResult{reason: ioReason(err), hadConn: true}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// ioReason maps an upstream read or write error to the HTTP/1 codec's reset
// reason: a close or reset before the response is a connection
// termination (UC), a response that does not parse a protocol error (UPE).
func ioReason(err error) resetReason {
	var ne *net.OpError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.As(err, &ne):
		return resetConnectionTermination
	}
	return resetProtocolError
}

// dirty reports whether uc holds unread bytes after a response (so it
// cannot be reused).
func (uc *upConn) dirty() bool { return uc.br.Buffered() > 0 }

// Request headers the router consumes or rewrites and never forwards as
// received (router.cc, RetryStateImpl::create, FilterUtility::finalTimeout;
// the lab treats every downstream as external, so the x-envoy-* control
// headers a client sends are stripped and not honored).
var strippedRequestHeaders = map[string]bool{
	"Content-Length": true, "Host": true, "X-Forwarded-For": true, "X-Forwarded-Proto": true,
	"X-Envoy-Expected-Rq-Timeout-Ms": true, "X-Envoy-Attempt-Count": true, "X-Envoy-Max-Retries": true,
	"X-Envoy-Retry-On": true, "X-Envoy-Retry-Grpc-On": true, "X-Envoy-Retriable-Status-Codes": true,
	"X-Envoy-Retriable-Header-Names": true, "X-Envoy-Upstream-Rq-Timeout-Ms": true,
	"X-Envoy-Upstream-Rq-Per-Try-Timeout-Ms": true, "X-Envoy-Hedge-On-Per-Try-Timeout": true,
	"X-Envoy-Upstream-Rq-Timeout-Alt-Response": true,
}

// writeRequest writes the upstream request into uc's buffer: the request
// line with the cluster's path prefix, the downstream headers minus the
// hop-by-hop and router-owned ones, x-forwarded-for with the peer appended
// (use_remote_address: true), x-forwarded-proto, x-envoy-expected-rq-timeout-ms,
// x-envoy-attempt-count (include_request_attempt_count), and the body.
func (p *Proxy) writeRequest(uc *upConn, rs *reqState, expected time.Duration, stream io.Reader) {
	w := uc.bw
	req := rs.req
	_, _ = w.WriteString(req.Method)
	_ = w.WriteByte(' ')
	_, _ = w.WriteString(p.pathPrefix)
	_, _ = w.WriteString(req.URL.RequestURI())
	_, _ = w.WriteString(" HTTP/1.1\r\n")
	h1.Header(w, "Host", req.Host)
	hasConn := len(req.Header["Connection"]) > 0
	for k, vs := range req.Header {
		if hopHeaders[k] || strippedRequestHeaders[k] || (hasConn && connectionListed(req.Header, k)) {
			continue
		}
		for _, v := range vs {
			h1.Header(w, k, v)
		}
	}
	if rs.dc.remoteIP != "" {
		_, _ = w.WriteString("X-Forwarded-For: ")
		for i, v := range req.Header["X-Forwarded-For"] {
			if i > 0 {
				_, _ = w.WriteString(", ")
			}
			_, _ = w.WriteString(v)
			_, _ = w.WriteString(", ")
		}
		_, _ = w.WriteString(rs.dc.remoteIP)
		_, _ = w.WriteString("\r\n")
	}
	h1.Header(w, "X-Forwarded-Proto", "http")
	if rs.genID {
		h1.Header(w, "X-Request-Id", rs.reqID)
	}
	if expected > 0 {
		h1.HeaderInt(w, "X-Envoy-Expected-Rq-Timeout-Ms", expected.Milliseconds())
	}
	if p.cfg.IncludeAttemptCount {
		h1.HeaderInt(w, "X-Envoy-Attempt-Count", int64(rs.attempts))
	}
	switch {
	case rs.body != nil:
		h1.HeaderInt(w, "Content-Length", int64(len(rs.body)))
		_, _ = w.WriteString("\r\n")
		_, _ = w.Write(rs.body)
	case stream != nil && req.ContentLength >= 0:
		h1.HeaderInt(w, "Content-Length", req.ContentLength)
		_, _ = w.WriteString("\r\n")
		_, _ = io.Copy(w, stream)
	case stream != nil:
		h1.Header(w, "Transfer-Encoding", "chunked")
		_, _ = w.WriteString("\r\n")
		cw := httputil.NewChunkedWriter(w)
		_, _ = io.Copy(cw, stream)
		_ = cw.Close()
		_, _ = w.WriteString("\r\n")
	default:
		if req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
			h1.Header(w, "Content-Length", "0")
		}
		_, _ = w.WriteString("\r\n")
	}
}
