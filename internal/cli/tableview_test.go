package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/creack/pty"
	"github.com/spf13/cobra"
)

// TestTableViewFlags: --wide and --details reach the options of every
// command that prints a report; neither is on by default.
func TestTableViewFlags(t *testing.T) {
	type parsed struct{ view, def tableView }
	for _, c := range []struct {
		name string
		new  func(*tableView) *cobra.Command
		args string
	}{
		{"analyze", func(v *tableView) *cobra.Command {
			return NewAnalyzeCmd(tio, func(o *AnalyzeOptions) error { *v = o.View; return nil })
		}, "ev"},
		{"report", func(v *tableView) *cobra.Command {
			return NewReportCmd(tio, func(o *ReportOptions) error { *v = o.View; return nil })
		}, "ev"},
		{"run", func(v *tableView) *cobra.Command {
			return NewRunCmd(tio, func(o *RunOptions) error { *v = o.View; return nil })
		}, "plan.yaml"},
		{"demo", func(v *tableView) *cobra.Command {
			return NewDemoCmd(tio, func(o *RunOptions) error { *v = o.View; return nil })
		}, ""},
		{"simulate", func(v *tableView) *cobra.Command {
			return NewSimulateCmd(tio, func(o *SimulateOptions) error { *v = o.View; return nil })
		}, "plan.yaml"},
	} {
		var p parsed
		if err := execute(c.new(&p.def), argv(c.args)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := execute(c.new(&p.view), argv("--wide --details "+c.args)); err != nil {
			t.Fatalf("%s --wide --details: %v", c.name, err)
		}
		if p.def != (tableView{}) || p.view != (tableView{Wide: true, Details: true}) {
			t.Errorf("%s: default %+v, with the flags %+v", c.name, p.def, p.view)
		}
	}
}

// TestTerminalWidth: COLUMNS wins, then the TTY's width; a buffer, a file
// or a bad COLUMNS is unknown (0).
func TestTerminalWidth(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptm.Close()
	defer tty.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 93}); err != nil {
		t.Fatal(err)
	}
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, c := range []struct {
		columns string
		out     any
		want    int
	}{
		{"", tty, 93}, {"", &bytes.Buffer{}, 0}, {"", file, 0},
		{"80", &bytes.Buffer{}, 80}, {"132", tty, 132}, {"wide", tty, 93}, {"-3", &bytes.Buffer{}, 0},
	} {
		t.Setenv("COLUMNS", c.columns)
		var got int
		switch out := c.out.(type) {
		case *os.File:
			got = terminalWidth(out)
		case *bytes.Buffer:
			got = terminalWidth(out)
		}
		if got != c.want {
			t.Errorf("COLUMNS=%q, %T: width %d, want %d", c.columns, c.out, got, c.want)
		}
	}
}

// TestDemoFitsTerminal is issue 25's done-when: on an 80-column terminal
// the demo prints no line over 80 columns (the bound is 120), the verdict
// table first and the verdict within the first 15 lines, no detail
// section and no colour (stdout is not a terminal; the report never has
// colour); --wide --details gives the boxed tables of before with every
// column, the latency, the arrivals and the limiter lines, and no row
// twice (the per-proxy model row is one row for all proxies).
func TestDemoFitsTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	code, out, stderr := runCLI(t, "demo", "--quiet", "--root", t.TempDir())
	if code != ExitOK {
		t.Fatalf("demo exit %d: %s\n%s", code, stderr, out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns: %s", n, l)
		}
	}
	if !strings.HasPrefix(lines[0], "Scenario") {
		t.Errorf("first line %q, want the verdict table's header", lines[0])
	}
	if v := slices.Index(lines, "Verdict: PASS"); v < 0 || v >= 15 {
		t.Errorf("verdict at line %d, want within the first 15:\n%s", v+1, out)
	}
	for _, not := range []string{"Latency", "Backend arrivals", "certainly admitted", "│", "\x1b["} {
		if strings.Contains(out, not) {
			t.Errorf("default output holds %q:\n%s", not, out)
		}
	}

	code, out, stderr = runCLI(t, "demo", "--quiet", "--wide", "--details", "--root", t.TempDir())
	if code != ExitOK {
		t.Fatalf("demo --wide --details exit %d: %s\n%s", code, stderr, out)
	}
	for _, want := range []string{
		"│ two local buckets │ all     │ 20   │ 10 (model 10..10) │ 10        │ 0          │ 0       │ 0     │ 0       │ 10       │ over-admission 5 vs 5 │ PASS   │",
		"Local 429", "Global 429", "RLS 500", "Other", "No resp", "Receipts", "Vs intended limit",
		"10 (model 10..10)", "over-admission 5 vs 5", "Latency (client side, by class):", "p99.9",
		"Backend arrivals (sliding-window peaks with the instant rate, inter-arrival gaps):", "Gap p99", "receipts via proxy-a",
		"two local buckets: limiter local proxy-a (envoy_local, key target): admitted 5 (model 5..5)",
		"two local buckets: limiter local proxy-b (envoy_local, key target): admitted 5 (model 5..5)", "two local buckets: harness: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--wide --details: no %q:\n%s", want, out)
		}
	}
	seen := map[string]bool{}
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "│") && seen[l] {
			t.Errorf("row twice: %s", l)
		}
		seen[l] = true
	}
	// The two proxies' model rows are merged into one when their peaks are
	// equal; how many of a burst fall into one 1 ms window is the
	// scheduler's, so two rows (one per proxy) are as right.
	merged, apart := strings.Count(out, "model per proxy (all proxies): Envoy"), strings.Count(out, "│ model: Envoy")
	if !(merged == 1 && apart == 0 || merged == 0 && apart == 2) {
		t.Errorf("%d merged and %d separate rows of the per-proxy model, want 1 merged or 2 separate:\n%s", merged, apart, out)
	}
}
