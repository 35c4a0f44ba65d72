package evidence

import (
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/model"
)

// Request is one line of requests.jsonl: the outcome of one fired ID as the
// client (attack.Run) saw it. Code 0 means no response was received: with
// NotSent the request never left the client (dial error); otherwise (reset,
// timeout) it is indeterminate, since it may have reached the backend.
type Request struct {
	// ID is the request's rlbench ID, sent in the X-Rlbench-Id header; unique
	// within a scenario.
	ID string `json:"id"`
	// Target is the attack target (proxy) name the request was sent to.
	Target string `json:"target"`
	// URL is the URL as sent.
	URL string `json:"url"`
	// Method is the HTTP method.
	Method string `json:"method"`
	// SentNs is when the client began writing the request to an open
	// connection, unix ns (for a NotSent request: when it tried to; before
	// issue 14: when the request was handed to net/http's transport).
	SentNs int64 `json:"sent_ns"`
	// LatencyNs runs from SentNs until the body was read (or the error), ns.
	LatencyNs int64 `json:"latency_ns"`
	// Code is the HTTP status, 0 when no response arrived: with NotSent the
	// request never left the client; otherwise (reset, timeout after the
	// request was written) it is indeterminate, it may have reached the backend.
	Code int `json:"code"`
	// Error is the transport error, or the status text ("429 Too Many
	// Requests") for codes outside 200..399.
	Error string `json:"error,omitempty"`
	// BytesIn is the response body length in bytes.
	BytesIn uint64 `json:"bytes_in"`
	// Headers holds the captured response headers, lower-case names; several
	// values are joined with ", ".
	Headers map[string]string `json:"headers,omitempty"`
	// Body holds the first 64 bytes of the response body.
	Body string `json:"body,omitempty"`
	// Phase names the attack (plan step) that sent the request, if any.
	Phase string `json:"phase,omitempty"`
	// IntendedNs is when a paced attack's schedule meant the request to be
	// sent, unix ns (0 for unpaced attacks): SentNs-IntendedNs is its pacing
	// error and EndNs()-IntendedNs its latency from the intended send time
	// (coordinated omission). Added with issue 14; absent in older files.
	IntendedNs int64 `json:"intended_ns,omitempty"`
	// NotSent is true when the request never left the client: the connection
	// could not be opened (connection refused, "too many open files", DNS,
	// TLS handshake, dial timeout) or not one byte of it was written. Code is
	// 0 and Error says why; unlike a request without a response, it cannot
	// have reached the backend, and an attack with any is incomplete.
	// Added with issue 10; absent (false) in older files.
	NotSent bool `json:"not_sent,omitempty"`
	// Flow names the flow of a multi-flow attack that sent the request
	// (attack.Flow.Name; issue 11): within one attack, flows run at the
	// same time with their own IDs, rate, path and headers. Empty for an
	// attack of one unnamed flow, and in older files.
	Flow string `json:"flow,omitempty"`
	// Proto is the HTTP version the request was sent (or, if NotSent,
	// would have been sent) with, as in net/http's Request.Proto:
	// "HTTP/1.1", or "HTTP/2.0" for HTTP/2 over TLS (ALPN h2) or cleartext
	// with prior knowledge (h2c). Absent in older files, which are all
	// HTTP/1.1.
	Proto string `json:"proto,omitempty"`
	// Conn names the client connection that carried the request:
	// "<local host:port>/<n>", the client's local address and the ordinal
	// (1-based, within the attack) of the connection among those the attack
	// opened, so that a later connection reusing the port is another conn.
	// Requests of one keep-alive connection share it; empty when the
	// request never got a connection or the recorder predates the field.
	Conn string `json:"conn,omitempty"`
}

// EndNs is the unix ns at which the client stopped waiting for the request.
func (r *Request) EndNs() int64 { return r.SentNs + r.LatencyNs }

