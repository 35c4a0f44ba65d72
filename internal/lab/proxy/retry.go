package proxy

import (
	"fmt"
	"strings"
	"time"
)

// RetryPolicy is the route's retry_policy (config.route.v3.RetryPolicy),
// with Envoy's semantics (source/common/router/retry_state_impl.cc,
// router.cc; docs configuration/http/http_filters/router_filter):
//
//   - retry_on "5xx": any 5xx response, and any reset (connection failure,
//     termination, per-try timeout); "gateway-error": 502, 503, 504, and
//     any reset; "reset": any reset; "connect-failure": connection
//     failures and timeouts only; "retriable-4xx": 409; "refused-stream";
//     "retriable-status-codes": RetriableStatusCodes; "envoy-ratelimited":
//     responses carrying x-envoy-ratelimited, which are otherwise never
//     retried whatever their status; "reset-before-request": a reset
//     before any request byte went upstream. A circuit-breaker overflow is
//     never retried.
//   - A retry is refused when no retries remain (stat
//     upstream_rq_retry_limit_exceeded, flag URX) or when the max_retries
//     breaker is full (upstream_rq_retry_overflow, flag UO); the client
//     then gets the last upstream response, or a 503 local reply after a
//     reset.
//   - Back-off: retry n waits a uniform random whole number of ms in
//     [0, B·2^(n-1)), the interval capped at max_interval (default 10·B),
//     with B = base_interval (default 25 ms): 0-24, 0-49, 0-99, 0-199,
//     0-249 ms (JitteredExponentialBackOffStrategy; the docs' [0,
//     (2^N-1)·B) disagrees with the code, which wins).
type RetryPolicy struct {
	// RetryOn is retry_on, comma separated (see above). Required.
	RetryOn string `json:"retry_on"`
	// NumRetries is num_retries; nil means 1 (Envoy's default when a
	// policy is present).
	NumRetries *uint32 `json:"num_retries,omitempty"`
	// PerTryTimeout is per_try_timeout, each attempt's own timeout
	// (including the first and the time spent waiting for a connection);
	// 0 means none, and it is ignored when >= a non-zero route timeout.
	PerTryTimeout Duration `json:"per_try_timeout,omitempty"`
	// RetriableStatusCodes is retriable_status_codes, used by
	// "retriable-status-codes".
	RetriableStatusCodes []int `json:"retriable_status_codes,omitempty"`
	// RetryBackOff is retry_back_off; nil means base 25 ms (runtime
	// upstream.base_retry_backoff_ms), max 10 × base.
	RetryBackOff *RetryBackOff `json:"retry_back_off,omitempty"`
}

// RetryBackOff is config.route.v3.RetryPolicy.RetryBackOff.
type RetryBackOff struct {
	// BaseInterval > 0 (Envoy rounds values below 1 ms up to 1 ms).
	BaseInterval Duration `json:"base_interval"`
	// MaxInterval >= BaseInterval; 0 means 10 × BaseInterval.
	MaxInterval Duration `json:"max_interval,omitempty"`
}

// DefaultRetryBaseInterval is the back-off base without retry_back_off.
const DefaultRetryBaseInterval = 25 * time.Millisecond

type retryOn uint16

const (
	retryOn5xx retryOn = 1 << iota
	retryOnGatewayError
	retryOnConnectFailure
	retryOnRetriable4xx
	retryOnRefusedStream
	retryOnRetriableStatusCodes
	retryOnEnvoyRateLimited
	retryOnReset
	retryOnResetBeforeRequest
)

var retryOnNames = map[string]retryOn{
	"5xx": retryOn5xx, "gateway-error": retryOnGatewayError, "connect-failure": retryOnConnectFailure,
	"retriable-4xx": retryOnRetriable4xx, "refused-stream": retryOnRefusedStream,
	"retriable-status-codes": retryOnRetriableStatusCodes, "envoy-ratelimited": retryOnEnvoyRateLimited,
	"reset": retryOnReset, "reset-before-request": retryOnResetBeforeRequest,
}

