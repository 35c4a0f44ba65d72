package cli

import (
	"runtime"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/buildinfo"
)

// `rlbench --version` is the build info's line (evidence/buildinfo), not a
// bare "(devel)": the toolchain at least, and the revision when the build
// recorded one (a test binary records none, so the line says so).
func TestVersionFlag(t *testing.T) {
	code, out, errOut := runCLI(t, "--version")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "rlbench version " + buildinfo.Read().String() + "\n"
	if out != want {
		t.Fatalf("--version printed %q, want %q", out, want)
	}
	if !strings.Contains(out, runtime.Version()) || strings.TrimSpace(out) == "rlbench version (devel)" {
		t.Fatalf("--version printed %q: no toolchain, or (devel) alone", out)
	}
}