// Receipt is one line of receipts.jsonl: a request the backend really received.
type Receipt struct {
	// ID is the X-Rlbench-Id request header; nil (JSON null) when the
	// request carried none.
	ID *string `json:"id"`
	// RecvNs is when the backend read the request, unix ns.
	RecvNs int64 `json:"recv_ns"`
	// RecvTime is RecvNs in RFC 3339 with nanoseconds (UTC).
	RecvTime string `json:"recv_time"`
	// Method is the request's HTTP method.
	Method string `json:"method"`
	// Path is the request path, without the query.
	Path string `json:"path"`
	// Query is the raw query string, if any, with its credentials redacted
	// (RedactQuery: "token=xxxxx").
	Query string `json:"query,omitempty"`
	// Remote is the peer address (the proxy's upstream connection).
	Remote string `json:"remote"`
	// Headers holds the recorded request headers, lower-case names (by
	// default x-envoy-attempt-count, x-forwarded-for, x-request-id); a
	// credential header's value is redacted (RedactHeader).
	Headers map[string]string `json:"headers,omitempty"`
	// Endpoint names the backend endpoint (listener) that received the
	// request, "backend-0", "backend-1", ...; empty in receipts of older
	// backends, which had one endpoint.
	Endpoint string `json:"endpoint,omitempty"`
	// Status is the HTTP status the backend answered, 0 when it answered
	// none (Fault "reset" or "refused": the connection was closed) and in
	// receipts of older backends (which always answered their one status).
	Status int `json:"status,omitempty"`
	// Fault names the injected backend fault that shaped the answer, one
	// of the ReceiptFault constants; empty when none did.
	Fault string `json:"fault,omitempty"`
	// DelayNs is the injected latency before the answer, ns.
	DelayNs int64 `json:"delay_ns,omitempty"`
	// Replica names the backend process that recorded the receipt
	// (`rlbench backend --replica`, by default "<host name>-<pid>"; issue
	// 15), so that the receipts of several backend replicas merged into
	// one scenario stay apart (evidence/merge.Merge). Empty for the lab's
	// backend and in older receipts.
	Replica string `json:"replica,omitempty"`
}

// Receipt.Fault values: the injected backend fault behind an answer.
const (
	// ReceiptFaultError: the error status instead of the backend's status.
	ReceiptFaultError = "error"
	// ReceiptFaultOverload: 503 above the endpoint's concurrency cap.
	ReceiptFaultOverload = "overload"
	// ReceiptFaultRefused: the connection closed above the cap, no answer.
	ReceiptFaultRefused = "refused"
	// ReceiptFaultReset: the connection reset after reading the request.
	ReceiptFaultReset = "reset"
)

// Fault actions of Fault.Action.
const (
	ActionStop    = "stop"
	ActionStart   = "start"
	ActionRestart = "restart"
	ActionExec    = "exec"
	// ActionSet installs backend faults: it opens a fault window on its
	// target, like a stop.
	ActionSet = "set"
	// ActionClear removes them: it closes the window the last set of the
	// same target opened, like a start.
	ActionClear = "clear"
)

// Fault is one line of faults.jsonl: a timed fault action (stop, start or
// restart of a component, a shell command, or set/clear of backend faults)
// with its begin and end. A set opens a fault window on its target that the
// next clear of the same target closes, like stop and start.
type Fault struct {
	// Name is the plan step's name.
	Name string `json:"name"`
	// Action is one of the Action constants.
	Action string `json:"action"`
	// Target is the component acted on: "rls", "redis", or a name of the plan.
	Target string `json:"target"`
	// BeginNs is when the action began, unix ns.
	BeginNs int64 `json:"begin_ns"`
	// EndNs is when the action ended (the component is down, or back), unix ns.
	EndNs int64 `json:"end_ns"`
	// OK is true when the action took effect.
	OK bool `json:"ok"`
	// Error says why the action did not take effect.
	Error string `json:"error,omitempty"`
	// Phase names the attack phase this fault precedes, if any.
	Phase string `json:"phase,omitempty"`
	// Detail says what a set installed on the backend endpoints, as JSON
	// of the backend's fault spec (latency, error status and probability,
	// concurrency cap, reset probability); empty for other actions.
	Detail string `json:"detail,omitempty"`
}

