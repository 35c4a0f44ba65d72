package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/rlbench/rlbench/collect/snapshot"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/spf13/cobra"
)

func newCollectCmd(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Snapshot and parse proxy and rate limit service evidence",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(NewCollectEnvoyCmd(io, nil), NewCollectRLSLogCmd(io, nil), NewCollectPrometheusCmd(io, nil),
		NewCollectStatsdCmd(io, nil), NewCollectAccessLogCmd(io, nil),
		NewCollectNginxAccessLogCmd(io, nil), NewCollectNginxStatusCmd(io, nil), NewCollectReceiptsCmd(io, nil))
	return cmd
}

// CollectEnvoyOptions are the inputs of `rlbench collect envoy`.
type CollectEnvoyOptions struct {
	IO      *IOStreams
	Admin   string
	Proxy   string
	Label   string
	Out     string
	Format  envoyrec.Format
	Timeout time.Duration
}

// NewCollectEnvoyCmd is `rlbench collect envoy`. runF, when not nil,
// receives the parsed options instead of collecting (tests).
func NewCollectEnvoyCmd(io *IOStreams, runF func(*CollectEnvoyOptions) error) *cobra.Command {
	o := &CollectEnvoyOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "envoy --admin URL --proxy NAME --label before|after --out DIR",
		Short: "Save an Envoy admin /stats snapshot, raw and parsed",
		Long: `collect envoy GETs /stats (text), /stats?format=json or /stats/prometheus from an
Envoy admin listener (or a lab proxy's) and writes DIR/stats/NAME.LABEL.<txt|raw.json|prom>
(the raw body) and DIR/stats/NAME.LABEL.json (the parsed snapshot that analyze
compares). NAME must be the attack target name of that proxy.`,
		Example: `  rlbench collect envoy --admin http://127.0.0.1:9901 --proxy proxy-a --label before --out evidence/manual`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Admin == "" || o.Proxy == "" || o.Label == "" || o.Out == "" {
				return usageErrorf("--admin, --proxy, --label and --out are required")
			}
			if !safeName(o.Proxy) || !safeName(o.Label) {
				return usageErrorf("--proxy and --label must be simple names (letters, digits, - and _), not %q / %q", o.Proxy, o.Label)
			}
			if err := checkOutputDir("--out", o.Out, false); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runCollectEnvoy(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Admin, "admin", "", "admin base URL, e.g. http://127.0.0.1:9901")
	f.StringVar(&o.Proxy, "proxy", "", "proxy name (the attack target name)")
	f.StringVar(&o.Label, "label", "", "snapshot label: before or after")
	f.StringVar(&o.Out, "out", "", "evidence directory")
	enumFlag(cmd, &o.Format, "format", envoyrec.FormatText, statsFormats, "stats form to fetch")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Second, "HTTP timeout")
	return cmd
}

// statsFormats are the forms --format accepts (evidence.RawStatsExt names
// each one's file extension for the raw body).
var statsFormats = []envoyrec.Format{envoyrec.FormatText, envoyrec.FormatJSON, envoyrec.FormatPrometheus}

func runCollectEnvoy(ctx context.Context, o *CollectEnvoyOptions) error {
	d := evidence.Dir(o.Out)
	snap, err := snapshot.Take(ctx, snapshot.Options{URL: o.Admin, Name: o.Proxy, Label: o.Label, Out: d, Timeout: o.Timeout},
		snapshot.EnvoyStats(o.Format))
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "collect: %s %s: %d values, %d local and %d global rate limit stat groups -> %s\n",
		o.Proxy, o.Label, len(snap.Values), len(snap.Local), len(snap.Global), d.StatsSnapshot(o.Proxy, o.Label, ".json"))
	return nil
}

// safeName reports whether s can be one part of a file name in an evidence
// directory (evidence.CheckName, the one rule: letters, digits, '-' and '_').
func safeName(s string) bool { return evidence.CheckName("name", s) == nil }
