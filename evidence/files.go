package evidence

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/jsonline"
)

// AttackTarget is one target as recorded in AttackConfig.
type AttackTarget struct {
	// Name is the target (proxy) name requests record.
	Name string `json:"name"`
	// URL is the target's base URL.
	URL string `json:"url"`
	// IDs is how many IDs the split gave this target.
	IDs int `json:"ids"`
}

// AttackConfig records the effective options of one attack (defaults
// applied).
type AttackConfig struct {
	// Name is the attack's name (the plan step), "" for `rlbench attack`.
	Name string `json:"name,omitempty"`
	// Targets are the targets and how many IDs each got.
	Targets []AttackTarget `json:"targets"`
	// Split is in attack.ParseSplit syntax, e.g. "weights=60,30,10".
	Split string `json:"split"`
	// Seed seeds the random split.
	Seed int64 `json:"seed"`
	// Method is the HTTP method of every request.
	Method string `json:"method"`
	// Path is appended to each target URL.
	Path string `json:"path"`
	// HeaderNames lists the names of the extra request headers (values are
	// not recorded: they may hold credentials).
	HeaderNames []string `json:"header_names,omitempty"`
	// BodyBytes is the request body length in bytes.
	BodyBytes int `json:"body_bytes"`
	// Concurrency is the requested cap on requests in flight, 0 = the
	// default (all IDs at once, or with a rate a pool sized from it).
	Concurrency int `json:"concurrency"`
	// Workers is the bound on requests in flight at the start: Concurrency,
	// the number of IDs, FDCap, or (with a rate) the pool bound sized from
	// the rate. Before issue 14: vegeta's MaxWorkers.
	Workers int `json:"workers"`
	// WorkersFrom says where Workers came from: "concurrency", "ids",
	// "fd_limit" or "rate" (absent before issue 14).
	WorkersFrom string `json:"workers_from,omitempty"`
	// FDLimit is the soft RLIMIT_NOFILE the attack saw (after raising it),
	// FDOpen the descriptors open then, and FDCap the most workers the
	// default allows: (FDLimit-FDOpen-64)/2. All 0 where the OS does not
	// tell (and before issue 10).
	FDLimit uint64 `json:"fd_limit,omitempty"`
	FDOpen  int    `json:"fd_open,omitempty"`
	FDCap   int    `json:"fd_cap,omitempty"`
	// Barrier is true for unpaced attacks since issue 14: connections were
	// warmed first and the first requests released together.
	Barrier bool `json:"barrier,omitempty"`
	// Rate is "freq/per" (e.g. "100/1s") or "0" for unpaced.
	Rate string `json:"rate"`
	// RatePerSec is Rate in requests per second, 0 for unpaced.
	RatePerSec float64 `json:"rate_per_sec"`
	// TimeoutNs is the per-request timeout in ns.
	TimeoutNs int64 `json:"timeout_ns"`
	// IDs is the number of IDs.
	IDs int `json:"ids"`
	// IDHeader is the request header that carries each ID (X-Rlbench-Id).
	IDHeader string `json:"id_header"`
	// CaptureHeaders are the response headers recorded in Request.Headers
	// (a trailing "*" matches a prefix).
	CaptureHeaders []string `json:"capture_headers"`
	// BodyPrefix is how many bytes of each response body Request.Body keeps.
	BodyPrefix int `json:"body_prefix"`
	// DisableKeepAlives is true when every request had its own connection.
	DisableKeepAlives bool `json:"disable_keepalives"`
	// MaxConnections caps connections per target host, 0 = unlimited.
	MaxConnections int `json:"max_connections"`
	// Flow is the flow's name in the configuration of one flow of a
	// multi-flow attack (AttackFlow.Config); empty in the attack's own.
	Flow string `json:"flow,omitempty"`
	// Requests are the flow's request templates (`rlbench attack
	// --targets-file`): ID k went to template k mod len(Requests); Split is
	// then "requests" and Method, Path, HeaderNames and BodyBytes are unset.
	Requests []AttackRequestTemplate `json:"requests,omitempty"`
	// Protocol is "h2" (HTTP/2 over TLS, ALPN h2) or "h2c" (cleartext
	// HTTP/2 with prior knowledge); empty for HTTP/1.1 and in older files.
	Protocol string `json:"protocol,omitempty"`
	// Engine is EngineEventLoop when the flow's requests were sent by event
	// loops (attack.Options.Engine: the default for the flows they can
	// send), empty when by a goroutine per connection (rlbench attack
	// --engine goroutines, a flow the loops do not take, and every file
	// before the loops). A multi-flow attack's own
	// configuration leaves it empty: each flow's tells.
	Engine string `json:"engine,omitempty"`
	// Pipeline is the HTTP/1.1 pipelining depth (rlbench attack --pipeline,
	// attack.Options.Pipeline): each connection carried up to that many
	// requests written back to back before their responses were read; 0
	// (and in every file before it): one request at a time.
	Pipeline int `json:"pipeline,omitempty"`
}

