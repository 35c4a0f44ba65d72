package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/lab/gateway"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// GatewayName is the lab gateway's name: its attack target and access log
// (accesslog/gateway.log).
const GatewayName = "gateway"

// RedisNotInstalledReason begins the NOT_RUN reason of a lab.gateway
// scenario whose limiter runs on Redis (lua, gcra) when redis-server is not
// found.
const RedisNotInstalledReason = "redis-server not installed: run scripts/install-real-parts.sh"

// MaxLuaScriptBytes bounds a lab.gateway.lua script file.
const MaxLuaScriptBytes = 1 << 20

// GatewayPlan is lab.gateway: the lab gateway (internal/lab/gateway), an
// HTTP server of rlbench's started per scenario on a private loopback port
// in front of the lab backend's endpoints, in place of the lab proxies. It
// asks one limiter per request, exactly one of lua, gcra and xrate, keyed
// by key; it answers deny_status when the limiter says no and forwards the
// rest. The redis-server of lua and gcra takes fault steps (stop, start,
// restart redis: a start has empty data). The limiter's parameters are declared once: they configure the
// running limiter and become the scenario's limiter model (scenario.json
// limiters), through model/decl.
type GatewayPlan struct {
	// Key is what a request's limiter key is: "header:<name>" (the
	// header's first value; a request without the header is not limited,
	// as Envoy's request_headers action drops its descriptor), "client"
	// (the client's IP address; every lab client is 127.0.0.1) or "route"
	// (the URL path); default client.
	Key string `json:"key,omitempty"`
	// DenyStatus is the status of a rejection (400..599); default 429.
	DenyStatus int `json:"deny_status,omitempty"`
	// FailureModeDeny answers a limiter error (Redis down, a script error,
	// a call over timeout) with 500, as Envoy's ratelimit filter
	// failure_mode_deny; default false: the request is forwarded (fail open).
	FailureModeDeny bool `json:"failure_mode_deny,omitempty"`
	// Timeout bounds one limiter call; default 1s.
	Timeout proxy.Duration `json:"timeout,omitempty"`
	// Lua runs a user's Lua script on a private redis-server per request.
	Lua *LuaPlan `json:"lua,omitempty"`
	// GCRA is go-redis/redis_rate's GCRA on a private redis-server.
	GCRA *GCRAPlan `json:"gcra,omitempty"`
	// XRate is golang.org/x/time/rate in the gateway's process.
	XRate *XRatePlan `json:"xrate,omitempty"`
}

// XRatePlan is golang.org/x/time/rate's Limiter (rate.NewLimiter(rate,
// burst)): a token bucket of burst tokens, full at the start, refilled at
// rate tokens per second; one per key (per_key) or one for every request.
// Its model is a token_bucket of capacity burst and rate rate.
type XRatePlan struct {
	// Rate is tokens per second (> 0).
	Rate float64 `json:"rate"`
	// Burst is the bucket's size (>= 1).
	Burst int `json:"burst"`
	// PerKey gives every key its own limiter; default one for all
	// requests (lab.gateway.key is then not read).
	PerKey bool `json:"per_key,omitempty"`
}

// GCRAPlan is github.com/go-redis/redis_rate/v10's Limit{Rate, Burst,
// Period}: rate requests per period with burst, per key; its model is
// model.KindGCRA (decl.GCRALimit: emission interval period/rate,
// tolerance burst × period/rate).
type GCRAPlan struct {
	// Rate is the requests per period (>= 1).
	Rate int `json:"rate"`
	// Burst is the burst (>= 1).
	Burst int `json:"burst"`
	// Period is the rate's period; default 1s.
	Period proxy.Duration `json:"period,omitempty"`
}

