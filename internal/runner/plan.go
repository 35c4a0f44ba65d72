// Package runner executes rlbench plans: for each scenario and repeat it
// starts fresh lab parts (or checks external targets), snapshots proxy stats,
// runs the scenario's steps (attacks and timed faults), writes the evidence
// directory, and leaves the judging to package analyze.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/internal/senders"
	"github.com/rlbench/rlbench/internal/yamlguard"
	vegeta "github.com/tsenart/vegeta/v12/lib"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// MaxRepeat is the most repeats of one scenario (its repeat:), and MaxRuns
// the most scenario runs of a plan (its scenarios times their repeats):
// each run is a directory of evidence and a fresh lab, and manifest.json
// lists them all, so MaxRuns is evidence.MaxRunScenarios (10,000), the
// most a manifest.json lists that analyze reads. A plan over either is
// refused when it loads.
const (
	MaxRepeat = 1000
	MaxRuns   = evidence.MaxRunScenarios
)

// PlanSchema names the plan format's JSON Schema,
// schemas/plan.v1.schema.json (a plan is YAML; the schema describes its
// JSON form, as sigs.k8s.io/yaml converts it). Plan files carry no schema
// field.
const PlanSchema = "rlbench.plan/v1"

// Plan is a YAML plan file (`rlbench run PLAN.yaml`).
type Plan struct {
	// Name labels the run in manifest.json.
	Name string `json:"name"`
	// Root is where run directories are created (relative to the working directory); default: rlbench's runs
	// directory outside the working tree ($RLBENCH_HOME/runs, else ~/.local/state/rlbench/runs; rlbench run --help).
	Root string `json:"root,omitempty"`
	// Tools maps a tool name to a command that prints its version
	// (e.g. envoy: "envoy --version"); the output goes into manifest.json.
	// Each command runs with sh -c, like exec steps and external setup and
	// teardown: a plan is code, to be reviewed as a script before it runs.
	Tools map[string]string `json:"tools,omitempty"`
	// Scenarios run in order (at least one, or a conformance section);
	// their names must be unique.
	Scenarios []ScenarioPlan `json:"scenarios,omitempty"`
	// Conformance declares limiters and traffic shapes once; each limiter
	// × shape pair is a scenario run after Scenarios (ConformancePlan).
	// Loading the plan expands it into Scenarios and leaves it nil.
	Conformance *ConformancePlan `json:"conformance,omitempty"`
	// RemoteWrite, when set, pushes live metrics to a Prometheus remote
	// write receiver while the run goes (RemoteWritePlan).
	RemoteWrite *RemoteWritePlan `json:"remote_write,omitempty"`
}

// ScenarioPlan is one scenario: the parts it runs on, its steps and what it expects.
type ScenarioPlan struct {
	// Name names the scenario in reports and its directory NN-<slug>/<repeat> (required).
	Name string `json:"name"`
	// Description says what the scenario shows (copied into scenario.json).
	Description string `json:"description,omitempty"`
	// Repeat runs the scenario K times, each on fresh parts; default 1, at most MaxRepeat (1000).
	Repeat int `json:"repeat,omitempty"`
	// IntendedLimit is the admissions meant for the whole backend, per run (a number: 5) or per window of
	// fixed length aligned to the unix epoch ({requests: 5, per: 1m}, or "5/1m"; evidence.IntendedLimit);
	// over-admission is measured against it.
	IntendedLimit *evidence.IntendedLimit `json:"intended_limit,omitempty"`
	// Lab runs the scenario on the embedded lab (fresh proxies per repeat).
	Lab *LabPlan `json:"lab,omitempty"`
	// External runs it on proxies that already exist.
	External *ExternalPlan `json:"external,omitempty"`
	// Attack is shorthand for a single attack step.
	Attack *AttackPlan `json:"attack,omitempty"`
	// Steps run in order: attacks and faults.
	Steps []Step `json:"steps,omitempty"`
	// Expect is what the scenario must show to PASS.
	Expect ExpectPlan `json:"expect"`
	// Classify are classification rules for the targets' responses
	// (evidence.ClassRule: status + header/body → class), tried before the
	// built-in Envoy marks; they go into scenario.json. Use them for a proxy
	// that is not Envoy: nginx's limit_req_status 503, HAProxy's 429.
	Classify []evidence.ClassRule `json:"classify,omitempty"`
	// Limiters declare the limiters on the requests' path for the model
	// checker (evidence.Limiter, in request order). The lab's are written
	// without them; give them for external targets.
	Limiters []evidence.Limiter `json:"limiters,omitempty"`
	// Simulate configures `rlbench simulate` (arrivals, limiters the lab
	// cannot build, the summary grid); the lab ignores it.
	Simulate *SimulatePlan `json:"simulate,omitempty"`
	// Labels place the scenario in the conformance matrix (limiter and
	// shape, both required; evidence.Labels), copied into scenario.json.
	// A conformance section's scenarios get theirs from their names.
	Labels *evidence.Labels `json:"labels,omitempty"`
}