// parseRetryOn is RetryStateImpl::parseRetryOn; unlike Envoy's header path
// it refuses unknown names (a config error is better found early).
func parseRetryOn(s string) (retryOn, error) {
	var r retryOn
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, ok := retryOnNames[f]
		if !ok {
			return 0, fmt.Errorf("retry policy: unknown retry_on %q (want 5xx, gateway-error, reset, reset-before-request, connect-failure, retriable-4xx, refused-stream, retriable-status-codes, envoy-ratelimited)", f)
		}
		r |= v
	}
	if r == 0 {
		return 0, fmt.Errorf("retry policy: retry_on is empty")
	}
	return r, nil
}

// Validate checks retry_on, the status codes and the back-off intervals.
func (p *RetryPolicy) Validate() error {
	if _, err := parseRetryOn(p.RetryOn); err != nil {
		return err
	}
	for _, c := range p.RetriableStatusCodes {
		if c < 100 || c > 599 {
			return fmt.Errorf("retry policy: retriable_status_codes: %d is not an HTTP status", c)
		}
	}
	if p.PerTryTimeout < 0 {
		return fmt.Errorf("retry policy: per_try_timeout %v is negative", p.PerTryTimeout)
	}
	if b := p.RetryBackOff; b != nil {
		if b.BaseInterval <= 0 {
			return fmt.Errorf("retry policy: retry_back_off.base_interval must be > 0")
		}
		if b.MaxInterval != 0 && b.MaxInterval < b.BaseInterval {
			return fmt.Errorf("retry policy: retry_back_off.max_interval %v is below base_interval %v", b.MaxInterval, b.BaseInterval)
		}
	}
	return nil
}

// compiledRetry is a validated RetryPolicy.
type compiledRetry struct {
	on         retryOn
	numRetries uint32
	perTry     time.Duration
	codes      []int
	baseMs     uint64
	maxMs      uint64
}

func compileRetry(p *RetryPolicy) (*compiledRetry, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	on, _ := parseRetryOn(p.RetryOn)
	c := &compiledRetry{on: on, numRetries: 1, perTry: time.Duration(p.PerTryTimeout), codes: p.RetriableStatusCodes, baseMs: uint64(DefaultRetryBaseInterval / time.Millisecond)}
	if p.NumRetries != nil {
		c.numRetries = *p.NumRetries
	}
	if b := p.RetryBackOff; b != nil {
		c.baseMs = max(uint64(time.Duration(b.BaseInterval)/time.Millisecond), 1)
		if b.MaxInterval > 0 {
			c.maxMs = max(uint64(time.Duration(b.MaxInterval)/time.Millisecond), c.baseMs)
		}
	}
	if c.maxMs == 0 {
		c.maxMs = 10 * c.baseMs
	}
	return c, nil
}

// backoff is JitteredExponentialBackOffStrategy
// (source/common/common/backoff_strategy.cc): nextBackOffMs returns
// random() % next_interval, then doubles next_interval while it is below
// max/2, else sets it to max.
type backoff struct {
	next, max, doublingLimit uint64
}

func newBackoff(baseMs, maxMs uint64) backoff {
	return backoff{next: baseMs, max: maxMs, doublingLimit: maxMs / 2}
}

func (b *backoff) nextMs(random uint64) uint64 {
	cur := b.next
	if b.next < b.doublingLimit {
		b.next *= 2
	} else {
		b.next = b.max
	}
	return random % cur
}

// resetReason is Http::StreamResetReason, as the router sees it.
type resetReason uint8

const (
	resetNone resetReason = iota
	resetLocalConnectionFailure
	resetRemoteConnectionFailure
	resetConnectionTimeout
	resetConnectionTermination
	resetLocalReset
	resetOverflow
	resetRemoteReset
	resetProtocolError
)

