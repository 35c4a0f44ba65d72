package report

// RLSReal is rls.real of the report: the reconciliation of a real envoyproxy/ratelimit on Redis with the
// clients, from rls/decisions.jsonl (decisions parsed from the RLS debug log), faults.jsonl, requests.jsonl and
// the RLS Prometheus snapshots rls/metrics.*.json.
type RLSReal struct {
	// TimeResolutionNs is the resolution assumed for decision times: 1e9 when every decision time is a whole
	// second (LOG_FORMAT=text, logrus RFC3339), else 1 (LOG_FORMAT=json, RFC3339Nano).
	TimeResolutionNs int64 `json:"time_resolution_ns"`
	// Windows lists each counter window (cache key) per Redis epoch.
	Windows []RealWindow `json:"windows"`
	// Descriptors compares, per descriptor, OK decisions (zombies excluded) with the admissions that went
	// through the RLS.
	Descriptors []RealDescriptor `json:"descriptors"`
	// Zombies counts OK/OVER_LIMIT decisions that reached no request: joined per call (analyze's rlsJoin: same
	// descriptor, made while that request was in flight, a code its outcome agrees with, one decision per request),
	// none could take them: calls that hung on a dead Redis and were executed after their clients had given up:
	// envoyproxy/ratelimit counts a hit when its Redis pipeline returns (src/redis/fixed_cache_impl.go DoLimit),
	// whether or not the Envoy that asked still waits (its ratelimit filter's timeout,
	// api/envoy/extensions/filters/http/ratelimit/v3/rate_limit.proto), and calls of other clients (the RLS's HTTP
	// /json endpoint). They consume the window but admit nobody, so they are excluded from OK counts.
	Zombies int `json:"zombies"`
	// JoinSkipped says why the decisions were not joined to requests ("" when they were); no decision is then
	// called late.
	JoinSkipped string `json:"join_skipped,omitempty"`
	// ZombieDecisions holds up to SampleIDs of them.
	ZombieDecisions []RealDecision `json:"zombie_decisions"`
	Errors          RealErrors     `json:"errors"`
	// Snapshots lists the RLS metrics snapshots found, in time order.
	Snapshots []RealSnapshot `json:"snapshots"`
	// Identities checks the RLS stat identity per RLS process and stat key.
	Identities []RealIdentity `json:"identities"`
}

// RealWindow is one Redis counter (cache key) within one Redis epoch. A start or restart of Redis (no
// persistence) begins a new epoch: counters restart at 1 in mid-window. An RLS restart does not: the counts live
// in Redis (envoyproxy/ratelimit src/redis/fixed_cache_impl.go: INCRBY and EXPIRE on the cache key).
type RealWindow struct {
	Key string `json:"key"`
	// Epoch is "" for the first Redis, else "after <fault name>".
	Epoch string `json:"epoch"`
	Limit int    `json:"limit"`
	// Decisions counts the decisions with a counter value (current).
	Decisions int `json:"decisions"`
	// OK and OverLimit exclude zombies; ZombieOK and ZombieOver count them.
	OK         int `json:"ok"`
	OverLimit  int `json:"over_limit"`
	ZombieOK   int `json:"zombie_ok"`
	ZombieOver int `json:"zombie_over"`
	// MaxCurrent is the highest counter value logged.
	MaxCurrent uint64 `json:"max_current"`
	// DuplicateCurrents are counter values logged more than once: within a window each INCRBY yields a unique N.
	DuplicateCurrents []uint64 `json:"duplicate_currents"`
	// Inconsistent counts decisions whose code disagrees with "OK iff current <= limit" (each decision against the
	// limit it was decided with; a shadow_mode hit over its limit is OK).
	Inconsistent int `json:"inconsistent"`
	// Limits lists the limits the window's decisions applied, in order, when more than one: the configuration
	// was reloaded within the window (Reloaded tells whether a config-load line of the RLS log lies between).
	Limits   []int `json:"limits,omitempty"`
	Reloaded *bool `json:"reloaded,omitempty"`
	// Shadow counts OK decisions of a shadow_mode rule over its limit (would have rejected).
	Shadow int `json:"shadow,omitempty"`
}