// LabPlan configures the embedded lab of a scenario.
type LabPlan struct {
	// Proxies is the number of lab proxies (proxy-a, proxy-b, ...); default 2.
	Proxies int `json:"proxies,omitempty"`
	// Local gives every proxy Envoy's local rate limit filter (one token
	// bucket per proxy): the lab proxy's own configuration type.
	Local *proxy.LocalRateLimit `json:"local,omitempty"`
	// Global gives every proxy Envoy's rate limit filter, which asks the RLS.
	Global *GlobalPlan `json:"global,omitempty"`
	// RLS configures the rate limit service the global filter calls.
	RLS *RLSPlan `json:"rls,omitempty"`
	// Backend configures the backend: its endpoints and their faults.
	Backend *BackendPlan `json:"backend,omitempty"`
	// Proxy configures every proxy's router (retry policy, timeouts).
	Proxy *ProxyPlan `json:"proxy,omitempty"`
	// Cluster configures every proxy's backend cluster (circuit breakers,
	// outlier detection, panic threshold).
	Cluster *ClusterPlan `json:"cluster,omitempty"`
	// Nginx puts private nginx processes in front of the backend instead of
	// the lab proxies: nginx limit_req and proxy_next_upstream under test
	// (the scenario is NOT_RUN when nginx is not installed).
	Nginx *NginxPlan `json:"nginx,omitempty"`
	// Istio gives the proxies' cluster and route settings as Istio inputs
	// (IstioPlan); cluster and proxy fields the plan sets win over them.
	Istio *IstioPlan `json:"istio,omitempty"`
	// Gateway puts the lab gateway in front of the backend instead of the
	// lab proxies: a limiter of lua (a user's script on a private
	// redis-server), gcra (go-redis/redis_rate) or xrate
	// (golang.org/x/time/rate) under test (a Redis one is NOT_RUN when
	// redis-server is not installed).
	Gateway *GatewayPlan `json:"gateway,omitempty"`
	// HAProxy puts private HAProxy processes with a stick-table rate limit
	// in front of the backend instead of the lab proxies (the scenario is
	// NOT_RUN when haproxy is not installed).
	HAProxy *HAProxyPlan `json:"haproxy,omitempty"`
}

// BackendPlan configures the lab backend.
type BackendPlan struct {
	// Endpoints is the number of backend endpoints (backend-0, ...), each
	// an upstream host of every proxy's cluster; default 1.
	Endpoints int `json:"endpoints,omitempty"`
	// Faults are every endpoint's faults from the start (a fault step can
	// change them while the scenario runs).
	Faults *backend.Faults `json:"faults,omitempty"`
	// Seed seeds the faults' draws; 0 draws one.
	Seed uint64 `json:"seed,omitempty"`
}

// ProxyPlan configures the proxies' router.
type ProxyPlan struct {
	// RetryPolicy is the route's retry_policy: the lab proxy's own type.
	RetryPolicy *proxy.RetryPolicy `json:"retry_policy,omitempty"`
	// Timeout is the route timeout; default 15s.
	Timeout proxy.Duration `json:"timeout,omitempty"`
	// IncludeRequestAttemptCount sends x-envoy-attempt-count upstream.
	IncludeRequestAttemptCount bool `json:"include_request_attempt_count,omitempty"`
	// MaxStreamDuration is the route's max_stream_duration.max_stream_duration:
	// past it (from the request's arrival, retries included) the client
	// gets 408 "downstream duration timeout"; 0: none.
	MaxStreamDuration proxy.Duration `json:"max_stream_duration,omitempty"`
	// IncludeAttemptCountInResponse returns it downstream.
	IncludeAttemptCountInResponse bool `json:"include_attempt_count_in_response,omitempty"`
	// Seed seeds each proxy's random source (back-off jitter, runtime
	// percentages, the round robin start), proxy i getting Seed+i; 0
	// draws one per proxy.
	Seed uint64 `json:"seed,omitempty"`
}

// ClusterPlan configures the proxies' backend cluster.
type ClusterPlan struct {
	// CircuitBreakers are the DEFAULT priority thresholds
	// (circuit_breakers.thresholds[0]): the lab proxy's own type.
	CircuitBreakers *proxy.CircuitBreakers `json:"circuit_breakers,omitempty"`
	// OutlierDetection enables outlier detection over the endpoints: the
	// lab proxy's own type.
	OutlierDetection *proxy.OutlierDetection `json:"outlier_detection,omitempty"`
	// HealthyPanicThreshold is common_lb_config.healthy_panic_threshold in
	// percent (default 50; 0 disables panic routing).
	HealthyPanicThreshold *float64 `json:"healthy_panic_threshold,omitempty"`
	// ConnectTimeout is connect_timeout; default 5s.
	ConnectTimeout proxy.Duration `json:"connect_timeout,omitempty"`
	// MaxRequestsPerConnection is common_http_protocol_options.max_requests_per_connection:
	// an upstream connection closes after that many requests; 0: no limit.
	MaxRequestsPerConnection uint32 `json:"max_requests_per_connection,omitempty"`
}

// GlobalPlan is Envoy's ratelimit filter with its route rate_limits
// actions: the lab proxy's own settings (proxy.GlobalFilter: domain,
// rate_limits, timeout, failure_mode_deny, status_on_error,
// enable_x_ratelimit_headers) and the plan's one-entry form.
type GlobalPlan struct {
	proxy.GlobalFilter
	// Descriptors are the actions of a first rate_limits entry, e.g.
	// {generic_key: {descriptor_key: tenant, descriptor_value: lab}}.
	Descriptors []descriptor.RateLimitAction `json:"descriptors,omitempty"`
}

// Kinds of RLSPlan.Kind.
const (
	// RLSLab is the in-process lab RLS: in-memory counts, a restart loses them.
	RLSLab = "lab"
	// RLSReal is the real envoyproxy/ratelimit on Redis, started from .bin.
	RLSReal = "real"
)

// RLSPlan selects and configures the rate limit service.
type RLSPlan struct {
	// Kind is RLSLab ("lab", in-process, in-memory counts: a restart loses
	// them) or RLSReal ("real", envoyproxy/ratelimit on Redis, started from
	// .bin); default lab.
	Kind string `json:"kind,omitempty"`
	// Config is the envoyproxy/ratelimit YAML config, inline.
	Config string `json:"config"`
	// WindowStart is "aligned" (default, like envoyproxy/ratelimit) or "first-hit" (lab only).
	WindowStart string `json:"window_start,omitempty"`
	// Delay is an artificial delay per lab RLS call (to exceed the proxy's timeout).
	Delay proxy.Duration `json:"delay,omitempty"`
}

// ExternalPlan names proxies that rlbench does not start.
type ExternalPlan struct {
	// Proxies are the targets (at least one).
	Proxies []ExternalProxy `json:"proxies"`
	// ReceiptsURL is the rlbench backend's /_rlbench/receipts, to collect receipts.
	ReceiptsURL string `json:"receipts_url,omitempty"`
	// Setup and Teardown are shell commands run before and after each repeat.
	Setup string `json:"setup,omitempty"`
	// Teardown is the shell command run after each repeat.
	Teardown string `json:"teardown,omitempty"`
}

