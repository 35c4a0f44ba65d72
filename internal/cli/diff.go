package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/spf13/cobra"
)

// diffFormats are the formats of `rlbench diff`.
var diffFormats = []string{formatTable, formatMarkdown, formatJSON}

// DiffOptions are the inputs of `rlbench diff`.
type DiffOptions struct {
	IO *IOStreams
	// A and B are what is compared, A before B: each a run directory, a
	// scenario directory or a report saved by `analyze --format json`.
	A, B string
	// Format is one of diffFormats.
	Format string
	// Out, when set, is the file the diff is written to (atomically)
	// instead of stdout.
	Out string
	// Wide renders the table with every column at full width, boxed.
	Wide bool
}

// NewDiffCmd is `rlbench diff`. runF, when not nil, receives the parsed
// options instead of diffing (tests).
func NewDiffCmd(io *IOStreams, runF func(*DiffOptions) error) *cobra.Command {
	o := &DiffOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two runs: verdict flips, changed counts, latency deltas, configuration digests",
		Long: `diff judges two evidence directories as analyze does (without writing status.txt) and
compares them, A before B. Each of A and B is a run directory (with manifest.json), a
scenario directory, or a report saved by 'rlbench analyze --format json'. Scenario runs
are matched by name and repeat. diff lists the verdict flips (the worse ones first, with
their reasons), the scenarios of one side only, and for every matched scenario the
counts that changed (sent, each response class, passed, per target, the reconciliation
with the backend's receipts), the admitted, over-admission, bound and model ranges,
the checks whose status changed (with the measured value of each side), the client
latency p50/p90/p99/max per class, and the configuration digests that differ:
manifest.json's plan_digest, and digests rlbench computes of each scenario's
scenario.json, attack.json and nginx.conf, leaving out what changes from run to run
(start times, repeat numbers, loopback ports); a saved report has none.
--format markdown is meant for a pull-request comment.
It exits 0 when no scenario of both sides has a worse verdict in B, 3 when one has
(PASS → NOT_RUN, PASS → FAIL, NOT_RUN → FAIL: the code of analyze's FAIL); a scenario
of one side only is listed but does not change the exit code. A or B missing is a
usage error (2); a report file that does not decode is an error (1) naming the file
and line.`,
		Example: `  rlbench diff runs/20261130T101500Z-1 runs/latest
  rlbench diff --format markdown --out diff.md main.json runs/latest
  rlbench diff --format json runs/a runs/b | jq '.flips'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.A, o.B = args[0], args[1]
			if runF != nil {
				return runF(o)
			}
			return runDiff(cmd.Context(), o)
		},
	}
	enumFlag(cmd, &o.Format, "format", formatTable, diffFormats, "output format")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the diff to `FILE` (atomically) instead of stdout")
	cmd.Flags().BoolVar(&o.Wide, "wide", false, "table: every column at full width, boxed (default: fitted to the terminal's width)")
	return cmd
}

func runDiff(ctx context.Context, o *DiffOptions) error {
	a, err := loadDiffSide(ctx, o.A)
	if err != nil {
		return err
	}
	b, err := loadDiffSide(ctx, o.B)
	if err != nil {
		return err
	}
	d := report.Compare(a, b)
	write := func(w io.Writer) error {
		switch o.Format {
		case formatJSON:
			return report.WriteDiffJSON(w, d)
		case formatMarkdown:
			return report.WriteDiffMarkdown(w, d)
		}
		width := terminalWidth(o.IO.Out)
		if o.Out != "" {
			width = 0 // a file: the default width
		}
		return report.WriteDiffTable(w, d, report.TableOptions{Width: width, Wide: o.Wide})
	}
	if o.Out != "" {
		// The file quotes evidence as standard output does: redacted.
		if err := writeFileAtomic(o.Out, func(w io.Writer) error {
			rw := newRedactingWriter(w)
			return errors.Join(write(rw), rw.Flush())
		}); err != nil {
			return err
		}
		fmt.Fprintf(o.IO.ErrOut, "diff: wrote %s\n", o.Out)
	} else if err := write(o.IO.Out); err != nil {
		return err
	}
	return diffVerdictError(d)
}

// diffVerdictError is the exit code of a diff: ExitFail naming the
// scenarios whose verdict got worse, nil when none did.
func diffVerdictError(d *report.Diff) error {
	if !d.Worse {
		return nil
	}
	var worse []string
	for _, f := range d.Flips {
		if f.Change == report.ChangeWorse {
			name := f.Name
			if f.Repeat > 1 {
				name += fmt.Sprintf(" #%d", f.Repeat)
			}
			worse = append(worse, fmt.Sprintf("%q %s → %s", name, f.A, f.B))
		}
	}
	return &ExitCodeError{Code: ExitFail, Msg: "diff: verdict worse in B: " + strings.Join(worse, ", ")}
}

// loadDiffSide reads one side of a diff: a report file saved by `analyze
// --format json`, or a run or scenario directory judged as analyze judges
// it. A path that does not exist is an error wrapping fs.ErrNotExist
// (exit 2), naming it.
func loadDiffSide(ctx context.Context, path string) (*report.DiffSide, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err // *fs.PathError: "stat PATH: no such file or directory"
	}
	if !st.IsDir() {
		raw, err := boundedio.ReadRegular(ctx, path, evidence.MaxDocumentBytes)
		if err != nil {
			return nil, err
		}
		rep, err := report.ReadJSON(bytes.NewReader(raw), path)
		if err != nil {
			return nil, err
		}
		return &report.DiffSide{Path: path, Kind: report.DiffSaved, Report: rep}, nil
	}
	// A directory is a run (manifest.json) or one scenario's evidence, as
	// `rlbench run` and `rlbench attack` leave them; analyze would also
	// search any directory for scenarios below it, which for a diff (a CI
	// gate comparing a baseline with a new run) would turn a wrong or
	// empty path into a comparison that passes.
	if _, err := os.Stat(evidence.Dir(path).Manifest()); err != nil && !evidence.IsScenarioDir(path) {
		return nil, usageErrorf("diff: %s is not a run directory (no %s) nor a scenario directory (no %s, %s or %s)", path,
			evidence.ManifestFile, evidence.ScenarioFile, evidence.RequestsFile, evidence.NotRunFile)
	}
	b, rep, err := judgeDir(ctx, path, analyze.Options{}, false)
	if err != nil {
		return nil, err
	}
	return analyze.DiffSide(ctx, path, b, rep)
}