// String is Http::Utility::resetReasonToString.
func (r resetReason) String() string {
	switch r {
	case resetLocalConnectionFailure:
		return "local connection failure"
	case resetRemoteConnectionFailure:
		return "remote connection failure"
	case resetConnectionTimeout:
		return "connection timeout"
	case resetConnectionTermination:
		return "connection termination"
	case resetLocalReset:
		return "local reset"
	case resetOverflow:
		return "overflow"
	case resetRemoteReset:
		return "remote reset"
	case resetProtocolError:
		return "protocol error"
	}
	return ""
}

// flag is Filter::streamResetReasonToResponseFlag.
func (r resetReason) flag() respFlag {
	switch r {
	case resetLocalConnectionFailure, resetRemoteConnectionFailure, resetConnectionTimeout:
		return flagUF
	case resetConnectionTermination:
		return flagUC
	case resetLocalReset:
		return flagLR
	case resetOverflow:
		return flagUO
	case resetRemoteReset:
		return flagUR
	case resetProtocolError:
		return flagUPE
	}
	return flagNone
}

func (r resetReason) connectFailure() bool {
	return r == resetLocalConnectionFailure || r == resetRemoteConnectionFailure || r == resetConnectionTimeout
}

// retryStatus is RetryStatus.
type retryStatus uint8

const (
	retryNo retryStatus = iota
	retryYes
	retryNoLimitExceeded
	retryNoOverflow
)

// retryState is one request's RetryStateImpl.
type retryState struct {
	pol       *compiledRetry
	remaining uint32
	backoff   backoff
	armed     bool // a retry holds the max_retries resource (callback_ set)
	cl        *cluster
}

func newRetryState(pol *compiledRetry, cl *cluster) *retryState {
	return &retryState{pol: pol, remaining: pol.numRetries, backoff: newBackoff(pol.baseMs, pol.maxMs), cl: cl}
}

// wouldRetryFromHeaders is RetryStateImpl::wouldRetryFromHeaders.
func (rs *retryState) wouldRetryFromHeaders(code int, rateLimited bool) bool {
	on := rs.pol.on
	if rateLimited {
		return on&retryOnEnvoyRateLimited != 0
	}
	if on&retryOn5xx != 0 && code >= 500 && code <= 599 {
		return true
	}
	if on&retryOnGatewayError != 0 && (code == 502 || code == 503 || code == 504) {
		return true
	}
	if on&retryOnRetriable4xx != 0 && code == 409 {
		return true
	}
	if on&retryOnRetriableStatusCodes != 0 {
		for _, c := range rs.pol.codes {
			if c == code {
				return true
			}
		}
	}
	return false
}

// wouldRetryFromReset is RetryStateImpl::wouldRetryFromReset (HTTP/1 only,
// no HTTP/3 branches).
func (rs *retryState) wouldRetryFromReset(r resetReason, requestStarted bool) bool {
	on := rs.pol.on
	if r == resetOverflow {
		return false
	}
	if r.connectFailure() && on&retryOnConnectFailure != 0 {
		return true
	}
	if on&retryOnResetBeforeRequest != 0 && !requestStarted {
		return true
	}
	if on&(retryOnReset|retryOn5xx|retryOnGatewayError) != 0 {
		return true
	}
	return false
}

// shouldRetry is RetryStateImpl::shouldRetry: it counts
// upstream_rq_retry_success when a retry was armed and this attempt is not
// retried, releases the armed max_retries resource, and checks the
// remaining retries then the breaker.
func (rs *retryState) shouldRetry(would bool) retryStatus {
	cl := rs.cl
	if rs.armed && !would {
		cl.st.retrySuccess.inc()
	}
	rs.release()
	if !would {
		return retryNo
	}
	if rs.remaining == 0 {
		cl.st.retryLimitExceeded.inc()
		return retryNoLimitExceeded
	}
	rs.remaining--
	if !cl.tryAcquireRetry() {
		cl.st.retryOverflow.inc()
		return retryNoOverflow
	}
	rs.armed = true
	cl.st.retry.inc()
	return retryYes
}

// release gives back the max_retries resource (resetRetry).
func (rs *retryState) release() {
	if rs.armed {
		rs.armed = false
		rs.cl.releaseRetry()
	}
}
