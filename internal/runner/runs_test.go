package runner

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/examples"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/internal/userdirs"
)

// Without --root and a plan root, runs go to the user's runs directory, not ./evidence (in rlbench's repository the
// Go package evidence/; issue 25).
func TestRunDefaultRootIsUserRuns(t *testing.T) {
	home, wd := t.TempDir(), t.TempDir()
	t.Setenv(userdirs.EnvHome, home)
	t.Chdir(wd)
	plan, err := ParsePlan(examples.DemoPlanFile, examples.DemoPlan)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Root != "" {
		t.Fatalf("the demo plan sets root %q", plan.Root)
	}
	var progress strings.Builder
	runDir, err := Run(context.Background(), plan, Options{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(home, userdirs.RunsDir)
	if filepath.Dir(runDir) != runs {
		t.Fatalf("run directory %s, want one under %s", runDir, runs)
	}
	if !strings.Contains(progress.String(), "run directory "+runDir+"\n") {
		t.Errorf("progress does not say where the run directory is:\n%s", progress.String())
	}
	if target, err := os.Readlink(filepath.Join(runs, evidence.LatestLink)); err != nil || target != filepath.Base(runDir) {
		t.Errorf("latest -> %q, %v", target, err)
	}
	if entries, _ := os.ReadDir(wd); len(entries) != 0 {
		t.Errorf("the working directory got %v", entries)
	}
}

// No example plan pins its runs into the working tree (they said root: evidence).
func TestExamplePlansHaveNoRoot(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testfix.RepoRoot(t), "examples", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(testfix.RepoRoot(t), "examples", "*", "*", "plan.yaml"))
	n := 0
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "\nscenarios:") {
			continue // not a plan (a lab file, a Kubernetes manifest)
		}
		n++
		plan, err := ParsePlan(p, b)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Root != "" {
			t.Errorf("%s: root %q: runs of an example go to the user's runs directory", p, plan.Root)
		}
	}
	if n < 5 {
		t.Fatalf("found %d example plans", n)
	}
}

// runsFixture builds a root with run directories of each kind and things that are not run directories.
func runsFixture(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name, plan, status string) {
		d := evidence.Dir(filepath.Join(root, name))
		write(d.Manifest(), `{"schema":"rlbench.manifest/v1","plan":"`+plan+`","scenarios":[],"scenario_dirs":[]}`)
		if status != "" {
			write(d.Status(), status)
		}
	}
	run("20260101T000000Z-1", "a", "one PASS ok\n\"two words\" FAIL over-admission 5 vs 5\n")
	run("20260102T000000Z-1", "b", "")
	lab := evidence.Dir(filepath.Join(root, "20260103T000000Z-1"))
	if err := os.MkdirAll(string(lab), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := evidence.Create(lab.Receipts())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run("20260104T000000Z-1", "c", "one PASS ok\n")
	run("20260105T000000Z-2", "d", "one NOT_RUN not run\none PASS ok\n")
	// Not run directories: another name, no manifest, a link out of the root, a file.
	run("mine", "e", "")
	write(filepath.Join(root, "20260106T000000Z-1", "notes.txt"), "mine\n")
	write(evidence.Dir(outside).Manifest(), `{"schema":"rlbench.manifest/v1","plan":"x"}`)
	if err := os.Symlink(outside, filepath.Join(root, "20260107T000000Z-1")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "20260108T000000Z-1"), "a file\n")
	if err := os.Symlink("20260102T000000Z-1", filepath.Join(root, evidence.LatestLink)); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func names(rs []RunInfo) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestListRuns(t *testing.T) {
	root, _ := runsFixture(t)
	runs, err := ListRuns(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name, plan, verdict string
		kind                RunKind
		latest              bool
	}
	var got []row
	for _, r := range runs {
		got = append(got, row{r.Name, r.Plan, r.Verdict, r.Kind, r.Latest})
		if r.Bytes <= 0 || r.Path != filepath.Join(root, r.Name) {
			t.Errorf("%s: %d bytes, path %s", r.Name, r.Bytes, r.Path)
		}
	}
	want := []row{
		{"20260101T000000Z-1", "a", evidence.Fail, KindRun, false},
		{"20260102T000000Z-1", "b", "", KindRun, true},
		{"20260103T000000Z-1", "", "", KindLab, false},
		{"20260104T000000Z-1", "c", evidence.Pass, KindRun, false},
		{"20260105T000000Z-2", "d", evidence.NotRun, KindRun, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListRuns:\n%v\nwant\n%v", got, want)
	}
	if want := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC); !runs[4].Time.Equal(want) {
		t.Errorf("time %v, want %v", runs[4].Time, want)
	}
	if none, err := ListRuns(context.Background(), filepath.Join(root, "absent")); err != nil || len(none) != 0 {
		t.Errorf("absent root: %v %v", none, err)
	}
}

func TestPruneRuns(t *testing.T) {
	ctx := context.Background()
	left := func(t *testing.T, root string) []string {
		t.Helper()
		runs, err := ListRuns(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		return names(runs)
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name          string
		opts          PruneOptions
		removed, kept []string
	}{
		{"keep 2 spares latest", PruneOptions{Keep: 2}, []string{"20260101T000000Z-1", "20260103T000000Z-1"},
			[]string{"20260102T000000Z-1", "20260104T000000Z-1", "20260105T000000Z-2"}},
		{"keep 0 spares latest", PruneOptions{Keep: 0}, []string{"20260101T000000Z-1", "20260103T000000Z-1", "20260104T000000Z-1", "20260105T000000Z-2"},
			[]string{"20260102T000000Z-1"}},
		{"older than 2 days", PruneOptions{Keep: -1, OlderThan: 48 * time.Hour, Now: now}, []string{"20260101T000000Z-1", "20260103T000000Z-1"},
			[]string{"20260102T000000Z-1", "20260104T000000Z-1", "20260105T000000Z-2"}},
		{"both rules", PruneOptions{Keep: 4, OlderThan: 48 * time.Hour, Now: now}, []string{"20260101T000000Z-1"},
			[]string{"20260102T000000Z-1", "20260103T000000Z-1", "20260104T000000Z-1", "20260105T000000Z-2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, outside := runsFixture(t)
			dry := c.opts
			dry.DryRun = true
			removed, err := PruneRuns(ctx, root, dry)
			if err != nil || !reflect.DeepEqual(names(removed), c.removed) {
				t.Fatalf("dry run: %v %v, want %v", names(removed), err, c.removed)
			}
			if got := left(t, root); len(got) != 5 {
				t.Fatalf("the dry run removed something: %v", got)
			}
			removed, err = PruneRuns(ctx, root, c.opts)
			if err != nil || !reflect.DeepEqual(names(removed), c.removed) {
				t.Fatalf("PruneRuns: %v %v, want %v", names(removed), err, c.removed)
			}
			if got := left(t, root); !reflect.DeepEqual(got, c.kept) {
				t.Fatalf("left %v, want %v", got, c.kept)
			}
			for _, p := range []string{"mine", "20260106T000000Z-1/notes.txt", "20260107T000000Z-1", "20260108T000000Z-1", evidence.LatestLink,
				filepath.Join(outside, evidence.ManifestFile)} {
				if !filepath.IsAbs(p) {
					p = filepath.Join(root, p)
				}
				if _, err := os.Lstat(p); err != nil {
					t.Errorf("prune removed %s: %v", p, err)
				}
			}
		})
	}
	if _, err := PruneRuns(ctx, t.TempDir(), PruneOptions{Keep: -1}); err == nil {
		t.Fatal("PruneRuns without a rule: no error")
	}
}
