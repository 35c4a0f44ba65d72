package examples

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/schemas"
)

// goCommand is the go command of the toolchain running the tests.
func goCommand(t *testing.T) string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestLibraryExample builds and runs examples/library, a module of its own
// (go.mod with a replace of rlbench to this checkout), offline: it proves
// that attack, evidence and analyze are importable by another module (an
// internal package would not compile there), that the evidence it
// writes with them is judged PASS and matches the schemas, and that the
// checker it adds through analyze's public API (Options.ExtraCheckers,
// Input) is judged and listed in the report. GOFLAGS=-mod=readonly
// with GOPROXY=off uses only the module cache (which holds rlbench's
// dependencies once this module's tests are built) and the committed go.sum.
func TestLibraryExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, goCommand(t), "run", ".", "-dir", dir)
	cmd.Dir = "library"
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/library: %v\n%s\n(if its go.mod or go.sum is out of date with rlbench's dependencies: cd examples/library && go mod tidy)", err, out)
	}
	for _, want := range []string{
		"library example: PASS (5 admitted)",
		"  sent 20, admitted 5, other_4xx 15, receipts 5",
		"  pass    receipts = admitted: want 5, got 5",
		// the example's own checker (analyze.Options.ExtraCheckers), in the report
		"  pass    library: admitted requests received, rejected ones not: want 5 received, 0 leaked, got 5 received, 0 leaked",
		"verdict: PASS",
	} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The evidence files it wrote with the library's writers match their schemas.
	n, err := schemas.ValidateDir(dir)
	if err != nil || n != 6 {
		t.Fatalf("evidence of the example: %d files valid (want scenario, attack, requests, receipts and the seals of the last two), %v", n, err)
	}
}