// EngineEventLoop is AttackConfig.Engine for a flow sent by event loops.
const EngineEventLoop = "event-loop"

// AttackRequestTemplate is one request template of a flow
// (AttackConfig.Requests); header values are not recorded.
type AttackRequestTemplate struct {
	// Target is the attack target's name.
	Target string `json:"target"`
	// Method and Path are the request's; Path is appended to the target's URL.
	Method string `json:"method"`
	Path   string `json:"path"`
	// HeaderNames lists the template's extra request header names.
	HeaderNames []string `json:"header_names,omitempty"`
	// BodyBytes is the request body length in bytes.
	BodyBytes int `json:"body_bytes"`
}

// AttackFlow is one flow of a multi-flow attack (AttackSummary.Flows):
// its configuration and its own counts and figures. The flows of one
// attack start at the same instant (AttackSummary.StartNs).
type AttackFlow struct {
	// Config is the flow's effective options (Config.Flow names it).
	Config AttackConfig `json:"config"`
	// Sent, NotSent and Recorded count the flow's requests as in
	// AttackSummary.
	Sent     int `json:"sent"`
	NotSent  int `json:"not_sent"`
	Recorded int `json:"recorded"`
	// CodesByTarget counts the flow's recorded requests per target and
	// status code ("0": no response).
	CodesByTarget map[string]map[string]int `json:"codes_by_target"`
	// FirstSendNs and LastSendNs bound the flow's SentNs, unix ns (0 if none).
	FirstSendNs int64 `json:"first_send_ns"`
	LastSendNs  int64 `json:"last_send_ns"`
	// LatencyNs is the distribution of the flow's latencies (responses only).
	LatencyNs AttackQuantiles `json:"latency_ns"`
	// Burst is set for an unpaced flow (its requests released by the
	// attack's barrier; SendNs from the common release), Pacing for a
	// paced one (against the flow's own schedule).
	Burst  *AttackBurst  `json:"burst,omitempty"`
	Pacing *AttackPacing `json:"pacing,omitempty"`
}

// AttackShard identifies one shard of a sharded attack (`rlbench attack
// --shard K/N`, issue 15) and carries what a merge needs to check that the
// shards cover the attack exactly once: every shard of one attack has the
// same Count, Digest and IDSetDigest, the Index values are 0..Count-1 once
// each, and the IDs add up to TotalIDs.
type AttackShard struct {
	// Index is K (0-based), Count is N.
	Index int `json:"index"`
	Count int `json:"count"`
	// IDs is how many IDs this shard sends; TotalIDs those of the unsharded attack.
	IDs      int `json:"ids"`
	TotalIDs int `json:"total_ids"`
	// IDSetDigest is "sha256:<hex>" of the unsharded IDs of all flows in
	// order, each followed by a newline.
	IDSetDigest string `json:"id_set_digest"`
	// Digest is "sha256:<hex>" over every flow's ConfigDigest and the
	// IDSetDigest: equal digests mean the same unsharded attack.
	Digest string `json:"digest"`
	// Flows has one entry per flow (one for a single-flow attack), in order.
	Flows []AttackShardFlow `json:"flows"`
	// FromEnv names the environment variable the index was read from
	// (`--shard-from-env JOB_COMPLETION_INDEX`), if any.
	FromEnv string `json:"from_env,omitempty"`
}

