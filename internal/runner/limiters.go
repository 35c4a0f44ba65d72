package runner

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// labEnvoyVersion is the Envoy version whose local rate limit semantics the
// lab proxy's buckets have (internal/lab/proxy's bucket) with their
// continuous refill (the default; Envoy 1.31+ AtomicTokenBucket, wildcard
// descriptors 1.34+); with token_bucket_mode timer they are Envoy 1.30's
// (decl.EnvoyTimerVersion: a timer adds tokens_per_fill every fill_interval
// from the filter's creation).
const labEnvoyVersion = "1.34"

// labLimiters declares the lab's limiters for scenario.json (evidence.Limiter),
// in request order: each proxy's local limiter (its buckets, per proxy or
// per downstream connection), then the RLS the global filter calls — the
// lab RLS (windows aligned or from the first hit, counters in memory: a
// restart loses them) or the real envoyproxy/ratelimit (epoch-aligned
// windows counting over-limit hits too, counters in Redis without
// persistence: a Redis restart loses them).
func labLimiters(lp *LabPlan, l *lab.Lab) ([]evidence.Limiter, error) {
	names, starts := make([]string, len(l.Proxies)), make([]time.Time, len(l.Proxies))
	for i, p := range l.Proxies {
		names[i], starts[i] = p.Name(), p.Started()
	}
	return declareLabLimiters(lp, l.Options(), names, starts)
}

// LabLimiters declares the limiters of the plan's lab as labLimiters does
// for a lab whose proxies all started at start, without starting anything
// (rlbench simulate runs them on a virtual clock).
func (lp *LabPlan) LabLimiters(start time.Time) ([]evidence.Limiter, error) {
	eff := lp.labOptions().Effective()
	names, starts := make([]string, eff.Proxies.Count), make([]time.Time, eff.Proxies.Count)
	for i := range names {
		names[i], starts[i] = lab.ProxyName(i), start
	}
	return declareLabLimiters(lp, eff, names, starts)
}

// declareLabLimiters is labLimiters for the lab's effective options and its
// proxies' names and start times.
func declareLabLimiters(lp *LabPlan, eff lab.Options, names []string, starts []time.Time) ([]evidence.Limiter, error) {
	var out []evidence.Limiter
	if lc := eff.Proxies.Config.Local; lc != nil {
		for i, name := range names {
			spec, err := localSpec(lc, starts[i])
			if err != nil {
				return nil, fmt.Errorf("limiter local %s: model: %w", name, err)
			}
			if spec == nil {
				continue // not expressible as a model: the scenario declares no such limiter
			}
			d := evidence.Limiter{Name: "local " + name, Stage: evidence.StageLocal, Targets: []string{name},
				Key: evidence.KeyTarget, Model: spec, RateLimitHeaders: lc.EnableXRateLimitHeaders}
			if lc.PerDownstreamConnection {
				d.Key = evidence.KeyConnection
			}
			if len(lc.Descriptors) > 0 {
				d.RateLimits = lc.RateLimits // evaluated only with descriptors, as by the lab proxy
			}
			out = append(out, d)
		}
	}
	if g := eff.Proxies.Config.Global; g != nil && lp.RLS != nil {
		rl := &evidence.RLSLimiter{Domain: g.Domain, Config: lp.RLS.Config, Align: model.AlignEpoch}
		resets, deps := []string{evidence.FaultTargetRedis}, []string{evidence.FaultTargetRLS, evidence.FaultTargetRedis}
		if lp.RLS.Kind == "lab" {
			resets, deps = []string{evidence.FaultTargetRLS}, []string{evidence.FaultTargetRLS} // in-memory counters, no Redis
			if eff.RLS.Lab != nil && eff.RLS.Lab.WindowStart == evidence.WindowFirstHit {
				rl.Align = model.AlignFirstHit
			}
		}
		out = append(out, evidence.Limiter{Name: "global", Stage: evidence.StageGlobal, Key: evidence.KeyDescriptor, RateLimits: g.Entries(), RLS: rl,
			DependsOn: deps, Resets: resets, FailureModeDeny: g.FailureModeDeny, TimeoutNs: int64(g.Timeout), RateLimitHeaders: g.EnableXRateLimitHeaders})
	}
	for i := range out {
		if err := out[i].Validate(); err != nil {
			return nil, fmt.Errorf("limiter %s: %w", out[i].Name, err)
		}
	}
	return out, nil
}

