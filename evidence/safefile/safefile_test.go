package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// plant is a hostile entry at a path rlbench will write: it returns the
// path of a file outside the directory that must stay unchanged ("" when
// there is none).
type plant func(t *testing.T, path string) (outside string)

const outsideContent = "precious\n"

func outsideFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(p, []byte(outsideContent), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func plantSymlink(t *testing.T, path string) string {
	o := outsideFile(t)
	if err := os.Symlink(o, path); err != nil {
		t.Fatal(err)
	}
	return o
}

func plantDanglingSymlink(t *testing.T, path string) string {
	o := filepath.Join(t.TempDir(), "created-through-link")
	if err := os.Symlink(o, path); err != nil {
		t.Fatal(err)
	}
	return o
}

func plantFIFO(t *testing.T, path string) string {
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return ""
}

func plantDir(t *testing.T, path string) string {
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return ""
}

// checkOutside asserts the file outside is unchanged (or, for a dangling
// link's target, was not created).
func checkOutside(t *testing.T, outside string) {
	t.Helper()
	if outside == "" {
		return
	}
	b, err := os.ReadFile(outside)
	if strings.HasSuffix(outside, "created-through-link") {
		if err == nil {
			t.Errorf("%s was created through the link", outside)
		}
		return
	}
	if err != nil || string(b) != outsideContent {
		t.Errorf("%s = %q, %v; want it unchanged", outside, b, err)
	}
}

var plants = []struct {
	name string
	p    plant
	kind string
}{
	{"symlink", plantSymlink, "a symbolic link to "},
	{"dangling symlink", plantDanglingSymlink, "a symbolic link to "},
	{"fifo", plantFIFO, "a named pipe (FIFO)"},
	{"directory", plantDir, "a directory"},
}

// writers are the package's writers, each writing "new" to a path.
var writers = []struct {
	name  string
	write func(path string) error
}{
	{"Create", func(p string) error {
		f, err := Create(p, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString("new")
		return errors.Join(err, f.Close())
	}},
	{"WriteFile", func(p string) error { return WriteFile(p, []byte("new"), 0o644) }},
	{"WriteAtomic", func(p string) error {
		return WriteAtomic(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err })
	}},
	{"Append", func(p string) error {
		f, err := Append(p, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString("new")
		return errors.Join(err, f.Close())
	}},
}

func TestWritersRefuseNonRegular(t *testing.T) {
	for _, w := range writers {
		for _, pl := range plants {
			t.Run(w.name+"/"+pl.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "status.txt")
				outside := pl.p(t, path)
				err := w.write(path)
				var re *RefusedError
				if !errors.As(err, &re) {
					t.Fatalf("err = %v, want a *RefusedError", err)
				}
				msg := err.Error()
				for _, want := range []string{path, pl.kind, "refusing to write", "remove " + path} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q does not contain %q", msg, want)
					}
				}
				checkOutside(t, outside)
				fi, lerr := os.Lstat(path)
				if lerr != nil || fi.Mode().Type() == 0 {
					t.Errorf("the planted entry was replaced: %v %v", fi, lerr)
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 1 {
					t.Errorf("directory holds %d entries, want only the planted one (no temporary left)", len(ents))
				}
			})
		}
	}
}

func TestWritersWriteRegular(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.txt")
			if err := w.write(path); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("old-content"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := w.write(path); err != nil {
				t.Fatal(err)
			}
			want := "new"
			if w.name == "Append" {
				want = "old-contentnew"
			}
			if b, _ := os.ReadFile(path); string(b) != want {
				t.Errorf("%s = %q, want %q", path, b, want)
			}
		})
	}
}

// A hard link to a file elsewhere: Create, WriteFile and WriteAtomic write a
// new file at the name (the other name keeps its content); Append, which
// would write into the shared inode, refuses.
func TestHardLink(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "status.txt")
			outside := outsideFile(t)
			if err := os.Link(outside, path); err != nil {
				t.Skipf("link: %v", err)
			}
			err := w.write(path)
			checkOutside(t, outside)
			var re *RefusedError
			if w.name == "Append" {
				if !errors.As(err, &re) || re.Links != 2 || !strings.Contains(err.Error(), "2 hard links") {
					t.Fatalf("err = %v, want a *RefusedError for 2 hard links", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); string(b) != "new" {
				t.Errorf("%s = %q, want new", path, b)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if err := Check(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("missing: %v", err)
	}
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(reg); err != nil {
		t.Errorf("regular: %v", err)
	}
	if err := Check("/dev/null"); err == nil || !strings.Contains(err.Error(), "a character device") {
		t.Errorf("/dev/null: %v, want a refusal naming a character device", err)
	}
}

// ReplaceSymlink renames a new link over the old one: the old link's
// target (a directory outside) is not touched, and a "latest" that is not a
// link is refused and left alone.
func TestReplaceSymlink(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	latest := filepath.Join(root, "latest")
	if err := os.Symlink(outside, latest); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceSymlink("run-2", latest); err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(latest); err != nil || got != "run-2" {
		t.Errorf("latest -> %q, %v; want run-2", got, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the old target holds %d entries", len(ents))
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("root holds %d entries, want latest only", len(ents))
	}
	if err := ReplaceSymlink("run-3", filepath.Join(root, "new")); err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(root, "reg")
	if err := os.WriteFile(reg, []byte(outsideContent), 0o644); err != nil {
		t.Fatal(err)
	}
	var re *RefusedError
	if err := ReplaceSymlink("run-4", reg); !errors.As(err, &re) || !strings.Contains(err.Error(), "a regular file, where rlbench keeps a symbolic link") {
		t.Errorf("ReplaceSymlink over a regular file: %v", err)
	}
	checkOutside(t, reg)
}