// AttackShardFlow is one flow of a shard (AttackShard.Flows).
type AttackShardFlow struct {
	// Flow is the flow's name ("" for a single-flow attack).
	Flow string `json:"flow"`
	// IDs is how many of the flow's IDs this shard sends, TotalIDs the flow's.
	IDs      int `json:"ids"`
	TotalIDs int `json:"total_ids"`
	// IDSetDigest is "sha256:<hex>" of the flow's unsharded IDs in order,
	// each followed by a newline.
	IDSetDigest string `json:"id_set_digest"`
	// ConfigDigest is "sha256:<hex>" of what shapes the flow's requests and
	// schedule (name, split, seed, rate, concurrency, keep-alive, target
	// URLs, methods, paths, headers with values, bodies, ID header, protocol).
	ConfigDigest string `json:"config_digest"`
}

// AttackClock is the client's clock as read when the attack started
// (AttackSummary.Clock), for bounding the offsets between hosts.
type AttackClock struct {
	// WallNs (CLOCK_REALTIME) and MonotonicNs (CLOCK_MONOTONIC) were read
	// back to back at the start: WallNs-MonotonicNs compared between two
	// readings on one host shows a wall-clock step.
	WallNs      int64 `json:"wall_ns"`
	MonotonicNs int64 `json:"monotonic_ns,omitempty"`
	// Source is the kernel's clock source (Linux
	// /sys/devices/system/clocksource/clocksource0/current_clocksource:
	// tsc, kvm-clock, hpet...), when known.
	Source string `json:"source,omitempty"`
	// Synchronized is the kernel's NTP state (adjtimex(2): not
	// TIME_ERROR), MaxErrorNs and EstErrorNs its maximum and estimated
	// error; absent where the OS does not tell.
	Synchronized *bool `json:"synchronized,omitempty"`
	MaxErrorNs   int64 `json:"max_error_ns,omitempty"`
	EstErrorNs   int64 `json:"est_error_ns,omitempty"`
}

// AttackStartAt records a start held until a wall-clock instant
// (`rlbench attack --start-at`).
type AttackStartAt struct {
	// AtNs is the requested instant, unix ns; At is it in RFC 3339 (UTC).
	AtNs int64  `json:"at_ns"`
	At   string `json:"at"`
	// LateNs is the actual start (AttackSummary.StartNs) minus AtNs: how
	// late this client started (negative never; large when warming took
	// longer than WarmAheadNs or the instant had passed).
	LateNs int64 `json:"late_ns"`
	// WarmAheadNs is how long before AtNs warming was to begin.
	WarmAheadNs int64 `json:"warm_ahead_ns"`
}

// AttackSummary describes one finished (or interrupted) attack; attack.Run
// returns it. Attack.Phases holds one per
// attack of a scenario.
type AttackSummary struct {
	// Schema is AttackSummarySchema ("rlbench.attack/v1").
	Schema string `json:"schema"`
	// Config is the attack's effective options.
	Config AttackConfig `json:"config"`
	// StartNs is just before the first request could be sent, unix ns.
	StartNs int64 `json:"start_ns"`
	// EndNs is when the last result was written, unix ns.
	EndNs int64 `json:"end_ns"`
	// Start is StartNs in RFC 3339 with nanoseconds (UTC).
	Start string `json:"start"`
	// End is EndNs in RFC 3339 with nanoseconds (UTC).
	End string `json:"end"`
	// FirstSendNs is the earliest SentNs of the recorded requests, unix ns (0 if none).
	FirstSendNs int64 `json:"first_send_ns"`
	// LastSendNs is the latest SentNs of the recorded requests, unix ns (0 if none).
	LastSendNs int64 `json:"last_send_ns"`
	// SendSpreadNs is LastSendNs - FirstSendNs, ns (0 for fewer than two requests).
	SendSpreadNs int64 `json:"send_spread_ns"`
	// Sent counts IDs attempted (each has one line); NotSent of them never
	// left the client. IDs beyond Sent were never attempted.
	Sent int `json:"sent"`
	// NotSent counts requests recorded with Request.NotSent (issue 10); any
	// makes the attack incomplete.
	NotSent int `json:"not_sent"`
	// Recorded counts evidence lines written; equals Sent unless writing failed.
	Recorded int `json:"recorded"`
	// CodesByTarget counts recorded requests per target name and status code
	// as a decimal string; "0" means no response (including not sent).
	CodesByTarget map[string]map[string]int `json:"codes_by_target"`
	// Resent counts requests written more than once despite the no-replay
	// design (always 0; such lines carry an Error).
	Resent int `json:"resent"`
	// LatencyNs is the distribution of Request.LatencyNs over requests that
	// got a response (issue 14).
	LatencyNs AttackQuantiles `json:"latency_ns"`
	// Burst is set for unpaced attacks, Pacing for paced ones (issue 14).
	Burst  *AttackBurst  `json:"burst,omitempty"`
	Pacing *AttackPacing `json:"pacing,omitempty"`
	// Flows holds one entry per flow of a multi-flow attack (issue 11);
	// absent for a single-flow attack.
	Flows []AttackFlow `json:"flows,omitempty"`
	// Shard identifies a shard of a sharded attack (issue 15).
	Shard *AttackShard `json:"shard,omitempty"`
	// Host is the client's host name (issue 15; absent in older files).
	Host string `json:"host,omitempty"`
	// Node names the machine whose clock the client read when that is not
	// its host name (issue 24): a Kubernetes pod's node (NodeNameEnv, set
	// from the downward API's spec.nodeName) or a Slurm task's node
	// (SlurmNodeEnv); empty otherwise and in older files, where the clock
	// is Host's (ClockName).
	Node string `json:"node,omitempty"`
	// Clock is the client's clock at the start (issue 15).
	Clock *AttackClock `json:"clock,omitempty"`
	// StartAt is set when the start was held until a wall-clock instant.
	StartAt *AttackStartAt `json:"start_at,omitempty"`
	// Complete is true when every ID was sent (none NotSent) and recorded
	// without error.
	Complete bool `json:"complete"`
	// Interrupted is true when the attack was cancelled before it ended.
	Interrupted bool `json:"interrupted"`
	// Error is the error that ended the attack early (write failure), the
	// interruption cause, or the count and first error of requests not sent;
	// empty otherwise.
	Error string `json:"error,omitempty"`
}