// Decision codes of Decision.Code: envoy.service.ratelimit.v3
// RateLimitResponse.Code (api/envoy/service/ratelimit/v3/rls.proto), plus
// ERROR for a call that failed and UNKNOWN for a decision whose code the
// RLS log did not tell.
const (
	CodeOK        = "OK"
	CodeOverLimit = "OVER_LIMIT"
	CodeError     = "ERROR"
	CodeUnknown   = "UNKNOWN"
)

// Decision is one line of rls/decisions.jsonl: one descriptor decision of a
// rate limit service, written by the lab RLS or parsed from the real
// envoyproxy/ratelimit's debug log (collect/rls.Log.EvidenceDecisions).
type Decision struct {
	// TimeNs is when the decision was made (or logged), unix ns; logrus text
	// logs have whole seconds.
	TimeNs int64 `json:"time_ns"`
	// RecvNs is when the lab RLS (internal/lab/rls) received the call, unix
	// ns, on the same clock as TimeNs: TimeNs - RecvNs is the time the call
	// waited inside the RLS (its configured delay, the counter lock, the
	// host's scheduling). 0 when not recorded: the real envoyproxy/ratelimit
	// logs no receive time, and decisions written before this field.
	RecvNs int64 `json:"recv_ns,omitempty"`
	// Domain is the request's rate limit domain.
	Domain string `json:"domain"`
	// Descriptor is the descriptor decided, its entries in order.
	Descriptor []descriptor.DescriptorEntry `json:"descriptor"`
	// Key is the counter's cache key, CacheKey(domain, descriptor, window
	// start) (envoyproxy/ratelimit src/limiter/cache_key.go); "" when no limit applied.
	Key string `json:"key,omitempty"`
	// WindowStart is the fixed window's start, unix s.
	WindowStart int64 `json:"window_start,omitempty"`
	// Current is the counter after this hit (Redis INCRBY result); 0 when no
	// counter was incremented (local-cache hit, no limit).
	Current uint64 `json:"current,omitempty"`
	// Limit is the rule's requests_per_unit.
	Limit uint32 `json:"limit,omitempty"`
	// Unit is the rule's unit: SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR.
	Unit string `json:"unit,omitempty"`
	// Code is one of the Code constants.
	Code string `json:"code"`
	// Error is the failure of an ERROR decision.
	Error string `json:"error,omitempty"`
	// Shadow is true when the rule is in shadow_mode and the hit was over
	// its limit: the code was forced to OK (envoyproxy/ratelimit
	// src/limiter/base_limiter.go: "Limit with key %s, is in shadow_mode").
	Shadow bool `json:"shadow,omitempty"`
	// NoLimit is true when the descriptor matched no rule (or an unknown
	// domain): OK without a counter ("descriptor does not match any limit,
	// no limits applied", src/service/ratelimit.go). Unlimited marks an
	// `unlimited: true` rule. Decisions written before these fields have an
	// empty Key and Limit 0 in both cases.
	NoLimit   bool `json:"no_limit,omitempty"`
	Unlimited bool `json:"unlimited,omitempty"`
	// Call numbers the RLS call (from 1) when it carried several
	// descriptors: its decisions, one per descriptor, share it. 0: the
	// decision is a call of its own (or the log does not tell).
	Call uint64 `json:"call,omitempty"`
}

// Calls counts the RLS calls of decisions: those with a Call number once
// per number, the others one each.
func Calls(ds []Decision) int {
	n := 0
	seen := map[uint64]bool{}
	for i := range ds {
		switch c := ds[i].Call; {
		case c == 0:
			n++
		case !seen[c]:
			seen[c] = true
			n++
		}
	}
	return n
}

// Applied reports whether a limit was applied to the decision's
// descriptor: a counter key or a limit, and neither NoLimit nor Unlimited.
func (d *Decision) Applied() bool {
	return !d.NoLimit && !d.Unlimited && (d.Key != "" || d.Limit != 0 || d.Unit != "")
}

