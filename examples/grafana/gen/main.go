// Command gen writes rlbench's Grafana dashboard (package
// examples/grafana) as JSON to the file given by -o, or to stdout. It is
// run by `go generate ./examples/grafana`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/rlbench/rlbench/examples/grafana"
)

func main() {
	out := flag.String("o", "", "write the dashboard to this file (default: stdout)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	b, err := grafana.JSON()
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
