package cli

import (
	"io"
	"path/filepath"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/spf13/cobra"
)

// eventsHelp is --events's help, shared by run and attack.
const eventsHelp = "write the event stream (JSON Lines, schemas/event.v1.schema.json) to `FILE`, or to standard output with - (the report then goes to standard error)"

// eventsFlag registers --events into p.
func eventsFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "events", "", eventsHelp)
}

// checkEvents refuses (usage error) an --events path that cannot be
// written as a file (checkOutputFile); "-" and "" pass.
func checkEvents(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	return checkOutputFile("--events", path)
}

// openEvents opens --events: nil without it, standard output (out) for
// "-", else the file path, created anew (never through a link). close
// writes what the sink holds, closes the file and returns the first error.
func openEvents(path string, out io.Writer) (sink *events.Sink, close func() error, err error) {
	switch path {
	case "":
		return nil, func() error { return nil }, nil
	case "-":
		s := events.NewSink(out, nil)
		return s, s.Close, nil
	}
	f, err := safefile.Create(path, 0o666)
	if err != nil {
		return nil, nil, err
	}
	s := events.NewSink(f, nil)
	return s, func() error {
		serr := s.Close()
		if cerr := f.Close(); serr == nil {
			serr = cerr
		}
		return serr
	}, nil
}

// reportStreams are the streams the report is rendered on: io, or with
// --events - (the stream owns standard output) standard error for both.
func reportStreams(io *IOStreams, eventsPath string) *IOStreams {
	if eventsPath != "-" {
		return io
	}
	s := *io
	s.Out = io.ErrOut
	return &s
}

// emitVerdicts writes one verdict event per scenario repeat of rep.
func emitVerdicts(sink *events.Sink, rep *report.Report) {
	if sink == nil {
		return
	}
	for i := range rep.Scenarios {
		sc := &rep.Scenarios[i]
		v := &events.Verdict{Scenario: sc.Name, Repeat: sc.Repeat, Dir: sc.Dir, Status: sc.Status, Admitted: sc.Totals.Passed,
			NoResponse: sc.Totals.N[evidence.ClassNoResponse], Reasons: sc.Reasons}
		if sc.Bound != nil {
			b := sc.Bound.Allowed
			v.Bound = &b
		}
		if m := sc.Model; m != nil {
			lo, hi := m.Min, m.Max
			v.ModelMin, v.ModelMax = &lo, &hi
		}
		_ = sink.Emit(events.Event{Type: events.TypeVerdict, Verdict: v})
	}
}

// emitFinished writes the finished event of a command that returns err
// (its exit code is classifyError's, the one mapping); rep and dir, when
// known, give the verdict and status.txt.
func emitFinished(sink *events.Sink, err error, rep *report.Report, dir string) {
	if sink == nil {
		return
	}
	code, msg, _ := classifyError(err)
	f := &events.Finished{ExitCode: code, Dir: dir}
	if code != ExitOK && (rep == nil || code != verdictCode(rep)) {
		f.Error = evidence.RedactText(msg)
	}
	if rep != nil {
		f.Status = rep.Status
		f.StatusFile = filepath.Join(dir, evidence.StatusFile)
	}
	_ = sink.Emit(events.Event{Type: events.TypeFinished, Finished: f})
}

// verdictCode is the exit code of rep's verdict (verdictError).
func verdictCode(rep *report.Report) int {
	code, _, _ := classifyError(verdictError(rep))
	return code
}
