package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// demoRun copies the v1-release demo run directory (one PASS scenario) into
// a temporary directory and returns it and its scenario directory.
func demoRun(t *testing.T) (run string, scenario evidence.Dir) {
	t.Helper()
	run = filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(run, os.DirFS(filepath.Join("..", "..", "analyze", "testdata", "v1-release", "demo"))); err != nil {
		t.Fatal(err)
	}
	return run, evidence.Dir(filepath.Join(run, "01-two-local-buckets", "1"))
}

// cutFile keeps the first n bytes of the file at path: a writer killed
// while writing it.
func cutFile(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n >= len(b) {
		t.Fatalf("%s has %d bytes, cannot cut at %d", path, len(b), n)
	}
	if err := os.WriteFile(path, b[:n], 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTruncatedEvidenceDocumentIsIncomplete (issue 27): a run's
// manifest.json cut short exited 1 ("rlbench: .../manifest.json: line N:
// unexpected end of JSON input", no report) where a cut attack.json or
// scenario.json gives NOT_RUN and exit 4. Now all three are incomplete
// evidence: analyze and report exit 4 and name the file and line; export
// vegeta writes what it can and exits 4 naming it.
func TestTruncatedEvidenceDocumentIsIncomplete(t *testing.T) {
	run, _ := demoRun(t)
	if code, _, stderr := runCLI(t, "analyze", "--status-file", "-", run); code != ExitOK {
		t.Fatalf("the demo run: exit %d (%s), want PASS", code, stderr)
	}
	for name, file := range map[string]func(run string, sc evidence.Dir) string{
		evidence.ManifestFile: func(run string, _ evidence.Dir) string { return evidence.Dir(run).Manifest() },
		evidence.AttackFile:   func(_ string, sc evidence.Dir) string { return sc.Attack() },
		evidence.ScenarioFile: func(_ string, sc evidence.Dir) string { return sc.Scenario() },
	} {
		t.Run(name, func(t *testing.T) {
			run, sc := demoRun(t)
			path := file(run, sc)
			cutFile(t, path, 40)
			b, _ := os.ReadFile(path)
			want := path + ": line " + strconv.Itoa(strings.Count(string(b), "\n")+1) + ": unexpected end of JSON input"
			for _, cmd := range [][]string{{"analyze", "--wide", "--status-file", "-", run}, {"report", "--wide", run}} {
				code, stdout, stderr := runCLI(t, cmd...)
				if code != ExitNotRun || !strings.Contains(stdout, "NOT_RUN") || !strings.Contains(stdout, want) {
					t.Errorf("%s: exit %d, want %d naming %q\nstdout %s\nstderr %s", cmd[0], code, ExitNotRun, want, stdout, stderr)
				}
			}
			code, stdout, stderr := runCLI(t, "export", "vegeta", run)
			if name == evidence.ScenarioFile {
				// export reads scenario.json only for the scenario's name
				// (the directory's name stands in), as before.
				if code != ExitOK || strings.Count(stdout, "\n") != 20 {
					t.Errorf("export: exit %d, stderr %q", code, stderr)
				}
				return
			}
			if code != ExitNotRun || !strings.Contains(stderr, want) || strings.Count(stdout, "\n") != 20 {
				t.Errorf("export: exit %d, %d results, stderr %q; want %d naming %q and the 20 requests", code, strings.Count(stdout, "\n"), stderr, ExitNotRun, want)
			}
		})
	}
}
