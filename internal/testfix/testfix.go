// Package testfix locates files that tests read from outside their own
// package: the repository root (the directory holding go.mod) and the
// fixture store that a CI machine provides next to the clone (SharedDir),
// whose fixtures/<sub>/ directories hold captures too large to commit.
//
// Skip versus fail: a test that needs shared/ is skipped only when there is
// no shared/ directory beside the repository (a bare clone). When shared/ is
// present, as in CI, a fixture missing from it fails the test instead of
// skipping it, so a misnamed or deleted fixture cannot quietly turn a test
// into a skip. A fixture with a copy in the package's testdata/ never needs
// shared/ at all.
package testfix

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding go.mod, found by walking up from
// the working directory (the package directory under go test). It fails the
// test if no directory above holds a go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testfix: %v", err)
	}
	return root
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or any directory above it", wd)
		}
		dir = parent
	}
}

// SharedDir returns the fixture store: the directory "shared" that is a
// sibling of the repository root. It skips the test if that directory
// does not exist, and fails it if the path exists but cannot be used.
func SharedDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(RepoRoot(t), "..", "shared")
	st, err := os.Stat(d)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Skipf("testfix: no shared/ directory beside the repository (%s)", d)
	case err != nil:
		t.Fatalf("testfix: %v", err)
	case !st.IsDir():
		t.Fatalf("testfix: %s is not a directory", d)
	}
	return d
}

// SharedFixtureDir returns SharedDir's fixtures/<sub> (sub is
// slash-separated, e.g. "envoy" or "rls"). It skips the test if shared/ is
// absent and fails it if shared/ is present but the directory is not.
func SharedFixtureDir(t testing.TB, sub string) string {
	t.Helper()
	d := filepath.Join(SharedDir(t), "fixtures", filepath.FromSlash(sub))
	st, err := os.Stat(d)
	if err != nil {
		t.Fatalf("testfix: shared fixtures: %v", err)
	}
	if !st.IsDir() {
		t.Fatalf("testfix: %s is not a directory", d)
	}
	return d
}

// Fixture returns the path of the fixture name (slash-separated, relative):
// testdata/<name> in the working directory if that exists, else
// SharedFixtureDir's <sub>/<name>. With no testdata copy it skips the
// test if shared/ is absent and fails it if shared/ is present but lacks the
// fixture.
func Fixture(t testing.TB, sub, name string) string {
	t.Helper()
	p := filepath.Join("testdata", filepath.FromSlash(name))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	p = filepath.Join(SharedDir(t), "fixtures", filepath.FromSlash(sub), filepath.FromSlash(name))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testfix: fixture %s: no testdata copy, and %v", name, err)
	}
	return p
}

// ReadFixture returns the contents of the fixture Fixture(t, sub, name)
// finds, failing the test if it cannot be read.
func ReadFixture(t testing.TB, sub, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(Fixture(t, sub, name))
	if err != nil {
		t.Fatalf("testfix: %v", err)
	}
	return b
}
