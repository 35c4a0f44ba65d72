package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/spf13/cobra"
)

// AnalyzeOptions are the inputs of `rlbench analyze`.
type AnalyzeOptions struct {
	IO     *IOStreams
	Dir    string
	Format string // table | json
	// StatusFile is where status.txt is written; "" = <Dir>/status.txt, "-" = not written.
	StatusFile string
	// ExpectAdmitted ("N" or "MIN..MAX") and IntendedLimit override scenario.json.
	ExpectAdmitted string
	IntendedLimit  int
}

func newAnalyzeCmd(io *IOStreams) *cobra.Command {
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
			if o.Format != "table" && o.Format != "json" {
				return usageErrorf("--format must be table or json, not %q", o.Format)
			}
			return runAnalyze(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "table", "output format: table or json")
	cmd.Flags().StringVar(&o.ExpectAdmitted, "expect-admitted", "", "expected admitted count N or MIN..MAX (overrides scenario.json)")
	cmd.Flags().IntVar(&o.IntendedLimit, "intended-limit", -1, "admissions meant for the whole backend, for over-admission (overrides scenario.json)")
	cmd.Flags().StringVar(&o.StatusFile, "status-file", "", "where to write status.txt (default EVIDENCE-DIR/status.txt; - to skip)")
	return cmd
}

func runAnalyze(ctx context.Context, o *AnalyzeOptions) error {
	var ao analyze.Options
	if o.ExpectAdmitted != "" {
		r, err := evidence.ParseRange(o.ExpectAdmitted)
		if err != nil || r.Min < 0 {
			if err == nil {
				err = fmt.Errorf("range %q: want 0 <= min <= max", o.ExpectAdmitted)
			}
			return usageErrorf("--expect-admitted: %v", err)
		}
		ao.Admitted = &r
	}
	if o.IntendedLimit >= 0 {
		ao.IntendedLimit = &o.IntendedLimit
	}
	rep, err := analyze.Analyze(ctx, o.Dir, ao)
	if err != nil {
		return err
	}
	return finishReport(o.IO, rep, o.Format, o.StatusFile, o.Dir)
}

// finishReport writes status.txt, renders the report and returns the verdict's exit code.
func finishReport(io *IOStreams, rep *analyze.Report, format, statusFile, dir string) error {
	if statusFile != "-" {
		if statusFile == "" {
			statusFile = filepath.Join(dir, "status.txt")
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
	if format == "json" {
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
