package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/internal/userdirs"
)

func TestNewRunsCmd(t *testing.T) {
	testCmd(t, NewRunsCmd, []cmdCase[RunsOptions]{
		{name: "list", argv: nil, want: &RunsOptions{IO: tio, Keep: -1}},
		{name: "list root", argv: argv("--root runs"), want: &RunsOptions{IO: tio, Root: "runs", Keep: -1}},
		{name: "prune keep", argv: argv("prune --keep 3"), want: &RunsOptions{IO: tio, Keep: 3}},
		{name: "prune every flag", argv: argv("prune --keep 0 --older-than 7d --dry-run --root r"),
			want: &RunsOptions{IO: tio, Root: "r", Keep: 0, OlderThan: 7 * 24 * time.Hour, DryRun: true}},
		{name: "prune duration", argv: argv("prune --older-than 36h"), want: &RunsOptions{IO: tio, Keep: -1, OlderThan: 36 * time.Hour}},
		{name: "prune without a rule", argv: argv("prune"), err: "runs prune needs --keep N or --older-than DURATION"},
		{name: "negative keep", argv: argv("prune --keep -1"), err: "want a number of runs >= 0"},
		{name: "bad age", argv: argv("prune --older-than 0s"), err: "want a duration > 0"},
		{name: "bad days", argv: argv("prune --older-than xd"), err: "want a duration such as 36h or 7d"},
		{name: "argument", argv: argv("x"), err: `unknown command "x"`},
	})
}

// runsHome points rlbench's runs directory at a fresh directory and returns it.
func runsHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv(userdirs.EnvHome, home)
	return filepath.Join(home, userdirs.RunsDir)
}

// `rlbench demo` and `rlbench run` without --root write into rlbench's runs directory and say where; `rlbench runs`
// lists the run with its plan and verdict, and prune keeps latest's target.
func TestDemoRunsListAndPrune(t *testing.T) {
	runs := runsHome(t)
	t.Chdir(t.TempDir())
	code, _, stderr := runCLI(t, "demo")
	if code != ExitOK {
		t.Fatalf("demo: exit %d\n%s", code, stderr)
	}
	latest, err := os.Readlink(filepath.Join(runs, evidence.LatestLink))
	if err != nil {
		t.Fatalf("no %s/latest: %v", runs, err)
	}
	dir := filepath.Join(runs, latest)
	if !strings.Contains(stderr, dir) {
		t.Errorf("demo does not say where its run directory %s is:\n%s", dir, stderr)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("demo wrote into the working directory: %v", entries)
	}
	// An older run of another plan, as `rlbench run` leaves it.
	old := evidence.Dir(filepath.Join(runs, "20200101T000000Z-1"))
	if err := os.MkdirAll(string(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old.Manifest(), []byte(`{"schema":"rlbench.manifest/v1","plan":"e06"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old.Status(), []byte("x FAIL over-admission\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := runCLI(t, "runs")
	if code != ExitOK {
		t.Fatalf("runs: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "RUN PLAN VERDICT SIZE" {
		t.Fatalf("runs printed:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) < 3 || f[0] != "20200101T000000Z-1" || f[1] != "e06" || f[2] != evidence.Fail {
		t.Errorf("old run line %q", lines[1])
	}
	if f := strings.Fields(lines[2]); len(f) < 4 || f[0] != latest || f[1] != "*" || f[2] != "demo" || f[3] != evidence.Pass {
		t.Errorf("demo run line %q", lines[2])
	}
	if !strings.Contains(stderr, runs) {
		t.Errorf("runs does not name its root %s: %q", runs, stderr)
	}

	code, out, stderr = runCLI(t, "runs", "prune", "--keep", "0")
	if code != ExitOK {
		t.Fatalf("runs prune: exit %d\n%s", code, stderr)
	}
	if !strings.HasPrefix(out, "removed "+string(old)+" (e06, ") || strings.Count(out, "\n") != 1 {
		t.Errorf("runs prune printed %q", out)
	}
	if _, err := os.Stat(string(old)); err == nil {
		t.Error("the old run is still there")
	}
	if _, err := os.Stat(evidence.Dir(dir).Manifest()); err != nil {
		t.Errorf("prune removed latest's target: %v", err)
	}
}

// `rlbench lab` without --receipts writes receipts.jsonl (and its sidecar) into a run directory of its own under
// rlbench's runs directory and says where, not into the working directory; `rlbench runs` lists it as (lab).
func TestLabDefaultReceiptsGoToARunDirectory(t *testing.T) {
	runs := runsHome(t)
	cfg := filepath.Join(testfix.RepoRoot(t), "examples", "envoy", "ratelimit", "config", "inventory.yaml")
	wd := t.TempDir()
	t.Chdir(wd)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := &firstLine{line: make(chan string, 1)}
	var stderr bytes.Buffer
	var o *LabOptions
	if err := execute(NewLabCmd(tio, func(lo *LabOptions) error { o = lo; return nil }),
		[]string{"--proxies", "1", "--global-domain", "inventory", "--global-descriptor", "tenant=lab", "--rls-config", cfg}); err != nil {
		t.Fatal(err)
	}
	o.IO = &IOStreams{In: bytes.NewReader(nil), Out: out, ErrOut: &stderr}
	done := make(chan error, 1)
	go func() { done <- runLab(ctx, o) }()
	var addrs struct {
		Receipts string `json:"receipts"`
	}
	select {
	case l := <-out.line:
		if err := json.Unmarshal([]byte(l), &addrs); err != nil {
			t.Fatalf("address line %q: %v", l, err)
		}
	case err := <-done:
		t.Fatalf("lab ended: %v\n%s", err, stderr.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("lab: %v", err)
	}
	dir := filepath.Dir(addrs.Receipts)
	if filepath.Dir(dir) != runs || filepath.Base(addrs.Receipts) != evidence.ReceiptsFile {
		t.Fatalf("receipts %s, want <%s>/<run>/receipts.jsonl", addrs.Receipts, runs)
	}
	for _, p := range []string{addrs.Receipts, evidence.StatePath(addrs.Receipts), evidence.Dir(dir).Path(evidence.DecisionsFile)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%v", err)
		}
	}
	if !strings.Contains(stderr.String(), "lab: run directory "+dir) {
		t.Errorf("lab does not say where:\n%s", stderr.String())
	}
	if entries, _ := os.ReadDir(wd); len(entries) != 0 {
		t.Errorf("lab wrote into the working directory: %v", entries)
	}
	code, listed, _ := runCLI(t, "runs")
	if code != ExitOK || !strings.Contains(listed, filepath.Base(dir)) || !strings.Contains(listed, "(lab)") {
		t.Errorf("runs: exit %d\n%s", code, listed)
	}
}

// firstLine is a writer that hands its first line to a channel.
type firstLine struct {
	buf  bytes.Buffer
	line chan string
	sent bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	f.buf.Write(p)
	if s, _, ok := strings.Cut(f.buf.String(), "\n"); ok && !f.sent {
		f.sent = true
		f.line <- s
	}
	return len(p), nil
}
