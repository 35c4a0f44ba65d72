package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/model"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
)

// labEnvoyVersion is the Envoy version whose local rate limit semantics the
// lab proxy's bucket has: a timer adds tokens_per_fill every fill_interval
// from the proxy's start, as Envoy did up to 1.30 (1.31 refills lazily and
// continuously, source/common/common/token_bucket_impl.cc); see
// internal/lab/proxy's bucket.
const labEnvoyVersion = "1.30"

// labLimiters declares the lab's limiters for scenario.json (evidence.Limiter),
// in request order: each proxy's local bucket (its own timer from its start),
// then the RLS the global filter calls — the lab RLS (windows aligned or from
// the first hit, counters in memory: a restart loses them) or the real
// envoyproxy/ratelimit (epoch-aligned windows counting over-limit hits too,
// counters in Redis without persistence: a Redis restart loses them).
func labLimiters(lp *LabPlan, l *lab.Lab) ([]evidence.Limiter, error) {
	eff := l.Options()
	var out []evidence.Limiter
	if lc := eff.Proxies.Config.Local; lc != nil {
		for _, p := range l.Proxies {
			tpf := max(lc.TokensPerFill, 1)
			spec := model.Spec{Kind: model.KindEnvoyLocal, EnvoyVersion: labEnvoyVersion, MaxTokens: lc.MaxTokens, TokensPerFill: &tpf,
				FillInterval: model.Duration(lc.FillInterval), TimerStart: p.Started().UTC().Format(time.RFC3339Nano),
				FilterEnabledPercent: lc.FilterEnabled, FilterEnforcedPercent: lc.FilterEnforced}
			out = append(out, evidence.Limiter{Name: "local " + p.Name(), Stage: evidence.StageLocal, Targets: []string{p.Name()},
				Key: evidence.KeyTarget, Model: &spec, RateLimitHeaders: lc.EnableXRateLimitHeaders})
		}
	}
	if g := eff.Proxies.Config.Global; g != nil && lp.RLS != nil {
		b, err := json.Marshal(g.Actions) // the lab's actions are Envoy's YAML shape, as evidence's
		if err != nil {
			return nil, err
		}
		var acts []evidence.RateLimitAction
		if err := json.Unmarshal(b, &acts); err != nil {
			return nil, fmt.Errorf("lab.global actions: %w", err)
		}
		rl := &evidence.RLSLimiter{Domain: g.Domain, Config: lp.RLS.Config, Align: model.AlignEpoch}
		resets := []string{evidence.FaultTargetRedis}
		if lp.RLS.Kind == "lab" {
			resets = []string{evidence.FaultTargetRLS}
			if eff.RLS.Lab != nil && eff.RLS.Lab.WindowStart == labrls.WindowFirstHit {
				rl.Align = model.AlignFirstHit
			}
		}
		out = append(out, evidence.Limiter{Name: "global", Stage: evidence.StageGlobal, Key: evidence.KeyDescriptor, Actions: acts, RLS: rl,
			Resets: resets, FailureModeDeny: g.FailureModeDeny, TimeoutNs: int64(g.Timeout), RateLimitHeaders: g.EnableXRateLimitHeaders})
	}
	for i := range out {
		if err := out[i].Validate(); err != nil {
			return nil, fmt.Errorf("limiter %s: %w", out[i].Name, err)
		}
	}
	return out, nil
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

// requestHeaders records, per attack step, the values of the request
// headers the limiters' descriptor actions read (lower-case names): the
// model checker builds each request's descriptor from them. Other header
// values are not recorded.
func (r *scenarioRun) requestHeaders() map[string]map[string]string {
	read := map[string]bool{}
	for _, l := range r.scenarioLimiters() {
		for _, a := range l.Actions {
			if h := a.RequestHeaders; h != nil {
				read[strings.ToLower(h.HeaderName)] = true
			}
		}
	}
	if len(read) == 0 {
		return nil
	}
	out := map[string]map[string]string{}
	for _, st := range r.plan.Steps {
		if st.Attack == nil {
			continue
		}
		hs := map[string]string{}
		for k, v := range st.Attack.Headers {
			if read[strings.ToLower(k)] {
				hs[strings.ToLower(k)] = v
			}
		}
		out[st.Name] = hs
	}
	return out
}
