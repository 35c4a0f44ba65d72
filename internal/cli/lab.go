package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/spf13/cobra"
)

// LabOptions are the flags of `rlbench lab`.
type LabOptions struct {
	IO                 *IOStreams
	Proxies            int
	LocalMaxTokens     uint32
	LocalTokensPerFill uint32
	LocalFillInterval  time.Duration
	GlobalDomain       string
	GlobalDescriptor   []string // key=value generic_key actions
	RLS                string   // grpc://host:port of an external RLS
	RLSConfig          string   // config file for the lab RLS
	RLSTimeout         time.Duration
	FailureModeDeny    bool
	Receipts           string
	Decisions          string
	WindowStart        string
}

func newLabCmd(io *IOStreams) *cobra.Command {
	o := &LabOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Start the embedded lab: a receipt-recording backend and N proxies with Envoy's rate-limit semantics",
		Long: `lab starts on 127.0.0.1 (free ports) the backend and N proxies (proxy-a, proxy-b, ...)
that follow Envoy's HTTP local rate limit filter (one token bucket per proxy)
and, with --global-domain, its global rate limit filter calling an RLS: the
lab RLS (--rls-config, envoyproxy/ratelimit YAML) or an external one (--rls).
Each proxy has an admin listener with Envoy's /stats (text, json, prometheus),
/server_info and /ready. It prints one JSON line with every address and runs
until SIGINT/SIGTERM.`,
		Example: `  rlbench lab --proxies 2 --local-max-tokens 5 --local-tokens-per-fill 5 --local-fill-interval 1h --receipts receipts.jsonl
  rlbench lab --global-domain inventory --global-descriptor tenant=lab --rls-config examples/envoy/ratelimit/config/inventory.yaml --rls-timeout 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runLab(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.Proxies, "proxies", 2, "number of proxies")
	f.Uint32Var(&o.LocalMaxTokens, "local-max-tokens", 0, "local token bucket max_tokens (0: no local rate limit)")
	f.Uint32Var(&o.LocalTokensPerFill, "local-tokens-per-fill", 0, "local token bucket tokens_per_fill (default 1, as in Envoy)")
	f.DurationVar(&o.LocalFillInterval, "local-fill-interval", time.Hour, "local token bucket fill_interval (>= 50ms)")
	f.StringVar(&o.GlobalDomain, "global-domain", "", "enable the global rate limit filter with this domain")
	f.StringArrayVar(&o.GlobalDescriptor, "global-descriptor", nil, "generic_key action descriptor_key=descriptor_value (repeatable)")
	f.StringVar(&o.RLS, "rls", "", "external RLS address grpc://host:port")
	f.StringVar(&o.RLSConfig, "rls-config", "", "start the lab RLS with this envoyproxy/ratelimit config file")
	f.DurationVar(&o.RLSTimeout, "rls-timeout", 20*time.Millisecond, "RLS call timeout (Envoy's default 20ms; use 1s on a loaded machine unless the default is what you test)")
	f.BoolVar(&o.FailureModeDeny, "failure-mode-deny", false, "answer 500 when the RLS fails (default: let the request through)")
	f.StringVar(&o.Receipts, "receipts", "receipts.jsonl", "backend receipts file")
	f.StringVar(&o.Decisions, "decisions", "decisions.jsonl", "lab RLS decision log")
	f.StringVar(&o.WindowStart, "window-start", "aligned", "lab RLS fixed windows: aligned (to unit boundaries, like envoyproxy/ratelimit) or first-hit")
	return cmd
}

func runLab(ctx context.Context, o *LabOptions) (err error) {
	if o.Proxies < 1 {
		return usageErrorf("--proxies must be 1..%d, not %d", lab.MaxProxies, o.Proxies)
	}
	if o.GlobalDomain != "" && (o.RLS == "") == (o.RLSConfig == "") {
		return usageErrorf("--global-domain needs exactly one of --rls or --rls-config")
	}
	if o.GlobalDomain == "" && (o.RLS != "" || o.RLSConfig != "" || len(o.GlobalDescriptor) > 0 || o.FailureModeDeny) {
		return usageErrorf("--rls, --rls-config, --global-descriptor and --failure-mode-deny need --global-domain")
	}
	if o.GlobalDomain != "" && len(o.GlobalDescriptor) == 0 {
		return usageErrorf("--global-domain needs at least one --global-descriptor key=value")
	}
	if o.LocalMaxTokens == 0 && o.LocalTokensPerFill > 0 {
		return usageErrorf("--local-tokens-per-fill needs --local-max-tokens")
	}
	lo := lab.Options{Proxies: lab.ProxiesOptions{Count: o.Proxies}}
	if o.LocalMaxTokens > 0 {
		lo.Proxies.Config.Local = &proxy.LocalRateLimit{MaxTokens: o.LocalMaxTokens, TokensPerFill: o.LocalTokensPerFill, FillInterval: o.LocalFillInterval}
	}
	if o.GlobalDomain != "" {
		g := &proxy.GlobalRateLimit{Domain: o.GlobalDomain, Timeout: o.RLSTimeout, FailureModeDeny: o.FailureModeDeny}
		for _, d := range o.GlobalDescriptor {
			k, v, ok := strings.Cut(d, "=")
			if !ok {
				return usageErrorf("--global-descriptor %q: want key=value", d)
			}
			g.Actions = append(g.Actions, proxy.Action{GenericKey: &proxy.GenericKeyAction{DescriptorKey: k, DescriptorValue: v}})
		}
		lo.Proxies.Config.Global = g
	}
	lo.RLS.Address = o.RLS
	if o.RLSConfig != "" {
		lo.RLS.Lab = &labrls.Options{WindowStart: o.WindowStart}
	}
	if err := lo.Validate(); err != nil {
		return &UsageError{Err: err}
	}
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