// AttackQuantiles summarises a distribution of durations in ns: N values,
// their median, 90th and 99th percentile and maximum. The attack computes
// the percentiles with a log-linear histogram and records bucket upper
// bounds (at most 0.8% above the exact value); Max is exact.
type AttackQuantiles struct {
	// N is the number of values.
	N int `json:"n"`
	// P50, P90 and P99 are percentiles, ns.
	P50 int64 `json:"p50"`
	P90 int64 `json:"p90"`
	P99 int64 `json:"p99"`
	// Max is the largest value, ns.
	Max int64 `json:"max"`
}

// AttackBurst describes the first requests of an unpaced attack, released
// together from a barrier after their connections were opened (TCP and TLS
// handshakes, no HTTP request).
type AttackBurst struct {
	// Requests is how many were released together (the workers).
	Requests int `json:"requests"`
	// WarmConnections counts the connections opened before the release.
	WarmConnections int `json:"warm_connections"`
	// WarmNs is how long opening them took, ns.
	WarmNs int64 `json:"warm_ns"`
	// ReleaseNs is the barrier's release instant, unix ns.
	ReleaseNs int64 `json:"release_ns"`
	// SendNs is the distribution of SentNs-ReleaseNs over the released
	// requests.
	SendNs AttackQuantiles `json:"send_ns"`
	// SpreadNs is the released requests' last minus first SentNs, ns. The
	// arrival spread at the backend is for the receipts to tell.
	SpreadNs int64 `json:"spread_ns"`
}

// AttackPacing describes a paced attack against its intended schedule
// (Request.IntendedNs).
type AttackPacing struct {
	// AchievedPerSec is (sends-1)/(last-first SentNs), requests/s.
	AchievedPerSec float64 `json:"achieved_per_sec"`
	// ErrorNs is SentNs-IntendedNs: how late each send was (never early).
	ErrorNs AttackQuantiles `json:"error_ns"`
	// LatencyFromIntendedNs is the end of each request minus IntendedNs:
	// the latency a client that sent on schedule would have seen
	// (coordinated omission).
	LatencyFromIntendedNs AttackQuantiles `json:"latency_from_intended_ns"`
	// WorkersPeak is how many workers were started.
	WorkersPeak int `json:"workers_peak"`
	// WorkersBound is the bound at the end: AttackConfig.Workers (rate x 10
	// ms, at least 16), raised once the first 200 latencies are known to
	// rate x 4 x their mean, SizingLatencyNs.
	WorkersBound int `json:"workers_bound"`
	// SizingLatencyNs is that mean, ns (0 until known, or with an explicit
	// concurrency).
	SizingLatencyNs int64 `json:"sizing_latency_ns"`
	// WarmConnections counts the connections opened before the start.
	WarmConnections int `json:"warm_connections"`
	// DirectSends counts the requests written by the scheduler itself, at
	// their intended time, on a warm HTTP/1.1 connection whose worker was
	// waiting for the response (no goroutine hand-off between the due time
	// and the write); the others went through a worker. 0 for HTTP/2 and
	// without keep-alive; omitted when 0 (and by earlier releases).
	DirectSends int `json:"direct_sends,omitempty"`
	// ReliefSends counts the direct sends written by the relief
	// dispatcher: IDs still unclaimed 200 µs after their intended time,
	// while the dispatcher was late waking up (attack package doc, "Fixed
	// rates"). Omitted when 0 (and by earlier releases).
	ReliefSends int `json:"relief_sends,omitempty"`
}