// LuaPlan runs a user's Lua script as the gateway's limiter: loaded once
// with SCRIPT LOAD into the scenario's redis-server and called per request
// with EVALSHA sha <len(keys)> keys... args...
// (https://redis.io/docs/latest/commands/evalsha/).
type LuaPlan struct {
	// Script is the script file, relative to the plan file's directory.
	Script string `json:"script"`
	// Keys are the KEYS templates: "{key}" is the request's key, "{now}"
	// the gateway's clock (as now says); other text is passed as is. No
	// other brace: {user}, {{key}}, an unbalanced { or } is refused
	// (gateway.CheckTemplate).
	Keys []LuaArg `json:"keys,omitempty"`
	// Args are the ARGV templates, as keys; numbers are passed as written.
	Args []LuaArg `json:"args,omitempty"`
	// Now is the unit and precision of {now}; required when a template uses it.
	Now *LuaNowPlan `json:"now,omitempty"`
	// AdmitWhen admits a request: "nonzero" (the default) when the
	// script's answer is an integer other than 0, an integer in decimal
	// when the answer is that integer, any other string when the answer
	// is that string (gateway.ParseAdmitWhen; "true", "false" and "nil"
	// are refused). An answer of another type (a string, nil or a table
	// where an integer is wanted) is a limiter error: the script did not
	// decide.
	AdmitWhen string `json:"admit_when,omitempty"`
	// Claim is what the script claims to be, judged as the scenario's
	// limiter model; without it no model is declared.
	Claim *LuaClaim `json:"claim,omitempty"`

	// script is the file's content, read when the plan is validated;
	// baseDir the plan file's directory.
	script  []byte
	baseDir string
}

// LuaNowPlan is how {now} is rendered: unix time in unit (s, ms, us or ns)
// with decimals digits after the point (0: an integer), truncated.
type LuaNowPlan struct {
	Unit     string `json:"unit"`
	Decimals int    `json:"decimals,omitempty"`
}

// LuaClaim is the limiter a Lua script claims to be.
type LuaClaim struct {
	// TokenBucket claims a token bucket per key (decl.TokenBucketRate).
	TokenBucket *TokenBucketClaim `json:"token_bucket,omitempty"`
}

// TokenBucketClaim is a token bucket of capacity tokens (> 0), full at
// the start, refilled continuously at rate tokens per second (>= 0).
type TokenBucketClaim struct {
	Capacity float64 `json:"capacity"`
	Rate     float64 `json:"rate"`
}

// LuaArg is one KEYS or ARGV template: a string, or a number passed as
// written (2000, 0.5).
type LuaArg string

// UnmarshalJSON accepts a string or a number.
func (a *LuaArg) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = LuaArg(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("lua keys and args: want a string or a number, not %s", b)
	}
	*a = LuaArg(n.String())
	return nil
}

// onRedis reports whether the limiter runs on the scenario's redis-server (lua, gcra).
func (g *GatewayPlan) onRedis() bool { return g.Lua != nil || g.GCRA != nil }

// limiterKind names the one limiter of the section ("lua", "gcra", "xrate"), or "" for none or several.
func (g *GatewayPlan) limiterKind() string {
	n, kind := 0, ""
	for _, k := range []struct {
		set  bool
		name string
	}{{g.Lua != nil, "lua"}, {g.GCRA != nil, "gcra"}, {g.XRate != nil, "xrate"}} {
		if k.set {
			n, kind = n+1, k.name
		}
	}
	if n != 1 {
		return ""
	}
	return kind
}

// setPlanDir records the plan file's directory, against which lua.script
// is read, in every scenario's lab.gateway.lua.
func (p *Plan) setPlanDir(dir string) {
	for i := range p.Scenarios {
		if l := p.Scenarios[i].Lab; l != nil {
			l.setPlanDir(dir)
		}
	}
	if c := p.Conformance; c != nil {
		for i := range c.Limiters {
			if l := c.Limiters[i].Lab; l != nil {
				l.setPlanDir(dir)
			}
		}
	}
}

// gatewayOrNil is lab.gateway, nil for a nil lab.
func (lp *LabPlan) gatewayOrNil() *GatewayPlan {
	if lp == nil {
		return nil
	}
	return lp.Gateway
}

// setPlanDir records the directory lab.gateway.lua.script is relative to.
func (lp *LabPlan) setPlanDir(dir string) {
	if g := lp.Gateway; g != nil && g.Lua != nil {
		g.Lua.baseDir = dir
	}
}

// gatewayError is a lab.gateway problem at field (under lab.gateway).
type gatewayError struct {
	field string
	err   error
}

func (e *gatewayError) Error() string { return e.err.Error() }
func (e *gatewayError) Unwrap() error { return e.err }

