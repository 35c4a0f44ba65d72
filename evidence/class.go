package evidence

import (
	"fmt"
	"strings"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// Class is the class of a client outcome: who answered the request, as far
// as the response tells. It is rlbench's one response classification (see
// Marks.Classify, Classifier and Class.Received); scenario expectations and
// reports name classes by String.
type Class uint8

// Response classes. The values are in-memory only (files name classes by
// String); classes added later come after ClassOther.
const (
	// ClassNoResponse is code 0: no response arrived; indeterminate, the
	// request may have reached the backend.
	ClassNoResponse Class = iota
	// ClassAdmitted is a 2xx.
	ClassAdmitted
	// ClassLocal429 is the rejection of a limiter in the proxy itself:
	// Envoy's local rate limit filter's 429 (body local_rate_limited), or
	// what a ClassRule names so (nginx limit_req_status, a gateway's 429).
	ClassLocal429
	// ClassGlobal429 is Envoy's rate limit filter's OVER_LIMIT 429 (x-envoy-ratelimited: true).
	ClassGlobal429
	// ClassRLSError is the rate limit filter's reply when the RLS call
	// failed under failure_mode_deny: status_on_error (500 by default), empty body.
	ClassRLSError
	// ClassOther4xx is any other 4xx whose origin the response does not
	// tell (no upstream mark, no receipt): the proxy's own reply, or unknown.
	ClassOther4xx
	// ClassOther5xx is any other 5xx of unknown origin (e.g. Envoy's 503
	// upstream connect failure, 504 upstream timeout).
	ClassOther5xx
	// ClassOther is 1xx and 3xx.
	ClassOther
	// ClassBackend4xx is a 4xx other than 429 that came from the backend:
	// it carries x-envoy-upstream-service-time or the backend's own body, or
	// the backend has its receipt. The request passed every limiter.
	ClassBackend4xx
	// ClassBackend429 is a 429 the backend itself answered (same marks): a
	// self-limiting backend, not the proxy's limiter.
	ClassBackend429
	// ClassBackend5xx is a 5xx that came from the backend (same marks).
	ClassBackend5xx
	// ClassCircuitBreaker is Envoy's circuit-breaker overflow reply: 503 with
	// x-envoy-overloaded: true (source/common/router/router.cc, flag UO). The
	// router runs after the rate limit filters: the request passed them.
	ClassCircuitBreaker
	// NumClasses is the number of classes.
	NumClasses
)

var classNames = [NumClasses]string{"no_response", "admitted", "local_429", "global_429", "rls_error", "other_4xx", "other_5xx", "other",
	"backend_4xx", "backend_429", "backend_5xx", "circuit_breaker"}

// String returns the class name used in expectations and reports:
// no_response, admitted, local_429, global_429, rls_error, other_4xx,
// other_5xx, other, backend_4xx, backend_429, backend_5xx, circuit_breaker.
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

// ClassNames lists every class name, in Class order.
func ClassNames() []string { return append([]string(nil), classNames[:]...) }

// BackendBodyPrefix starts the body of every response of rlbench's backend
// (internal/lab/backend: {"id":<id or null>}): a response with it came from
// the backend, whatever proxy stands in front.
const BackendBodyPrefix = `{"id":`

// Marks are the parts of a response Classify looks at.
type Marks struct {
	// Code is the HTTP status, 0 when no response arrived.
	Code int
	// Body is the start of the response body as captured (Request.Body).
	Body string
	// BytesIn is the body length.
	BytesIn uint64
	// RateLimited is the x-envoy-ratelimited header, UpstreamServiceTime
	// x-envoy-upstream-service-time, ContentType content-type, Overloaded
	// x-envoy-overloaded ("" when absent or not captured).
	RateLimited, UpstreamServiceTime, ContentType, Overloaded string
	// HasUpstreamServiceTime tells an empty x-envoy-upstream-service-time
	// from an absent one (Envoy always gives it a value; the zero value of
	// Marks treats "" as absent).
	HasUpstreamServiceTime bool
}

// fromUpstream reports whether the response carries a mark of the
// upstream: x-envoy-upstream-service-time (Envoy's router adds it to
// upstream responses only, source/common/router/router.cc) or the rlbench
// backend's own body.
func (m Marks) fromUpstream() bool {
	return m.UpstreamServiceTime != "" || m.HasUpstreamServiceTime || strings.HasPrefix(m.Body, BackendBodyPrefix)
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
//     router never ran);
//   - a circuit-breaker overflow is 503 with x-envoy-overloaded: true
//     (source/common/router/router.cc);
//   - any other response that carries x-envoy-upstream-service-time or the
//     backend's own body (BackendBodyPrefix) came from the backend:
//     backend_429, backend_4xx, backend_5xx;
//   - the rest is other_4xx, other_5xx or other (origin unknown; a receipt
//     later proves it came from the backend, see Received).
func (m Marks) Classify() Class {
	switch {
	case m.Code == 0:
		return ClassNoResponse
	case m.Code >= 200 && m.Code < 300:
		return ClassAdmitted
	case m.Code == 429 && strings.HasPrefix(m.Body, envoyrec.LocalRateLimitedBody):
		return ClassLocal429
	case m.Code == 429 && strings.EqualFold(m.RateLimited, "true"):
		return ClassGlobal429
	case m.Code == 429 && m.Body == "" && m.BytesIn == uint64(len(envoyrec.LocalRateLimitedBody)) &&
		strings.HasPrefix(strings.ToLower(m.ContentType), "text/plain"):
		return ClassLocal429
	case m.Code == 500 && m.BytesIn == 0 && !m.fromUpstream():
		return ClassRLSError
	case m.Code == 503 && strings.EqualFold(m.Overloaded, "true"):
		return ClassCircuitBreaker
	case m.Code >= 400 && m.fromUpstream():
		return backendClass(m.Code)
	case m.Code >= 400 && m.Code < 500:
		return ClassOther4xx
	case m.Code >= 500:
		return ClassOther5xx
	}
	return ClassOther
}

func backendClass(code int) Class {
	switch {
	case code == 429:
		return ClassBackend429
	case code >= 400 && code < 500:
		return ClassBackend4xx
	case code >= 500:
		return ClassBackend5xx
	}
	return ClassOther
}

// Received returns the class of a request whose ID the backend has a
// receipt of: a 4xx or 5xx of unknown origin (other_4xx, other_5xx) came
// from the backend (backend_4xx, backend_429, backend_5xx). Other classes
// are unchanged (a limiter's rejection with a receipt stays what the client
// saw: the receipts check reports it as leaked).
func (c Class) Received(code int) Class {
	if c == ClassOther4xx || c == ClassOther5xx {
		return backendClass(code)
	}
	return c
}

// Classify returns the class of the request's outcome (Marks.Classify).
func (r *Request) Classify() Class { return r.Marks().Classify() }

// Marks returns the parts of the request's response that Classify reads.
func (r *Request) Marks() Marks {
	ust, hasUST := r.Headers["x-envoy-upstream-service-time"]
	return Marks{Code: r.Code, Body: r.Body, BytesIn: r.BytesIn, RateLimited: r.Headers["x-envoy-ratelimited"],
		UpstreamServiceTime: ust, HasUpstreamServiceTime: hasUST, ContentType: r.Headers["content-type"],
		Overloaded: r.Headers["x-envoy-overloaded"]}
}

// ProxyRejected reports whether the class is a response a proxy produced
// without forwarding the request: such a request must have no receipt.
func (c Class) ProxyRejected() bool {
	return c == ClassLocal429 || c == ClassGlobal429 || c == ClassRLSError
}

// FromBackend reports whether the class is a response of the backend:
// admitted (2xx), backend_4xx, backend_429 or backend_5xx. Such a request
// passed every limiter and must have a receipt.
func (c Class) FromBackend() bool {
	return c == ClassAdmitted || c == ClassBackend4xx || c == ClassBackend429 || c == ClassBackend5xx
}

// Passed reports whether a request of this class passed every rate
// limiter: a response of the backend (FromBackend), or a circuit-breaker
// 503 (the router's overflow comes after Envoy's rate limit filters).
func (c Class) Passed() bool { return c.FromBackend() || c == ClassCircuitBreaker }

// ClassRule is one classification rule of scenario.json (Scenario.Classify)
// or a plan: a response of one of Targets whose status lies in Status, that
// carries Header (with Value in it, when given) and whose captured body
// contains Body, is of class Class. Rules are tried in order before the
// built-in marks (Marks.Classify); the first that matches wins. Headers are
// matched among the captured ones (attack.Options.CaptureHeaders), bodies
// within the captured prefix (Request.Body). Example: nginx's limit_req
// rejection, `limit_req_status 503` with nginx's own error page:
//
//	{"status": 503, "body": "<center>nginx</center>", "class": "local_429"}
type ClassRule struct {
	// Targets are the attack targets the rule applies to; empty: every target.
	Targets []string `json:"targets,omitempty"`
	// Status is the status code or range ("500..599") the rule applies to.
	Status Range `json:"status"`
	// Header is a response header (case-insensitive) that must be present.
	Header string `json:"header,omitempty"`
	// Value, with Header, must occur in the header's value (case-insensitive).
	Value string `json:"value,omitempty"`
	// Body must occur in the captured body prefix.
	Body string `json:"body,omitempty"`
	// Class is the class name (a Class String) the rule gives.
	Class string `json:"class"`
}

// Validate checks the rule: a known class, a status range within
// 100..999, and Value only with Header.
func (r *ClassRule) Validate() error {
	if _, ok := ParseClass(r.Class); !ok || r.Class == ClassNoResponse.String() {
		return fmt.Errorf("class %q: want one of %s (not no_response)", r.Class, strings.Join(classNames[1:], ", "))
	}
	if r.Status.Min < 100 || r.Status.Max > 999 || r.Status.Min > r.Status.Max {
		return fmt.Errorf("status %s: want a code or range within 100..999", r.Status)
	}
	if r.Value != "" && r.Header == "" {
		return fmt.Errorf("value %q needs a header", r.Value)
	}
	return nil
}

// Classifier classifies responses with a scenario's rules, then the
// built-in marks. The zero value and nil have no rules.
type Classifier struct {
	rules   []ClassRule
	classes []Class
	headers []string // lower-case header names the rules read
}

// NewClassifier returns the classifier of rules (in order); an invalid rule
// is an error naming its index.
func NewClassifier(rules []ClassRule) (*Classifier, error) {
	c := &Classifier{}
	for i := range rules {
		r := rules[i]
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("classify[%d]: %w", i, err)
		}
		r.Header = strings.ToLower(r.Header)
		r.Value = strings.ToLower(r.Value)
		cl, _ := ParseClass(r.Class)
		c.rules = append(c.rules, r)
		c.classes = append(c.classes, cl)
		if r.Header != "" && !containsString(c.headers, r.Header) {
			c.headers = append(c.headers, r.Header)
		}
	}
	return c, nil
}

// Headers lists the (lower-case) response headers the rules read.
func (c *Classifier) Headers() []string {
	if c == nil {
		return nil
	}
	return c.headers
}

// HasRules reports whether c has any rule.
func (c *Classifier) HasRules() bool { return c != nil && len(c.rules) > 0 }

// Classify returns the class of a response to target: the first matching
// rule's, else m.Classify(). header returns a captured response header
// (lower-case name) and whether it was captured; it may be nil when c has
// no rule reading headers.
func (c *Classifier) Classify(target string, m Marks, header func(string) (string, bool)) Class {
	if c != nil && m.Code != 0 {
		for i := range c.rules {
			r := &c.rules[i]
			if !r.Status.Contains(m.Code) || (len(r.Targets) > 0 && !containsString(r.Targets, target)) {
				continue
			}
			if r.Body != "" && !strings.Contains(m.Body, r.Body) {
				continue
			}
			if r.Header != "" {
				v, ok := "", false
				if header != nil {
					v, ok = header(r.Header)
				}
				if !ok || (r.Value != "" && !strings.Contains(strings.ToLower(v), r.Value)) {
					continue
				}
			}
			return c.classes[i]
		}
	}
	return m.Classify()
}

// ClassifyRequest is Classify of a whole request line.
func (c *Classifier) ClassifyRequest(r *Request) Class {
	return c.Classify(r.Target, r.Marks(), func(name string) (string, bool) {
		v, ok := r.Headers[name]
		return v, ok
	})
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
