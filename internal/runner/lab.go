package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
	"github.com/rlbench/rlbench/internal/rlsconfig"
)

// labOptions is the plan's lab section as the lab's options (internal/lab
// owns the defaults, names and caps), without the parts that exist only
// while a scenario runs: the evidence writers, the lab RLS's configuration
// and the real RLS's address. A lab RLS (kind lab) gets its WindowStart and
// Delay here.
func (lp *LabPlan) labOptions() lab.Options {
	o := lab.Options{Proxies: lab.ProxiesOptions{Count: lp.Proxies, None: lp.Nginx != nil || lp.Gateway != nil || lp.HAProxy != nil}}
	c := &o.Proxies.Config
	if l := lp.Local; l != nil {
		lc := *l
		lc.Descriptors = slices.Clone(l.Descriptors)
		c.Local = &lc
	}
	if g := lp.Global; g != nil {
		c.Global = &proxy.GlobalRateLimit{GlobalFilter: g.GlobalFilter, Actions: g.Descriptors}
	}
	if pp := lp.Proxy; pp != nil {
		c.UpstreamTimeout = time.Duration(pp.Timeout)
		c.IncludeAttemptCount, c.IncludeAttemptCountInResponse = pp.IncludeRequestAttemptCount, pp.IncludeAttemptCountInResponse
		c.Seed = pp.Seed
		c.MaxStreamDuration = time.Duration(pp.MaxStreamDuration)
		if r := pp.RetryPolicy; r != nil {
			rc := *r
			rc.RetriableStatusCodes = slices.Clone(r.RetriableStatusCodes)
			if b := r.RetryBackOff; b != nil {
				bc := *b
				rc.RetryBackOff = &bc
			}
			c.Retry = &rc
		}
	}
	if cp := lp.Cluster; cp != nil {
		c.CircuitBreakers, c.HealthyPanicThreshold, c.ConnectTimeout = cp.CircuitBreakers, cp.HealthyPanicThreshold, time.Duration(cp.ConnectTimeout)
		c.MaxRequestsPerConnection = cp.MaxRequestsPerConnection
		if od := cp.OutlierDetection; od != nil {
			odc := *od
			c.OutlierDetection = &odc
		}
	}
	if b := lp.Backend; b != nil {
		o.Backend.Endpoints, o.Backend.Seed = b.Endpoints, b.Seed
		if b.Faults != nil {
			o.Backend.Faults = *b.Faults
		}
	}
	if r := lp.RLS; r != nil && r.Kind == RLSLab {
		o.RLS.Lab = &labrls.Options{WindowStart: r.WindowStart, Delay: time.Duration(r.Delay)}
	}
	return o
}

// localBoundKnown reports whether the default bucket bounds every request
// of a proxy: it exists, it is per process (not per downstream
// connection), and a request matching a descriptor consumes it too
// (always_consume_default_token_bucket). Otherwise the admissions depend on
// the keys and connections of the traffic and scenario.json describes no
// token bucket.
func localBoundKnown(l *proxy.LocalRateLimit) bool {
	if l.FillInterval == 0 || l.PerDownstreamConnection {
		return false
	}
	return len(l.Descriptors) == 0 || l.AlwaysConsumeDefaultTokenBucket == nil || *l.AlwaysConsumeDefaultTokenBucket
}

// realRLSStandIn stands in, when a plan is validated, for the address of a
// real RLS that starts only when its scenario runs.
const realRLSStandIn = "grpc://127.0.0.1:0"

// validate checks the lab section with the lab's own rules
// (lab.Options.Validate) when the plan is loaded, before anything runs, and
// the inline RLS config with rlsconfig.Parse (bounded like a file), so that a
// bad or hostile one stops the plan before any part starts.
// The field is the failing part's key under lab ("rls.config", a refused
// token bucket's field under "local", or "").
func (lp *LabPlan) validate() (field string, err error) {
	if lp.RLS != nil {
		if _, err := rlsconfig.Parse("lab.rls.config", []byte(lp.RLS.Config)); err != nil {
			return "rls.config", err
		}
	}
	o := lp.labOptions()
	if lp.RLS != nil && lp.RLS.Kind == RLSReal {
		o.RLS.Address = realRLSStandIn
	}
	err = o.Validate()
	if be := (*proxy.BucketError)(nil); errors.As(err, &be) && lp.Local != nil {
		// a refused token bucket names its field's line (local.fill_interval)
		return "local." + be.Field, err
	}
	return "", err
}