// localSpec is the envoy_local model of the lab proxy's local rate limit
// started at start (decl.EnvoyLocal: the lab's continuous bucket is
// labEnvoyVersion's with an exact token count, its timer Envoy 1.30's). A
// limiter without a default bucket (fill_interval 0, descriptors only)
// admits what no descriptor limits: it is modelled as a default bucket that
// never empties. The spec is nil when that is not expressible (a timer
// whose descriptor intervals share no divisor of 50ms or more,
// decl.ErrNotModelled).
func localSpec(lc *proxy.LocalRateLimit, start time.Time) (*model.Spec, error) {
	l := decl.EnvoyLocal{TokenBucket: decl.TokenBucket{MaxTokens: lc.MaxTokens, TokensPerFill: lc.TokensPerFill, FillInterval: time.Duration(lc.FillInterval)},
		FilterEnabled: lc.FilterEnabled, FilterEnforced: lc.FilterEnforced, AlwaysConsumeDefaultTokenBucket: lc.AlwaysConsumeDefaultTokenBucket,
		MaxDynamicDescriptors: lc.MaxDynamicDescriptors, PerDownstreamConnection: lc.PerDownstreamConnection, TokenBucketMode: lc.TokenBucketMode,
		EnvoyVersion: labEnvoyVersion, ExactLevel: true, Start: start}
	for _, d := range lc.Descriptors {
		es := make([]model.Entry, len(d.Entries))
		for i, e := range d.Entries {
			es[i] = model.Entry{Key: e.Key, Value: e.Value}
		}
		l.Descriptors = append(l.Descriptors, decl.LocalDescriptor{Entries: es, TokenBucket: decl.TokenBucket{MaxTokens: d.TokenBucket.MaxTokens,
			TokensPerFill: d.TokenBucket.TokensPerFill, FillInterval: time.Duration(d.TokenBucket.FillInterval)}})
	}
	spec, err := l.Spec()
	if errors.Is(err, decl.ErrNotModelled) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &spec, nil
}

// scenarioLimiters are the limiters scenario.json declares: the plan's own
// (limiters:, for external targets or to describe what the lab cannot
// know) or else the lab's.
func (r *scenarioRun) scenarioLimiters() []evidence.Limiter {
	if len(r.plan.Limiters) > 0 {
		return r.plan.Limiters
	}
	return r.limiters
}

// requestHeaders records, per attack step (and, for an attack with flows,
// per flow), the values of the request headers the limiters' descriptor
// actions read (request_headers and header_value_match; lower-case names):
// the model checker builds each request's descriptors from them. Other
// header values are not recorded.
func (r *scenarioRun) requestHeaders() (perStep map[string]map[string]string, perFlow map[string]map[string]map[string]string) {
	return RequestHeaders(r.scenarioLimiters(), r.plan.Steps)
}

// RequestHeaders gives scenario.json's request_headers and
// flow_request_headers for the attack steps: per step (and per flow), the
// values of the headers the limiters' descriptor actions read
// (request_headers and header_value_match; lower-case names). Other
// header values are not recorded.
func RequestHeaders(limiters []evidence.Limiter, steps []Step) (perStep map[string]map[string]string, perFlow map[string]map[string]map[string]string) {
	read := map[string]bool{}
	for _, l := range limiters {
		for _, e := range l.RateLimits {
			for _, a := range e.Actions {
				for _, h := range a.HeadersRead() {
					read[h] = true
				}
			}
		}
	}
	if len(read) == 0 {
		return nil, nil
	}
	keep := func(maps ...map[string]string) map[string]string {
		hs := map[string]string{}
		for _, m := range maps {
			for k, v := range m {
				if read[strings.ToLower(k)] {
					hs[strings.ToLower(k)] = v
				}
			}
		}
		return hs
	}
	perStep = map[string]map[string]string{}
	for _, st := range steps {
		if st.Attack == nil {
			continue
		}
		perStep[st.Name] = keep(st.Attack.Headers)
		for _, f := range st.Attack.Flows {
			if perFlow == nil {
				perFlow = map[string]map[string]map[string]string{}
			}
			if perFlow[st.Name] == nil {
				perFlow[st.Name] = map[string]map[string]string{}
			}
			perFlow[st.Name][f.Name] = keep(st.Attack.Headers, f.Headers)
		}
	}
	return perStep, perFlow
}