// RLSConfigLoad is one configuration load logged by envoyproxy/ratelimit
// (src/config, src/server: `Successfully loaded new configuration`,
// `Successfully loaded the initial ratelimit configs` (OK, Initial) or
// `Error loading new configuration: %s`), as collect/rls.ParseLog reads it
// and rls/log.json holds it.
type RLSConfigLoad struct {
	// Line is the log line (1-based).
	Line int `json:"line"`
	// TimeNs is the line's time, unix ns (whole seconds in text logs).
	TimeNs int64 `json:"time_ns"`
	// OK is false for a load that failed (the previous configuration stays).
	OK bool `json:"ok"`
	// Initial is true for the load at start-up.
	Initial bool `json:"initial,omitempty"`
	// Message is the line's message.
	Message string `json:"message"`
}

// Scenario is scenario.json: what one scenario's evidence is judged against.
type Scenario struct {
	// Schema is ScenarioSchema ("rlbench.scenario/v1").
	Schema string `json:"schema"`
	// Name is the scenario's name (the plan's), unique in a run but for repeats.
	Name string `json:"name"`
	// Description says what the scenario shows.
	Description string `json:"description,omitempty"`
	// Proxies names the proxies whose stats snapshots are expected under stats/.
	Proxies []string `json:"proxies,omitempty"`
	// IntendedLimit is the admissions the operator meant for the whole backend
	// (e.g. a global 5), per run or per window of a given length (5 per
	// minute: IntendedLimit); over-admission is measured against it.
	IntendedLimit *IntendedLimit `json:"intended_limit,omitempty"`
	// Expect is what the scenario must show to PASS.
	Expect Expectation `json:"expect"`
	// Limits describes the configured limiters, for the whole-run bound the
	// configuration allows (Bound); the previous release's only limiter
	// description, translated into Limiters when those are absent
	// (EffectiveLimiters).
	Limits []LimitSpec `json:"limits,omitempty"`
	// Limiters declares the limiters on the requests' path, in the order a
	// request meets them (local before global), for the model checker.
	Limiters []Limiter `json:"limiters,omitempty"`
	// Classify are classification rules tried before the built-in marks
	// (ClassRule): how a non-Envoy proxy's rejections look.
	Classify []ClassRule `json:"classify,omitempty"`
	// RequestHeaders gives, per attack phase (Request.Phase), the request
	// headers the limiters' descriptor actions read, as the attack sent
	// them (lower-case names). Only those are recorded: other header values
	// may be credentials.
	RequestHeaders map[string]map[string]string `json:"request_headers,omitempty"`
	// FlowRequestHeaders gives them for the requests of a named flow
	// (Request.Flow) of a multi-flow attack: phase, then flow, then the
	// headers that flow sent (the attack's and its own). A flow's entry
	// replaces its phase's.
	FlowRequestHeaders map[string]map[string]map[string]string `json:"flow_request_headers,omitempty"`
	// Repeat is the 1-based repeat index of this run, 0 when not repeated.
	Repeat int `json:"repeat,omitempty"`
	// Faults is the number of fault actions the scenario plans; fewer lines
	// in faults.jsonl make the evidence incomplete.
	Faults int `json:"faults,omitempty"`
	// Cluster is the proxies' upstream (backend) cluster name; when set, its
	// upstream_rq_2xx delta per proxy is compared with that proxy's admissions.
	Cluster string `json:"cluster,omitempty"`
	// RLSDecisions is true when the runner records the rate limit service's
	// decisions (rls/decisions.jsonl); a missing file is then incomplete evidence.
	RLSDecisions bool `json:"rls_decisions,omitempty"`
	// HarnessParts names the parts of the scenario that rlbench itself ran:
	// its lab proxies by name, HarnessRLS for the lab rate limit service,
	// HarnessBackend for its backend. Their lateness, stalls and timeouts
	// are the harness's, not the system under test's: a fail-open admission
	// because the lab RLS missed its timeout on a loaded host makes the leak
	// check inconclusive (NOT_RUN), never a leak of the system under test.
	// Empty in evidence of earlier releases and for parts the operator ran
	// (external targets, nginx, the real envoyproxy/ratelimit).
	HarnessParts []string `json:"harness_parts,omitempty"`
	// Labels place the scenario in a conformance matrix (limiter and
	// shape); nil for a scenario without them and in evidence of earlier
	// releases.
	Labels *Labels `json:"labels,omitempty"`
}

