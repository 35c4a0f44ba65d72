package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// LabOptions are the inputs of `rlbench lab`, parsed from its flags.
type LabOptions struct {
	IO *IOStreams
	// File (-f) is a lab file: a plan scenario's lab: section
	// (runner.ParseLabFile). With it only ListenBase, Receipts and
	// Decisions come from flags.
	File string
	// Lab is File parsed and validated (set before runF), nil without -f.
	Lab     *runner.LabPlan
	Proxies int
	// LocalMaxTokens > 0 enables every proxy's local token bucket.
	LocalMaxTokens     uint32
	LocalTokensPerFill uint32
	LocalFillInterval  time.Duration
	// GlobalDomain, when set, enables the global filter with the generic_key
	// actions GlobalDescriptors (--global-descriptor key=value).
	GlobalDomain      string
	GlobalDescriptors []descriptor.RateLimitAction
	RLS               string // grpc://host:port of an external RLS
	RLSConfig         string // config file for the lab RLS
	RLSTimeout        time.Duration
	FailureModeDeny   bool
	// Receipts is the backend's receipts file; "": receipts.jsonl in a new run directory under
	// runner.DefaultRoot (runLab creates it and says where).
	Receipts string
	// Decisions is the lab RLS's decision log; "": rls/decisions.jsonl in that run directory, or, with Receipts
	// given, decisions.jsonl in the working directory (as before run directories).
	Decisions   string
	WindowStart string // evidence.WindowAligned | evidence.WindowFirstHit
	// decisionsDir is the run directory's rls/, created with the decision log (defaultFiles).
	decisionsDir string

	// LocalDescriptors (--local-descriptor) and LocalRateLimits
	// (--local-rate-limit) give the local filter per-key buckets.
	LocalDescriptors    []proxy.LocalDescriptor
	LocalRateLimits     []descriptor.RateLimitEntry
	LocalAlwaysDefault  bool // always_consume_default_token_bucket
	LocalPerConnection  bool
	LocalTokenBucket    string // proxy.TokenBucketContinuous | proxy.TokenBucketTimer
	LocalXRateLimit     bool
	GlobalRateLimits    []descriptor.RateLimitEntry // --global-rate-limit, one entry each
	Endpoints           int
	BackendFaults       backend.Faults
	BackendSeed         uint64
	RetryOn             string
	NumRetries          *uint32
	PerTryTimeout       time.Duration
	RetryBaseInterval   time.Duration
	RetryMaxInterval    time.Duration
	RouteTimeout        time.Duration
	AttemptCount        bool // include_request_attempt_count
	AttemptCountInResp  bool // include_attempt_count_in_response
	ProxySeed           uint64
	MaxConnections      *uint32
	MaxPendingRequests  *uint32
	MaxRequests         *uint32
	MaxRetries          *uint32
	Outlier5xx          *uint32
	OutlierGateway      *uint32
	OutlierInterval     time.Duration
	OutlierBaseEjection time.Duration
	OutlierMaxEjection  time.Duration
	OutlierMaxPercent   *uint32
	PanicThreshold      *float64
	// ListenBase (--listen-base) puts the lab on fixed ports of 127.0.0.1
	// (lab.Options.ListenBase); 0: free ports.
	ListenBase int
}

