package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MkdirAll creates the directory dir and every directory on the way to it
// from base (mode 0o755 before the umask) without following a link below
// base. base is the directory the user named (an --out, a --root, the
// evidence directory argument): it is created with os.MkdirAll and, like any
// directory above it, followed when it is a link, as the user named it. Each
// component of dir below base is looked at without following it (lstat(2)):
// a directory is entered, a missing one is created (mkdir(2) never follows a
// link), and anything else (a symbolic link, wherever it points; a regular
// file; a FIFO) is refused with a *RefusedError naming that component (Dir
// set), before anything is written below it.
//
// dir must be base or lexically below it (an error otherwise). The check
// holds for entries present when rlbench looks (a crafted evidence
// directory); a directory swapped for a link by another process between the
// check and the write is not in its scope.
func MkdirAll(base, dir string) error {
	if base == "" {
		base = "." // Dir("") is the current directory
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	return walk(base, dir, true)
}

// CheckDir checks the directories on the way from base to dir as MkdirAll
// does, without creating any: nil when every existing component below base
// is a directory (it stops at the first missing one), a *RefusedError (Dir
// set) naming the first that is a link or not a directory, and lstat's
// other errors.
func CheckDir(base, dir string) error { return walk(base, dir, false) }

// walk lstats each component of dir below base, creating missing ones when
// create is set.
func walk(base, dir string, create bool) error {
	if base == "" {
		base = "."
	}
	rel, err := filepath.Rel(filepath.Clean(base), filepath.Clean(dir))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%s: not below %s", dir, base)
	}
	if rel == "." {
		return nil
	}
	cur := base
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if !create {
				return nil
			}
			if err = os.Mkdir(cur, 0o755); err == nil {
				continue
			}
			if !errors.Is(err, fs.ErrExist) {
				return err
			}
			// Made by someone else since the lstat: look at what it is.
			fi, err = os.Lstat(cur)
		}
		if err != nil {
			return err
		}
		if fi.IsDir() {
			continue
		}
		e := &RefusedError{Path: cur, Mode: fi.Mode().Type(), Dir: true}
		if fi.Mode()&fs.ModeSymlink != 0 {
			e.Target, _ = os.Readlink(cur)
		}
		return e
	}
	return nil
}