// Names of HarnessParts that are not proxies.
const (
	// HarnessRLS is the lab rate limit service (internal, in-memory counters).
	HarnessRLS = "rls"
	// HarnessBackend is rlbench's backend, which writes the receipts.
	HarnessBackend = "backend"
)

// HasHarnessPart reports whether rlbench itself ran the part name (HarnessParts).
func (s *Scenario) HasHarnessPart(name string) bool {
	for _, p := range s.HarnessParts {
		if p == name {
			return true
		}
	}
	return false
}

// Expectation is what a scenario must show to PASS. Every set field is a check.
type Expectation struct {
	// Label is a human name for the expectation, e.g. "local buckets: 10 admitted".
	Label string `json:"label,omitempty"`
	// Admitted is the allowed range of requests the limiters admitted over
	// all targets: those that passed every limiter (Class.Passed, or a
	// receipt), whatever the backend answered. It is a fixed range or
	// "model", the limiter model's bounds for the run (AdmittedExpectation).
	Admitted *AdmittedExpectation `json:"admitted,omitempty"`
	// Classes bounds the responses per class name (a Class, or "sent").
	Classes map[string]Range `json:"classes,omitempty"`
	// ReceiptsEqualAdmitted requires every admitted ID to have a receipt
	// and no rejected ID to have one. It counts IDs; receipts beyond an
	// ID's first are client re-sends (always a finding) or proxy retries,
	// judged by Amplification (without it, any proxy retry fails).
	ReceiptsEqualAdmitted bool `json:"receipts_equal_admitted,omitempty"`
	// StatsAgree is whether the proxies' counter deltas (stats/ snapshots)
	// are compared with the clients: true requires snapshots and their
	// agreement; false turns the comparison off (the snapshots are still
	// reported); absent, they are compared whenever snapshots exist (the
	// behaviour of every scenario.json before this field was a pointer).
	StatsAgree *bool `json:"stats_agree,omitempty"`
	// NotLimited expects that no limit engaged: no request was rejected by a
	// limiter, and every request that went to an RLS produced no
	// descriptor or matched no rule (an unlimited rule included).
	NotLimited bool `json:"not_limited,omitempty"`
	// Shadow is the allowed range of would-have-rejected requests: passed
	// by a limiter that does not enforce (an RLS rule in shadow_mode, Envoy
	// filter_enforced below 100 %), as its decisions or counters show.
	Shadow *Range `json:"shadow,omitempty"`
	// BackendPeak bounds the receipts in sliding windows (one expectation
	// or a list; see PeakExpectation).
	BackendPeak PeakExpectations `json:"backend_peak,omitempty"`
	// Amplification bounds the upstream attempts the backend received per
	// request that passed the limiter (proxy retries: Envoy retry_policy,
	// nginx proxy_next_upstream), e.g. {"max": 4}. Absent, a proxy retry
	// is a finding: the scenario FAILs "backend amplification".
	Amplification *FactorRange `json:"amplification,omitempty"`
	// LimitReqStatus bounds the nginx access log records by
	// $limit_req_status (PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN,
	// REJECTED_DRY_RUN; nginxrec.LimitReq*) over every nginx proxy,
	// e.g. {"PASSED": 5, "DELAYED": 6}: delay=N forwards N+1 at once.
	LimitReqStatus map[string]Range `json:"limit_req_status,omitempty"`
	// Starved is what the per-flow analysis may find of a flow that stayed
	// within its fair share of a shared bucket (the bucket's rate / the
	// flows using it) but was rejected while other flows consumed it
	// (issue 11): absent or false, such a flow fails the scenario; true
	// accepts it and requires at least one (a global bucket shown to
	// starve the polite users).
	Starved *bool `json:"starved,omitempty"`
	// Latency bounds latency percentiles per class and, optionally,
	// target, k6-style (LatencyThreshold), e.g.
	// [{"class": "admitted", "p99": "<= 50ms"}].
	Latency []LatencyThreshold `json:"latency,omitempty"`
	// Ratios bounds shares of the requests sent per class name (or
	// "passed", RatioNames), e.g. {"no_response": "< 0.1%"}.
	Ratios map[string]RatioBound `json:"ratios,omitempty"`
	// LandedWithin, when set, is the burst the scenario asks to land at
	// the limiter: every request it sent reached each limiter within this
	// width, first to last arrival in that proxy's access log on its own
	// clock (Envoy's %START_TIME%, the lab proxy's local_ns), or at the
	// backend (first to last receipt) when no access log records every
	// request and every one has a receipt. It is a precondition, not a
	// property of the limiter: a wider landing (or one no evidence
	// measures) makes the check inconclusive and the scenario NOT_RUN,
	// never FAIL; met, it counts only beside another check. E.g. "10ms"
	// for 2000 requests meant to hit a gateway within 10 ms.
	LandedWithin model.Duration `json:"landed_within,omitempty"`
}

