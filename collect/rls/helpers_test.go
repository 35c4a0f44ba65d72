package rls

import (
	"os"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
)

// fixture returns the path of an RLS fixture: the package's testdata copy if
// present, else <repo>/../shared/fixtures/rls/<rel> (see testfix.Fixture).
func fixture(t testing.TB, rel string) string {
	t.Helper()
	return testfix.Fixture(t, "rls", rel)
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