func gwErr(field, format string, a ...any) error {
	return &gatewayError{field: field, err: fmt.Errorf("lab.gateway"+strings.TrimSuffix("."+field, ".")+": "+format, a...)}
}

// validateGateway checks lab.gateway when the plan is loaded: no lab
// proxy section beside it, the key, the statuses, exactly one limiter
// and its parameters (a Lua script is read here, bounded, so that a
// missing file stops the plan before anything starts), and the model its
// parameters declare. field is the failing key under lab.gateway.
func (lp *LabPlan) validateGateway() error {
	g := lp.Gateway
	if lp.Proxies > 0 || lp.Local != nil || lp.Global != nil || lp.RLS != nil || lp.Proxy != nil || lp.Cluster != nil || lp.Nginx != nil {
		return gwErr("", "the gateway replaces the lab proxies: leave out proxies, local, global, rls, proxy, cluster and nginx")
	}
	if _, err := gateway.ParseKey(g.key()); err != nil {
		return gwErr("key", "%v", err)
	}
	if g.DenyStatus != 0 && (g.DenyStatus < 400 || g.DenyStatus > 599) {
		return gwErr("deny_status", "%d: want 400..599", g.DenyStatus)
	}
	if g.Timeout < 0 {
		return gwErr("timeout", "must be >= 0, not %s", time.Duration(g.Timeout))
	}
	switch g.limiterKind() {
	case "xrate":
		x := g.XRate
		if _, err := gateway.NewXRate(x.Rate, x.Burst, x.PerKey); err != nil {
			field := "xrate.rate"
			if strings.Contains(err.Error(), "burst") {
				field = "xrate.burst"
			}
			return gwErr(field, "%v", err)
		}
	case "gcra":
		c := g.GCRA
		if c.Rate < 1 {
			return gwErr("gcra.rate", "%d: want >= 1 (requests per period)", c.Rate)
		}
		if c.Burst < 1 {
			return gwErr("gcra.burst", "%d: want >= 1", c.Burst)
		}
		if c.Period < 0 {
			return gwErr("gcra.period", "must be > 0 (or absent: 1s), not %s", time.Duration(c.Period))
		}
	case "lua":
		if err := g.Lua.validate(); err != nil {
			return err
		}
	default:
		return gwErr("", "give exactly one limiter: lua, gcra or xrate")
	}
	if _, err := g.modelSpec(); err != nil {
		return gwErr("", "model: %v", err)
	}
	return nil
}

// key is the section's key, default client.
func (g *GatewayPlan) key() string {
	if g.Key == "" {
		return gateway.KeyClient
	}
	return g.Key
}

// validate checks lab.gateway.lua and reads its script.
func (l *LuaPlan) validate() error {
	if l.Script == "" {
		return gwErr("lua.script", "the Lua script file is required")
	}
	usesNow := false
	for _, group := range []struct {
		field string
		args  []LuaArg
	}{{"lua.keys", l.Keys}, {"lua.args", l.Args}} {
		for i, a := range group.args {
			if err := gateway.CheckTemplate(string(a)); err != nil {
				return gwErr(fmt.Sprintf("%s[%d]", group.field, i), "%v", err)
			}
			usesNow = usesNow || gateway.UsesNow(string(a))
		}
	}
	if usesNow && l.Now == nil {
		return gwErr("lua", "a template uses {now}: give now: {unit: s|ms|us|ns, decimals: N}")
	}
	if l.Now != nil {
		if err := l.nowFormat().Validate(); err != nil {
			return gwErr("lua.now", "%v", err)
		}
	}
	if len(l.Keys) == 0 {
		return gwErr("lua.keys", "give the script's KEYS, e.g. [\"{key}\"]")
	}
	if err := gateway.ParseAdmitWhen(l.AdmitWhen); err != nil {
		return gwErr("lua.admit_when", "%v", err)
	}
	if c := l.Claim; c != nil && c.TokenBucket == nil {
		return gwErr("lua.claim", "claim a model: token_bucket: {capacity, rate}")
	}
	p := l.Script
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.baseDir, p)
	}
	b, err := readLuaScript(p)
	if err != nil {
		return gwErr("lua.script", "%v", err)
	}
	l.script = b
	return nil
}

