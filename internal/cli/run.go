package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/examples"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/userdirs"
	"github.com/spf13/cobra"
)

// RunOptions are the inputs of `rlbench run` and `rlbench demo`.
type RunOptions struct {
	IO *IOStreams
	// PlanFile names the plan (in errors and the manifest); PlanData is its
	// content, or nil to read PlanFile.
	PlanFile string
	PlanData []byte
	Root     string
	Format   string // one of reportFormats
	Quiet    bool
	View     tableView // --wide, --details
	// RemoteWrite is --remote-write and --remote-write-interval.
	RemoteWrite RemoteWriteOptions
	// Events is --events: "" none, "-" standard output (the report then
	// goes to standard error), else a file.
	Events string
}

// NewRunCmd is `rlbench run`. runF, when not nil, receives the parsed
// options instead of running the plan (tests).
func NewRunCmd(io *IOStreams, runF func(*RunOptions) error) *cobra.Command {
	o := &RunOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "run PLAN.yaml",
		Short: "Run a plan's scenarios (fresh parts each), write the evidence and print the analysis",
		Long: `run executes every scenario of a plan: it starts fresh lab proxies, backend and rate
limit service (or checks external targets), snapshots proxy stats, runs the
scenario's attacks and faults, and writes <root>/<UTC yyyymmddThhmmssZ>-<n>/
with manifest.json, one folder per scenario and repeat, and status.txt, and
prints where. <root> is --root, else the plan's root:, else rlbench's runs
directory, outside the working directory:
` + runsDirHelp() + `
<root>/latest links to the newest run; rlbench runs lists and prunes them.
A scenario that cannot run is NOT_RUN with the reason; the others still run.
With --events FILE (or - for stdout, the report then on stderr) it writes the
event stream while it runs: JSON Lines of schemas/event.v1.schema.json (started,
progress every second, fault begin and end, each scenario's verdict, finished).
It exits with analyze's exit code. A plan is code: its exec steps, external
setup/teardown and tools: entries run with sh -c; review a plan as a script.`,
		Example: `  rlbench run examples/e06/plan.yaml
  rlbench run --root runs --format json examples/e06/plan.yaml    # writes ./runs/<stamp>/, ./runs/latest
  rlbench run --events - examples/demo/plan.yaml 2>/dev/null | jq -c 'select(.type == "verdict")'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.PlanFile = args[0]
			if err := o.checkRoot(); err != nil {
				return err
			}
			if err := checkEvents(o.Events); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runPlan(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Root, "root", "", "`DIR` for run directories (default: the plan's root, else rlbench's runs directory, above)")
	eventsFlag(cmd, &o.Events)
	reportFormatFlag(cmd, &o.Format)
	tableViewFlags(cmd, &o.View)
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines on stderr")
	remoteWriteFlags(cmd, &o.RemoteWrite)
	return cmd
}

// NewDemoCmd is `rlbench demo`: `rlbench run` of the embedded demo plan
// (examples.DemoPlanFile).
// runF, when not nil, receives the parsed options instead (tests).
func NewDemoCmd(io *IOStreams, runF func(*RunOptions) error) *cobra.Command {
	o := &RunOptions{IO: io, PlanFile: examples.DemoPlanFile, PlanData: examples.DemoPlan}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the canonical experiment on the embedded lab: two local buckets of 5 admit 10",
		Long: `demo starts the embedded lab (a backend and 2 proxies, each with a local token
bucket of 5 per hour), fires 20 fixed IDs (10 per proxy, all concurrent),
collects stats before and after, writes <root>/<UTC yyyymmddThhmmssZ>-<n>/
and prints the analysis. The plan is examples/demo/plan.yaml. <root> is
--root, else rlbench's runs directory, outside the working directory:
` + runsDirHelp(),
		Example: `  go run ./cmd/rlbench demo`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.checkRoot(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runPlan(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Root, "root", "", "`DIR` for run directories (default: rlbench's runs directory, above)")
	reportFormatFlag(cmd, &o.Format)
	tableViewFlags(cmd, &o.View)
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

// runsDirHelp is the rule of rlbench's runs directory (userdirs.Runs), indented, and where it is now.
func runsDirHelp() string {
	s := "  " + strings.ReplaceAll(userdirs.RunsRule, "\n", "\n  ")
	if d, err := runner.DefaultRoot(); err == nil {
		s += "\n  (here: " + d + ")"
	}
	return s
}

// checkRoot refuses a --root that cannot be a directory (usage error).
func (o *RunOptions) checkRoot() error {
	if o.Root == "" {
		return nil
	}
	return checkOutputDir("--root", o.Root, false)
}

func runPlan(ctx context.Context, o *RunOptions) (err error) {
	sink, closeEvents, err := openEvents(o.Events, o.IO.Out)
	if err != nil {
		return err
	}
	var (
		rep *report.Report
		dir string
	)
	defer func() {
		emitFinished(sink, err, rep, dir)
		if cerr := closeEvents(); cerr != nil && err == nil {
			err = fmt.Errorf("--events: %w", cerr)
		}
	}()
	data := o.PlanData
	if data == nil {
		var err error
		if data, err = runner.ReadPlanFile(ctx, o.PlanFile); err != nil {
			return err
		}
	}
	plan, err := runner.ParsePlan(o.PlanFile, data)
	if err != nil {
		return &UsageError{Err: err}
	}
	ro := runner.Options{Root: o.Root, PlanBytes: data, Events: sink, PlanFile: o.PlanFile}
	if exe, err := os.Executable(); err == nil {
		ro.Exe = exe // the sender processes of attack steps with senders
	}
	if !o.Quiet {
		ro.Progress = o.IO.ErrOut
		ro.Live = func(label string, p *attack.Progress) func() { return liveProgress(o.IO.ErrOut, label, p) }
	}
	pusher, err := o.RemoteWrite.newPusher(plan.RemoteWrite, "")
	if err != nil {
		return err
	}
	if pusher != nil {
		ro.Observer = pusher
		pusher.Start(ctx)
	}
	dir, err = runner.Run(ctx, plan, ro)
	if err != nil {
		closePusher(ctx, pusher, o.RemoteWrite.url(plan.RemoteWrite), nil, o.IO.ErrOut, !o.Quiet)
		return err
	}
	// Analyse even after an interrupt: what ran is reported, the rest is NOT_RUN.
	b, judged, err := judgeDir(context.WithoutCancel(ctx), dir, analyze.Options{}, o.Format == formatHTML)
	if err != nil {
		closePusher(ctx, pusher, o.RemoteWrite.url(plan.RemoteWrite), nil, o.IO.ErrOut, !o.Quiet)
		return err
	}
	rep = judged
	emitVerdicts(sink, rep)
	if pusher != nil {
		closePusher(ctx, pusher, o.RemoteWrite.url(plan.RemoteWrite), report.PrometheusFamilies(rep), o.IO.ErrOut, !o.Quiet)
	}
	if !o.Quiet {
		fmt.Fprintf(o.IO.ErrOut, "evidence: %s\n", dir)
	}
	err = finishReport(reportStreams(o.IO, o.Events), b, rep, o.Format, o.View, "", dir)
	if ctx.Err() != nil {
		return &ExitCodeError{Code: ExitInterrupted, Msg: "interrupted; evidence kept in " + dir}
	}
	return err
}
