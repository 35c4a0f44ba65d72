package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputPathsAreUsageErrors: an output path that cannot be written as
// asked — a regular file where a directory goes (or under its parents), a
// non-empty directory for merge, an earlier collection in receipts/, a
// directory where statsd's capture file goes — is a usage error (exit 2)
// naming the flag, the path and what is wrong, before anything is fetched,
// sent or written. Before, merge and collect receipts exited 1 with
// "mkdir ...: not a directory" (or wrote into the earlier receipts).
func TestOutputPathsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	full := filepath.Join(dir, "full")
	collected := filepath.Join(dir, "collected")
	for _, p := range []string{filepath.Join(full, "x"), filepath.Join(collected, "receipts", "old.jsonl")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("kept\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shard := t.TempDir() // merge never reads it: the --out check comes first
	notDir := file + ": not a directory but a regular file"
	underFile := filepath.Join(file, "sub") + ": " + file + " is not a directory but a regular file"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", shard, "--out", file}, "--out " + notDir},
		{[]string{"merge", shard, "--out", filepath.Join(file, "sub")}, "--out " + underFile},
		{[]string{"merge", shard, "--out", full}, "--out " + full + ": not empty (it holds x): give a new or empty directory"},
		{[]string{"collect", "receipts", "--url", "http://127.0.0.1:1", "--out", file}, "--out " + notDir},
		{[]string{"collect", "receipts", "--url", "http://127.0.0.1:1", "--out", collected},
			"--out " + collected + ": " + filepath.Join(collected, "receipts") + " is not empty (it holds old.jsonl"},
		{[]string{"attack", "--target", "p=http://127.0.0.1:1", "--ids", "1", "--out", file}, "--out " + notDir},
		{[]string{"attack", "--target", "p=http://127.0.0.1:1", "--ids", "1", "--out", filepath.Join(file, "sub")}, "--out " + underFile},
		{[]string{"run", "--root", file, "plan.yaml"}, "--root " + notDir},
		{[]string{"demo", "--root", file}, "--root " + notDir},
		{[]string{"collect", "envoy", "--admin", "http://127.0.0.1:1", "--proxy", "a", "--label", "before", "--out", file}, "--out " + notDir},
		{[]string{"collect", "prometheus", "--url", "http://127.0.0.1:1/metrics", "--label", "after", "--out", file}, "--out " + notDir},
		{[]string{"collect", "nginx-status", "--url", "http://127.0.0.1:1/stub_status", "--label", "after", "--out", file}, "--out " + notDir},
		{[]string{"collect", "nginx-access-log", "--out", file, "-"}, "--out " + notDir},
		{[]string{"collect", "rls-log", "--out", file, "-"}, "--out " + notDir},
		{[]string{"collect", "statsd", "--listen", "127.0.0.1:0", "--duration", "1ms", "--out", full}, "--out " + full + ": not a regular file but a directory"},
		{[]string{"collect", "statsd", "--listen", "127.0.0.1:0", "--duration", "1ms", "--out", filepath.Join(file, "s.jsonl")},
			"--out " + filepath.Join(file, "s.jsonl") + ": " + file + " is not a directory but a regular file"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, "rlbench: "+c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
	// Nothing was written over or beside what was there.
	for _, p := range []string{file, filepath.Join(full, "x"), filepath.Join(collected, "receipts", "old.jsonl")} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "kept\n" {
			t.Errorf("%s: %q, %v; want it untouched", p, b, err)
		}
	}
	for d, n := range map[string]int{full: 1, filepath.Join(collected, "receipts"): 1, dir: 3} {
		if es, err := os.ReadDir(d); err != nil || len(es) != n {
			t.Errorf("%s: %d entries, %v; want %d", d, len(es), err, n)
		}
	}
}

// TestOutputDirsAccepted: what the commands accepted before still goes —
// merge into a new or an existing empty directory, collect receipts into
// an evidence directory that holds other files (an empty receipts/ too),
// attack into a directory with the before snapshots — as far as the check
// goes (checkOutputDir, checkReceiptsOut).
func TestOutputDirsAccepted(t *testing.T) {
	dir := t.TempDir()
	ev := filepath.Join(dir, "ev")
	if err := os.MkdirAll(filepath.Join(ev, "stats"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty", "receipts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"merge new", checkOutputDir("--out", filepath.Join(dir, "new", "run"), true)},
		{"merge empty", checkOutputDir("--out", filepath.Join(dir, "empty", "receipts"), true)},
		{"attack into evidence", checkOutputDir("--out", ev, false)},
		{"receipts into evidence", checkReceiptsOut("--out", ev)},
		{"receipts with an empty receipts/", checkReceiptsOut("--out", filepath.Join(dir, "empty"))},
		{"statsd new file", checkOutputNewFile("--out", filepath.Join(ev, "rls", "statsd.jsonl"))},
	} {
		if c.err != nil {
			t.Errorf("%s: %v", c.name, c.err)
		}
	}
}
