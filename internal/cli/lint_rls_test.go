package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
)

// TestLintRLSConfigSilentZeros: `lint --rls-config DIR` with no YAML directly in DIR used to print "0 error(s)" and
// exit 0, skipping the descriptor cross-check; now it is an error (exit 1) that points at the config/ folder when
// there is one (the RLS reads $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config). An empty file or {} is an error too.
func TestLintRLSConfigSilentZeros(t *testing.T) {
	envoy := filepath.Join("..", "..", "examples", "envoy", "global-a.yaml")
	shipped := filepath.Join("..", "..", "examples", "envoy", "ratelimit")
	empty := t.TempDir()
	files := t.TempDir()
	for name, src := range map[string]string{"empty.yaml": "", "braces.yaml": "{}\n"} {
		if err := os.WriteFile(filepath.Join(files, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		rls, want string
	}{
		{empty, "no RLS config (*.yaml or *.yml) directly in this directory"},
		{shipped, "did you mean --rls-config " + filepath.Join(shipped, "config") + "?"},
		{filepath.Join(files, "empty.yaml"), "config file cannot have empty domain (the file is empty)"},
		{filepath.Join(files, "braces.yaml"), "braces.yaml:1: config file cannot have empty domain"},
	} {
		code, out, stderr := runCLI(t, "lint", envoy, "--rls-config", tc.rls)
		if code != ExitError || !strings.Contains(stderr, tc.want) || strings.Contains(out, "0 error(s)") {
			t.Errorf("--rls-config %s: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.rls, code, out, stderr, ExitError, tc.want)
		}
	}
	// The shipped config folder itself lints clean.
	if code, out, stderr := runCLI(t, "lint", envoy, "--rls-config", filepath.Join(shipped, "config")); code != ExitOK {
		t.Errorf("shipped config: exit %d %s %s", code, out, stderr)
	}
}

// TestLintRLSConfigAliasBomb: an alias bomb given as --rls-config is refused with the line of the alias.
func TestLintRLSConfigAliasBomb(t *testing.T) {
	bomb := filepath.Join(t.TempDir(), "bomb.yaml")
	if err := os.WriteFile(bomb, []byte("domain: d\n"+testfix.AliasBomb("", 8, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "lint", filepath.Join("..", "..", "examples", "envoy", "global-a.yaml"), "--rls-config", bomb)
	if code != ExitError || !strings.Contains(stderr, bomb+":") || !strings.Contains(stderr, "excessive aliasing") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