// ExternalProxy is one existing proxy: its listener URL and Envoy admin URL.
type ExternalProxy struct {
	// Name is the attack target's name in the evidence.
	Name string `json:"name"`
	// URL is the proxy's listener base URL.
	URL string `json:"url"`
	// Admin is the proxy's Envoy admin base URL, for the stats snapshots; without it stats_agree is not checked.
	Admin string `json:"admin,omitempty"`
	// AccessLog is the file this proxy's Envoy access log is written to ($VAR expanded); the lines appended during a scenario are copied to accesslog/<name>.log.
	AccessLog string `json:"access_log,omitempty"`
}

// Step is one attack or one fault.
type Step struct {
	// Name names the step in the evidence (the attack's phase, the fault's name); default "attack<N>" or
	// "<action> <target>".
	Name string `json:"name,omitempty"`
	// Attack fires an attack (exactly one of Attack and Fault is set).
	Attack *AttackPlan `json:"attack,omitempty"`
	// Fault acts on a part.
	Fault *FaultPlan `json:"fault,omitempty"`
}

// FaultPlan is a timed fault action, recorded in faults.jsonl.
type FaultPlan struct {
	// Action is stop, start, restart or exec; for the backend set or clear.
	Action string `json:"action"`
	// Target is rls or redis (lab parts), backend, or a free name for exec.
	Target string `json:"target"`
	// Command is the shell command of an exec action.
	Command string `json:"command,omitempty"`
	// Endpoints are the backend endpoints (indexes of backend-0, ...) a
	// set or clear applies to; all when empty.
	Endpoints []int `json:"endpoints,omitempty"`
	// Faults are what a set installs on them (replacing what they had).
	Faults *backend.Faults `json:"faults,omitempty"`
	// For, on a set, clears it again after this long (recorded as a clear):
	// a fault window; it is also cleared when the attack step it runs in
	// ends. Without it the faults stay until a clear step.
	For proxy.Duration `json:"for,omitempty"`
	// At, when set, fires the fault this long after the start of the next
	// attack step, while it runs; a fault whose offset is not reached before
	// that attack ends does not fire (and is not recorded).
	At proxy.Duration `json:"at,omitempty"`
}

// AttackPlan configures one attack: a single flow (ids, split, rate,
// method, path, headers, body) or, with flows, several at once.
type AttackPlan struct {
	// IDs is the number of request IDs to fire, each once (1..10,000,000,
	// attack.MaxIDs); with flows, set per flow (the flows' ids together at
	// most attack.MaxIDs).
	IDs int `json:"ids,omitempty"`
	// Split distributes the IDs over the targets, in attack.ParseSplit syntax: even (default), sticky,
	// counts=N,N,... or weights=W,W,...
	Split string `json:"split,omitempty"`
	// Seed seeds the weights split's shuffle.
	Seed int64 `json:"seed,omitempty"`
	// Concurrency caps the requests in flight; 0 sends all at once (or as Rate allows).
	Concurrency int `json:"concurrency,omitempty"`
	// Rate paces the sends open-loop; unset sends as fast as possible.
	Rate Rate `json:"rate,omitempty"`
	// Method is the HTTP method; default GET.
	Method string `json:"method,omitempty"`
	// Path is appended to each target URL (it may carry a query).
	Path string `json:"path,omitempty"`
	// Headers are sent with every request (with flows: by every flow, under
	// the flow's own).
	Headers map[string]string `json:"headers,omitempty"`
	// Body is sent with every request (Content-Length set).
	Body string `json:"body,omitempty"`
	// Timeout bounds each request; default 10s. A timed-out request is indeterminate (code 0).
	Timeout proxy.Duration `json:"timeout,omitempty"`
	// NoKeepAlive gives every request its own connection (attack.Options
	// DisableKeepAlives: one Envoy per-connection bucket per request); with
	// flows it applies to all of them.
	NoKeepAlive bool `json:"no_keepalive,omitempty"`
	// Flows run concurrently in this one attack (attack.Flow): they start
	// together and each request line records its flow. With flows, ids,
	// split, seed, concurrency, rate, method, path and body are set per flow;
	// headers here are sent by every flow.
	Flows []FlowPlan `json:"flows,omitempty"`
	// Senders, above 1, runs the attack as that many sender processes of
	// the rlbench executable on this host (internal/senders; `rlbench
	// attack --senders`), each a shard of the IDs with its own warm
	// connections, all released at one instant, so that the burst that
	// lands is wider than one process can send: analyze reports each
	// sender's send and landed widths (arrivals). At most 64 (senders.MaxSenders); not
	// with flows.
	Senders int `json:"senders,omitempty"`
	// Pipeline, above 1, is the HTTP/1.1 pipelining depth (attack.Options
	// Pipeline; `rlbench attack --pipeline`): each connection writes that
	// many consecutive IDs' requests back to back, then reads their
	// responses in order, so a burst reaches the proxy in fewer reads.
	// 0 .. attack.MaxPipeline; not with a rate or no_keepalive.
	Pipeline int `json:"pipeline,omitempty"`
}

