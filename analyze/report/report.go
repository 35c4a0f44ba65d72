package report

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/evidence"
)

// ReportSchema identifies the JSON form of Report.
const ReportSchema = "rlbench.report/v2"

// Check results. Unknown means the check could not be decided (e.g. a counter
// reset between snapshots); it never counts as a pass. NotChecked is a
// declared expectation that cannot fail given what was sent (admitted
// 0..1000000000 of 20 requests): it is reported, its Got saying why, but it
// takes no part in the verdict (model.NotChecked), so it can never be the
// reason for a PASS.
const (
	CheckPass       = "pass"
	CheckFail       = "fail"
	CheckUnknown    = "unknown"
	CheckNotChecked = "not_checked"
)

// Report is the result of analysing an evidence directory.
type Report struct {
	Schema string `json:"schema"`
	// Dir is the evidence directory analysed.
	Dir string `json:"dir"`
	// GeneratedAt is RFC 3339.
	GeneratedAt string `json:"generated_at"`
	// Status is the worst scenario verdict: FAIL over NOT_RUN over PASS; NOT_RUN when there are no scenarios.
	Status    string           `json:"status"`
	Scenarios []ScenarioReport `json:"scenarios"`
	// Groups aggregates repeats of the same scenario name (over-admission ranges over K repeats).
	Groups []Group `json:"groups"`
	// Matrix is the conformance matrix of the scenarios that carry labels
	// (limiter × shape, BuildMatrix); absent when none does.
	Matrix *Matrix `json:"matrix,omitempty"`
}

// Group summarises the repeats of one scenario.
type Group struct {
	Name    string `json:"name"`
	Repeats int    `json:"repeats"`
	Status  string `json:"status"`
	// Admitted is the observed admitted range over the repeats (min..max), counting
	// no-response requests as possibly admitted. Nil when no repeat ran.
	Admitted *evidence.Range `json:"admitted"`
	// OverAdmission is Admitted minus the intended limit, nil without an
	// intended limit; for a limit per window (IntendedLimit), the range of
	// the repeats' worst-window over-admission (ScenarioReport.OverAdmission).
	OverAdmission *evidence.Range `json:"over_admission"`
	// IntendedLimit is the intended limit per window when it has one;
	// absent for a limit per run.
	IntendedLimit *evidence.IntendedLimit `json:"intended_limit,omitempty"`
	// Bound is the largest admitted count the configuration allows over any repeat's duration.
	Bound *int `json:"bound"`
}

