package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/spf13/cobra"
)

// LabOptions are the inputs of `rlbench lab`, parsed from its flags.
type LabOptions struct {
	IO      *IOStreams
	Proxies int
	// LocalMaxTokens > 0 enables every proxy's local token bucket.
	LocalMaxTokens     uint32
	LocalTokensPerFill uint32
	LocalFillInterval  time.Duration
	// GlobalDomain, when set, enables the global filter with the generic_key
	// actions GlobalDescriptors (--global-descriptor key=value).
	GlobalDomain      string
	GlobalDescriptors []proxy.Action
	RLS               string // grpc://host:port of an external RLS
	RLSConfig         string // config file for the lab RLS
	RLSTimeout        time.Duration
	FailureModeDeny   bool
	Receipts          string
	Decisions         string
	WindowStart       string // labrls.WindowAligned | labrls.WindowFirstHit
}

// NewLabCmd is `rlbench lab`. runF, when not nil, receives the parsed and
// validated options instead of starting the lab (tests).
func NewLabCmd(io *IOStreams, runF func(*LabOptions) error) *cobra.Command {
	o := &LabOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Start the embedded lab: a receipt-recording backend and N proxies with Envoy's rate-limit semantics",
		Long: `lab starts on 127.0.0.1 (free ports) the backend and N proxies (proxy-a, proxy-b, ...)
that follow Envoy's HTTP local rate limit filter (one token bucket per proxy)
and, with --global-domain, its global rate limit filter calling an RLS: the
lab RLS (--rls-config, envoyproxy/ratelimit YAML) or an external one (--rls).
Each proxy has an admin listener with Envoy's /stats (text, json, prometheus),
/server_info and /ready. It prints one JSON line with every address
({"backend":..,"receipts":..,"rls":..,"proxies":[{"name":..,"url":..,"admin":..}]})
and runs until SIGINT/SIGTERM.`,
		Example: `  rlbench lab --proxies 2 --local-max-tokens 5 --local-tokens-per-fill 5 --local-fill-interval 1h --receipts receipts.jsonl
  rlbench lab --global-domain inventory --global-descriptor tenant=lab --rls-config examples/envoy/ratelimit/config/inventory.yaml --rls-timeout 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runLab(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
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
	f.StringVar(&o.Receipts, "receipts", evidence.ReceiptsFile, "backend receipts file")
	f.StringVar(&o.Decisions, "decisions", path.Base(evidence.DecisionsFile), "lab RLS decision log")
	enumFlag(cmd, &o.WindowStart, "window-start", labrls.WindowAligned, []string{labrls.WindowAligned, labrls.WindowFirstHit},
		"lab RLS fixed windows, aligned to unit boundaries (like envoyproxy/ratelimit) or from the first hit")
	return cmd
}

// validate reports flag combinations that cannot work, then anything the
// lab itself refuses (lab.Options.Validate), as usage errors.
func (o *LabOptions) validate() error {
	if o.GlobalDomain != "" && (o.RLS == "") == (o.RLSConfig == "") {
		return usageErrorf("--global-domain needs exactly one of --rls or --rls-config")
	}
	if o.GlobalDomain == "" && (o.RLS != "" || o.RLSConfig != "" || len(o.GlobalDescriptors) > 0 || o.FailureModeDeny) {
		return usageErrorf("--rls, --rls-config, --global-descriptor and --failure-mode-deny need --global-domain")
	}
	if o.GlobalDomain != "" && len(o.GlobalDescriptors) == 0 {
		return usageErrorf("--global-domain needs at least one --global-descriptor key=value")
	}
	if o.LocalMaxTokens == 0 && o.LocalTokensPerFill > 0 {
		return usageErrorf("--local-tokens-per-fill needs --local-max-tokens")
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
	lo := lab.Options{Proxies: lab.ProxiesOptions{Count: o.Proxies}}
	if o.LocalMaxTokens > 0 {
		lo.Proxies.Config.Local = &proxy.LocalRateLimit{MaxTokens: o.LocalMaxTokens, TokensPerFill: o.LocalTokensPerFill, FillInterval: o.LocalFillInterval}
	}
	if o.GlobalDomain != "" {
		lo.Proxies.Config.Global = &proxy.GlobalRateLimit{Domain: o.GlobalDomain, Actions: o.GlobalDescriptors, Timeout: o.RLSTimeout,
			FailureModeDeny: o.FailureModeDeny}
	}
	lo.RLS.Address = o.RLS
	if o.RLSConfig != "" {
		lo.RLS.Lab = &labrls.Options{WindowStart: o.WindowStart}
	}
	return lo
}

func runLab(ctx context.Context, o *LabOptions) (err error) {
	lo := o.labOptions()
	var closers []func() error // the writers, closed after the lab
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			err = errors.Join(err, closers[i]())
		}
	}()
	if lo.RLS.Lab != nil {
		cfg, err := rlsconfig.ParseFile(o.RLSConfig)
		if err != nil {
			return err
		}
		dw, err := evidence.Create(o.Decisions)
		if err != nil {
			return err
		}
		closers = append(closers, dw.Close)
		lo.RLS.Lab.Configs, lo.RLS.Lab.Decisions = []*rlsconfig.Config{cfg}, dw
	}
	rw, err := evidence.Create(o.Receipts)
	if err != nil {
		return err
	}
	closers = append(closers, rw.Close)
	lo.Backend.ReceiptWriter = rw
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
	<-ctx.Done()
	if err := l.Close(); err != nil {
		return err
	}
	fmt.Fprintln(o.IO.ErrOut, "lab: stopping; receipts flushed to", o.Receipts)
	return nil
}