// Attack is attack.json: the summaries of a scenario's attacks (one per
// plan step; `rlbench attack` writes one) and their union. It is written
// last, after requests.jsonl is closed: a missing attack.json means the
// attack did not finish.
//
// Earlier files (schema AttackSummarySchema) load too: the runner's
// (this shape) and `rlbench attack`'s (a bare AttackSummary, read as a file
// with that one phase).
type Attack struct {
	// Schema is AttackSchema ("rlbench.attack/v2").
	Schema string `json:"schema"`
	// Complete is true when every attack completed and its evidence was written.
	Complete bool `json:"complete"`
	// Interrupted is true when the run was cancelled.
	Interrupted bool `json:"interrupted"`
	// Error is why the scenario's attacks ended early, if they did.
	Error string `json:"error,omitempty"`
	// Sent sums the phases' Sent.
	Sent int `json:"sent"`
	// Recorded sums the phases' Recorded.
	Recorded int `json:"recorded"`
	// StartNs is the earliest phase start, unix ns.
	StartNs int64 `json:"start_ns"`
	// EndNs is the latest phase end, unix ns.
	EndNs int64 `json:"end_ns"`
	// Phases holds one summary per attack, in order.
	Phases []AttackSummary `json:"phases"`
}

// NewAttack returns the attack file of the summaries (complete until one is not).
func NewAttack(phases ...*AttackSummary) *Attack {
	a := &Attack{Schema: AttackSchema, Complete: true, Phases: []AttackSummary{}}
	for _, s := range phases {
		a.Add(s)
	}
	return a
}

// Add appends a phase and folds it into the totals.
func (a *Attack) Add(s *AttackSummary) {
	a.Phases = append(a.Phases, *s)
	a.Sent += s.Sent
	a.Recorded += s.Recorded
	if a.StartNs == 0 || s.StartNs < a.StartNs {
		a.StartNs = s.StartNs
	}
	a.EndNs = max(a.EndNs, s.EndNs)
	if !s.Complete {
		a.Complete = false
	}
	if s.Interrupted {
		a.Interrupted = true
	}
	if a.Error == "" && s.Error != "" {
		a.Error = s.Error
	}
}

// DecodeAttack decodes attack.json in any shape written so far (see
// Attack). Unknown fields are ignored, as in every evidence file. A schema
// ID other than AttackSchema or AttackSummarySchema (a later release's), a
// phase's other than AttackSummarySchema, "phases": null, a rate that
// ParseAttackRate refuses and a code of
// codes_by_target that is not "0" or a status code are errors naming the
// line. A file whose counts are negative or contradict each other decodes,
// with a *CountError naming the fields and the line of the first: it is
// incomplete evidence (issue 27).
func DecodeAttack(b []byte) (*Attack, error) {
	var probe struct {
		Schema string           `json:"schema"`
		Phases *json.RawMessage `json:"phases"`
		Config *json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, err
	}
	if probe.Phases == nil && probe.Config != nil {
		// `rlbench attack` before v2: one bare summary.
		if err := checkAttackSchema("schema", probe.Schema, AttackSummarySchema); err != nil {
			return nil, atKeyLine(b, "schema", err)
		}
		var s AttackSummary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		a := &Attack{Schema: s.Schema, Complete: s.Complete, Interrupted: s.Interrupted, Error: s.Error, Sent: s.Sent,
			Recorded: s.Recorded, StartNs: s.StartNs, EndNs: s.EndNs, Phases: []AttackSummary{s}}
		if err := checkRate("config.rate", s.Config.Rate); err != nil {
			return nil, atKeyLine(b, "config.rate", err)
		}
		if kp, err := checkCodeKeys("codes_by_target", s.CodesByTarget); err != nil {
			return nil, atKeyLine(b, kp, err)
		}
		return a, countErrorAt(b, a.checkCounts(), "phases[0].")
	}
	if err := checkAttackSchema("schema", probe.Schema, AttackSchema, AttackSummarySchema); err != nil {
		return nil, atKeyLine(b, "schema", err)
	}
	var a Attack
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	if a.Phases == nil && bytes.Contains(b, []byte(`"phases"`)) {
		if line := jsonline.PathLine(b, "phases"); line > 0 {
			return nil, fmt.Errorf("line %d: phases: null, want a list of the attacks' summaries", line)
		}
	}
	if err := a.check(b); err != nil {
		return nil, err
	}
	return &a, countErrorAt(b, a.checkCounts(), "")
}

