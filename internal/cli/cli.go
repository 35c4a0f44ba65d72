// Package cli is rlbench's command line: cobra commands that map flags to the
// option structs of the attack, collect and analyze libraries, and errors to
// exit codes in one place (Main).
//
// Every leaf command has the shape of cli/cli's commands: an XOptions struct
// (streams first, then the flag values as domain types), NewXCmd(io, runF)
// whose RunE fills and checks the options and then calls runF (tests) or
// runX (the work). Flag values are parsed at the boundary by the pflag.Value
// types of flags.go; a bad value or a bad combination is a *UsageError
// (exit 2) before anything is sent or written.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/buildinfo"
	"github.com/spf13/cobra"
)

// Exit codes, a documented contract (README "Exit codes").
const (
	ExitOK          = 0   // success; for analyze and run: every scenario PASS
	ExitError       = 1   // runtime error
	ExitUsage       = 2   // bad flags or arguments
	ExitFail        = 3   // analyze/run: some scenario FAIL; lint: an error-level finding; diff: a scenario's verdict worse in B
	ExitNotRun      = 4   // analyze/run: some scenario NOT_RUN or incomplete, none FAIL; export/merge: evidence incomplete (cut short)
	ExitInterrupted = 130 // interrupted by SIGINT/SIGTERM; what was recorded is kept
)

// IOStreams are the command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// System returns the process's standard streams.
func System() *IOStreams { return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr} }

// UsageError is a misuse of flags or arguments (exit 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, a ...any) error { return &UsageError{Err: fmt.Errorf(format, a...)} }

// ExitCodeError carries a non-error outcome with its own exit code (a FAIL
// verdict, an interrupted attack). Msg, when set, is printed to stderr.
type ExitCodeError struct {
	Code int
	Msg  string
}

func (e *ExitCodeError) Error() string { return e.Msg }

// Main runs rlbench with args and returns the exit code. The first SIGINT or
// SIGTERM cancels the command's context (attacks stop and keep what they
// recorded); a second one kills the process.
func Main(args []string, io *IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal gets Go's default behaviour: exit
	}()
	// Standard output goes through evidence.RedactText a line at a time
	// (redactingWriter): reports quote evidence, which an older release
	// may have written with a query token in it. Standard error's lines
	// are redacted at their sources and in exitCode; it stays the
	// process's own, so that the attack's progress bar sees a terminal.
	out := newRedactingWriter(io.Out)
	streams := *io
	streams.Out = out
	root := NewRoot(&streams)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	code := commandExitCode(err, io.ErrOut, cmd)
	if ferr := out.Flush(); ferr != nil && code == ExitOK {
		fmt.Fprintln(io.ErrOut, "rlbench: writing standard output:", ferr)
		code = ExitError
	}
	return code
}

// commandExitCode is exitCode for cmd, the command that ran: its --help is
// named after a usage error (nil: the root's).
func commandExitCode(err error, stderr io.Writer, cmd *cobra.Command) int {
	code, msg, usage := classifyError(err)
	if msg != "" {
		// The last line of defence: whatever the sources let through, no
		// password, query token or credential header is printed
		// (evidence.RedactText; net/http and net/url errors quote the URL).
		fmt.Fprintln(stderr, "rlbench:", evidence.RedactText(msg))
	}
	if usage {
		fmt.Fprintln(stderr, helpHint(cmd))
	}
	return code
}

// classifyError maps err to its exit code, the message printed for it ("" for
// none) and whether the usage hint follows. It is exitCode's one ladder.
func classifyError(err error) (code int, msg string, usage bool) {
	if err == nil {
		return ExitOK, "", false
	}
	var ue *UsageError
	var ce *ExitCodeError
	var nr *boundedio.NotRegularError
	switch {
	case errors.As(err, &ce):
		return ce.Code, ce.Msg, false
	case errors.As(err, &ue):
		return ExitUsage, ue.Err.Error(), true
	case errors.Is(err, context.Canceled):
		// The command's context ends only by SIGINT or SIGTERM (Main).
		return ExitInterrupted, "interrupted: " + err.Error(), false
	case errors.As(err, &nr):
		// An input that is a FIFO, a device or a directory where a file
		// is wanted (`rlbench run fifo.yaml`, `rlbench lint /dev/null`):
		// the argument is wrong, nothing was read from it.
		return ExitUsage, err.Error(), false
	case errors.Is(err, fs.ErrNotExist):
		// An input path that does not exist (a plan, an evidence
		// directory, a log, --ids-file...) or an output path whose
		// directory does not: the argument is wrong, as above.
		return ExitUsage, err.Error(), false
	default:
		return ExitError, err.Error(), false
	}
}

// NewRoot builds the command tree.
func NewRoot(io *IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "rlbench",
		Short: "Prove whether rate limits hold, with evidence",
		Long: `rlbench fires a fixed set of request IDs at proxies, records a receipt for every
request the backend really received, snapshots Envoy and rate limit service
stats, and reconciles it all into PASS, FAIL or NOT_RUN per scenario.`,
		Example: `  rlbench demo                              # the canonical experiment on the embedded lab
  rlbench run examples/e06/plan.yaml        # a plan's scenarios, with faults (in a clone)
  rlbench runs                              # the run directories written so far`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       buildinfo.Read().String(),
		Args:          cobra.NoArgs,
		// No subcommand: show the help; an unknown one is a usage error (exit 2).
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.AddCommand(
		NewAnalyzeCmd(io, nil),
		NewReportCmd(io, nil),
		NewDiffCmd(io, nil),
		newExportCmd(io),
		NewRunCmd(io, nil),
		NewConformanceCmd(io, nil),
		NewSimulateCmd(io, nil),
		NewDemoCmd(io, nil),
		NewRunsCmd(io, nil),
		NewAttackCmd(io, nil),
		NewMergeCmd(io, nil),
		NewBackendCmd(io, nil),
		NewLabCmd(io, nil),
		newCollectCmd(io),
		NewLintCmd(io, nil),
		NewWaitCmd(io, nil),
	)
	finishTree(root)
	return root
}

// finishTree applies the tree-wide rules to cmd and everything below it:
// flag and argument misuse are usage errors (exit 2), a command without
// Args takes none, a group without a subcommand is a usage error. Tests
// apply it to a single command to see it as the root would run it.
func finishTree(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	for _, c := range root.Commands() {
		if c.Args == nil {
			c.Args = cobra.NoArgs
		}
		if c.HasSubCommands() && c.RunE == nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				return usageErrorf("%s needs a subcommand: %s", cmd.CommandPath(), subNames(cmd))
			}
		}
	}
	wrapArgs(root)
	groupFlags(root)
}

func subNames(c *cobra.Command) string {
	var names []string
	for _, s := range c.Commands() {
		names = append(names, s.Name())
	}
	return strings.Join(names, ", ")
}

// wrapArgs turns cobra's argument validation errors (and unknown commands,
// which cobra reports through the parent's Args) into usage errors.
func wrapArgs(c *cobra.Command) {
	if c.Args == nil {
		return
	}
	inner := c.Args
	c.Args = func(cmd *cobra.Command, args []string) error {
		if err := inner(cmd, args); err != nil {
			return argsError(cmd, args, err)
		}
		return nil
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}
