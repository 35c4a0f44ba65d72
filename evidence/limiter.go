package evidence

import (
	"fmt"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// Limiter stages (Limiter.Stage), in the order a request meets them.
const (
	// StageLocal is a limiter inside the proxy that decides on its own: Envoy's
	// local_ratelimit filter, nginx limit_req, a gateway's token bucket. It runs
	// before any StageGlobal limiter (Envoy: local_ratelimit precedes the
	// ratelimit filter in the lab's and the usual filter chain).
	StageLocal = "local"
	// StageGlobal is a rate limit service the proxy asks: Envoy's ratelimit
	// filter calling envoyproxy/ratelimit (or the lab RLS). Its calls can fail
	// (rls_error, failure_mode_allowed) and faults on its parts act on it.
	StageGlobal = "global"
)

// Limiter keys (Limiter.Key): what one instance of the limiter's state
// (a bucket, a counter) is shared by.
const (
	// KeyTarget: one instance per attack target, i.e. per proxy process
	// (Envoy local_ratelimit: "the token bucket is shared across all workers").
	KeyTarget = "target"
	// KeyConnection: one per client connection (Envoy
	// local_rate_limit_per_downstream_connection); needs Request.Conn.
	KeyConnection = "connection"
	// KeyShared: one instance for every request of the limiter's targets (one
	// RLS counter of a fixed descriptor, a cluster-wide bucket).
	KeyShared = "shared"
	// KeyDescriptor: one per descriptor value the RateLimits compute (an RLS
	// rule's counter per value, a bucket per user or per client address).
	KeyDescriptor = "descriptor"
)

// Fault targets a limiter can depend on (Fault.Target).
const (
	FaultTargetRLS   = "rls"
	FaultTargetRedis = "redis"
)

// Limiter declares one rate limiter on the requests' path, for the model
// checker (model): which targets' requests it sees, what its
// instances are keyed by, and its semantic — a model.Spec, or an RLS whose
// configuration gives one fixed window per matched rule.
//
//	{"name":"local proxy-a","stage":"local","targets":["proxy-a"],"key":"target",
//	 "model":{"kind":"envoy_local","envoy_version":"1.30","max_tokens":5,"tokens_per_fill":5,"fill_interval":"1h0m0s",
//	          "timer_start":"2026-12-01T09:15:58.1Z"}}
//	{"name":"global","stage":"global","key":"descriptor",
//	 "rate_limits":[{"actions":[{"generic_key":{"descriptor_key":"tenant","descriptor_value":"lab"}}]}],
//	 "rls":{"domain":"inventory","config":"domain: inventory\n...","align":"epoch"},"resets":["rls"]}
type Limiter struct {
	// Name names the limiter in the report and in check names; unique in a scenario.
	Name string `json:"name"`
	// Stage is StageLocal or StageGlobal.
	Stage string `json:"stage"`
	// Targets are the attack targets whose requests meet this limiter; empty: every target.
	Targets []string `json:"targets,omitempty"`
	// Key is one of the Key constants.
	Key string `json:"key"`
	// Model is the limiter's semantic (model, decoded strictly);
	// exactly one of Model and RLS is set.
	Model *model.Spec `json:"model,omitempty"`
	// RLS is a rate limit service configuration: each of a request's
	// descriptors (from RateLimits) is matched against it as
	// envoyproxy/ratelimit does, and each matched rule is a fixed_window
	// model with a counter per descriptor value.
	RLS *RLSLimiter `json:"rls,omitempty"`
	// RateLimits are the Envoy route rate_limits entries whose actions
	// build each request's descriptors (one per entry that produces one):
	// those sent to the RLS, an envoy_local model's request descriptors, or
	// the key of KeyDescriptor (at an RLS each descriptor with a rule is a
	// counter of its own; for a Model, the request's descriptors together).
	RateLimits []descriptor.RateLimitEntry `json:"rate_limits,omitempty"`
	// Rejections are the class names of this limiter's rejections; default
	// local_429 (StageLocal) or global_429 (StageGlobal).
	Rejections []string `json:"rejections,omitempty"`
	// DependsOn are the fault targets whose outage acts on this limiter
	// (its requests then fail or fail open); default for StageGlobal rls,
	// and redis unless Resets says the counters live in the RLS (the lab
	// RLS keeps them in memory: no Redis on its path); none for StageLocal.
	DependsOn []string `json:"depends_on,omitempty"`
	// Resets are the fault targets whose start or restart loses the
	// limiter's state (the lab RLS keeps counters in memory: rls; the real
	// RLS keeps them in Redis without persistence: redis).
	Resets []string `json:"resets,omitempty"`
	// RateLimitHeaders is true when the limiter adds x-ratelimit-* (Envoy
	// enable_x_ratelimit_headers) or RateLimit-* headers (envoyproxy/ratelimit
	// LIMIT_RESPONSE_HEADERS_ENABLED) to its responses.
	RateLimitHeaders bool `json:"rate_limit_headers,omitempty"`
	// FailureModeDeny is the Envoy ratelimit filter's failure_mode_deny of a
	// StageGlobal limiter: an RLS error is a 500 (rls_error) instead of an admission.
	FailureModeDeny bool `json:"failure_mode_deny,omitempty"`
	// TimeoutNs is the ratelimit filter's RLS call timeout (ns; 0: unknown).
	TimeoutNs int64 `json:"timeout_ns,omitempty"`
	// ClockSkewNs is the most the limiter's clock may differ from the
	// clients' (ns): its windows and refills are placed by its own clock.
	// 0 for the lab and a limiter on the clients' host.
	ClockSkewNs int64 `json:"clock_skew_ns,omitempty"`
}

// RLSLimiter is the RLS part of a Limiter.
type RLSLimiter struct {
	// Domain is the descriptors' domain (RateLimitRequest.domain).
	Domain string `json:"domain"`
	// Config is the envoyproxy/ratelimit YAML configuration of Domain.
	Config string `json:"config"`
	// Align is model.AlignEpoch (envoyproxy/ratelimit, default) or
	// model.AlignFirstHit (the lab RLS with window_start first-hit).
	Align string `json:"align,omitempty"`
}

// RejectionClasses returns the limiter's rejection classes (Rejections or
// the stage's default).
func (l *Limiter) RejectionClasses() []Class {
	if len(l.Rejections) == 0 {
		if l.Stage == StageGlobal {
			return []Class{ClassGlobal429}
		}
		return []Class{ClassLocal429}
	}
	out := make([]Class, 0, len(l.Rejections))
	for _, r := range l.Rejections {
		if c, ok := ParseClass(r); ok {
			out = append(out, c)
		}
	}
	return out
}

// Dependencies returns DependsOn or the stage's default.
func (l *Limiter) Dependencies() []string {
	if l.DependsOn == nil && l.Stage == StageGlobal {
		if containsString(l.Resets, FaultTargetRLS) && !containsString(l.Resets, FaultTargetRedis) {
			return []string{FaultTargetRLS} // in-memory counters: no Redis
		}
		return []string{FaultTargetRLS, FaultTargetRedis}
	}
	return l.DependsOn
}

// AppliesTo reports whether requests to target meet the limiter.
func (l *Limiter) AppliesTo(target string) bool {
	return len(l.Targets) == 0 || containsString(l.Targets, target)
}

// Validate checks the declaration (the RLS configuration is checked by its
// reader, analyze). Errors name the field.
func (l *Limiter) Validate() error {
	if l.Name == "" {
		return fmt.Errorf("name: missing")
	}
	switch l.Stage {
	case StageLocal, StageGlobal:
	default:
		return fmt.Errorf("stage: want %q or %q, got %q", StageLocal, StageGlobal, l.Stage)
	}
	switch l.Key {
	case KeyTarget, KeyConnection, KeyShared, KeyDescriptor:
	default:
		return fmt.Errorf("key: want %s, %s, %s or %s, got %q", KeyTarget, KeyConnection, KeyShared, KeyDescriptor, l.Key)
	}
	if (l.Model == nil) == (l.RLS == nil) {
		return fmt.Errorf("model, rls: give exactly one")
	}
	if l.Model != nil {
		if err := l.Model.Validate(); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		if l.Model.Kind == model.KindEnvoyLocal && (l.Model.Scope == model.ScopeConnection) != (l.Key == KeyConnection) {
			return fmt.Errorf("key: %q with an envoy_local model of scope %q: give key %q and scope %q together",
				l.Key, l.Model.Scope, KeyConnection, model.ScopeConnection)
		}
	}
	if r := l.RLS; r != nil {
		if r.Domain == "" {
			return fmt.Errorf("rls.domain: missing")
		}
		switch r.Align {
		case "", model.AlignEpoch, model.AlignFirstHit:
		default:
			return fmt.Errorf("rls.align: want %q or %q, got %q", model.AlignEpoch, model.AlignFirstHit, r.Align)
		}
		if len(l.RateLimits) == 0 {
			return fmt.Errorf("rate_limits: an rls limiter needs the actions that build its descriptors")
		}
	}
	if l.Key == KeyDescriptor && len(l.RateLimits) == 0 {
		return fmt.Errorf("rate_limits: key %q needs actions", KeyDescriptor)
	}
	if _, err := descriptor.CompileRateLimits("rate_limits", l.RateLimits); err != nil {
		return err
	}
	for _, r := range l.Rejections {
		if c, ok := ParseClass(r); !ok || c == ClassNoResponse || c.FromBackend() {
			return fmt.Errorf("rejections: %q is not a class a limiter answers with", r)
		}
	}
	for _, t := range append(append([]string(nil), l.DependsOn...), l.Resets...) {
		if t == "" {
			return fmt.Errorf("depends_on, resets: empty fault target")
		}
	}
	if l.TimeoutNs < 0 || l.ClockSkewNs < 0 {
		return fmt.Errorf("timeout_ns, clock_skew_ns: negative")
	}
	return nil
}

// EffectiveLimiters returns the scenario's limiter declarations: Limiters,
// or, for a scenario.json of the previous release that has only Limits,
// their translation (LimitSpec.Limiter). realRLS tells whether the scenario
// ran on the real envoyproxy/ratelimit (its counters live in Redis).
func (s *Scenario) EffectiveLimiters(targets []string, realRLS bool) []Limiter {
	if len(s.Limiters) > 0 {
		return s.Limiters
	}
	var out []Limiter
	for i, l := range s.Limits {
		if lim, ok := l.Limiter(i, targets, realRLS); ok {
			out = append(out, lim)
		}
	}
	return out
}

// Limiter translates a LimitSpec (the previous release's scenario.json
// limits) into a Limiter, the i-th of the scenario; targets are the
// scenario's attack targets; decl.Legacy translates its model. A token
// bucket is the lab proxy's local bucket (Envoy's local_ratelimit, refilled
// continuously (envoy_version 1.31) when Refill is continuous, else by a
// timer from StartNs (1.30)), one per target (one per proxy process) unless
// Buckets is 1 for several targets (one shared). A
// fixed window is an RLS rule counting every request of the run under one
// key (the LimitSpec has no descriptor), windows epoch-aligned or from the
// first hit; a restart of the lab RLS (or of Redis under the real RLS)
// loses its counters. ok is false for an unknown kind.
func (l LimitSpec) Limiter(i int, targets []string, realRLS bool) (Limiter, bool) {
	spec, err := decl.Legacy(l).Spec()
	if err != nil {
		return Limiter{}, false
	}
	switch l.Kind {
	case LimitTokenBucket:
		key := KeyTarget
		if l.Buckets == 1 && len(targets) > 1 {
			key = KeyShared
		}
		return Limiter{Name: fmt.Sprintf("limits[%d] token bucket", i), Stage: StageLocal, Key: key, Model: &spec}, true
	default: // LimitFixedWindow
		resets := []string{FaultTargetRLS}
		if realRLS {
			resets = []string{FaultTargetRedis}
		}
		return Limiter{Name: fmt.Sprintf("limits[%d] fixed window", i), Stage: StageGlobal, Key: KeyShared, Model: &spec, Resets: resets}, true
	}
}
