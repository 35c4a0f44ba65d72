package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rlbench/rlbench/internal/runner"
	"github.com/spf13/cobra"
)

// RunsOptions are the inputs of `rlbench runs` and `rlbench runs prune`.
type RunsOptions struct {
	IO *IOStreams
	// Root is the directory of run directories; "": runner.DefaultRoot.
	Root string
	// Prune: Keep >= 0 keeps that many newest runs (-1: not given); OlderThan > 0 removes only older runs.
	Keep      int
	OlderThan time.Duration
	DryRun    bool
}

// NewRunsCmd is `rlbench runs` (list) with its subcommand `prune`. runF, when not nil, receives the parsed options
// of either instead of running (tests).
func NewRunsCmd(io *IOStreams, runF func(*RunsOptions) error) *cobra.Command {
	o := &RunsOptions{IO: io, Keep: -1}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the run directories of rlbench's runs directory (or --root); prune old ones",
		Long: `runs lists the run directories under the root, oldest first: the name
(<UTC yyyymmddThhmmssZ>-<n>), the plan (or "(lab)" for a directory of
rlbench lab), the verdict from status.txt (FAIL, NOT_RUN or PASS, "-" before
analyze wrote one) and the size; * marks the one <root>/latest points at.
The root is --root, else rlbench's runs directory:
` + runsDirHelp() + `
Only directories rlbench made are listed: named as above, not a symbolic
link, and holding rlbench's manifest.json (or, for rlbench lab, a sealed
receipts.jsonl). runs prune removes some of them and nothing else.`,
		Example: `  rlbench runs
  rlbench runs prune --keep 10
  rlbench runs prune --older-than 7d --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return runRuns(cmd.Context(), o)
		},
	}
	cmd.PersistentFlags().StringVar(&o.Root, "root", "", "`DIR` of run directories (default: rlbench's runs directory, see rlbench runs --help)")
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Remove old run directories, never the one latest points at",
		Long: `prune removes run directories of the root (as rlbench runs lists them):
those beyond the --keep newest, and/or older than --older-than (by the time in
their name); with both, those that both select. The directory <root>/latest
points at is never removed, nor anything that is not an rlbench run directory,
and no symbolic link is followed. It prints what it removed (with --dry-run:
what it would remove).`,
		Example: `  rlbench runs prune --keep 10
  rlbench runs prune --older-than 168h
  rlbench runs prune --keep 3 --older-than 2d --root runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Keep < 0 && o.OlderThan <= 0 {
				return usageErrorf("runs prune needs --keep N or --older-than DURATION (or both)")
			}
			if runF != nil {
				return runF(o)
			}
			return runPrune(cmd.Context(), o)
		},
	}
	prune.Flags().Var(&keepValue{p: &o.Keep}, "keep", "keep the `N` newest run directories (0: none but latest)")
	prune.Flags().Var(&ageValue{p: &o.OlderThan}, "older-than", "remove only run directories older than `DURATION` (Go duration, or days: 7d)")
	prune.Flags().BoolVar(&o.DryRun, "dry-run", false, "print what would be removed, remove nothing")
	cmd.AddCommand(prune)
	return cmd
}

// keepValue is --keep: an integer >= 0.
type keepValue struct{ p *int }

func (v *keepValue) String() string {
	if *v.p < 0 {
		return ""
	}
	return strconv.Itoa(*v.p)
}
func (v *keepValue) Type() string { return "N" }
func (v *keepValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of runs >= 0, not %q", s)
	}
	*v.p = n
	return nil
}

// ageValue is --older-than: a Go duration (168h) or whole days (7d), > 0.
type ageValue struct{ p *time.Duration }

func (v *ageValue) String() string {
	if *v.p == 0 {
		return ""
	}
	return v.p.String()
}
func (v *ageValue) Type() string { return "DURATION" }
func (v *ageValue) Set(s string) error {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100000 {
			return fmt.Errorf("want a duration such as 36h or 7d, not %q", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d <= 0 {
			return fmt.Errorf("want a duration > 0 such as 36h or 7d, not %q", s)
		}
	}
	*v.p = d
	return nil
}

// runsRoot is --root or the default root.
func (o *RunsOptions) runsRoot() (string, error) {
	if o.Root != "" {
		return o.Root, nil
	}
	return runner.DefaultRoot()
}

func runRuns(ctx context.Context, o *RunsOptions) error {
	root, err := o.runsRoot()
	if err != nil {
		return err
	}
	runs, err := runner.ListRuns(ctx, root)
	if err != nil {
		return err
	}
	legend := ""
	for _, r := range runs {
		if r.Latest {
			legend = " (* marks the one latest points at, which prune keeps)"
		}
	}
	fmt.Fprintf(o.IO.ErrOut, "runs in %s: %d%s\n", root, len(runs), legend)
	if len(runs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(o.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tPLAN\tVERDICT\tSIZE")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", runLabel(r), runPlanName(r), dash(r.Verdict), byteSize(r.Bytes))
	}
	return tw.Flush()
}

func runPrune(ctx context.Context, o *RunsOptions) error {
	root, err := o.runsRoot()
	if err != nil {
		return err
	}
	removed, err := runner.PruneRuns(ctx, root, runner.PruneOptions{Keep: o.Keep, OlderThan: o.OlderThan, DryRun: o.DryRun})
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	var total int64
	for _, r := range removed {
		total += r.Bytes
		fmt.Fprintf(o.IO.Out, "%s %s (%s, %s)\n", verb, r.Path, runPlanName(r), byteSize(r.Bytes))
	}
	fmt.Fprintf(o.IO.ErrOut, "runs prune: %s %d run directories (%s) in %s\n", verb, len(removed), byteSize(total), root)
	return err
}

// runLabel is the run's name, with * for latest's target.
func runLabel(r runner.RunInfo) string {
	if r.Latest {
		return r.Name + " *"
	}
	return r.Name
}

func runPlanName(r runner.RunInfo) string {
	if r.Kind == runner.KindLab {
		return "(lab)"
	}
	return dash(r.Plan)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// byteSize formats n bytes in binary units (1.5 MiB).
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