// Manifest is manifest.json at the top of a run directory, written before
// the first scenario runs and again when the run ends.
type Manifest struct {
	// Schema is ManifestSchema ("rlbench.manifest/v1").
	Schema string `json:"schema"`
	// RlbenchVersion is rlbench's module version ("(devel)" in a checkout).
	RlbenchVersion string `json:"rlbench_version"`
	// GoVersion is the Go runtime that ran the plan.
	GoVersion string `json:"go_version"`
	// Plan is the plan's name.
	Plan string `json:"plan"`
	// PlanDigest is "sha256:<hex>" of the plan file.
	PlanDigest string `json:"plan_digest,omitempty"`
	// Host is the machine's host name.
	Host string `json:"host"`
	// Start is when the run began, RFC 3339 with nanoseconds (UTC).
	Start string `json:"start"`
	// End is when the run ended; empty while it runs.
	End string `json:"end,omitempty"`
	// Tools maps a tool name to the output of the plan's version command.
	Tools map[string]string `json:"tools,omitempty"`
	// Scenarios lists the plan's scenario names, in order.
	Scenarios []string `json:"scenarios"`
	// ScenarioDirs lists every scenario/repeat directory the plan calls for,
	// relative to the run directory ("NN-<slug>/<repeat>"): one that is
	// absent did not run.
	ScenarioDirs []string `json:"scenario_dirs"`
	// Interrupted is true when the run was stopped by a signal.
	Interrupted bool `json:"interrupted,omitempty"`
}

// RLSHistogram is a Prometheus histogram's sum and count. For
// ratelimit_service_response_time_seconds of the pinned envoyproxy/ratelimit
// the values are milliseconds despite the name (src/stats/prom/prometheus_sink.go).
type RLSHistogram struct {
	// Sum is the histogram's _sum.
	Sum float64 `json:"sum"`
	// Count is the histogram's _count (observations).
	Count uint64 `json:"count"`
}

// RLSPrometheus is the recorded part of one parsed envoyproxy/ratelimit
// /metrics page (USE_PROMETHEUS=true; src/stats/prom); collect/rls.PromSnapshot
// embeds it.
type RLSPrometheus struct {
	// Name is the page's source (URL or file).
	Name string `json:"name"`
	// ShouldRateLimitErrors maps err_type (redis_error, service_error) to
	// ratelimit_service_should_rate_limit_error.
	ShouldRateLimitErrors map[string]float64 `json:"should_rate_limit_errors"`
	// TotalRequests maps grpc_method to ratelimit_service_total_requests (gRPC only).
	TotalRequests map[string]float64 `json:"total_requests"`
	// ConfigLoadSuccess is ratelimit_service_config_load_success.
	ConfigLoadSuccess float64 `json:"config_load_success"`
	// ConfigLoadError is ratelimit_service_config_load_error.
	ConfigLoadError float64 `json:"config_load_error"`
	// GlobalShadowMode is ratelimit_service_global_shadow_mode.
	GlobalShadowMode float64 `json:"global_shadow_mode"`
	// DomainNotFound maps a domain to ratelimit_service_rate_limit_<domain>_domain_not_found.
	DomainNotFound map[string]float64 `json:"domain_not_found"`
	// ResponseTime maps grpc_method to ratelimit_service_response_time_seconds (ms, see RLSHistogram).
	ResponseTime map[string]RLSHistogram `json:"response_time"`
	// RedisPool maps cx_active, cx_total, cx_local_close, … to ratelimit_redis_pool_<name>.
	RedisPool map[string]float64 `json:"redis_pool"`
}