// startLab starts the scenario's lab (lab.Start) with its evidence writers:
// receipts, rls/decisions.jsonl for a lab RLS, accesslog/<proxy>.log per
// proxy; for kind real it first starts the real RLS (startRealRLS). It sets
// the scenario's targets, admin URLs, cluster and limits, and returns a
// NOT_RUN reason or "".
func (r *scenarioRun) startLab(ctx context.Context) string {
	lp := r.plan.Lab
	opts := lp.labOptions()
	opts.Backend.ReceiptsFile = evidence.Dir(r.dir).Receipts()
	var cfg *rlsconfig.Config
	if lp.RLS != nil {
		var err error
		if cfg, err = rlsconfig.Parse(fmt.Sprintf("plan scenario %q rls.config", r.plan.Name), []byte(lp.RLS.Config)); err != nil {
			return err.Error()
		}
		switch lp.RLS.Kind {
		case RLSLab:
			if err := evidence.Dir(r.dir).MkdirFor(evidence.Dir(r.dir).Decisions()); err != nil {
				return err.Error()
			}
			dw, err := evidence.Create(evidence.Dir(r.dir).Decisions())
			if err != nil {
				return err.Error()
			}
			r.cleanups = append(r.cleanups, func() { _ = dw.Close() })
			opts.RLS.Lab.Configs = []*rlsconfig.Config{cfg}
			opts.RLS.Lab.Decisions = dw
		case RLSReal:
			addr, reason := r.startRealRLS(ctx, lp.RLS.Config)
			if reason != "" {
				return reason
			}
			opts.RLS.Address = "grpc://" + addr
		}
	}
	if err := safefile.MkdirAll(r.dir, evidence.Dir(r.dir).AccessLogs()); err != nil {
		return err.Error()
	}
	opts.Proxies.AccessLog = func(name string) (io.Writer, error) {
		f, err := evidence.CreateAccessLog(evidence.Dir(r.dir), name)
		if err != nil {
			return nil, err
		}
		r.cleanups = append(r.cleanups, func() { _ = f.Close() })
		return f, nil
	}
	l, err := lab.Start(ctx, opts)
	if err != nil {
		return err.Error()
	}
	// Closed before the writers above (cleanups run in reverse), so every
	// receipt, decision and access log line is written first.
	r.cleanups = append(r.cleanups, func() { _ = l.Close() })
	r.rls = l.RLS
	r.backend, r.baseline = l.Backend, opts.Backend.Faults
	if lp.Nginx != nil {
		return r.startNginx(ctx)
	}
	if lp.Gateway != nil {
		return r.startGateway(ctx)
	}
	if lp.HAProxy != nil {
		return r.startHAProxy(ctx)
	}
	eff := l.Options()
	r.cluster = eff.Proxies.Config.Cluster
	r.admins = map[string]string{}
	for _, p := range l.Addresses().Proxies {
		r.targets = append(r.targets, attack.Target{Name: p.Name, URL: p.URL})
		r.admins[p.Name] = p.Admin
	}
	if g := eff.Proxies.Config.Global; g != nil && cfg != nil {
		// A fixed-window bound is known when every request sends the same
		// descriptor: one rate_limits entry of generic_key actions only.
		entries, static := []descriptor.DescriptorEntry{}, len(g.RateLimits) == 0
		for _, a := range g.Actions {
			if a.GenericKey == nil {
				static = false
				break
			}
			entries = append(entries, descriptor.DescriptorEntry{Key: a.GenericKey.Key(), Value: a.GenericKey.DescriptorValue})
		}
		if m, ok := cfg.Match(entries); static && ok && m != nil && m.Limit != nil {
			ws := evidence.WindowAligned // the real RLS's windows are epoch aligned
			if eff.RLS.Lab != nil {
				ws = eff.RLS.Lab.WindowStart
			}
			r.limits = append(r.limits, evidence.LimitSpec{Kind: evidence.LimitFixedWindow, Limit: int(m.Limit.RequestsPerUnit), Unit: m.Limit.Unit, WindowStart: ws})
		}
	}
	if lc := eff.Proxies.Config.Local; lc != nil && localBoundKnown(lc) {
		refill := evidence.RefillContinuous
		if lc.TokenBucketMode == proxy.TokenBucketTimer {
			refill = evidence.RefillTimer
		}
		r.limits = append(r.limits, evidence.LimitSpec{Kind: evidence.LimitTokenBucket, Buckets: eff.Proxies.Count, MaxTokens: int(lc.MaxTokens),
			TokensPerFill: int(lc.TokensPerFill), FillInterval: int64(lc.FillInterval), StartNs: l.ProxiesStartNs, Refill: refill})
	}
	lims, err := labLimiters(lp, l)
	if err != nil {
		return err.Error()
	}
	r.limiters = append(r.limiters, lims...)
	return ""
}
