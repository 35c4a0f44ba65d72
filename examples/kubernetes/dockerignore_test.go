package kubernetes

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dockerignore reads the repository's .dockerignore: its patterns, cleaned
// as Docker cleans them (no leading /). Exceptions (!pattern) are refused:
// the matcher below does not implement them.
func dockerignore(t *testing.T, root string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pats []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") {
			t.Fatalf(".dockerignore: %q: exceptions are not checked by this test", l)
		}
		pats = append(pats, strings.TrimPrefix(filepath.ToSlash(filepath.Clean(l)), "/"))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pats
}

// matchParts is Docker's .dockerignore matching (moby/patternmatcher) for
// patterns without exceptions: path.Match per path element, "**" any
// number of elements.
func matchParts(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if matchParts(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	ok, err := filepath.Match(pat[0], name[0])
	return err == nil && ok && matchParts(pat[1:], name[1:])
}

// ignored reports whether Docker leaves rel (slash-separated, relative to
// the context) out of the build context: a pattern matches it or one of its
// parent directories.
func ignored(pats []string, rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range pats {
		pp := strings.Split(p, "/")
		for n := 1; n <= len(parts); n++ {
			if matchParts(pp, parts[:n]) {
				return true
			}
		}
	}
	return false
}

// TestDockerignore: the Dockerfile's context keeps every file the build
// needs (go.mod, go.sum, every non-test Go file, the embedded schemas,
// assets and demo plan) and leaves out what issue 25 found shipped: .git,
// .bin (the real parts), the rlbench binary, test binaries, bench/out and
// every run directory with its latest link.
func TestDockerignore(t *testing.T) {
	root := filepath.Join("..", "..")
	pats := dockerignore(t, root)
	for _, rel := range []string{".git/HEAD", ".bin/service_cmd", "rlbench", "cli.test", "internal/cli/cli.test", "bench/out/run.json",
		"evidence/20261205T101500Z-1/manifest.json", "evidence/latest", "runs/e06/20261205T101500Z-12/01-a/1/requests.jsonl",
		"ev/requests.jsonl", "ev-weights/receipts.jsonl", "report.json", "rlbench-junit.xml"} {
		if !ignored(pats, rel) {
			t.Errorf("%s is sent as build context", rel)
		}
	}
	total := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if rel == ".git" || rel == ".bin" { // not sources, and large
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if name == "go.mod" || name == "go.sum" || strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && !strings.Contains(rel, "/testdata/") ||
			strings.HasPrefix(rel, "schemas/") && strings.HasSuffix(name, ".schema.json") ||
			strings.HasPrefix(rel, "analyze/report/assets/") || rel == "examples/demo/plan.yaml" {
			total++
			if ignored(pats, rel) {
				t.Errorf("%s is needed by the build but .dockerignore leaves it out", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total < 100 {
		t.Errorf("%d files the build needs found: the walk missed the sources", total)
	}
}
