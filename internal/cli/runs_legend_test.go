package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestRunsSaysWhatTheStarMeans: `rlbench runs` marks latest's target
// with * and says so on its summary line; without a latest link it
// marks nothing and says nothing of it.
func TestRunsSaysWhatTheStarMeans(t *testing.T) {
	runs := runsHome(t)
	run := evidence.Dir(filepath.Join(runs, "20200101T000000Z-1"))
	if err := os.MkdirAll(string(run), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run.Manifest(), []byte(`{"schema":"rlbench.manifest/v1","plan":"e06"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "runs")
	if code != ExitOK || strings.Contains(out, "*") || strings.Contains(stderr, "*") {
		t.Fatalf("runs without latest: exit %d\n%s%s", code, out, stderr)
	}
	if err := os.Symlink(filepath.Base(string(run)), filepath.Join(runs, evidence.LatestLink)); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, "runs")
	if code != ExitOK || !strings.Contains(out, "20200101T000000Z-1 *") || !strings.Contains(stderr, "* marks the one latest points at") {
		t.Fatalf("runs with latest: exit %d\n%s%s", code, out, stderr)
	}
}

// TestAnalyzeHelpNamesThisRunsDirectory: analyze's first example is the
// latest run of this user's runs directory ($RLBENCH_HOME/runs here), as
// its missing-argument error says, not always ~/.local/state's (wrong
// under RLBENCH_HOME, XDG_STATE_HOME and on macOS).
func TestAnalyzeHelpNamesThisRunsDirectory(t *testing.T) {
	runs := runsHome(t)
	t.Setenv("HOME", t.TempDir()) // the runs directory is not under it: no "~"
	code, out, stderr := runCLI(t, "analyze", "--help")
	want := "rlbench analyze " + filepath.Join(runs, evidence.LatestLink) + " "
	if code != ExitOK || !strings.Contains(out, want) {
		t.Fatalf("analyze --help: exit %d, no %q:\n%s%s", code, want, out, stderr)
	}
}
