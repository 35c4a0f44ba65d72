package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/spf13/cobra"
)

// ReportOptions are the inputs of `rlbench report`.
type ReportOptions struct {
	IO  *IOStreams
	Dir string
	// Format is what is printed on stdout (one of reportFormats).
	Format string
	// HTMLFile and PrometheusFile, when set, are written atomically.
	HTMLFile       string
	PrometheusFile string
	// ExpectAdmitted and IntendedLimit override scenario.json, as for analyze.
	ExpectAdmitted *evidence.Range
	IntendedLimit  *int
	View           tableView // --wide, --details
}

// NewReportCmd is `rlbench report`. runF, when not nil, receives the parsed
// options instead of reporting (tests).
func NewReportCmd(io *IOStreams, runF func(*ReportOptions) error) *cobra.Command {
	o := &ReportOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "report EVIDENCE-DIR",
		Short: "Write an evidence directory's analysis as an HTML page, a Prometheus textfile, or another format",
		Long: `report judges an evidence directory as analyze does, without writing status.txt, and
writes the result where it is asked for:
  --html FILE        one self-contained HTML page (no network needed): per scenario the
                     verdict and its reasons, a timeline per target (admitted, limiter-
                     rejected and errors per bin, backend receipts, fault windows, the
                     bound), latency distributions per class, the reconciliation with
                     the offending IDs;
  --prometheus FILE  the verdicts and key figures in the Prometheus text format, for a
                     node-exporter textfile collector;
and prints the report on stdout in --format (default table); with --html or
--prometheus it prints only "report: wrote FILE" and the verdict on stderr,
unless --format is given. Files are written to a temporary file beside them
and renamed, so a reader never sees half a file; errors name FILE.
It exits as analyze does: 0 PASS, 3 FAIL, 4 NOT_RUN.`,
		Example: `  rlbench report runs/latest --html report.html
  rlbench report runs/latest --prometheus /var/lib/node_exporter/textfile/rlbench.prom --format markdown`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			if (o.HTMLFile != "" || o.PrometheusFile != "") && !cmd.Flags().Changed("format") {
				o.Format = "" // the files were asked for, not the table
			}
			if runF != nil {
				return runF(o)
			}
			return runReport(cmd.Context(), o)
		},
	}
	reportFormatFlag(cmd, &o.Format)
	tableViewFlags(cmd, &o.View)
	cmd.Flags().StringVar(&o.HTMLFile, "html", "", "write the HTML report to `FILE`")
	cmd.Flags().StringVar(&o.PrometheusFile, "prometheus", "", "write the Prometheus textfile to `FILE`")
	rangeFlag(cmd.Flags(), &o.ExpectAdmitted, "expect-admitted", "expected admitted count N or MIN..MAX (overrides scenario.json)")
	countFlag(cmd.Flags(), &o.IntendedLimit, "intended-limit", "admissions meant for the whole backend, for over-admission (overrides scenario.json)")
	return cmd
}

func runReport(ctx context.Context, o *ReportOptions) error {
	opts := analyze.Options{Admitted: o.ExpectAdmitted, IntendedLimit: o.IntendedLimit}
	b, rep, err := judgeDir(ctx, o.Dir, opts, o.HTMLFile != "" || o.Format == formatHTML)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path  string
		write func(io.Writer, *report.Report) error
	}{{o.HTMLFile, report.WriteHTML}, {o.PrometheusFile, report.WritePrometheus}} {
		if f.path == "" {
			continue
		}
		// The file quotes evidence as standard output does: redacted (redactingWriter).
		if err := writeFileAtomic(f.path, func(w io.Writer) error {
			rw := newRedactingWriter(w)
			return errors.Join(f.write(rw, rep), rw.Flush())
		}); err != nil {
			return err
		}
		if o.Format == "" {
			fmt.Fprintf(o.IO.ErrOut, "report: wrote %s\n", f.path)
		}
	}
	if o.Format == "" {
		fmt.Fprintf(o.IO.ErrOut, "report: verdict %s\n", rep.Status)
		return verdictError(rep)
	}
	return finishReport(o.IO, b, rep, o.Format, o.View, "-", o.Dir)
}

// writeFileAtomic writes path through fn: into a temporary file in path's
// directory, synced, then renamed over path (mode 0644), so that a reader
// (a textfile collector, a browser) sees the old file or the new one,
// never a partial one; a link, FIFO or device at path is refused
// (safefile.WriteAtomic).
func writeFileAtomic(path string, fn func(io.Writer) error) error {
	return safefile.WriteAtomic(path, 0o644, fn)
}
