package cli

import (
	"bufio"
	"context"
	"fmt"

	"github.com/rlbench/rlbench/export"
	"github.com/spf13/cobra"
)

// ExportVegetaOptions are the inputs of `rlbench export vegeta`.
type ExportVegetaOptions struct {
	IO  *IOStreams
	Dir string
}

func newExportCmd(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Convert evidence into other tools' formats",
	}
	cmd.AddCommand(NewExportVegetaCmd(io, nil))
	return cmd
}

// NewExportVegetaCmd is `rlbench export vegeta`. runF, when not nil,
// receives the parsed options instead (tests).
func NewExportVegetaCmd(io *IOStreams, runF func(*ExportVegetaOptions) error) *cobra.Command {
	o := &ExportVegetaOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "vegeta EVIDENCE-DIR",
		Short: "Write every request as a vegeta result (JSON, one per line) for vegeta report and vegeta plot",
		Long: `export vegeta writes each request of a scenario or run directory to stdout in vegeta's
JSON result encoding: attack ("<scenario>/<target>"), seq (send order), code, timestamp
(the send), latency, bytes_in, bytes_out, error, method, url and the captured response
headers (the body is omitted). A malformed requests.jsonl line (a file cut short)
stops that scenario's export with a warning on stderr naming the file and line, and
so does (without stopping) a manifest.json or attack.json that does not decode; the
exit code is then 4, as analyze's for incomplete evidence.`,
		Example: `  rlbench export vegeta runs/latest > results.json
  vegeta report results.json
  vegeta plot results.json > plot.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			if runF != nil {
				return runF(o)
			}
			return runExportVegeta(cmd.Context(), o)
		},
	}
	return cmd
}

func runExportVegeta(ctx context.Context, o *ExportVegetaOptions) error {
	w := bufio.NewWriterSize(o.IO.Out, 256<<10)
	var problems []string
	_, err := export.Vegeta(ctx, o.Dir, w, export.VegetaOptions{Problem: func(m string) { problems = append(problems, m) }})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintln(o.IO.ErrOut, "rlbench: export vegeta:", p)
	}
	if len(problems) > 0 {
		return &ExitCodeError{Code: ExitNotRun, Msg: fmt.Sprintf("export vegeta: incomplete evidence: %d file(s) cut short or malformed (named above); the export holds what could be read", len(problems))}
	}
	return nil
}