// FlowPlan is one flow of an attack (attack.Flow): its IDs are ids
// generated ones, or rate x duration.
type FlowPlan struct {
	// Name names the flow: each request line records it; unique in the attack.
	Name string `json:"name"`
	// IDs is the flow's number of request IDs (at most attack.MaxIDs, rate
	// x duration too); give IDs or Duration.
	IDs int `json:"ids,omitempty"`
	// Duration, with Rate, makes rate x duration IDs (vegeta's -duration).
	Duration proxy.Duration `json:"duration,omitempty"`
	// Rate paces the flow open-loop from the attack's common start; unset
	// sends all its IDs at once.
	Rate Rate `json:"rate,omitempty"`
	// Split distributes the flow's IDs over the targets (attack.ParseSplit syntax).
	Split string `json:"split,omitempty"`
	// Seed seeds the weights split's shuffle.
	Seed int64 `json:"seed,omitempty"`
	// Concurrency caps the flow's requests in flight.
	Concurrency int `json:"concurrency,omitempty"`
	// Method is the flow's HTTP method; default GET.
	Method string `json:"method,omitempty"`
	// Path is appended to each target URL.
	Path string `json:"path,omitempty"`
	// Headers are the flow's request headers (e.g. x-user: A).
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the flow's request body.
	Body string `json:"body,omitempty"`
	// NoKeepAlive gives each of the flow's requests its own connection.
	NoKeepAlive bool `json:"no_keepalive,omitempty"`
}

// ids is the flow's ID count: IDs, or rate x duration (vegeta's count).
func (f *FlowPlan) ids() int {
	if f.IDs > 0 {
		return f.IDs
	}
	return attack.DurationIDs(vegeta.Rate(f.Rate), time.Duration(f.Duration))
}

// ExpectPlan is the scenario's expectation as planned: scenario.json's
// evidence.Expectation, except that receipts_equal_admitted and stats_agree
// default to true (stats_agree only for proxies with an admin URL).
type ExpectPlan struct {
	evidence.Expectation
	// ReceiptsEqualAdmitted requires every admitted ID to have exactly one receipt and no rejected ID to have
	// one; default true.
	ReceiptsEqualAdmitted *bool `json:"receipts_equal_admitted,omitempty"`
	// StatsAgree requires the proxies' counter deltas to agree with the clients; default true for proxies with
	// an admin URL; false turns the comparison off (scenario.json's stats_agree).
	StatsAgree *bool `json:"stats_agree,omitempty"`
}

// Rate is an attack's open-loop rate, written as attack.ParseRate reads it
// (the syntax of `rlbench attack --rate`): "100/1s", "10/100ms", "60/m", or
// a number N of requests per second; "" or 0 mean no pacing.
type Rate vegeta.Rate

// UnmarshalJSON accepts a rate string or a number (per second); a bad rate
// is an error when the plan is loaded.
func (r *Rate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if json.Unmarshal(b, &n) != nil {
			return fmt.Errorf("rate must be a string like \"100/1s\" or a number: %s", b)
		}
		s = n.String()
	}
	v, err := attack.ParseRate(s)
	if err != nil {
		return err
	}
	*r = Rate(v)
	return nil
}

// MarshalJSON writes the rate as attack.FormatRate does ("" for no pacing).
func (r Rate) MarshalJSON() ([]byte, error) { return json.Marshal(attack.FormatRate(vegeta.Rate(r))) }

// ReadPlanFile reads a plan file whole: a regular file of at most
// yamlguard.DefaultMaxBytes (boundedio.ReadRegular refuses FIFOs and devices).
func ReadPlanFile(ctx context.Context, path string) ([]byte, error) {
	return boundedio.ReadRegular(ctx, path, yamlguard.DefaultMaxBytes)
}

// LoadPlan reads (ReadPlanFile) and validates a plan file.
func LoadPlan(path string) (*Plan, error) {
	b, err := ReadPlanFile(context.Background(), path)
	if err != nil {
		return nil, err
	}
	return ParsePlan(path, b)
}

