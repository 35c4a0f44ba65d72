package rls

import (
	"os"
	"path/filepath"
	"testing"
)

// fixture returns the path of an RLS fixture: the package's testdata copy if
// present, else <repo>/../shared/fixtures/rls/<rel>; it skips if neither exists.
func fixture(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("testdata", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("fixture %s: no testdata copy and no go.mod above %s", rel, dir)
		}
		dir = parent
	}
	p = filepath.Join(dir, "..", "shared", "fixtures", "rls", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("fixture %s absent: %v", rel, err)
	}
	return p
}

func openFixture(t *testing.T, rel string) *os.File {
	t.Helper()
	f, err := os.Open(fixture(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func parseLogFixture(t *testing.T, rel string) *Log {
	t.Helper()
	l, err := ParseLog(openFixture(t, rel), rel)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func parsePromFixture(t *testing.T, rel string) *PromSnapshot {
	t.Helper()
	s, err := ParsePrometheus(openFixture(t, rel), rel)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func eqInt(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

func eqF(t *testing.T, what string, got, want float64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %g, want %g", what, got, want)
	}
}

func eqStr(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}