// RealDescriptor compares one descriptor's OK decisions with client admissions.
type RealDescriptor struct {
	// Descriptor is "<domain> <k>=<v>[,<k>=<v>...]".
	Descriptor string `json:"descriptor"`
	// OK excludes zombies; ZombieOK counts them.
	OK       int `json:"ok"`
	ZombieOK int `json:"zombie_ok"`
	// AdmittedMin..AdmittedMax are the admissions that needed an OK: admitted (plus no-response) minus the
	// proxies' ratelimit.failure_mode_allowed.
	AdmittedMin int `json:"admitted_min"`
	AdmittedMax int `json:"admitted_max"`
	// Uncarried: no request of the run carries the descriptor (every
	// request's descriptors are known and none is it): its decisions are
	// unmatched evidence (Engagement), not admissions of these requests.
	// The checks read it, the JSON form does not carry it.
	Uncarried bool `json:"-"`
	// PerValue: each request of the run carries one descriptor, known from its headers, so AdmittedMin..AdmittedMax
	// are the admissions of the requests that carried this descriptor, not of the run (a request_headers action:
	// every value its own envoyproxy/ratelimit counter). The checks read it, the JSON form does not carry it.
	PerValue bool `json:"-"`
	// Summed names the descriptors' common domain and keys ("<domain> <k>[,<k>...]") when the run's descriptors
	// differ only in their values and the requests' descriptors are unknown: the checks compare the sum of their
	// OK decisions with the run's admissions, as each admitted request needed an OK of at least one of them.
	// "" otherwise. The checks read it, the JSON form does not carry it.
	Summed string `json:"-"`
}

// RealDecision is a decision flagged in the report.
type RealDecision struct {
	TimeNs  int64  `json:"time_ns"`
	Key     string `json:"key"`
	Current uint64 `json:"current"`
	Code    string `json:"code"`
	// Fault names the fault window the decision lies in, else the last one that ended before it; "" if none.
	Fault string `json:"fault"`
}

// RealErrors joins the RLS's Redis errors (ERROR decisions: `caught error during call`) to the Redis fault
// windows, with each line's time resolution (collect/rls.Place: a text-log line at second S may lie anywhere in
// [S, S+1s)).
type RealErrors struct {
	Total int `json:"total"`
	// Inside counts errors consistent with a Redis fault window.
	Inside int `json:"inside"`
	// AfterRecovery counts errors after a Redis window closed: the RLS's connection pool
	// (src/redis/driver_impl.go) keeps connections that died with the Redis, so the next calls fail fast with EOF.
	AfterRecovery int `json:"after_recovery"`
	// Unexplained counts errors before any Redis fault, or in a scenario without one.
	Unexplained int `json:"unexplained"`
	// Windows gives, per Redis fault window, the errors consistent with it (collect/rls.MatchErrorsToWindow).
	Windows []RealErrorWindow `json:"windows"`
}

// RealErrorWindow is one Redis fault window and its errors.
type RealErrorWindow struct {
	Name    string `json:"name"`
	BeginNs int64  `json:"begin_ns"`
	EndNs   int64  `json:"end_ns"`
	Errors  int    `json:"errors"`
}

// RealSnapshot is one RLS metrics snapshot file.
type RealSnapshot struct {
	Label   string `json:"label"`
	TimeNs  int64  `json:"time_ns"`
	Process int    `json:"process"`
	Stable  bool   `json:"stable"`
	Error   string `json:"error,omitempty"`
}

// RealIdentity is the RLS stat identity total_hits = within_limit + over_limit (+ hits of failed or hanging
// calls) of one stat key over one RLS process's life: its last good snapshot against zero, since the RLS's
// Prometheus counters are totals since the process started and restart at 0 with it (a reset that is
// recognised, not a failure).
type RealIdentity struct {
	Process int `json:"process"`
	// Snapshot is the label of the snapshot used.
	Snapshot    string  `json:"snapshot"`
	Key         string  `json:"key"`
	TotalHits   float64 `json:"total_hits"`
	WithinLimit float64 `json:"within_limit"`
	OverLimit   float64 `json:"over_limit"`
	// Gap is total_hits − within_limit − over_limit.
	Gap float64 `json:"gap"`
	// RedisErrors and Hanging are the process's redis_error calls and ShouldRateLimit calls without a
	// response time (total_requests − response_time count): the hits a gap may be made of.
	RedisErrors float64 `json:"redis_errors"`
	Hanging     float64 `json:"hanging"`
	// Status is pass, explained, fail or unknown.
	Status string `json:"status"`
	Detail string `json:"detail"`
}
