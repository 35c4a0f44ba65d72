package cli

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// tableView is how the commands that print a report (analyze, run, demo,
// report, simulate) shape --format table: fitted to the terminal with
// the verdict and its reasons first (report.WriteTableWith), or as asked
// by --wide and --details. The other formats are not affected: JSON,
// HTML and markdown always hold every section.
type tableView struct {
	Wide    bool // --wide: every column at full width, boxed
	Details bool // --details: latency, backend arrivals, limiter and harness lines
}

// detailsHint is the line the table writes where --details would add the
// detail sections (wideHint under --wide).
const (
	detailsHint = "(latency, arrivals, limiters: --details; all columns: --wide)"
	wideHint    = "(latency, arrivals, limiters: --details)"
)

// tableViewFlags adds --wide and --details to cmd.
func tableViewFlags(cmd *cobra.Command, v *tableView) {
	cmd.Flags().BoolVar(&v.Wide, "wide", false, "table: every column at full width, boxed (default: fitted to the terminal's width, COLUMNS or the TTY's, 80 to 120 columns; 100 when unknown)")
	cmd.Flags().BoolVar(&v.Details, "details", false, "table: add the latency, backend arrivals, limiter and harness details (json, html and markdown always have them)")
}

// options are the report.TableOptions of v for output written to out.
func (v tableView) options(out io.Writer) report.TableOptions {
	o := report.TableOptions{Width: terminalWidth(out), Wide: v.Wide, Details: v.Details, DetailsHint: detailsHint}
	if v.Wide {
		o.DetailsHint = wideHint
	}
	return o
}

// terminalWidth is the width the table is fitted to: COLUMNS when it is a
// positive number (as a shell exports it, or as set for one command),
// else the width of out when it is a terminal (golang.org/x/term; through
// the writers Main puts around it, which Unwrap), else 0 (unknown:
// report.DefaultWidth).
func terminalWidth(out io.Writer) int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	for {
		u, ok := out.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		out = u.Unwrap()
	}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}