// ParsePlan decodes plan YAML strictly (unknown fields are errors) and
// validates it (every value the run would refuse is refused here, before
// anything starts); errors name the file and, when the field is found in
// the YAML, its line. Before decoding, the YAML is bounded
// by yamlguard.ParseOne (size, nodes with aliases expanded, depth): an alias
// bomb is refused naming the line of the alias, before sigs.k8s.io/yaml
// expands it. A plan is one YAML document: a second one (after "---"),
// which the decoder would silently ignore, is refused naming its line; a
// lone trailing "---" is accepted (yamlguard.ParseOne).
func ParsePlan(name string, data []byte) (*Plan, error) {
	root, err := yamlguard.ParseOne(name, data, yamlguard.Limits{})
	if yamlguard.IsGuard(err) {
		return nil, err
	}
	// A syntax error is left to the decoder below, whose messages name the line.
	var p Plan
	if err := decodeStrict(name, data, root, &p); err != nil {
		return nil, err
	}
	p.setPlanDir(filepath.Dir(name)) // lab.gateway.lua.script is relative to the plan file
	if err := p.validate(); err != nil {
		var pe *planError
		if errors.As(err, &pe) && root != nil {
			if line := nodeLine(root, pe.path); line > 0 {
				return nil, fmt.Errorf("%s: line %d: %w", name, line, err)
			}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}

// decodeStrict decodes data (YAML) strictly into v, a *Plan or *LabPlan;
// root is its yamlguard.Parse tree (nil after a syntax error). Its errors
// name the file and, where it can be found, the line: a type error by its
// path (planTypeError), a value its own UnmarshalJSON refused (a rate, a
// duration, a range: encoding/json does not say which field it was in) by
// its field (valueErrorAt), else the decoder's line.
func decodeStrict[T Plan | LabPlan](name string, data []byte, root *yamlv3.Node, v *T) error {
	if root != nil {
		if path, line, value, ok := nonFinite(root); ok {
			return fmt.Errorf("%s: line %d: %s: %s is not a finite number (a plan's numbers go through JSON, which has no NaN or infinity)", name, line, path, value)
		}
	}
	err := yaml.UnmarshalStrict(data, v)
	if err == nil {
		return nil
	}
	if ute := (*json.UnmarshalTypeError)(nil); errors.As(err, &ute) {
		line, msg := planTypeError(root, ute)
		if line > 0 {
			return fmt.Errorf("%s: line %d: %s", name, line, msg)
		}
		return fmt.Errorf("%s: %s", name, msg)
	}
	if path, line, ok := valueErrorAt(root, reflect.TypeFor[T](), decodeErrorText(err)); ok {
		return fmt.Errorf("%s: line %d: %s: %s", name, line, path, decodeErrorText(err))
	}
	return fmt.Errorf("%s: %s", name, planErrorLine(data, err))
}

// planError is a plan error about the field at path (keys and [index]es
// from the plan's root, e.g. "scenarios[0].steps[1].attack.concurrency");
// ParsePlan names the line of that field. msg is the error as printed.
type planError struct {
	path string
	msg  string
	err  error // what %w wrapped, if anything
}

func (e *planError) Error() string { return e.msg }
func (e *planError) Unwrap() error { return e.err }

// at returns a planError at path whose message is where + ": " + the
// message (format may wrap an error with %w).
func at(path, where, format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	return &planError{path: path, msg: where + ": " + err.Error(), err: errors.Unwrap(err)}
}

// validate checks the plan when it loads and fills the defaults the run
// relies on. Each section checks itself (ScenarioPlan.validate and the
// sections it holds); the plan checks what spans its scenarios: at least
// one, unique names (by their directory, the slug) and at most MaxRuns
// scenario runs. The first error in plan order is returned.
func (p *Plan) validate() error {
	origins, err := p.expandConformance()
	if err != nil {
		return err
	}
	if len(p.Scenarios) == 0 {
		return fmt.Errorf("no scenarios")
	}
	if p.RemoteWrite != nil {
		if err := p.RemoteWrite.validate("remote_write"); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	runs := 0
	for i := range p.Scenarios {
		s := &p.Scenarios[i]
		sp := fmt.Sprintf("scenarios[%d]", i)
		where := fmt.Sprintf("scenarios[%d] (%s)", i, s.Name)
		o, expanded := origins[i]
		if expanded {
			where = fmt.Sprintf("conformance (%s)", s.Name)
		}
		if err := p.validateScenario(s, sp, where, seen, MaxRuns-runs); err != nil {
			if expanded {
				return conformancePath(err, sp, o)
			}
			return err
		}
		runs += s.Repeat
	}
	return nil
}

// validateScenario checks scenario s at path sp: its name (unique by its
// slug among seen), its labels, then the rest (ScenarioPlan.validate).
func (p *Plan) validateScenario(s *ScenarioPlan, sp, where string, seen map[string]bool, runsLeft int) error {
	if err := s.validateName(sp); err != nil {
		return err
	}
	if seen[slug(s.Name)] {
		return at(sp+".name", where, "duplicate scenario name")
	}
	seen[slug(s.Name)] = true
	if s.Labels != nil {
		if err := s.Labels.Check("labels"); err != nil {
			return at(sp+".labels", where, "%v", err)
		}
	}
	return s.validate(sp, where, runsLeft)
}

// validateName checks the scenario's name: required, and a label whose
// directory is its slug (never a path).
func (s *ScenarioPlan) validateName(sp string) error {
	if s.Name == "" {
		return at(sp, sp, "name is required")
	}
	if slug(s.Name) == "" || strings.ContainsFunc(s.Name, unicode.IsControl) {
		return at(sp+".name", sp, "name %q: want a label with letters or digits and no control characters", s.Name)
	}
	return nil
}

// validate checks one scenario (but its name) at path sp, where prefixing
// the messages, in this order: its shape (lab or external, attack or
// steps), repeat (1..MaxRepeat, and at most runsLeft runs), intended_limit,
// lab.proxies, the external section, the steps, the lab section, expect,
// classify, limiters and simulate. It fills the defaults: the attack
// shorthand becomes one step, repeat 1, the lab's proxies.
func (s *ScenarioPlan) validate(sp, where string, runsLeft int) error {
	if (s.Lab == nil) == (s.External == nil) {
		return at(sp, where, "exactly one of lab or external is required")
	}
	if s.Attack != nil && len(s.Steps) > 0 {
		return at(sp+".attack", where, "give attack or steps, not both")
	}
	stepPath := func(j int) string { return fmt.Sprintf("%s.steps[%d]", sp, j) }
	if s.Attack != nil {
		s.Steps = []Step{{Name: "attack", Attack: s.Attack}}
		s.Attack = nil
		stepPath = func(int) string { return sp } // the shorthand: <sp>.attack
	}
	if s.Repeat < 0 || s.Repeat > MaxRepeat {
		return at(sp+".repeat", where, "repeat must be 1..%d (or absent), not %d", MaxRepeat, s.Repeat)
	}
	if max(s.Repeat, 1) > runsLeft {
		return at(sp+".repeat", where, "the plan's scenarios and repeats add up to more than %d scenario runs", MaxRuns)
	}
	if s.IntendedLimit != nil && s.IntendedLimit.Requests < 0 {
		return at(sp+".intended_limit", where, "intended_limit must be >= 0, not %d", s.IntendedLimit.Requests)
	}
	if l := s.Lab; l != nil {
		if err := l.validateProxies(sp+".lab", where); err != nil {
			return err
		}
	}
	if e := s.External; e != nil {
		if err := e.validate(sp+".external", where); err != nil {
			return err
		}
	}
	if err := s.validateSteps(sp, where, stepPath); err != nil {
		return err
	}
	if s.Repeat == 0 {
		s.Repeat = 1
	}
	if l := s.Lab; l != nil {
		if err := l.validateSection(sp+".lab", where); err != nil {
			return err
		}
		if err := s.validateNginxFaults(stepPath, where); err != nil {
			return err
		}
	}
	if err := s.Expect.validate(sp, where); err != nil {
		return err
	}
	if _, err := evidence.NewClassifier(s.Classify); err != nil {
		return at(sp+".classify", where, "%w", err)
	}
	if err := validateLimiters(s.Limiters, sp, where, "limiters"); err != nil {
		return err
	}
	if sim := s.Simulate; sim != nil {
		return sim.validate(sp+".simulate", where)
	}
	return nil
}

// validateSteps checks the scenario's steps (sp is the scenario's path),
// each at stepPath(j): each is one attack (AttackPlan.validate, against the
// scenario's targets) or one fault (FaultPlan.validate); at least one is an
// attack, and a fault with at: or for: has an attack step after it.
// Unnamed steps are named attack<N> (the N-th attack) or
// "<action> <target>".
func (s *ScenarioPlan) validateSteps(sp, where string, stepPath func(int) string) error {
	attacks := 0
	for j := range s.Steps {
		st := &s.Steps[j]
		jp := stepPath(j)
		sw := fmt.Sprintf("%s: steps[%d]", where, j)
		if jp == sp {
			sw = where // the attack shorthand: the plan has no steps to name
		}
		if (st.Attack == nil) == (st.Fault == nil) {
			return at(jp, sw, "exactly one of attack or fault")
		}
		if st.Attack != nil {
			attacks++
			if err := st.Attack.validate(s, jp+".attack", sw); err != nil {
				return err
			}
			if st.Name == "" {
				st.Name = fmt.Sprintf("attack%d", attacks)
			}
			continue
		}
		if err := st.Fault.validate(s.Lab, jp+".fault", sw); err != nil {
			return err
		}
		if st.Name == "" {
			st.Name = st.Fault.Action + " " + st.Fault.Target
		}
	}
	if attacks == 0 {
		return at(sp, where, "no attack")
	}
	for j := len(s.Steps) - 1; j >= 0 && s.Steps[j].Attack == nil; j-- {
		sw := fmt.Sprintf("%s: steps[%d]", where, j)
		if f := s.Steps[j].Fault; f != nil && f.At > 0 {
			return at(stepPath(j)+".fault.at", sw, "a fault with at: needs an attack step after it")
		}
		if f := s.Steps[j].Fault; f != nil && f.For > 0 {
			return at(stepPath(j)+".fault.for", sw, "a fault with for: needs an attack step after it")
		}
	}
	return nil
}

// validateNginxFaults refuses a fault on the RLS or Redis in a scenario
// whose lab is lab.nginx, which has neither, or lab.gateway, which has no
// RLS and a Redis only for its lua and gcra limiters.
func (s *ScenarioPlan) validateNginxFaults(stepPath func(int) string, where string) error {
	format, redis := "a scenario with lab.nginx has no %s", false
	switch {
	case s.Lab.Gateway != nil:
		format, redis = "a scenario with lab.gateway has no %s (only its lua and gcra limiters run on one)", s.Lab.Gateway.onRedis()
	case s.Lab.HAProxy != nil:
		format = "a scenario with lab.haproxy has no %s"
	case s.Lab.Nginx == nil:
		return nil
	}
	for j, st := range s.Steps {
		if f := st.Fault; f != nil && (f.Target == "rls" || f.Target == "redis" && !redis) {
			return at(stepPath(j)+".fault.target", fmt.Sprintf("%s: steps[%d]", where, j), format, f.Target)
		}
	}
	return nil
}

// validate checks one fault step at path fp, where prefixing the messages:
// its action and target, an exec's command, a backend set or clear
// (validateBackend, against the scenario's lab section lp, nil for an
// external scenario), at and for >= 0.
func (f *FaultPlan) validate(lp *LabPlan, fp, where string) error {
	switch f.Action {
	case "stop", "start", "restart":
		if f.Target != "rls" && f.Target != "redis" {
			return at(fp+".target", where, "fault target must be rls or redis, not %q", f.Target)
		}
	case "exec":
		if f.Command == "" {
			return at(fp, where, "exec needs a command")
		}
	case evidence.ActionSet, evidence.ActionClear:
		if err := f.validateBackend(lp, fp, where); err != nil {
			return err
		}
	default:
		return at(fp+".action", where, "fault action must be stop, start, restart, exec, set or clear, not %q", f.Action)
	}
	if f.At < 0 {
		return at(fp+".at", where, "at must be >= 0, not %s", time.Duration(f.At))
	}
	if f.For < 0 {
		return at(fp+".for", where, "for must be >= 0, not %s", time.Duration(f.For))
	}
	return nil
}

// validateBackend checks a backend fault (set or clear): target backend,
// a lab scenario (lp not nil), faults on a set and none (nor for) on a
// clear, the faults (backend.Faults.Validate), and endpoints that the lab
// has (lab.backend.endpoints, default 1).
func (f *FaultPlan) validateBackend(lp *LabPlan, fp, where string) error {
	if f.Target != "backend" {
		return at(fp+".target", where, "%s applies to target backend, not %q", f.Action, f.Target)
	}
	if lp == nil {
		return at(fp, where, "backend faults need a lab scenario")
	}
	if f.Action == evidence.ActionSet && f.Faults == nil {
		return at(fp, where, "set needs faults")
	}
	if f.Action == evidence.ActionClear && (f.Faults != nil || f.For > 0) {
		return at(fp, where, "clear takes no faults or for")
	}
	if f.Faults != nil {
		if err := f.Faults.Validate(); err != nil {
			return at(fp+".faults", where, "%v", err)
		}
	}
	n := 1
	if lp.Backend != nil && lp.Backend.Endpoints > 0 {
		n = lp.Backend.Endpoints
	}
	for _, e := range f.Endpoints {
		if e < 0 || e >= n {
			return at(fp+".endpoints", where, "no backend endpoint %d (the lab has %d)", e, n)
		}
	}
	return nil
}

// validateProxies checks lab.proxies at the lab section's path lp and
// fills its default (LabPlan.checkProxies), before the steps are checked
// against the targets.
func (l *LabPlan) validateProxies(lp, where string) error {
	if err := l.checkProxies(); err != nil {
		return at(lp+".proxies", where, "%w", err)
	}
	return nil
}

// validateSection checks the rest of the lab section at path lp, as
// `rlbench lab -f` does (LabPlan.checkSection).
func (l *LabPlan) validateSection(lp, where string) error {
	if field, err := l.checkSection(); err != nil {
		return at(strings.TrimSuffix(lp+"."+field, "."), where, "%w", err)
	}
	return nil
}

// validate checks the scenario's expect section (sp is the scenario's
// path): the counts (evidence.Expectation.CheckCounts), then
// backend_peak, amplification and limit_req_status.
func (e *ExpectPlan) validate(sp, where string) error {
	if len(e.Classes) == 0 {
		e.Classes = nil // "classes: {}" bounds no class: the plan is the one without it (and writes back as such)
	}
	if field, err := e.CheckCounts(); err != nil {
		return at(sp+"."+field, where, "%w", err)
	}
	if err := validateBurstExpect(&e.Expectation); err != nil {
		return at(sp+".expect", where, "%w", err)
	}
	return nil
}

// validate checks an external section: 1..evidence.MaxScenarioProxies
// proxies named by evidence.CheckName (their names become
// stats/<name>.<label>.json and accesslog/<name>.log), unique, with http(s) URLs (a user:password@ is allowed: the attack sends
// it as basic auth and evidence records it redacted).
func (e *ExternalPlan) validate(ep, where string) error {
	if len(e.Proxies) == 0 {
		return at(ep+".proxies", where, "external.proxies is empty")
	}
	if err := evidence.CheckScenarioProxies("external.proxies", len(e.Proxies)); err != nil { // analyze would refuse scenario.json
		return at(ep+".proxies", where, "%v", err)
	}
	names := map[string]bool{}
	for k, p := range e.Proxies {
		pp := fmt.Sprintf("%s.proxies[%d]", ep, k)
		field := fmt.Sprintf("external.proxies[%d].name", k)
		if err := evidence.CheckName(field, p.Name); err != nil {
			return at(pp+".name", where, "%v", err)
		}
		if names[p.Name] {
			return at(pp+".name", where, "%s %q: duplicate proxy name", field, p.Name)
		}
		names[p.Name] = true
		for _, f := range []struct{ key, url string }{{"url", p.URL}, {"admin", p.Admin}} {
			if f.url == "" && f.key == "admin" {
				continue
			}
			u, err := url.Parse(f.url)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return at(pp+"."+f.key, where, "external.proxies[%d].%s %q: want http(s)://host[:port][/prefix]", k, f.key, evidence.RedactText(f.url))
			}
		}
	}
	if e.ReceiptsURL != "" {
		u, err := url.Parse(e.ReceiptsURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return at(ep+".receipts_url", where, "external.receipts_url %q: want http(s)://host[:port]/_rlbench/receipts", evidence.RedactText(e.ReceiptsURL))
		}
	}
	return nil
}

// validate checks one attack step: its shape (ids, or flows each with ids
// or rate x duration, unique names) and, with the attack's own rules, so
// that what attack.Run would refuse stops the plan when it is loaded,
// before any part starts: ids > 0, concurrency and timeout >= 0, the
// method, path and headers (attack.CheckRequest), the split against the
// ids and the scenario's targets (attack.CheckSplit), for the attack or
// for each flow. A rate was checked when decoded (attack.ParseRate: "0/1s"
// is refused). ap is the attack's path in the plan (for the line), where
// prefixes the messages.
func (a *AttackPlan) validate(s *ScenarioPlan, ap, where string) error {
	targets := 0
	if s.Lab != nil && s.Lab.Nginx != nil {
		targets = max(s.Lab.Nginx.Instances, 1)
	} else if s.Lab != nil && s.Lab.Gateway != nil {
		targets = 1
	} else if s.Lab != nil && s.Lab.HAProxy != nil {
		targets = max(s.Lab.HAProxy.Instances, 1)
	} else if s.Lab != nil {
		targets = s.Lab.Proxies
	} else if s.External != nil {
		targets = len(s.External.Proxies)
	}
	if a.Timeout < 0 {
		return at(ap+".timeout", where, "attack.timeout must be >= 0, not %s", time.Duration(a.Timeout))
	}
	if a.Senders < 0 || a.Senders > senders.MaxSenders {
		return at(ap+".senders", where, "attack.senders must be 0..%d, not %d", senders.MaxSenders, a.Senders)
	}
	if a.Pipeline < 0 || a.Pipeline > attack.MaxPipeline {
		return at(ap+".pipeline", where, "attack.pipeline must be 0..%d, not %d", attack.MaxPipeline, a.Pipeline)
	}
	if a.Pipeline > 1 && (a.NoKeepAlive || a.Rate != (Rate{}) || slices.ContainsFunc(a.Flows, func(f FlowPlan) bool { return f.NoKeepAlive || f.Rate != (Rate{}) })) {
		return at(ap+".pipeline", where, "attack.pipeline: pipelined requests are written together on keep-alive connections, not with a rate or no_keepalive")
	}
	if a.Pipeline > 1 && targets > 1 {
		return at(ap+".pipeline", where, "attack.pipeline: consecutive IDs share a connection, so every request goes to one target: not with the scenario's %d targets", targets)
	}
	if a.Senders > 1 && len(a.Flows) > 0 {
		return at(ap+".senders", where, "attack.senders: not with flows (give the attack's ids, rate and request without flows)")
	}
	if len(a.Flows) == 0 {
		if a.IDs <= 0 {
			return at(ap+".ids", where, "attack.ids must be > 0")
		}
		if err := attack.CheckIDs(fmt.Sprintf("attack.ids %d", a.IDs), a.IDs); err != nil {
			return at(ap+".ids", where, "%v", err)
		}
		return checkRequestPlan(ap, where, "attack", a.IDs, a.Concurrency, a.Method, a.Path, a.Split, a.Headers, nil, targets)
	}
	if a.IDs != 0 || a.Split != "" || a.Seed != 0 || a.Concurrency != 0 || vegeta.Rate(a.Rate) != (vegeta.Rate{}) ||
		a.Method != "" || a.Path != "" || a.Body != "" {
		return at(ap, where, "attack: with flows, set ids, split, seed, concurrency, rate, method, path and body in each flow")
	}
	seen := map[string]bool{}
	total := 0
	for i := range a.Flows {
		f := &a.Flows[i]
		fp := fmt.Sprintf("%s.flows[%d]", ap, i)
		fw := fmt.Sprintf("attack.flows[%d] (%s)", i, f.Name)
		if f.Name == "" {
			return at(fp, where, "attack.flows[%d]: name is required", i)
		}
		if seen[f.Name] {
			return at(fp+".name", where, "%s: duplicate flow name", fw)
		}
		if err := f.validate(fp, where, fw); err != nil {
			return err
		}
		if total += f.ids(); total > attack.MaxIDs {
			return at(fp, where, "%v", attack.CheckIDs(fmt.Sprintf("attack.flows[0..%d]", i), total))
		}
		seen[f.Name] = true
		if err := checkRequestPlan(fp, where, fw, f.ids(), f.Concurrency, f.Method, f.Path, f.Split, a.Headers, f.Headers, targets); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one flow's IDs at path fp (fw names the flow in the
// messages): ids or duration (with a rate) >= 0, one of them, making at
// least one and at most attack.MaxIDs IDs (attack.CheckIDs).
func (f *FlowPlan) validate(fp, where, fw string) error {
	switch {
	case f.IDs < 0 || f.Duration < 0:
		return at(fp, where, "%s: ids and duration must be positive", fw)
	case (f.IDs > 0) == (f.Duration > 0):
		return at(fp, where, "%s: give ids or duration (with rate), not both or neither", fw)
	case f.Duration > 0 && vegeta.Rate(f.Rate).Freq == 0:
		return at(fp+".duration", where, "%s: duration needs a rate (the IDs are rate x duration)", fw)
	case f.ids() == 0:
		return at(fp, where, "%s: rate %s over %s is no request", fw, attack.FormatRate(vegeta.Rate(f.Rate)), time.Duration(f.Duration))
	}
	if err := attack.CheckIDs(fw, f.ids()); err != nil {
		key := ".ids"
		if f.IDs == 0 {
			key = ".duration"
		}
		return at(fp+key, where, "%v", err)
	}
	return nil
}

// checkRequestPlan checks one flow of an attack (or the attack's one flow)
// as attack.Run would: concurrency >= 0, method, path and headers (the
// attack's, then the flow's) by attack.CheckRequest, the split by
// attack.ParseSplit and attack.CheckSplit against ids and targets.
func checkRequestPlan(fp, where, what string, ids, concurrency int, method, path, split string, common, own map[string]string, targets int) error {
	field := "attack.concurrency"
	if what != "attack" { // a flow: its messages name it
		where, field = where+": "+what, "concurrency"
	}
	if concurrency < 0 {
		return at(fp+".concurrency", where, "%s must be >= 0, not %d", field, concurrency)
	}
	if method == "" {
		method = attack.DefaultMethod
	}
	hdr := http.Header{}
	for _, m := range []map[string]string{common, own} {
		for k, v := range m {
			hdr[k] = []string{v}
		}
	}
	if err := attack.CheckRequest(strings.ToUpper(method), path, hdr); err != nil {
		key := ".headers"
		switch {
		case strings.Contains(err.Error(), "method"):
			key = ".method"
		case strings.Contains(err.Error(), "path"):
			key = ".path"
		}
		return at(fp+key, where, "%v", err)
	}
	sp := attack.Split{Mode: attack.SplitEven}
	if split != "" {
		var err error
		if sp, err = attack.ParseSplit(split); err != nil {
			return at(fp+".split", where, "%v", err)
		}
	}
	if err := attack.CheckSplit(sp, ids, targets); err != nil {
		return at(fp+".split", where, "%v (%d ids over %d targets)", err, ids, targets)
	}
	return nil
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// slug turns a scenario name into a directory name.
func slug(s string) string {
	return strings.Trim(slugRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

var unknownFieldRE = regexp.MustCompile(`unknown field "([^"]+)"`)

// planErrorLine shortens the YAML-to-JSON decoder's error and names a line:
// for an unknown field the first line with it as a key, for a bad quoted
// value the first line with it as a value.
func planErrorLine(data []byte, err error) string {
	msg := decodeErrorText(err)
	var find *regexp.Regexp
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		find = regexp.MustCompile(`(^|[\s{,-])` + regexp.QuoteMeta(m[1]) + `\s*:`)
	} else if m := quotedRE.FindStringSubmatch(msg); m != nil && m[1] != "" {
		// A bad value ("forever" as a duration): the line that holds it.
		find = regexp.MustCompile(`:\s*["']?` + regexp.QuoteMeta(m[1]) + `["']?\s*([,}\]#]|$)`)
	}
	if find == nil {
		return msg
	}
	for i, l := range strings.Split(string(data), "\n") {
		if find.MatchString(l) {
			return fmt.Sprintf("line %d: %s", i+1, msg)
		}
	}
	return msg
}

// decodeErrorText is err of sigs.k8s.io/yaml's decoder without the
// prefixes it and encoding/json add.
func decodeErrorText(err error) string {
	msg := err.Error()
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		msg = strings.Replace(msg, p, "", 1)
	}
	return msg
}

var quotedRE = regexp.MustCompile(`"([^"]*)"`)

// nodeLine returns the line of the field at path ("scenarios[0].steps[1].attack.ids")
// in the YAML tree root (a document node, as yamlguard.Parse returns), or
// of the deepest part of path that exists; 0 when not even the first does.
func nodeLine(root *yamlv3.Node, path string) int {
	n := root
	if n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			v, l := mappingValue(n, key)
			if v == nil {
				return line
			}
			n, line = v, l
		}
		for rest != "" {
			ix, tail, _ := strings.Cut(rest, "]")
			rest = strings.TrimPrefix(tail, "[")
			i, err := strconv.Atoi(ix)
			if n.Kind != yamlv3.SequenceNode || err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n, line = n.Content[i], n.Content[i].Line
		}
	}
	return line
}

// mappingValue returns the value of key in the mapping n and the line of the key.
func mappingValue(n *yamlv3.Node, key string) (*yamlv3.Node, int) {
	if n.Kind != yamlv3.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}
