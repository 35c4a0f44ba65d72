package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/schemas"
)

// TestSimulateInstances: `rlbench simulate` of the dimensions example
// prints analyze's tables, the grid, PASS and exits 0; --format json is a
// report that validates against its schema; a bad simulate field is a
// usage error naming its line.
func TestSimulateInstances(t *testing.T) {
	code, out, errOut := runCLI(t, "simulate", "../../examples/dimensions/instances.yaml")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"Flows:", "Keys:", "Simulated admitted per second", "│ sticky 100:0:0       │ 110.0      │ 36.6", "Verdict: PASS"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "simulate", "--format", "json", "../../examples/dimensions/users.yaml")
	if code != ExitOK {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
	if err := schemas.Validate(schemas.Report, []byte(out)); err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 2 || len(rep.Scenarios[0].Starved) != 3 || len(rep.Scenarios[1].Starved) != 0 {
		t.Fatalf("starved findings: %+v", rep.Scenarios)
	}
}

// TestSimulateInterrupted: a simulation whose context is done (SIGINT or
// SIGTERM) exits 130 and prints no verdict.
func TestSimulateInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out strings.Builder
	err := runSimulate(ctx, &SimulateOptions{IO: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out},
		PlanFile: "../../examples/dimensions/instances.yaml", Format: formatTable})
	if code := exitCode(err, io.Discard); code != ExitInterrupted || strings.Contains(out.String(), "Verdict") {
		t.Fatalf("err %v (exit %d), output %q", err, code, out.String())
	}
}