// RLSKeyCounters are the per-rule counters of envoyproxy/ratelimit
// (src/stats/manager_impl.go: ratelimit.service.rate_limit.<domain>.<keypath>.*),
// in hits (hits_addend), not calls.
type RLSKeyCounters struct {
	// TotalHits counts every hit of the rule.
	TotalHits float64 `json:"total_hits"`
	// WithinLimit counts hits answered OK.
	WithinLimit float64 `json:"within_limit"`
	// OverLimit counts hits answered OVER_LIMIT (shadow mode included).
	OverLimit float64 `json:"over_limit"`
	// NearLimit counts hits above the near-limit ratio (NEAR_LIMIT_RATIO, 0.8).
	NearLimit float64 `json:"near_limit"`
	// ShadowMode counts over-limit hits let through by shadow mode.
	ShadowMode float64 `json:"shadow_mode"`
	// OverLimitWithLocalCache counts over-limit hits answered from the local cache (no Redis call).
	OverLimitWithLocalCache float64 `json:"over_limit_with_local_cache"`
}

// RLSCounters is the RLS-level view of one stats source (a Prometheus scrape,
// summed statsd deltas, a stat dump), keyed like the statsd names;
// collect/rls.Counters is this type.
type RLSCounters struct {
	// Source names the stats source (URL or file).
	Source string `json:"source"`
	// Keys maps "<domain>.<keypath>" (e.g. "inventory.tenant_lab"; from
	// Prometheus: domain + "." + key1 [+ "." + key2]) to its counters.
	Keys map[string]RLSKeyCounters `json:"keys"`
	// RedisErrors is ratelimit.service.call.should_rate_limit.redis_error (calls, not hits; not per key).
	RedisErrors float64 `json:"redis_errors"`
	// ServiceErrors is ratelimit.service.call.should_rate_limit.service_error (calls).
	ServiceErrors float64 `json:"service_errors"`
	// TotalRequests is ratelimit_server.ShouldRateLimit.total_requests (gRPC only).
	TotalRequests float64 `json:"total_requests"`
	// ConfigLoadSuccess is ratelimit.service.config_load_success.
	ConfigLoadSuccess float64 `json:"config_load_success"`
	// ConfigLoadError is ratelimit.service.config_load_error.
	ConfigLoadError float64 `json:"config_load_error"`
	// DomainNotFound maps a domain to ratelimit.service.rate_limit.<domain>.domain_not_found.
	DomainNotFound map[string]float64 `json:"domain_not_found,omitempty"`
}

// RLSMetrics is rls/metrics.<label>.json: one scrape of the real RLS's
// Prometheus /metrics. Counters are totals since the RLS process started
// (they restart at 0 with the process); Process tells scrapes of different
// processes apart.
type RLSMetrics struct {
	// Schema is RLSMetricsSchema ("rlbench.rls-metrics/v1").
	Schema string `json:"schema"`
	// Label is "before", "after", or "pre-<n>-<stop|restart>-rls" for the scrape
	// taken just before the n-th stop or restart of the RLS.
	Label string `json:"label"`
	// TimeNs is when the scrape used was taken, unix ns.
	TimeNs int64 `json:"time_ns"`
	// URL is the /metrics URL scraped.
	URL string `json:"url,omitempty"`
	// PID is the RLS process scraped.
	PID int `json:"pid,omitempty"`
	// Process numbers the RLS processes of the scenario (1 = first start,
	// incremented at each start or restart; 0 = unknown).
	Process int `json:"process"`
	// Stable is true when the counters stayed unchanged for more than one
	// stats flush interval before the scrape, so no decision was still on
	// its way to the sink.
	Stable bool `json:"stable"`
	// Error says why no scrape is available (RLS down, parse error); the
	// other fields are then empty. Load also sets it when the file does not decode.
	Error string `json:"error,omitempty"`
	// Prometheus is the parsed page.
	Prometheus *RLSPrometheus `json:"prometheus,omitempty"`
	// Counters is the page's RLS-level view, keyed "<domain>.<key1>[.<key2>]".
	Counters *RLSCounters `json:"counters,omitempty"`
}

