package report

// RLSFailures is rls_failures of the report: the requests the rate limit
// service failed to decide (RLS errors, fail-open admissions) set against
// the fault windows acting on it.
type RLSFailures struct {
	// FailOpen is the admissions without an RLS decision: the proxies'
	// ratelimit.failure_mode_allowed, or, with the RLS decisions recorded,
	// the admitted requests no decision was joined to (the larger).
	FailOpen int `json:"fail_open"`
	// FailOpenIDs names the fail-open admissions when the decisions tell
	// them (at most SampleIDs).
	FailOpenIDs []string `json:"fail_open_ids"`
	// OutsideFaults counts the fail-open admissions that no fault window
	// (with its recovery lag) acting on the RLS explains; -1 when it cannot
	// be told (neither decisions nor enough admissions inside the windows).
	OutsideFaults int `json:"outside_faults"`
	// OutsideIDs names them when known (at most SampleIDs).
	OutsideIDs []string `json:"outside_ids"`
	// ErrorDecisions counts the RLS's ERROR decisions.
	ErrorDecisions int `json:"error_decisions"`
}

// Engagement is engagement of the report: whether the limits engaged for
// the requests that went to a rate limit service.
type Engagement struct {
	// Requests counts the requests that reached an RLS limiter.
	Requests int `json:"requests"`
	// NoDescriptor counts those whose actions produced no descriptor (no
	// RLS call: Envoy sends none), NoRule those whose descriptor matched no
	// rule of the configuration (envoyproxy/ratelimit's own matcher),
	// Unlimited those that matched an unlimited rule.
	NoDescriptor int `json:"no_descriptor"`
	NoRule       int `json:"no_rule"`
	Unlimited    int `json:"unlimited"`
	// IDs names up to SampleIDs of the requests not limited.
	IDs []string `json:"ids"`
	// NoLimitDecisions counts the RLS decisions that applied no limit
	// ("descriptor does not match any limit", unknown domain, unlimited).
	NoLimitDecisions int `json:"no_limit_decisions"`
	// Limited counts the requests that matched a finite rule, and the
	// decisions that applied one.
	Limited          int `json:"limited"`
	LimitedDecisions int `json:"limited_decisions"`
	// UnknownKey counts the requests whose engagement cannot be told: none
	// of their known descriptors matched a finite rule, and others read a
	// request header they sent without its value being recorded
	// (UnknownKeyHeaders, lower-case; LimiterReport.UnknownKey).
	UnknownKey        int      `json:"unknown_key,omitempty"`
	UnknownKeyHeaders []string `json:"unknown_key_headers,omitempty"`
	// UnmatchedNoLimitDecisions and UnmatchedLimitedDecisions count the RLS
	// decisions (no limit applied, limit applied) that matched no request
	// (late calls, other clients of the RLS: RLSReal.Zombies): not counted
	// above, they are evidence the checks cannot place, which makes a
	// verdict they could change inconclusive.
	UnmatchedNoLimitDecisions int `json:"unmatched_no_limit_decisions,omitempty"`
	UnmatchedLimitedDecisions int `json:"unmatched_limited_decisions,omitempty"`
}

// ShadowCounts is shadow of the report: would-have-rejected requests of
// limiters that do not enforce every rejection.
type ShadowCounts struct {
	// Observed is what the evidence shows: RLS decisions of a shadow_mode
	// rule over its limit (late ones excluded) plus the proxies' local
	// http_local_rate_limit.rate_limited − enforced and nginx's
	// REJECTED_DRY_RUN ($limit_req_status); -1 when no source.
	Observed int `json:"observed"`
	// RLS and Local are its two parts.
	RLS   int `json:"rls"`
	Local int `json:"local"`
	// Model counts the passes the limiter models say must have been
	// rejected by a non-enforcing limiter (a lower bound of Observed).
	Model int `json:"model"`
}
