package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// dirPlants are hostile entries at a directory rlbench enters below the
// directory the user named; each returns a directory outside base that must
// stay empty ("" when there is none).
var dirPlants = []struct {
	name, kind string
	make       func(t *testing.T, p string) (outside string)
}{
	{"symlink", "a symbolic link to ", func(t *testing.T, p string) string {
		o := t.TempDir()
		if err := os.Symlink(o, p); err != nil {
			t.Fatal(err)
		}
		return o
	}},
	{"dangling symlink", "a symbolic link to ", func(t *testing.T, p string) string {
		o := filepath.Join(t.TempDir(), "made-through-link")
		if err := os.Symlink(o, p); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(o)
	}},
	{"regular file", "a regular file, not a directory", func(t *testing.T, p string) string {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return ""
	}},
	{"fifo", "a named pipe (FIFO)", func(t *testing.T, p string) string {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return ""
	}},
}

// assertEmpty fails when dir (outside base) holds anything.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	if dir == "" {
		return
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) > 0 {
		t.Errorf("%s holds %s: written through the link", dir, es[0].Name())
	}
}

func TestMkdirAllRefusesBelowBase(t *testing.T) {
	for _, level := range []string{"a", "a/b"} {
		for _, pl := range dirPlants {
			for _, create := range []bool{true, false} {
				name := level + "/" + pl.name
				if !create {
					name += "/CheckDir"
				}
				t.Run(name, func(t *testing.T) {
					base := t.TempDir()
					if err := os.MkdirAll(filepath.Join(base, filepath.Dir(level)), 0o755); err != nil {
						t.Fatal(err)
					}
					planted := filepath.Join(base, level)
					outside := pl.make(t, planted)
					dir := filepath.Join(base, "a", "b", "c")
					var err error
					if create {
						err = MkdirAll(base, dir)
					} else {
						err = CheckDir(base, dir)
					}
					var re *RefusedError
					if !errors.As(err, &re) || !re.Dir || re.Path != planted {
						t.Fatalf("err = %v, want a *RefusedError (Dir) naming %s", err, planted)
					}
					for _, want := range []string{planted + ": refusing to write below it", pl.kind, "remove " + planted} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q does not say %q", err, want)
						}
					}
					assertEmpty(t, outside)
				})
			}
		}
	}
}

// TestMkdirAllFollowsBase: a link AT the directory the user named is
// followed (their choice); below it directories are created and entered.
func TestMkdirAllFollowsBase(t *testing.T) {
	real := t.TempDir()
	base := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink(real, base); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(base, filepath.Join(base, "stats")); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(base, filepath.Join(base, "stats", "x")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(real, "stats", "x")); err != nil || !fi.IsDir() {
		t.Fatalf("stats/x under the link's target: %v, %v", fi, err)
	}
	if err := CheckDir(base, filepath.Join(base, "stats", "x", "missing", "y")); err != nil {
		t.Errorf("CheckDir with a missing component = %v, want nil", err)
	}
	if err := MkdirAll(base, base); err != nil {
		t.Errorf("MkdirAll(base, base) = %v", err)
	}
	// A base created by MkdirAll, relative paths included.
	nb := filepath.Join(t.TempDir(), "new", "run")
	if err := MkdirAll(nb, filepath.Join(nb, "01-x", "1")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(nb, "01-x", "1")); err != nil || !fi.IsDir() {
		t.Fatalf("%v, %v", fi, err)
	}
}

func TestMkdirAllNotBelowBase(t *testing.T) {
	base := t.TempDir()
	for _, dir := range []string{filepath.Dir(base), filepath.Join(base, "..", "x"), t.TempDir()} {
		if err := MkdirAll(base, dir); err == nil || !strings.Contains(err.Error(), "not below") {
			t.Errorf("MkdirAll(%s, %s) = %v, want a not-below error", base, dir, err)
		}
	}
}

// TestMkdirAllCurrentDir: base "" is the current directory (evidence.Dir("")).
func TestMkdirAllCurrentDir(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := MkdirAll("", filepath.Join("stats", "x")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join("stats", "x")); err != nil || !fi.IsDir() {
		t.Fatalf("%v, %v", fi, err)
	}
	if err := os.Symlink(t.TempDir(), "rls"); err != nil {
		t.Fatal(err)
	}
	var re *RefusedError
	if err := MkdirAll("", "rls"); !errors.As(err, &re) || re.Path != "rls" {
		t.Errorf("MkdirAll(\"\", rls) = %v, want a *RefusedError naming rls", err)
	}
	if err := CheckDir("", filepath.Join("rls", "x")); !errors.As(err, &re) {
		t.Errorf("CheckDir = %v, want a *RefusedError", err)
	}
}