// decodeRLSMetrics reads rls/metrics.<label>.json: an RLSMetrics or, from an
// older `rlbench collect prometheus`, a bare RLSCounters (then Stable, no
// time nor process). A file that does not decode gives an RLSMetrics whose
// Error names it.
func decodeRLSMetrics(path, label string) RLSMetrics {
	b, err := boundedio.ReadRegular(context.Background(), path, MaxDocumentBytes)
	var m RLSMetrics
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err == nil && m.Counters == nil {
		var c RLSCounters
		if json.Unmarshal(b, &c) == nil && c.Keys != nil {
			m = RLSMetrics{Label: label, Stable: true, Counters: &c}
		}
	}
	if err != nil {
		return RLSMetrics{Label: label, Error: fmt.Sprintf("%s: %v", path, JSONError(b, err))}
	}
	return m
}

// JSONError adds the line number to a syntax error, or to a type error
// whose offset the decoder gave, of a whole-file JSON document b.
func JSONError(b []byte, err error) error { return jsonline.Wrap(b, err) }

// WriteJSONFile writes v as indented JSON with a final newline to path,
// creating its directory.
func WriteJSONFile(path string, v any) error {
	if err := Mkdir(path); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteNotRun writes the NOT_RUN marker with its reason into the scenario directory d.
func WriteNotRun(d Dir, reason string) error {
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return err
	}
	return safefile.WriteFile(d.NotRun(), []byte(strings.TrimRight(reason, "\n")+"\n"), 0o644)
}

// WriteStats saves one Envoy admin /stats snapshot of proxy under d/stats/
// (proxy and label must pass CheckName):
// the raw body as <proxy>.<label><RawStatsExt(format)> (when raw is not
// empty) and the parsed snapshot (evidence/envoyrec.Snapshot, or any value of
// its JSON shape) as <proxy>.<label>.json (when snap is not nil).
func WriteStats(d Dir, proxy, label, format string, raw []byte, snap any) error {
	ext, ok := RawStatsExt(format)
	if !ok {
		return fmt.Errorf("stats format %q: want text, json or prometheus", format)
	}
	if err := CheckName("stats proxy", proxy); err != nil {
		return err
	}
	if err := CheckName("stats label", label); err != nil {
		return err
	}
	if err := safefile.MkdirAll(string(d), d.Stats()); err != nil {
		return err
	}
	if len(raw) > 0 {
		if err := safefile.WriteFile(d.StatsSnapshot(proxy, label, ext), raw, 0o644); err != nil {
			return err
		}
	}
	if snap == nil {
		return nil
	}
	return WriteJSONFile(d.StatsSnapshot(proxy, label, ".json"), snap)
}

// WriteRLSMetrics saves one RLS /metrics scrape under d/rls/: the raw page as
// metrics.<label>.prom (when raw is not empty) and m as metrics.<label>.json
// (m.Label must pass CheckName).
func WriteRLSMetrics(d Dir, m *RLSMetrics, raw []byte) error {
	if err := CheckName("rls metrics label", m.Label); err != nil {
		return err
	}
	if err := safefile.MkdirAll(string(d), d.RLS()); err != nil {
		return err
	}
	if len(raw) > 0 {
		if err := safefile.WriteFile(d.RLSMetrics(m.Label, ".prom"), raw, 0o644); err != nil {
			return err
		}
	}
	return WriteJSONFile(d.RLSMetrics(m.Label, ".json"), m)
}

// rlsMetricsFiles lists d/rls/metrics.*.json with their labels, sorted by name.
func rlsMetricsFiles(d Dir) (paths, labels []string) {
	ps, _ := d.Glob(RLSDir + "/" + metricsPrefix + "*.json")
	for _, p := range ps {
		paths = append(paths, p)
		labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), metricsPrefix), ".json"))
	}
	return paths, labels
}

// CreateAccessLog creates (truncating) d/accesslog/<proxy>.log and its
// directory, for a proxy's access log; proxy must pass CheckName.
func CreateAccessLog(d Dir, proxy string) (*os.File, error) {
	if err := CheckName("access log proxy", proxy); err != nil {
		return nil, err
	}
	p := d.AccessLog(proxy)
	if err := d.MkdirFor(p); err != nil {
		return nil, err
	}
	return safefile.Create(p, 0o666)
}
