package cli

import (
	"context"
	"os"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/spf13/cobra"
)

// AnalyzeOptions are the inputs of `rlbench analyze`.
type AnalyzeOptions struct {
	IO     *IOStreams
	Dir    string
	Format string // formatTable | formatJSON
	// StatusFile is where status.txt is written; "" = <Dir>/status.txt, "-" = not written.
	StatusFile string
	// ExpectAdmitted (--expect-admitted N or MIN..MAX) and IntendedLimit
	// (--intended-limit N) override scenario.json when not nil.
	ExpectAdmitted *evidence.Range
	IntendedLimit  *int
}

// NewAnalyzeCmd is `rlbench analyze`. runF, when not nil, receives the
// parsed options instead of analysing (tests).
func NewAnalyzeCmd(io *IOStreams, runF func(*AnalyzeOptions) error) *cobra.Command {
	o := &AnalyzeOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "analyze EVIDENCE-DIR",
		Short: "Reconcile an evidence directory and judge each scenario PASS, FAIL or NOT_RUN",
		Long: `analyze reads requests.jsonl, receipts.jsonl, stats/, faults.jsonl and rls/ of one
scenario directory, or of every scenario directory below a run directory, and
reports response classes per target, the reconciliation by ID with backend
receipts, proxy counter deltas, over-admission and fault-window tallies.
It writes status.txt and exits 0 when every scenario PASSes, 3 when one FAILs,
4 when one is NOT_RUN or incomplete.`,
		Example: `  rlbench analyze evidence/20261130T101500Z-1
  rlbench analyze --format json evidence/20261130T101500Z-1 > report.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			if runF != nil {
				return runF(o)
			}
			return runAnalyze(cmd.Context(), o)
		},
	}
	formatFlag(cmd, &o.Format)
	rangeFlag(cmd.Flags(), &o.ExpectAdmitted, "expect-admitted", "expected admitted count N or MIN..MAX (overrides scenario.json)")
	countFlag(cmd.Flags(), &o.IntendedLimit, "intended-limit", "admissions meant for the whole backend, for over-admission (overrides scenario.json)")
	cmd.Flags().StringVar(&o.StatusFile, "status-file", "", "where to write status.txt (default EVIDENCE-DIR/status.txt; - to skip)")
	return cmd
}

func runAnalyze(ctx context.Context, o *AnalyzeOptions) error {
	rep, err := analyze.Analyze(ctx, o.Dir, analyze.Options{Admitted: o.ExpectAdmitted, IntendedLimit: o.IntendedLimit})
	if err != nil {
		return err
	}
	return finishReport(o.IO, rep, o.Format, o.StatusFile, o.Dir)
}

// finishReport writes status.txt, renders the report and returns the verdict's exit code.
func finishReport(io *IOStreams, rep *analyze.Report, format, statusFile, dir string) error {
	if statusFile != "-" {
		if statusFile == "" {
			statusFile = evidence.Dir(dir).Status()
		}
		f, err := os.Create(statusFile)
		if err != nil {
			return err
		}
		werr := analyze.WriteStatus(f, rep)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
	}
	var err error
	if format == formatJSON {
		err = analyze.WriteJSON(io.Out, rep)
	} else {
		err = analyze.WriteTable(io.Out, rep)
	}
	if err != nil {
		return err
	}
	return verdictError(rep)
}

func verdictError(rep *analyze.Report) error {
	switch rep.Status {
	case analyze.Pass:
		return nil
	case analyze.Fail:
		return &ExitCodeError{Code: ExitFail}
	default:
		return &ExitCodeError{Code: ExitNotRun}
	}
}
