package testfix

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records the first Fatal or Skip and stops the helper, as the real
// ones do, by unwinding (recovered in call).
type fakeTB struct {
	testing.TB
	fatal, skip string
}

type stopped struct{}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(stopped{})
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skip = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// call runs fn with a fakeTB and reports its result or how it stopped.
func call(t *testing.T, fn func(testing.TB) string) (got, fatal, skip string) {
	t.Helper()
	f := &fakeTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopped); !ok {
					panic(r)
				}
			}
		}()
		got = fn(f)
	}()
	return got, f.fatal, f.skip
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// layout builds <tmp>/repo/go.mod and <tmp>/repo/pkg, optionally with
// <tmp>/shared/fixtures/envoy/s.txt, and makes repo/pkg the working directory.
func layout(t *testing.T, shared bool) (tmp string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tmp, "repo", "go.mod"), "module example.com/x\n")
	write(t, filepath.Join(tmp, "repo", "pkg", "testdata", "local.txt"), "local")
	write(t, filepath.Join(tmp, "repo", "pkg", "testdata", "sub", "both.txt"), "testdata copy")
	if shared {
		write(t, filepath.Join(tmp, "shared", "fixtures", "envoy", "s.txt"), "shared")
		write(t, filepath.Join(tmp, "shared", "fixtures", "envoy", "sub", "both.txt"), "shared copy")
	}
	t.Chdir(filepath.Join(tmp, "repo", "pkg"))
	return tmp
}

func TestRepoRootOfThisRepository(t *testing.T) {
	root := RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "module github.com/rlbench/rlbench\n") {
		t.Errorf("%s/go.mod starts %q", root, strings.SplitN(string(b), "\n", 2)[0])
	}
	wd, _ := os.Getwd()
	if filepath.Join(root, "internal", "testfix") != wd {
		t.Errorf("RepoRoot = %s, working dir %s", root, wd)
	}
}

func TestRepoRootWalksUp(t *testing.T) {
	tmp := layout(t, false)
	if got := RepoRoot(t); got != filepath.Join(tmp, "repo") {
		t.Errorf("RepoRoot = %s", got)
	}
}

func TestRepoRootFailsWithoutGoMod(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "go.mod")); err == nil {
		t.Skip("the temporary directory is inside a module")
	}
	t.Chdir(dir)
	_, fatal, skip := call(t, RepoRoot)
	if fatal == "" || skip != "" || !strings.Contains(fatal, "no go.mod") {
		t.Errorf("fatal %q skip %q", fatal, skip)
	}
}

func TestWithShared(t *testing.T) {
	tmp := layout(t, true)
	shared := filepath.Join(tmp, "repo", "..", "shared")
	for _, tc := range []struct {
		name      string
		fn        func(testing.TB) string
		want      string
		wantFatal string
	}{
		{"SharedDir", SharedDir, shared, ""},
		{"SharedFixtureDir", func(t testing.TB) string { return SharedFixtureDir(t, "envoy") }, filepath.Join(shared, "fixtures", "envoy"), ""},
		{"SharedFixtureDir missing", func(t testing.TB) string { return SharedFixtureDir(t, "nope") }, "", "no such file"},
		{"Fixture testdata", func(t testing.TB) string { return Fixture(t, "envoy", "local.txt") }, filepath.Join("testdata", "local.txt"), ""},
		{"Fixture prefers testdata", func(t testing.TB) string { return Fixture(t, "envoy", "sub/both.txt") }, filepath.Join("testdata", "sub", "both.txt"), ""},
		{"Fixture shared", func(t testing.TB) string { return Fixture(t, "envoy", "s.txt") }, filepath.Join(shared, "fixtures", "envoy", "s.txt"), ""},
		{"Fixture missing fails", func(t testing.TB) string { return Fixture(t, "envoy", "missing.txt") }, "", "fixture missing.txt"},
		{"Fixture wrong sub fails", func(t testing.TB) string { return Fixture(t, "rls", "s.txt") }, "", "fixture s.txt"},
		{"ReadFixture testdata", func(t testing.TB) string { return string(ReadFixture(t, "envoy", "sub/both.txt")) }, "testdata copy", ""},
		{"ReadFixture shared", func(t testing.TB) string { return string(ReadFixture(t, "envoy", "s.txt")) }, "shared", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fatal, skip := call(t, tc.fn)
			if skip != "" {
				t.Fatalf("skipped with shared/ present: %s", skip)
			}
			if tc.wantFatal != "" {
				if !strings.Contains(fatal, tc.wantFatal) {
					t.Errorf("fatal %q, want it to mention %q", fatal, tc.wantFatal)
				}
				return
			}
			if fatal != "" {
				t.Fatalf("fatal: %s", fatal)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWithoutShared(t *testing.T) {
	layout(t, false)
	for _, tc := range []struct {
		name     string
		fn       func(testing.TB) string
		want     string
		wantSkip bool
	}{
		{"SharedDir", SharedDir, "", true},
		{"SharedFixtureDir", func(t testing.TB) string { return SharedFixtureDir(t, "envoy") }, "", true},
		{"Fixture testdata", func(t testing.TB) string { return Fixture(t, "envoy", "local.txt") }, filepath.Join("testdata", "local.txt"), false},
		{"Fixture missing skips", func(t testing.TB) string { return Fixture(t, "envoy", "s.txt") }, "", true},
		{"ReadFixture testdata", func(t testing.TB) string { return string(ReadFixture(t, "envoy", "local.txt")) }, "local", false},
		{"ReadFixture missing skips", func(t testing.TB) string { return string(ReadFixture(t, "envoy", "s.txt")) }, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fatal, skip := call(t, tc.fn)
			if fatal != "" {
				t.Fatalf("fatal: %s", fatal)
			}
			if tc.wantSkip {
				if !strings.Contains(skip, "no shared/") {
					t.Errorf("skip %q, got %q", skip, got)
				}
				return
			}
			if skip != "" {
				t.Fatalf("skipped: %s", skip)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSharedNotADirectoryFails(t *testing.T) {
	tmp := layout(t, false)
	write(t, filepath.Join(tmp, "shared"), "a file")
	_, fatal, skip := call(t, SharedDir)
	if skip != "" || !strings.Contains(fatal, "not a directory") {
		t.Errorf("fatal %q skip %q", fatal, skip)
	}
}
