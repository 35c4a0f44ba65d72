package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// TestRunDirsNeverEnterLinks (issue 27, "never write through a link",
// directories): a run directory name already taken by a link under the
// root is skipped (a new directory is made, nothing is written in the
// link's target), and a scenario directory, its repeat directory or its
// stats/ that is a link below the run directory is refused naming it.
func TestRunDirsNeverEnterLinks(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	root := t.TempDir()
	outside := t.TempDir()
	taken := filepath.Join(root, now.Format(RunStampLayout)+"-1")
	if err := os.Symlink(outside, taken); err != nil {
		t.Fatal(err)
	}
	d, err := NewRunDir(root, now)
	if err != nil || d == taken {
		t.Fatalf("NewRunDir = %s, %v; want a new directory beside the link %s", d, err, taken)
	}
	rel := filepath.Join("01-x", "1")
	for _, p := range []string{"01-x", rel, filepath.Join(rel, evidence.StatsDir)} {
		t.Run(p, func(t *testing.T) {
			run := t.TempDir()
			planted := filepath.Join(run, p)
			if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, planted); err != nil {
				t.Fatal(err)
			}
			_, err := mkScenarioDir(run, rel)
			var re *safefile.RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), planted+": refusing to write below it") {
				t.Fatalf("err = %v; want a *safefile.RefusedError naming %s", err, planted)
			}
		})
	}
	if es, err := os.ReadDir(outside); err != nil || len(es) > 0 {
		t.Errorf("%s holds %v (%v): written through a link", outside, es, err)
	}
	ed, err := mkScenarioDir(d, rel)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(ed.Stats()); err != nil || !fi.IsDir() {
		t.Errorf("%s: %v, %v", ed.Stats(), fi, err)
	}
}