// readLuaScript reads the Lua script file at path, which is kept in the
// evidence (gateway/script.lua): only a regular file that is not a
// symbolic link (checked with Lstat, and the opened file must be the one
// checked) of at most MaxLuaScriptBytes; errors name path.
func readLuaScript(path string) ([]byte, error) {
	lst, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if lst.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link: give the script file itself", path)
	}
	if !lst.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file", path, boundedio.FileKind(lst.Mode()))
	}
	f, st, err := boundedio.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !os.SameFile(st, lst) {
		return nil, fmt.Errorf("%s was replaced while it was opened", path)
	}
	tooLarge := fmt.Errorf("%s is larger than %d bytes", path, MaxLuaScriptBytes)
	if st.Size() > MaxLuaScriptBytes {
		return nil, tooLarge
	}
	b, err := boundedio.ReadAll(context.Background(), f, path, MaxLuaScriptBytes)
	if se := (*boundedio.SizeError)(nil); errors.As(err, &se) {
		return nil, tooLarge
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// nowFormat is the plan's now as the gateway's NowFormat (seconds, integer, without one).
func (l *LuaPlan) nowFormat() gateway.NowFormat {
	if l.Now == nil {
		return gateway.NowFormat{Unit: "s"}
	}
	return gateway.NowFormat{Unit: l.Now.Unit, Decimals: l.Now.Decimals}
}

// modelSpec is the model the section declares (nil: none): xrate's token
// bucket (decl.TokenBucketRate of capacity burst and rate rate), a Lua
// script's claimed token bucket, gcra's GCRA (decl.GCRALimit).
func (g *GatewayPlan) modelSpec() (*model.Spec, error) {
	var tb *decl.TokenBucketRate
	switch {
	case g.XRate != nil:
		tb = &decl.TokenBucketRate{Capacity: float64(g.XRate.Burst), RatePerSec: g.XRate.Rate}
	case g.Lua != nil && g.Lua.Claim != nil && g.Lua.Claim.TokenBucket != nil:
		c := g.Lua.Claim.TokenBucket
		tb = &decl.TokenBucketRate{Capacity: c.Capacity, RatePerSec: c.Rate}
	case g.GCRA != nil:
		period := time.Duration(g.GCRA.Period)
		if period == 0 {
			period = time.Second
		}
		s, err := decl.GCRALimit{Rate: g.GCRA.Rate, Burst: g.GCRA.Burst, Period: period}.Spec()
		if err != nil {
			return nil, err
		}
		return &s, nil
	}
	if tb == nil {
		return nil, nil
	}
	s, err := tb.Spec()
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// limiterDecl is the scenario.json limiter of the gateway (nil without a
// model): stage local, target the gateway, keyed as its requests are: per
// header value (a request_headers action, so the model checker reads each
// request's header), per target for client (every lab client is
// 127.0.0.1) and for route when every attack of the scenario uses one
// path, none for route otherwise; a global xrate is one bucket (target).
func (g *GatewayPlan) limiterDecl(steps []Step) (*evidence.Limiter, error) {
	spec, err := g.modelSpec()
	if err != nil || spec == nil {
		return nil, err
	}
	k, err := gateway.ParseKey(g.key())
	if err != nil {
		return nil, err
	}
	l := &evidence.Limiter{Name: GatewayName + " " + g.limiterKind(), Stage: evidence.StageLocal, Targets: []string{GatewayName},
		Key: evidence.KeyTarget, Model: spec}
	if g.onRedis() {
		// Its state is in the private Redis (no persistence): a stop makes
		// its calls fail (failure_mode_deny decides), a restart loses it.
		l.DependsOn, l.Resets = []string{evidence.FaultTargetRedis}, []string{evidence.FaultTargetRedis}
	}
	perKey := g.XRate == nil || g.XRate.PerKey
	switch {
	case !perKey || k.Kind == gateway.KeyClient:
	case k.Kind == gateway.KeyHeader:
		name := strings.ToLower(k.Header)
		l.Key = evidence.KeyDescriptor
		l.RateLimits = []descriptor.RateLimitEntry{{Actions: []descriptor.RateLimitAction{{
			RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: name, DescriptorKey: name}}}}}
	case k.Kind == gateway.KeyRoute && !onePath(steps):
		return nil, nil
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return l, nil
}

// onePath reports whether every attack of steps requests one URL path.
func onePath(steps []Step) bool {
	seen := ""
	for _, st := range steps {
		if st.Attack == nil {
			continue
		}
		paths := []string{st.Attack.Path}
		if len(st.Attack.Flows) > 0 {
			paths = paths[:0]
			for _, f := range st.Attack.Flows {
				paths = append(paths, f.Path)
			}
		}
		for _, p := range paths {
			u, err := url.Parse(p)
			if err != nil {
				return false
			}
			path := u.Path
			if path == "" {
				path = "/"
			}
			if seen != "" && path != seen {
				return false
			}
			seen = path
		}
	}
	return true
}

// gatewayCaptureHeaders are the response headers a gateway scenario
// records: attack.DefaultCaptureHeaders and the gateway's decision header.
func gatewayCaptureHeaders() []string {
	return append(append([]string{}, attack.DefaultCaptureHeaders...), strings.ToLower(gateway.DecisionHeader))
}

// gatewayClassify are the classification rules of the gateway's own
// replies (after the plan's): its rejection is local_429, its limiter
// error under failure_mode_deny rls_error.
func (g *GatewayPlan) gatewayClassify() []evidence.ClassRule {
	deny := g.DenyStatus
	if deny == 0 {
		deny = gateway.DefaultDenyStatus
	}
	h := strings.ToLower(gateway.DecisionHeader)
	return []evidence.ClassRule{
		{Targets: []string{GatewayName}, Status: evidence.Range{Min: deny, Max: deny}, Header: h, Value: gateway.DecisionRateLimited, Class: evidence.ClassLocal429.String()},
		{Targets: []string{GatewayName}, Status: evidence.Range{Min: gateway.DefaultErrorStatus, Max: gateway.DefaultErrorStatus}, Header: h,
			Value: gateway.DecisionLimiterError, Class: evidence.ClassRLSError.String()},
	}
}

// startGateway starts lab.gateway in front of the lab backend's endpoints:
// for lua and gcra first a private redis-server (its log in
// gateway/redis/, the script kept as gateway/script.lua), then the
// gateway with its access log accesslog/gateway.log, the scenario's one
// target. It returns a NOT_RUN reason or "". Everything is stopped in
// r.cleanups, the gateway before its access log is closed.
func (r *scenarioRun) startGateway(ctx context.Context) string {
	gp := r.plan.Lab.Gateway
	d := evidence.Dir(r.dir)
	var lim gateway.Limiter
	kind := gp.limiterKind()
	switch kind {
	case "xrate":
		x, err := gateway.NewXRate(gp.XRate.Rate, gp.XRate.Burst, gp.XRate.PerKey)
		if err != nil {
			return err.Error()
		}
		lim = x
	case "lua", "gcra":
		bin, err := realparts.FindRedis()
		if err != nil {
			if errors.Is(err, realparts.ErrNotInstalled) {
				return fmt.Sprintf("%s, or set %s (%s)", RedisNotInstalledReason, realparts.EnvRedisBin, realparts.MissingDetail(err))
			}
			return "redis-server: " + err.Error()
		}
		if err := safefile.MkdirAll(r.dir, d.GatewayRedis()); err != nil {
			return err.Error()
		}
		rd, err := realparts.StartRedis(ctx, realparts.Options{Bin: bin, Dir: d.GatewayRedis()})
		if err != nil {
			return "gateway redis: " + err.Error()
		}
		r.cleanups = append(r.cleanups, func() { _ = rd.Close(context.Background()) })
		r.gatewayRedis = rd
		rdb := gateway.NewRedisClient(rd.Addr())
		r.cleanups = append(r.cleanups, func() { _ = rdb.Close() })
		fmt.Fprintf(r.progress, "  gateway redis %s (pid %d)\n", rd.Addr(), rd.PID())
		if kind == "gcra" {
			period := time.Duration(gp.GCRA.Period)
			if period == 0 {
				period = time.Second
			}
			if lim, err = gateway.NewGCRA(rdb, gp.GCRA.Rate, gp.GCRA.Burst, period); err != nil {
				return err.Error()
			}
			break
		}
		lp := gp.Lua
		if err := safefile.WriteFile(d.GatewayScript(), lp.script, 0o644); err != nil {
			return err.Error()
		}
		l, err := gateway.NewLua(ctx, rdb, gateway.LuaOptions{Script: lp.script, Keys: luaStrings(lp.Keys), Args: luaStrings(lp.Args),
			Now: lp.nowFormat(), AdmitWhen: lp.AdmitWhen})
		if err != nil {
			return fmt.Sprintf("gateway lua %s: %v", lp.Script, err)
		}
		lim = l
	default:
		return "lab.gateway: no limiter"
	}
	key, err := gateway.ParseKey(gp.key())
	if err != nil {
		return err.Error()
	}
	if gp.XRate != nil && !gp.XRate.PerKey {
		// one limiter for every request: a request without the key's
		// header is limited too (its model is one bucket per target)
		key = gateway.Key{Kind: gateway.KeyClient}
	}
	alog, err := evidence.CreateAccessLog(d, GatewayName)
	if err != nil {
		return err.Error()
	}
	r.cleanups = append(r.cleanups, func() { _ = alog.Close() })
	var ups []string
	for _, ep := range r.backend.Endpoints() {
		ups = append(ups, ep.URL)
	}
	g, err := gateway.Start(ctx, gateway.Options{Name: GatewayName, Upstreams: ups, Limiter: lim, Key: key, DenyStatus: gp.DenyStatus,
		FailureModeDeny: gp.FailureModeDeny, LimiterTimeout: time.Duration(gp.Timeout), AccessLog: alog})
	if err != nil {
		return err.Error()
	}
	r.cleanups = append(r.cleanups, func() { _ = g.Close() })
	r.gateway = g
	r.targets = append(r.targets, attack.Target{Name: GatewayName, URL: g.URL()})
	r.captureHeaders = gatewayCaptureHeaders()
	r.classify = gp.gatewayClassify()
	fmt.Fprintf(r.progress, "  gateway %s %s (%s, key %s)\n", GatewayName, g.URL(), kind, key)
	ld, err := gp.limiterDecl(r.plan.Steps)
	if err != nil {
		return err.Error()
	}
	if ld != nil {
		r.limiters = append(r.limiters, *ld)
	}
	return ""
}

// gatewayRedisFault stops, starts or restarts the gateway's redis-server
// (on its port, with empty data: every limiter state is lost; a Lua
// script is loaded again on its first NOSCRIPT answer).
func (r *scenarioRun) gatewayRedisFault(ctx context.Context, action string) error {
	if action == "stop" {
		return r.gatewayRedis.Stop(ctx)
	}
	return r.gatewayRedis.Restart(ctx)
}

// luaStrings are the templates as strings.
func luaStrings(as []LuaArg) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}

// gatewayLimiterReason is the NOT_RUN reason of a lab.gateway scenario
// whose limiter failed on some request (a Redis error, a script error, an
// answer admit_when cannot read, no answer within the timeout: the
// gateway's Stats), "" otherwise: what the limiter under test did not
// decide cannot be judged, whichever way the gateway answered it (fail
// open forwards it, failure_mode_deny answers 500). A scenario with a
// redis fault step expects errors in its fault windows, and gets none
// of this reason. Call it after the gateway is closed.
func (r *scenarioRun) gatewayLimiterReason() string {
	if r.gateway == nil {
		return ""
	}
	for _, st := range r.plan.Steps {
		if st.Fault != nil && st.Fault.Target == evidence.FaultTargetRedis {
			return ""
		}
	}
	return limiterFailedReason(r.gateway.Stats())
}

// limiterFailedReason is the reason for st's errors ("" without any).
func limiterFailedReason(st gateway.Stats) string {
	if st.Errors == 0 {
		return ""
	}
	return fmt.Sprintf("lab.gateway: the limiter failed on %d of %d requests (first: %s); the limiter under test did not decide them",
		st.Errors, st.Calls, evidence.RedactText(st.FirstError))
}