// ScenarioReport is the analysis of one scenario run (one repeat).
type ScenarioReport struct {
	Name   string `json:"name"`
	Repeat int    `json:"repeat"`
	Dir    string `json:"dir"`
	Status string `json:"status"`
	// Incomplete is true when evidence is missing or truncated.
	Incomplete bool `json:"incomplete"`
	// Reasons explain a FAIL (failed checks) or NOT_RUN (what is missing, with file and line).
	Reasons []string `json:"reasons"`
	// Notices are problems of evidence that no check reads (an nginx
	// limit_req.jsonl emptied or cut short after it was written): reported,
	// never a reason of the verdict. Absent when none.
	Notices []string `json:"notices,omitempty"`
	// Expectation is the human label of what the scenario expects.
	Expectation string  `json:"expectation"`
	Checks      []Check `json:"checks"`
	// StartNs and EndNs bound the attack: first send to last response, unix ns.
	StartNs int64          `json:"start_ns"`
	EndNs   int64          `json:"end_ns"`
	Totals  Classes        `json:"totals"`
	Targets []TargetReport `json:"targets"`
	// Phases holds the classes per attack phase, in send order, when the
	// scenario has more than one (e.g. before and after an RLS restart).
	Phases         []PhaseReport  `json:"phases"`
	Receipts       Receipts       `json:"receipts"`
	Stats          []ProxyStats   `json:"stats"`
	OverAdmission  *OverAdmission `json:"over_admission"`
	Bound          *Bound         `json:"bound"`
	FaultWindows   []FaultWindow  `json:"fault_windows"`
	RLS            *RLSCheck      `json:"rls"`
	ProducerCounts map[string]int `json:"producers,omitempty"`
	// Arrivals is what the backend saw in time: peaks per sliding window and
	// inter-arrival gaps of the receipts and of the clients' admissions, and
	// what the declared limiters predict; nil without receipts and admissions.
	Arrivals *Arrivals `json:"arrivals,omitempty"`
	// Amplification is the upstream attempts per request that passed the
	// limiter, proxy retries apart from client re-sends; nil when no request
	// has several receipts and nothing tells attempts (see amplificationOf).
	Amplification *Amplification `json:"amplification,omitempty"`
	// Nginx is the nginx proxies' access logs and stub_status joined to the
	// requests; nil without nginx/ evidence.
	Nginx *NginxReport `json:"nginx,omitempty"`
	// Latency is the client-side latency by class, target and phase, and the
	// RLS call latency; nil when the scenario sent nothing.
	Latency *Latency `json:"latency,omitempty"`
	// Series holds the time series for plots; computed only when
	// Options.Series is set (the HTML report), nil otherwise.
	Series *Series `json:"series,omitempty"`
	// Limiters holds the model check of every limiter of scenario.json
	// (limiters, or its limits translated), in the order requests meet them.
	Limiters []LimiterReport `json:"limiters"`
	// Model is the end-to-end bound the limiters' models put on Totals.Passed
	// (the last limiter of each target's path); nil when it cannot be told.
	Model *ModelBound `json:"model,omitempty"`
	// Harness is rlbench's own timing while the scenario ran (the clients'
	// send spread and pacing error, the limiters' read lag, the host's
	// stalls, steal and load); nil when the scenario did not run.
	Harness *HarnessReport `json:"harness,omitempty"`
	// RLSFailures sets the admissions the RLS did not decide against the
	// fault windows; nil without an RLS in the path.
	RLSFailures *RLSFailures `json:"rls_failures,omitempty"`
	// Engagement tells whether the RLS limits engaged; nil without an RLS.
	Engagement *Engagement `json:"engagement,omitempty"`
	// Shadow counts would-have-rejected requests; nil without limiters.
	Shadow *ShadowCounts `json:"shadow,omitempty"`
	// RateLimitHeaders checks x-ratelimit-* and RateLimit-* headers; nil when
	// no response carried them.
	RateLimitHeaders *RateHeaderReport `json:"rate_limit_headers,omitempty"`
	// Flows is the per-flow table and Keys the per-key (bucket) table, when
	// the requests name their flows (issue 11); Starved the flows a shared
	// bucket starved (StarvedFlow).
	Flows   []FlowReport  `json:"flows,omitempty"`
	Keys    []KeyReport   `json:"keys,omitempty"`
	Starved []StarvedFlow `json:"starved,omitempty"`
	// Shards describes the shards of a merged run (evidence/merge.Merge): their
	// start spread and clock offset bounds; nil for an unsharded run.
	Shards *ShardsReport `json:"shards,omitempty"`
	// Labels are scenario.json's labels (limiter and shape), which place
	// the scenario in Report.Matrix; absent without them.
	Labels *evidence.Labels `json:"labels,omitempty"`
}

// Check is one judged property of a scenario.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Want   string `json:"want"`
	Got    string `json:"got"`
}

// Classes counts responses by class (see the Class constants), and the
// requests that passed every limiter.
type Classes struct {
	// Sent counts every request sent.
	Sent int
	// N counts the responses of each class, indexed by evidence.Class
	// (c.N[evidence.ClassAdmitted]).
	N [evidence.NumClasses]int
	// Passed counts the requests that passed every limiter: a response of
	// the backend (admitted, backend_4xx, backend_429, backend_5xx), a
	// circuit-breaker 503 (after the rate limit filters), or no response
	// but a receipt. It is what the admitted expectation and the model
	// bounds count.
	Passed int
	// NotSent counts the requests of Sent that the client recorded as
	// never sent (evidence.Request.NotSent: the connection failed before
	// the request was written, as every one after a killed backend) and
	// that have no receipt: no_response requests that cannot have passed a
	// limiter, which PassedMax leaves out. Its JSON key, not_sent, is
	// written only when not 0.
	NotSent int
}

// classesOrder is the order of the class counts in the JSON form of
// Classes (that of the named fields it had before N): admitted, local_429,
// global_429, rls_error, other_4xx, other_5xx, other, no_response, then
// the classes added in v1.1.
var classesOrder = [evidence.NumClasses]evidence.Class{evidence.ClassAdmitted, evidence.ClassLocal429,
	evidence.ClassGlobal429, evidence.ClassRLSError, evidence.ClassOther4xx, evidence.ClassOther5xx,
	evidence.ClassOther, evidence.ClassNoResponse, evidence.ClassBackend4xx, evidence.ClassBackend429,
	evidence.ClassBackend5xx, evidence.ClassCircuitBreaker}