// NewLabCmd is `rlbench lab`. runF, when not nil, receives the parsed and
// validated options instead of starting the lab (tests).
func NewLabCmd(io *IOStreams, runF func(*LabOptions) error) *cobra.Command {
	o := &LabOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Start the embedded lab: a receipt-recording backend and N proxies with Envoy's rate-limit semantics",
		Long: `lab starts on 127.0.0.1 (free ports, or fixed ones with --listen-base) the
backend (backend-0, backend-1, ...) and N proxies (proxy-a, proxy-b, ...) that
follow Envoy's HTTP local rate limit filter (a token bucket per proxy,
--local-*) and, with --global-domain, its global rate limit filter calling an
RLS: the lab RLS (--rls-config, envoyproxy/ratelimit YAML) or an external one
(--rls). Each proxy has an admin listener with Envoy's /stats (text, json,
prometheus), /server_info and /ready. It prints one JSON line with every
address ({"backend":..,"endpoints":[..],"receipts":..,"rls":..,"proxies":[{"name":..,"url":..,"admin":..}]})
and runs until SIGINT/SIGTERM, which flush the receipts.

-f FILE gives the whole lab in YAML: the lab: section of a plan scenario
(rlbench run; schemas/plan.v1.schema.json), with the same keys and checks:
proxies, local (descriptors, rate_limits, token_bucket_mode,
local_rate_limit_per_downstream_connection, ...), global (domain,
descriptors, rate_limits, timeout, failure_mode_deny), rls (kind lab,
config inline, window_start), backend (endpoints, faults, seed), proxy
(retry_policy, timeout, seed) and cluster (circuit_breakers,
outlier_detection, healthy_panic_threshold). Beside -f only --listen-base,
--receipts and --decisions are given. The flags of earlier releases for
those settings (--local-descriptor, --local-rate-limit,
--local-token-bucket-mode, --global-rate-limit, --failure-mode-deny,
--window-start, --endpoints, --backend-*, --retry-on, --num-retries,
--route-timeout, --max-*, --outlier-*, --healthy-panic-threshold, ...)
still work but are hidden: see -f.

--listen-base PORT gives every part a fixed port of 127.0.0.1: proxy i
(proxy-a is 0) on PORT+i, its admin on PORT+100+i, backend endpoint j on
PORT+200+j, the lab RLS on PORT+300. With --listen-base 10000: proxy-a on
10000, proxy-b on 10001, their admins on 10100 and 10101, the backend on
10200. A port that is taken is an error naming it (exit 1).

The hidden flags' syntax: rate limit actions (--global-rate-limit,
--local-rate-limit; one rate_limits entry per flag, actions separated by
","): generic_key=VALUE, generic_key:KEY=VALUE, request_headers:HEADER=KEY (a
trailing ? is skip_if_absent), remote_address,
[!]header_value_match:[KEY=]VALUE@MATCHERS (MATCHERS joined by &: HEADER,
HEADER=EXACT, HEADER^=PREFIX, HEADER$=SUFFIX, HEADER*=CONTAINS,
HEADER~=REGEX, each optionally !-inverted). Local descriptors:
KEY=VALUE[,KEY=VALUE...]:MAX_TOKENS[:TOKENS_PER_FILL[:FILL_INTERVAL]] (an
empty VALUE is a wildcard: a bucket per value).`,
		Example: `  rlbench lab --proxies 2 --local-max-tokens 5 --local-tokens-per-fill 5 --local-fill-interval 1h --receipts ev/receipts.jsonl
  rlbench lab -f examples/lab/per-user.yaml --listen-base 10000 --receipts ev/receipts.jsonl    # a plan scenario's lab: section
  rlbench lab --global-domain inventory --global-descriptor tenant=lab --rls-config examples/envoy/ratelimit/config/inventory.yaml --rls-timeout 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			validate := o.validate
			if o.File != "" {
				validate = func() error { return o.loadFile(cmd.Context(), cmd.Flags()) }
			}
			if err := validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runLab(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "file", "f", "", "lab `FILE`: a plan scenario's lab: section in YAML (local, global, rls, backend, proxy, cluster; schemas/plan.v1.schema.json)")
	f.IntVar(&o.ListenBase, "listen-base", 0, fmt.Sprintf("fixed ports on 127.0.0.1: proxies from `PORT`, admins from PORT+%d, backend from PORT+%d, lab RLS PORT+%d (0: free ports)",
		lab.AdminPortOffset, lab.BackendPortOffset, lab.RLSPortOffset))
	f.IntVar(&o.Proxies, "proxies", lab.DefaultProxies, fmt.Sprintf("number of proxies (1..%d)", lab.MaxProxies))
	f.Uint32Var(&o.LocalMaxTokens, "local-max-tokens", 0, "local token bucket max_tokens (0: no local rate limit)")
	f.Uint32Var(&o.LocalTokensPerFill, "local-tokens-per-fill", 0, "local token bucket tokens_per_fill (default 1, as in Envoy)")
	f.DurationVar(&o.LocalFillInterval, "local-fill-interval", time.Hour, "local token bucket fill_interval (>= 50ms)")
	f.StringVar(&o.GlobalDomain, "global-domain", "", "enable the global rate limit filter with this domain")
	descriptorsFlag(f, &o.GlobalDescriptors, "global-descriptor", "generic_key action `descriptor_key=descriptor_value` (repeatable)")
	f.StringVar(&o.RLS, "rls", "", "external RLS address grpc://host:port")
	f.StringVar(&o.RLSConfig, "rls-config", "", "start the lab RLS with this envoyproxy/ratelimit config file")
	f.DurationVar(&o.RLSTimeout, "rls-timeout", proxy.DefaultRLSTimeout, "RLS call timeout (Envoy's default 20ms; use 1s on a loaded machine unless the default is what you test)")
	f.BoolVar(&o.FailureModeDeny, "failure-mode-deny", false, "answer 500 when the RLS fails (default: let the request through)")
	f.StringVar(&o.Receipts, "receipts", "", "backend receipts `FILE` (default: receipts.jsonl in a new run directory of rlbench's runs directory, see rlbench run --help)")
	f.StringVar(&o.Decisions, "decisions", "", "lab RLS decision log `FILE` (default: rls/decisions.jsonl beside the default receipts; with --receipts, "+path.Base(evidence.DecisionsFile)+")")
	enumFlag(cmd, &o.WindowStart, "window-start", evidence.WindowAligned, []string{evidence.WindowAligned, evidence.WindowFirstHit},
		"lab RLS fixed windows, aligned to unit boundaries (like envoyproxy/ratelimit) or from the first hit")
	rateLimitsFlag(f, &o.GlobalRateLimits, "global-rate-limit", "a rate_limits entry of the global filter: its actions (repeatable; see above)")
	rateLimitsFlag(f, &o.LocalRateLimits, "local-rate-limit", "a rate_limits entry building the local filter's request descriptors (repeatable)")
	f.Var(&localDescriptorsValue{p: &o.LocalDescriptors, name: "local-descriptor"}, "local-descriptor",
		"a local descriptor with its own bucket, KEY=VALUE[,..]:MAX_TOKENS[:TOKENS_PER_FILL[:FILL_INTERVAL]] (repeatable)")
	f.BoolVar(&o.LocalAlwaysDefault, "local-always-consume-default-token-bucket", true, "requests matching a descriptor also take a default-bucket token")
	f.BoolVar(&o.LocalPerConnection, "local-per-connection", false, "a local limiter per downstream connection (local_rate_limit_per_downstream_connection)")
	enumFlag(cmd, &o.LocalTokenBucket, "local-token-bucket-mode", proxy.TokenBucketContinuous, []string{proxy.TokenBucketContinuous, proxy.TokenBucketTimer},
		"local bucket refill: continuous (Envoy >= 1.31) or timer ticks (Envoy <= 1.30)")
	f.BoolVar(&o.LocalXRateLimit, "local-x-ratelimit-headers", false, "x-ratelimit-* headers from the local buckets (DRAFT_VERSION_03)")
	f.IntVar(&o.Endpoints, "endpoints", 1, fmt.Sprintf("backend endpoints (1..%d): the cluster's upstream hosts", backend.MaxEndpoints))
	backendFaultFlags(f, &o.BackendFaults, "backend-")
	f.Uint64Var(&o.BackendSeed, "backend-seed", 0, "seed of the backend's fault draws (0: random)")
	f.StringVar(&o.RetryOn, "retry-on", "", "route retry_policy retry_on, e.g. 5xx,reset,connect-failure (enables retries)")
	u32Flag(f, &o.NumRetries, "num-retries", "retry_policy num_retries (Envoy's default 1)")
	f.DurationVar(&o.PerTryTimeout, "per-try-timeout", 0, "retry_policy per_try_timeout")
	f.DurationVar(&o.RetryBaseInterval, "retry-base-interval", 0, "retry back-off base_interval (default 25ms)")
	f.DurationVar(&o.RetryMaxInterval, "retry-max-interval", 0, "retry back-off max_interval (default 10 x base)")
	f.DurationVar(&o.RouteTimeout, "route-timeout", 0, "route timeout (default 15s)")
	f.BoolVar(&o.AttemptCount, "include-attempt-count", false, "send x-envoy-attempt-count upstream (include_request_attempt_count)")
	f.BoolVar(&o.AttemptCountInResp, "include-attempt-count-in-response", false, "return x-envoy-attempt-count downstream")
	f.Uint64Var(&o.ProxySeed, "proxy-seed", 0, "seed of the proxies' random draws (back-off jitter, percentages); proxy i gets seed+i (0: random)")
	u32Flag(f, &o.MaxConnections, "max-connections", "circuit breaker max_connections (Envoy's default 1024)")
	u32Flag(f, &o.MaxPendingRequests, "max-pending-requests", "circuit breaker max_pending_requests (1024)")
	u32Flag(f, &o.MaxRequests, "max-requests", "circuit breaker max_requests (1024)")
	u32Flag(f, &o.MaxRetries, "max-retries", "circuit breaker max_retries (3)")
	u32Flag(f, &o.Outlier5xx, "outlier-consecutive-5xx", "outlier detection consecutive_5xx (any --outlier-* flag enables it; default 5)")
	u32Flag(f, &o.OutlierGateway, "outlier-consecutive-gateway-failure", "outlier detection consecutive_gateway_failure (5; enforced 0% by default)")
	f.DurationVar(&o.OutlierInterval, "outlier-interval", 0, "outlier detection sweep interval (10s)")
	f.DurationVar(&o.OutlierBaseEjection, "outlier-base-ejection-time", 0, "outlier detection base_ejection_time (30s)")
	f.DurationVar(&o.OutlierMaxEjection, "outlier-max-ejection-time", 0, "outlier detection max_ejection_time (300s)")
	u32Flag(f, &o.OutlierMaxPercent, "outlier-max-ejection-percent", "outlier detection max_ejection_percent (10: under 10 hosts nothing is ejected)")
	f64Flag(f, &o.PanicThreshold, "healthy-panic-threshold", "healthy_panic_threshold percent (50; 0 disables panic routing)")
	f.VisitAll(func(fl *pflag.Flag) {
		if !labCommonFlags[fl.Name] {
			_ = f.MarkHidden(fl.Name) // still parsed: invocations of earlier releases keep working
		}
	})
	return cmd
}

// labCommonFlags are the flags `rlbench lab --help` shows: the common case
// of a local bucket and a global filter. Every other lab setting is a
// hidden flag kept for existing invocations; -f gives them all.
var labCommonFlags = map[string]bool{"file": true, "listen-base": true, "proxies": true, "receipts": true, "decisions": true,
	"local-max-tokens": true, "local-tokens-per-fill": true, "local-fill-interval": true, "global-domain": true,
	"global-descriptor": true, "rls": true, "rls-config": true, "rls-timeout": true}

// labFileFlags are the flags that go with -f: where the lab listens and
// writes, which a plan's lab: section does not say.
var labFileFlags = map[string]bool{"file": true, "listen-base": true, "receipts": true, "decisions": true}

// loadFile reads and validates the lab file (runner.ParseLabFile) into
// o.Lab: a flag that describes the lab is a usage error beside it, as are
// the parts rlbench lab does not start (nginx, the real RLS), and what the
// lab refuses (lab.Options.Validate). An unreadable file is a runtime
// error.
func (o *LabOptions) loadFile(ctx context.Context, fs *pflag.FlagSet) error {
	var mixed []string
	fs.Visit(func(fl *pflag.Flag) {
		if !labFileFlags[fl.Name] {
			mixed = append(mixed, "--"+fl.Name)
		}
	})
	if len(mixed) > 0 {
		return usageErrorf("%s: the lab is in -f %s; give these settings there (a plan's lab: section), not as flags", strings.Join(mixed, ", "), o.File)
	}
	data, err := runner.ReadPlanFile(ctx, o.File)
	if err != nil {
		return err
	}
	lp, err := runner.ParseLabFile(o.File, data)
	if err != nil {
		return &UsageError{Err: err}
	}
	if lp.Nginx != nil {
		return usageErrorf("%s: nginx: rlbench lab starts the lab proxies; run a plan for lab.nginx (rlbench run)", o.File)
	}
	if lp.Gateway != nil {
		return usageErrorf("%s: gateway: rlbench lab starts the lab proxies; run a plan for lab.gateway (rlbench run)", o.File)
	}
	if lp.HAProxy != nil {
		return usageErrorf("%s: haproxy: rlbench lab starts the lab proxies; run a plan for lab.haproxy (rlbench run)", o.File)
	}
	if lp.RLS != nil && lp.RLS.Kind == runner.RLSReal {
		return usageErrorf("%s: rls.kind real: rlbench lab starts the lab RLS; run a plan for the real one (rlbench run)", o.File)
	}
	o.Lab = lp
	if err := o.labOptions().Validate(); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// outlierSet reports whether any --outlier-* flag was given.
func (o *LabOptions) outlierSet() bool {
	return o.Outlier5xx != nil || o.OutlierGateway != nil || o.OutlierInterval != 0 || o.OutlierBaseEjection != 0 || o.OutlierMaxEjection != 0 || o.OutlierMaxPercent != nil
}

// validate reports flag combinations that cannot work, then anything the
// lab itself refuses (lab.Options.Validate), as usage errors.
func (o *LabOptions) validate() error {
	if o.GlobalDomain != "" && (o.RLS == "") == (o.RLSConfig == "") {
		return usageErrorf("--global-domain needs exactly one of --rls or --rls-config")
	}
	if o.GlobalDomain == "" && (o.RLS != "" || o.RLSConfig != "" || len(o.GlobalDescriptors) > 0 || len(o.GlobalRateLimits) > 0 || o.FailureModeDeny) {
		return usageErrorf("--rls, --rls-config, --global-descriptor, --global-rate-limit and --failure-mode-deny need --global-domain")
	}
	if o.GlobalDomain != "" && len(o.GlobalDescriptors) == 0 && len(o.GlobalRateLimits) == 0 {
		return usageErrorf("--global-domain needs at least one --global-descriptor key=value or --global-rate-limit")
	}
	if o.LocalMaxTokens == 0 && (o.LocalTokensPerFill > 0 || len(o.LocalDescriptors) > 0 || len(o.LocalRateLimits) > 0 || o.LocalPerConnection || o.LocalXRateLimit) {
		return usageErrorf("--local-tokens-per-fill, --local-descriptor, --local-rate-limit, --local-per-connection and --local-x-ratelimit-headers need --local-max-tokens")
	}
	if (len(o.LocalDescriptors) > 0) != (len(o.LocalRateLimits) > 0) {
		return usageErrorf("--local-descriptor and --local-rate-limit go together: the rate limits build the descriptors the buckets match")
	}
	if o.RetryOn == "" && (o.NumRetries != nil || o.PerTryTimeout != 0 || o.RetryBaseInterval != 0 || o.RetryMaxInterval != 0) {
		return usageErrorf("--num-retries, --per-try-timeout and --retry-*-interval need --retry-on")
	}
	if o.RetryMaxInterval != 0 && o.RetryBaseInterval == 0 {
		return usageErrorf("--retry-max-interval needs --retry-base-interval")
	}
	if o.Endpoints < 1 {
		return usageErrorf("--endpoints must be 1..%d, not %d", backend.MaxEndpoints, o.Endpoints)
	}
	if o.Proxies < 1 {
		// 0 would be the lab's default; on the command line it is a mistake.
		return usageErrorf("--proxies must be 1..%d, not %d", lab.MaxProxies, o.Proxies)
	}
	if err := o.labOptions().Validate(); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// labOptions is the lab the flags describe, without its writers and the
// lab RLS's configuration (runLab adds them).
func (o *LabOptions) labOptions() lab.Options {
	if o.Lab != nil {
		lo := o.Lab.LabOptions()
		lo.ListenBase = o.ListenBase
		return lo
	}
	lo := lab.Options{Proxies: lab.ProxiesOptions{Count: o.Proxies}, ListenBase: o.ListenBase}
	c := &lo.Proxies.Config
	if o.LocalMaxTokens > 0 {
		c.Local = &proxy.LocalRateLimit{MaxTokens: o.LocalMaxTokens, TokensPerFill: o.LocalTokensPerFill, FillInterval: proxy.Duration(o.LocalFillInterval),
			Descriptors: o.LocalDescriptors, RateLimits: o.LocalRateLimits, PerDownstreamConnection: o.LocalPerConnection,
			EnableXRateLimitHeaders: o.LocalXRateLimit}
		if o.LocalTokenBucket == proxy.TokenBucketTimer {
			c.Local.TokenBucketMode = proxy.TokenBucketTimer
		}
		if !o.LocalAlwaysDefault {
			f := false
			c.Local.AlwaysConsumeDefaultTokenBucket = &f
		}
	}
	if o.GlobalDomain != "" {
		c.Global = &proxy.GlobalRateLimit{GlobalFilter: proxy.GlobalFilter{Domain: o.GlobalDomain, RateLimits: o.GlobalRateLimits,
			Timeout: proxy.Duration(o.RLSTimeout), FailureModeDeny: o.FailureModeDeny}, Actions: o.GlobalDescriptors}
	}
	if o.RetryOn != "" {
		c.Retry = &proxy.RetryPolicy{RetryOn: o.RetryOn, NumRetries: o.NumRetries, PerTryTimeout: proxy.Duration(o.PerTryTimeout)}
		if o.RetryBaseInterval != 0 {
			c.Retry.RetryBackOff = &proxy.RetryBackOff{BaseInterval: proxy.Duration(o.RetryBaseInterval), MaxInterval: proxy.Duration(o.RetryMaxInterval)}
		}
	}
	c.UpstreamTimeout, c.IncludeAttemptCount, c.IncludeAttemptCountInResponse, c.Seed = o.RouteTimeout, o.AttemptCount, o.AttemptCountInResp, o.ProxySeed
	if o.MaxConnections != nil || o.MaxPendingRequests != nil || o.MaxRequests != nil || o.MaxRetries != nil {
		c.CircuitBreakers = &proxy.CircuitBreakers{MaxConnections: o.MaxConnections, MaxPendingRequests: o.MaxPendingRequests,
			MaxRequests: o.MaxRequests, MaxRetries: o.MaxRetries}
	}
	if o.outlierSet() {
		c.OutlierDetection = &proxy.OutlierDetection{Consecutive5xx: o.Outlier5xx, ConsecutiveGatewayFailure: o.OutlierGateway,
			Interval: proxy.Duration(o.OutlierInterval), BaseEjectionTime: proxy.Duration(o.OutlierBaseEjection), MaxEjectionTime: proxy.Duration(o.OutlierMaxEjection), MaxEjectionPercent: o.OutlierMaxPercent}
	}
	c.HealthyPanicThreshold = o.PanicThreshold
	if o.Endpoints > 1 {
		lo.Backend.Endpoints = o.Endpoints
	}
	lo.Backend.Faults, lo.Backend.Seed = o.BackendFaults, o.BackendSeed
	lo.RLS.Address = o.RLS
	if o.RLSConfig != "" {
		lo.RLS.Lab = &labrls.Options{WindowStart: o.WindowStart}
	}
	return lo
}

func runLab(ctx context.Context, o *LabOptions) (err error) {
	if err := o.defaultFiles(time.Now()); err != nil {
		return err
	}
	lo := o.labOptions()
	var closers []func() error // the writers, closed after the lab
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			err = errors.Join(err, closers[i]())
		}
	}()
	if lo.RLS.Lab != nil {
		cfg, err := o.rlsConfig()
		if err != nil {
			return err
		}
		if o.decisionsDir != "" {
			// rls/ below the lab's own run directory, never through a link.
			if err := safefile.MkdirAll(filepath.Dir(o.decisionsDir), o.decisionsDir); err != nil {
				return err
			}
		}
		dw, err := evidence.Create(o.Decisions)
		if err != nil {
			return err
		}
		closers = append(closers, dw.Close)
		lo.RLS.Lab.Configs, lo.RLS.Lab.Decisions = []*rlsconfig.Config{cfg}, dw
	}
	lo.Backend.ReceiptsFile = o.Receipts
	l, err := lab.Start(ctx, lo)
	if err != nil {
		return err
	}
	addrs := l.Addresses()
	addrs.Receipts = o.Receipts
	line, _ := json.Marshal(addrs)
	fmt.Fprintln(o.IO.Out, string(line))
	if f, ok := o.IO.Out.(*os.File); ok {
		_ = f.Sync()
	}
	// A receipt that cannot be written stops the lab at once (that request
	// was answered 500): it must not keep answering unrecorded.
	select {
	case <-ctx.Done():
	case <-l.Backend.Failed():
	}
	if err := l.Close(); err != nil {
		return err
	}
	fmt.Fprintln(o.IO.ErrOut, "lab: stopping; receipts written to", o.Receipts)
	return nil
}

// defaultFiles fills in the files not given: without --receipts the lab writes into a run directory of its own
// under runner.DefaultRoot (receipts.jsonl and its sidecar, and rls/decisions.jsonl), never into the working
// directory, and says where on stderr.
func (o *LabOptions) defaultFiles(now time.Time) error {
	if o.Receipts == "" {
		root, err := runner.DefaultRoot()
		if err != nil {
			return err
		}
		dir, err := runner.NewRunDir(root, now)
		if err != nil {
			return err
		}
		o.Receipts = evidence.Dir(dir).Receipts()
		if o.Decisions == "" {
			o.Decisions = evidence.Dir(dir).Path(evidence.DecisionsFile)
			o.decisionsDir = filepath.Dir(o.Decisions)
		}
		fmt.Fprintf(o.IO.ErrOut, "lab: run directory %s (receipts.jsonl; rlbench runs lists it)\n", dir)
	}
	if o.Decisions == "" {
		o.Decisions = path.Base(evidence.DecisionsFile)
	}
	return nil
}

// rlsConfig is the lab RLS's configuration: the lab file's rls.config or
// the --rls-config file.
func (o *LabOptions) rlsConfig() (*rlsconfig.Config, error) {
	if o.Lab != nil && o.Lab.RLS != nil {
		return rlsconfig.Parse(o.File+": rls.config", []byte(o.Lab.RLS.Config))
	}
	return rlsconfig.ParseFile(o.RLSConfig)
}
