package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/merge"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/judgegc"
	"github.com/spf13/cobra"
)

// AnalyzeOptions are the inputs of `rlbench analyze`.
type AnalyzeOptions struct {
	IO     *IOStreams
	Dir    string
	Format string // one of reportFormats
	// StatusFile is where status.txt is written; "" = <Dir>/status.txt, "-" = not written.
	StatusFile string
	// ExpectAdmitted (--expect-admitted N or MIN..MAX) and IntendedLimit
	// (--intended-limit N) override scenario.json when not nil.
	ExpectAdmitted *evidence.Range
	IntendedLimit  *int
	View           tableView // --wide, --details
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
Given a directory of shard directories (rlbench attack --shard K/N), it
judges them merged as one run, as rlbench merge would write it.
It writes status.txt and exits 0 when every scenario PASSes, 3 when one FAILs,
4 when one is NOT_RUN or incomplete.`,
		Example: `  rlbench analyze ` + latestRun() + `    # rlbench runs lists the run directories
  rlbench analyze --format json runs/20261130T101500Z-1 > report.json   # rlbench run --root runs ...
  rlbench analyze --format junit runs/latest > rlbench-junit.xml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			if runF != nil {
				return runF(o)
			}
			return runAnalyze(cmd.Context(), o)
		},
	}
	reportFormatFlag(cmd, &o.Format)
	tableViewFlags(cmd, &o.View)
	rangeFlag(cmd.Flags(), &o.ExpectAdmitted, "expect-admitted", "expected admitted count N or MIN..MAX (overrides scenario.json)")
	countFlag(cmd.Flags(), &o.IntendedLimit, "intended-limit", "admissions meant for the whole backend, for over-admission (overrides scenario.json)")
	cmd.Flags().StringVar(&o.StatusFile, "status-file", "", "where to write status.txt (default EVIDENCE-DIR/status.txt; - to skip)")
	return cmd
}

func runAnalyze(ctx context.Context, o *AnalyzeOptions) error {
	b, rep, err := judgeDir(ctx, o.Dir, analyze.Options{Admitted: o.ExpectAdmitted, IntendedLimit: o.IntendedLimit}, o.Format == formatHTML)
	if err != nil {
		return err
	}
	return finishReport(o.IO, b, rep, o.Format, o.View, o.StatusFile, o.Dir)
}

// judgeDir loads the evidence directory and judges it; series adds the
// time series the HTML report plots.
func judgeDir(ctx context.Context, dir string, opts analyze.Options, series bool) (*evidence.Bundle, *report.Report, error) {
	judgegc.Tighten()
	dir = resolveRunLink(dir) // the report names the run, not the link
	load := evidence.Load
	if merge.IsShardSet(dir) { // a directory of shard directories: judged merged
		load = merge.LoadShardSet
	}
	b, err := load(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	judgegc.FitToEvidence()
	defer judgegc.Serial()()
	opts.Series = series
	return b, analyze.Judge(b, opts), nil
}

// finishReport writes status.txt (unless statusFile is "-"), renders the
// report in format and returns the verdict's exit code. status.txt that
// cannot be written (a read-only evidence directory) is a warning on
// stderr: the report is still rendered and the exit code is the verdict's.
// A status.txt that is a link, a FIFO or a device (safefile.RefusedError) is
// not written through: the report is rendered and the error, naming the
// path, is returned (exit 1) instead of the verdict.
func finishReport(io *IOStreams, b *evidence.Bundle, rep *report.Report, format string, view tableView, statusFile, dir string) error {
	var refused error
	if statusFile != "-" {
		if statusFile == "" {
			statusFile = evidence.Dir(dir).Status()
		}
		if err := writeStatus(statusFile, rep); err != nil {
			if re := (*safefile.RefusedError)(nil); errors.As(err, &re) && !re.Mode.IsDir() {
				// A link, FIFO or device planted where status.txt goes:
				// the evidence directory is not what rlbench wrote; the
				// report is rendered, the outcome is this error, not the
				// verdict. (A directory there cannot be written through:
				// a warning, as for a read-only directory.)
				refused = fmt.Errorf("status.txt not written: %w", err)
			} else {
				fmt.Fprintf(io.ErrOut, "rlbench: warning: status.txt not written: %v (the report below and the exit code still give the verdict)\n", err)
			}
		}
	}
	if err := render(io.Out, format, view, rep, b); err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	return verdictError(rep)
}

// writeStatus writes rep's status lines to path (report.WriteStatus),
// never through a link (safefile.Create).
func writeStatus(path string, rep *report.Report) error {
	f, err := safefile.Create(path, 0o666)
	if err != nil {
		return err
	}
	werr := report.WriteStatus(f, rep)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// render writes rep in one of reportFormats, the table as view asks; b is
// the evidence it was judged from (the csv rows come from it).
func render(w io.Writer, format string, view tableView, rep *report.Report, b *evidence.Bundle) error {
	switch format {
	case formatJSON:
		return report.WriteJSON(w, rep)
	case formatMarkdown:
		return report.WriteMarkdown(w, rep)
	case formatJUnit:
		return report.WriteJUnit(w, rep)
	case formatCSV:
		return report.WriteCSV(w, rep, b)
	case formatHTML:
		return report.WriteHTML(w, rep)
	}
	return report.WriteTableWith(w, rep, view.options(w))
}

func verdictError(rep *report.Report) error {
	switch rep.Status {
	case evidence.Pass:
		return nil
	case evidence.Fail:
		return &ExitCodeError{Code: ExitFail}
	default:
		return &ExitCodeError{Code: ExitNotRun}
	}
}