// addedInV11 reports whether class cl was added in v1.1 (backend_4xx,
// backend_429, backend_5xx, circuit_breaker): its count is left out of
// the JSON form when zero, and absent from earlier reports, where a
// backend's 4xx/5xx counted as other_4xx/other_5xx.
func addedInV11(cl evidence.Class) bool { return cl >= evidence.ClassBackend4xx }

// MarshalJSON writes c as an object keyed by "sent", the class names (a
// Class String, in the order of classesOrder; a zero count of a class
// added in v1.1 left out), "passed" and, when not 0, "not_sent".
func (c Classes) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 256), `{"sent":`...)
	b = strconv.AppendInt(b, int64(c.Sent), 10)
	for _, cl := range classesOrder {
		if c.N[cl] == 0 && addedInV11(cl) {
			continue
		}
		b = append(b, `,"`...)
		b = append(b, cl.String()...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(c.N[cl]), 10)
	}
	b = append(b, `,"passed":`...)
	b = strconv.AppendInt(b, int64(c.Passed), 10)
	if c.NotSent != 0 {
		b = append(b, `,"not_sent":`...)
		b = strconv.AppendInt(b, int64(c.NotSent), 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the form MarshalJSON writes as encoding/json reads
// a struct: a class missing (a report of an earlier release) counts zero,
// keys match case-insensitively, a key that names no class, "sent",
// "passed" or "not_sent" is ignored, and null leaves c as it is.
func (c *Classes) UnmarshalJSON(data []byte) error {
	var m map[string]*int
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return err
	}
	out := *c
	for k, v := range m {
		if v == nil {
			continue
		}
		switch k = strings.ToLower(k); k {
		case "sent":
			out.Sent = *v
		case "passed":
			out.Passed = *v
		case "not_sent":
			out.NotSent = *v
		default:
			if cl, ok := evidence.ParseClass(k); ok {
				out.N[cl] = *v
			}
		}
	}
	*c = out
	return nil
}

// Get returns the count of class name (a class name, "sent" or
// "passed"), and whether the name is known.
func (c Classes) Get(class string) (int, bool) {
	switch class {
	case "sent":
		return c.Sent, true
	case "passed":
		return c.Passed, true
	}
	cl, ok := evidence.ParseClass(class)
	if !ok {
		return 0, false
	}
	return c.N[cl], true
}

// Add counts one request of class cl; received tells whether the backend
// has its receipt (a request without response but with a receipt passed),
// notSent whether the client recorded it as never sent
// (evidence.Request.NotSent; counted in NotSent unless received).
func (c *Classes) Add(cl evidence.Class, received, notSent bool) {
	c.Sent++
	c.N[cl]++
	if cl.Passed() || (cl == evidence.ClassNoResponse && received) {
		c.Passed++
	}
	if notSent && cl == evidence.ClassNoResponse && !received {
		c.NotSent++
	}
}

// sum is the total count of the classes cls.
func (c Classes) sum(cls ...evidence.Class) int {
	n := 0
	for _, cl := range cls {
		n += c.N[cl]
	}
	return n
}

// PassedMax is the most requests that may have passed every limiter:
// Passed plus the requests without response and without receipt that were
// sent (not NotSent: a request never sent cannot have passed). It is the
// one owner of the top of the admitted count's range, Passed .. PassedMax.
func (c Classes) PassedMax(noResponseWithReceipt int) int {
	return c.Passed + c.N[evidence.ClassNoResponse] - noResponseWithReceipt - c.NotSent
}

// TargetReport is the classes of the requests sent to one target.
type TargetReport struct {
	Target  string  `json:"target"`
	Classes Classes `json:"classes"`
	// Receipts counts backend receipts of IDs sent to this target.
	Receipts int `json:"receipts"`
}

// PhaseReport is the classes of the requests one attack phase sent.
type PhaseReport struct {
	Phase   string  `json:"phase"`
	Classes Classes `json:"classes"`
}

// Receipts is the reconciliation by ID of client outcomes with backend receipts.
// Each *IDs list holds at most SampleIDs IDs; the counts are exact.
type Receipts struct {
	// Total is the number of receipt lines.
	Total                  int      `json:"total"`
	AdmittedWithReceipt    int      `json:"admitted_with_receipt"`
	AdmittedWithoutReceipt int      `json:"admitted_without_receipt"`
	LostIDs                []string `json:"lost_ids"`
	RejectedWithReceipt    int      `json:"rejected_with_receipt"`
	LeakedIDs              []string `json:"leaked_ids"`
	// Duplicates counts every receipt beyond an ID's first (DuplicateIDs
	// the IDs), proxy retries included.
	Duplicates   int      `json:"duplicates"`
	DuplicateIDs []string `json:"duplicate_ids"`
	// ProxyRetries counts the duplicates that proxy retries explain (see
	// Amplification); Resent the others, re-sent by the client (or phantom),
	// which the receipts check fails on (ResentIDs the IDs).
	ProxyRetries int      `json:"proxy_retries"`
	Resent       int      `json:"resent"`
	ResentIDs    []string `json:"resent_ids"`
	Phantom      int      `json:"phantom"`
	PhantomIDs   []string `json:"phantom_ids"`
	// SentUnknown counts the receipts whose ID is absent from a client
	// record that was cut short (a killed or interrupted attack, a
	// truncated requests.jsonl) but belongs to the attack's planned ID set
	// (or the set is unknown): the request may have been sent past the
	// cut, so it is neither phantom nor shown sent (SentUnknownIDs the
	// IDs). The scenario is then incomplete (NOT_RUN) anyway. Absent when 0.
	SentUnknown              int      `json:"sent_unknown,omitempty"`
	SentUnknownIDs           []string `json:"sent_unknown_ids,omitempty"`
	WithoutID                int      `json:"without_id"`
	Indeterminate            int      `json:"indeterminate"`
	IndeterminateWithReceipt int      `json:"indeterminate_with_receipt"`
}

// SampleIDs is how many example IDs each Receipts list keeps.
const SampleIDs = 20

// Statuses of ProxyStats.Status.
const (
	// StatsOK: both snapshots were read and no counter went down.
	StatsOK = "ok"
	// StatsMissing: a snapshot is absent, unreadable or of another proxy.
	StatsMissing = "missing"
	// StatsReset: a counter went down between the snapshots (restart or
	// /reset_counters), or server.uptime shows a restart between them: the
	// comparison is unknown.
	StatsReset = "reset"
)

// ProxyStats compares one proxy's counter deltas (after − before) with what
// the clients of that proxy saw. Status is StatsOK, StatsMissing or StatsReset.
type ProxyStats struct {
	Proxy  string            `json:"proxy"`
	Status string            `json:"status"`
	Detail string            `json:"detail,omitempty"`
	Deltas map[string]int64  `json:"deltas"`
	Checks []Check           `json:"checks"`
	Resets []string          `json:"resets,omitempty"`
	Extra  map[string]string `json:"extra,omitempty"`
	// Timing says, with the measured times, how the snapshots' taken_ns
	// miss the window of the requests sent to this proxy: a before
	// snapshot taken after the first request was sent, an after snapshot
	// taken before the last response ("after snapshot taken 120ms before
	// the last response: counters may miss it"). A counter check that
	// disagrees is then unknown, not FAIL. Empty when the snapshots
	// enclose the window or lack taken_ns (evidence of earlier releases).
	Timing string `json:"timing,omitempty"`
	// Unrepresentable maps a delta key (a Deltas key) to why it has no
	// delta: a counter of a snapshot, or its sum over stat prefixes and
	// clusters, is past 2^63-1, the largest int64 (Envoy's counters are
	// uint64, /stats in envoy/source/server/admin/stats_handler.cc), or a
	// counter read from Prometheus text is not exact (at or past 2^53,
	// envoyrec.Snapshot.Inexact). The
	// why names the Envoy stat, its value and the snapshot. The checks that
	// read such a key are unknown, never FAIL or PASS. Absent in evidence
	// of earlier releases and when every counter fits.
	Unrepresentable map[string]string `json:"unrepresentable,omitempty"`
}

// OverAdmission is admitted minus the intended limit. It is a range when
// requests without a response exist: each may have been admitted.
//
// For a limit per window (evidence.IntendedLimit.Per, PerNs here) the
// admissions are counted per fixed window aligned to the unix epoch, and
// the fields describe the fullest window: AdmittedMin is the least it can
// hold over every way the admissions whose time is uncertain (sent before
// a window edge, answered after it) can fall, AdmittedMax the most any
// window may hold (those and the requests without response that may have
// been admitted counted in every window they touch), Min and Max those
// minus Intended. Worst is the window that may hold the most, Over the
// windows that may hold more than Intended (at most SampleIDs of them;
// OverWindows counts them all).
type OverAdmission struct {
	// Intended is the intended limit's count: per run, or per window of PerNs.
	Intended    int `json:"intended"`
	AdmittedMin int `json:"admitted_min"`
	AdmittedMax int `json:"admitted_max"`
	Min         int `json:"min"`
	Max         int `json:"max"`
	// PerNs is the window's length, ns; 0 (absent) for a limit per run,
	// and then the fields below are absent too.
	PerNs int64 `json:"per_ns,omitempty"`
	// Windows counts the windows that may hold an admission.
	Windows int `json:"windows,omitempty"`
	// Straddling counts the admissions whose interval (send to response or
	// receipt) crosses a window edge; Unanswered the requests without
	// response (nor receipt) that may have been admitted.
	Straddling int `json:"straddling,omitempty"`
	Unanswered int `json:"unanswered,omitempty"`
	// Worst is the window that may hold the most admissions (the first of
	// them, the more sure ones first); nil without admissions.
	Worst *IntendedWindow `json:"worst,omitempty"`
	// Over are the windows that may hold more than Intended, in time
	// order; OverWindows their number.
	Over        []IntendedWindow `json:"over,omitempty"`
	OverWindows int              `json:"over_windows,omitempty"`
}

// Bound is the most admissions the configured limiters allow over the
// attack's actual duration (token bucket: buckets × max_tokens + refills;
// fixed window: limit × windows touched).
type Bound struct {
	Allowed    int      `json:"allowed"`
	DurationNs int64    `json:"duration_ns"`
	Explain    []string `json:"explain"`
}

// FaultWindow tallies what happened while a fault was in force: from the
// begin of a stop (or other fault) action to the end of the matching start
// action, or to the end of the evidence when none followed.
type FaultWindow struct {
	Name    string `json:"name"`
	Target  string `json:"target"`
	BeginNs int64  `json:"begin_ns"`
	EndNs   int64  `json:"end_ns"`
	// Open is true when no recovery action closed the window.
	Open bool `json:"open"`
	// Inside counts requests sent and answered inside the window, by class.
	Inside Classes `json:"inside"`
	// Straddling counts requests that began before and ended inside or after the window edge (or vice versa).
	Straddling Classes `json:"straddling"`
	// Receipts counts backend receipts received inside the window.
	Receipts int `json:"receipts"`
	// ProxyDeltas sums the proxies' ratelimit.error and failure_mode_allowed deltas of the phase(s) inside the window.
	ProxyDeltas map[string]int64 `json:"proxy_deltas,omitempty"`
	// ActsOn names the limiters the fault acts on: those that depend on its
	// target (an exec marker, or a fault on a part no limiter uses, acts on
	// none and suspends nothing).
	ActsOn []string `json:"acts_on"`
	// RecoveryLagNs is how long after EndNs the RLS still failed (RLS
	// errors, fail-open admissions) before it answered again; checks of the
	// limiters it acts on are suspended from BeginNs to EndNs + RecoveryLagNs.
	RecoveryLagNs int64 `json:"recovery_lag_ns"`
	// FailOpenAfter counts the fail-open admissions sent after EndNs, within
	// the recovery lag (known when the RLS decisions are recorded).
	FailOpenAfter int `json:"fail_open_after"`
}

// RLSCheck reconciles the rate limit service's decisions with the clients.
type RLSCheck struct {
	Decisions int            `json:"decisions"`
	ByCode    map[string]int `json:"by_code"`
	// Windows lists, per cache key (descriptor and window), the OK count against the limit.
	Windows []RLSWindow `json:"windows"`
	// Real is the real envoyproxy/ratelimit reconciliation, present when the
	// scenario ran on it (evidence.RLSLogFile or evidence.RLSParsedLogFile exists).
	Real *RLSReal `json:"real,omitempty"`
}

// RLSWindow is one RLS counter window.
type RLSWindow struct {
	Key   string `json:"key"`
	Limit int    `json:"limit"`
	OK    int    `json:"ok"`
	Over  int    `json:"over_limit"`
	// Shadow counts the OK decisions of a shadow_mode rule over its limit
	// (would have rejected); they are not in OK.
	Shadow int `json:"shadow,omitempty"`
}
