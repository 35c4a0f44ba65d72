package cli

import (
	"context"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/internal/judgegc"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/sim"
	"github.com/spf13/cobra"
)

// SimulateOptions are the inputs of `rlbench simulate`.
type SimulateOptions struct {
	IO       *IOStreams
	PlanFile string
	Format   string // one of reportFormats
	Seed     int64
	View     tableView // --wide, --details
}

// NewSimulateCmd is `rlbench simulate`. runF, when not nil, receives the
// parsed options instead of simulating (tests).
func NewSimulateCmd(io *IOStreams, runF func(*SimulateOptions) error) *cobra.Command {
	o := &SimulateOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "simulate PLAN.yaml",
		Short: "Run a plan's flows through its limiter models on a virtual clock and print analyze's tables",
		Long: `simulate runs every scenario of a plan without sockets: the attack flows (IDs, rates,
splits over the targets, headers) arrive on a virtual clock (uniform, or Poisson
with simulate.arrivals) and go through the limiter models analyze checks the lab
against — the lab's buckets per proxy and descriptor, the RLS's fixed windows, or
the scenario's limiters (simulate.limiters for one the lab cannot build). The
result is judged by analyze like a lab run: the same per-flow and per-key
tables, model bounds and findings, and the grid of the scenarios' simulate row
and column. Deterministic for a --seed; fault steps are not simulated (NOT_RUN).
It exits like analyze: 0 PASS, 3 FAIL, 4 NOT_RUN.`,
		Example: `  rlbench simulate examples/dimensions/instances.yaml
  rlbench simulate --seed 7 --format json examples/dimensions/users.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.PlanFile = args[0]
			if runF != nil {
				return runF(o)
			}
			return runSimulate(cmd.Context(), o)
		},
	}
	reportFormatFlag(cmd, &o.Format)
	tableViewFlags(cmd, &o.View)
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "seed of the Poisson arrivals and the models' random choices")
	return cmd
}

func runSimulate(ctx context.Context, o *SimulateOptions) error {
	// The simulated evidence is judged like a lab's, and is the same live
	// data: columns without pointers, built once.
	judgegc.Tighten()
	data, err := runner.ReadPlanFile(ctx, o.PlanFile)
	if err != nil {
		return err
	}
	plan, err := runner.ParsePlan(o.PlanFile, data)
	if err != nil {
		return &UsageError{Err: err}
	}
	b, err := sim.Run(ctx, plan, sim.Options{Seed: o.Seed, Name: "simulate " + o.PlanFile})
	if err != nil {
		return err
	}
	judgegc.FitToEvidence()
	rep := analyze.Judge(b, analyze.Options{Series: o.Format == formatHTML})
	if err := ctx.Err(); err != nil { // a verdict judged after the interrupt is not printed
		return err
	}
	if err := render(o.IO.Out, o.Format, o.View, rep, b); err != nil {
		return err
	}
	if o.Format == formatTable {
		if err := sim.WriteGrid(o.IO.Out, sim.GridOf(plan, b, rep)); err != nil {
			return err
		}
	}
	return verdictError(rep)
}