// Checks reports whether the expectation asks anything: admitted,
// classes, receipts_equal_admitted, stats_agree true, not_limited, shadow,
// backend_peak, amplification, limit_req_status, starved, latency or ratios. An empty expectation
// (and no intended limit, no limiter) leaves nothing to check: such a
// scenario is NOT_RUN, never PASS.
func (e *Expectation) Checks() bool {
	return e.Admitted != nil || len(e.Classes) > 0 || e.ReceiptsEqualAdmitted || e.StatsAgree != nil && *e.StatsAgree || e.NotLimited || e.Shadow != nil ||
		len(e.BackendPeak) > 0 || e.Amplification != nil || len(e.LimitReqStatus) > 0 || e.Starved != nil ||
		len(e.Latency) > 0 || len(e.Ratios) > 0
}

// LimitSpec describes one configured limiter for computing the admissions the
// configuration allows over an attack's duration.
type LimitSpec struct {
	// Kind is LimitTokenBucket or LimitFixedWindow.
	Kind string `json:"kind"`
	// Buckets is the number of independent buckets (one per Envoy process).
	Buckets int `json:"buckets,omitempty"`
	// MaxTokens is the token bucket's max_tokens (api/envoy/type/v3/token_bucket.proto).
	MaxTokens int `json:"max_tokens,omitempty"`
	// TokensPerFill is the token bucket's tokens_per_fill.
	TokensPerFill int `json:"tokens_per_fill,omitempty"`
	// FillInterval is the token bucket's fill_interval, ns.
	FillInterval int64 `json:"fill_interval_ns,omitempty"`
	// Limit is the RLS rule's requests_per_unit.
	Limit int `json:"limit,omitempty"`
	// Unit is the RLS rule's unit (SECOND ... YEAR).
	Unit string `json:"unit,omitempty"`
	// WindowStart is WindowAligned (epoch-aligned, envoyproxy/ratelimit) or
	// WindowFirstHit; "" means aligned.
	WindowStart string `json:"window_start,omitempty"`
	// StartNs is when the token buckets were created (proxy start, unix ns):
	// a timer refill runs from then. Zero when unknown, in which case the
	// bound assumes the worst timer phase.
	StartNs int64 `json:"start_ns,omitempty"`
	// Refill is how a token bucket refills: RefillTimer (tokens_per_fill at
	// each fill_interval tick from StartNs, Envoy <= 1.30) or
	// RefillContinuous (tokens_per_fill/fill_interval per second,
	// fractional, Envoy >= 1.31). Empty means timer: the refill of every
	// lab before this field.
	Refill string `json:"refill,omitempty"`
}

// Refills of LimitSpec.Refill.
const (
	RefillTimer      = "timer"
	RefillContinuous = "continuous"
)

// Kinds of LimitSpec.Kind.
const (
	// LimitTokenBucket is Envoy's local rate limit filter
	// (envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit).
	LimitTokenBucket = "token_bucket"
	// LimitFixedWindow is an envoyproxy/ratelimit rule (requests_per_unit per unit).
	LimitFixedWindow = "fixed_window"
)

// Window starts of LimitSpec.WindowStart.
const (
	// WindowAligned windows start at multiples of the unit since the Unix
	// epoch, as in envoyproxy/ratelimit (src/limiter/cache_key.go).
	WindowAligned = "aligned"
	// WindowFirstHit windows start at the first hit of a key.
	WindowFirstHit = "first-hit"
)
