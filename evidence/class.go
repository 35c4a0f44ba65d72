package evidence

import (
	"strings"

	"github.com/rlbench/rlbench/collect/envoy"
)

// Class is the class of a client outcome: who answered the request, as far
// as the response tells. It is rlbench's one response classification (see
// Classify); scenario expectations and reports name classes by String.
type Class uint8

// Response classes.
const (
	// ClassNoResponse is code 0: no response arrived; indeterminate, the
	// request may have reached the backend.
	ClassNoResponse Class = iota
	// ClassAdmitted is a 2xx.
	ClassAdmitted
	// ClassLocal429 is Envoy's local rate limit filter's 429 (body local_rate_limited).
	ClassLocal429
	// ClassGlobal429 is Envoy's rate limit filter's OVER_LIMIT 429 (x-envoy-ratelimited: true).
	ClassGlobal429
	// ClassRLSError is the rate limit filter's reply when the RLS call
	// failed under failure_mode_deny: status_on_error (500 by default), empty body.
	ClassRLSError
	// ClassOther4xx is any other 4xx (a 429 without either mark came from the backend).
	ClassOther4xx
	// ClassOther5xx is any other 5xx.
	ClassOther5xx
	// ClassOther is 1xx and 3xx.
	ClassOther
	// NumClasses is the number of classes.
	NumClasses
)

var classNames = [NumClasses]string{"no_response", "admitted", "local_429", "global_429", "rls_error", "other_4xx", "other_5xx", "other"}

// String returns the class name used in expectations and reports:
// no_response, admitted, local_429, global_429, rls_error, other_4xx,
// other_5xx, other.
func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return "other"
}

// ParseClass returns the class named s (a String value).
func ParseClass(s string) (Class, bool) {
	for i, n := range classNames {
		if n == s {
			return Class(i), true
		}
	}
	return 0, false
}

// Marks are the parts of a response Classify looks at.
type Marks struct {
	// Code is the HTTP status, 0 when no response arrived.
	Code int
	// Body is the start of the response body as captured (Request.Body).
	Body string
	// BytesIn is the body length.
	BytesIn uint64
	// RateLimited is the x-envoy-ratelimited header, UpstreamServiceTime
	// x-envoy-upstream-service-time, ContentType content-type ("" when absent
	// or not captured).
	RateLimited, UpstreamServiceTime, ContentType string
}

// Classify returns the class of a response. The marks follow Envoy:
//   - the local_ratelimit filter answers 429 with the body
//     "local_rate_limited" (source/extensions/filters/http/local_ratelimit/
//     local_ratelimit.cc); when no body was captured, a 429 of 18 bytes
//     (len("local_rate_limited")) with content-type text/plain is that reply too;
//   - the ratelimit filter answers OVER_LIMIT with 429 and
//     x-envoy-ratelimited: true (source/extensions/filters/http/ratelimit/ratelimit.cc);
//   - an RLS error under failure_mode_deny gets status_on_error (default
//     500) with an empty body and no x-envoy-upstream-service-time (the
//     router never ran).
func (m Marks) Classify() Class {
	switch {
	case m.Code == 0:
		return ClassNoResponse
	case m.Code >= 200 && m.Code < 300:
		return ClassAdmitted
	case m.Code == 429 && strings.HasPrefix(m.Body, envoy.LocalRateLimitedBody):
		return ClassLocal429
	case m.Code == 429 && strings.EqualFold(m.RateLimited, "true"):
		return ClassGlobal429
	case m.Code == 429 && m.Body == "" && m.BytesIn == uint64(len(envoy.LocalRateLimitedBody)) &&
		strings.HasPrefix(strings.ToLower(m.ContentType), "text/plain"):
		return ClassLocal429
	case m.Code == 500 && m.BytesIn == 0 && m.UpstreamServiceTime == "":
		return ClassRLSError
	case m.Code >= 400 && m.Code < 500:
		return ClassOther4xx
	case m.Code >= 500:
		return ClassOther5xx
	}
	return ClassOther
}

// Classify returns the class of the request's outcome (Marks.Classify).
func (r *Request) Classify() Class {
	return Marks{Code: r.Code, Body: r.Body, BytesIn: r.BytesIn, RateLimited: r.Headers["x-envoy-ratelimited"],
		UpstreamServiceTime: r.Headers["x-envoy-upstream-service-time"], ContentType: r.Headers["content-type"]}.Classify()
}

// ProxyRejected reports whether the class is a response a proxy produced
// without forwarding the request: such a request must have no receipt.
func (c Class) ProxyRejected() bool {
	return c == ClassLocal429 || c == ClassGlobal429 || c == ClassRLSError
}
