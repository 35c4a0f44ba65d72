// Package safefile is the one way rlbench writes a file: never through a
// link, never into a FIFO, a device or any other non-regular file.
//
// rlbench writes into directories it did not create (an evidence directory
// handed to `rlbench analyze`, the directory of `attack --out`, the path of
// `report --html`). A crafted directory could hold a symbolic link named like
// one of rlbench's files (status.txt -> ~/.bashrc), a hard link to a file
// elsewhere, or a named pipe; a plain os.Create would write through it. Every
// writer here first looks at the existing entry without following it
// (lstat(2)) and refuses anything but a regular file with a *RefusedError
// naming the path; then it never writes into the existing inode:
//
//   - Create and WriteFile remove the regular file and create a new one with
//     O_CREAT|O_EXCL|O_NOFOLLOW, which fails rather than follow a link planted
//     after the check (open(2): "If O_CREAT and O_EXCL are set, open() shall
//     fail if the file exists", a symbolic link included);
//   - WriteAtomic writes a temporary file in the same directory and renames
//     it over the path: rename(2) replaces the directory entry (a link
//     planted after the check is replaced, not followed);
//   - Append, which must keep what is there, opens with O_NOFOLLOW and
//     O_NONBLOCK (a FIFO does not block the open) and checks the opened file
//     with fstat(2): a regular file with one link, or a *RefusedError.
//
// Directories below the one the user named are created and entered by
// MkdirAll (or checked by CheckDir), which refuses a link or a non-directory
// on the way with a *RefusedError; the directory the user named and those
// above it (the user's own /tmp, a symlinked home) are followed as the user
// named them. It is a leaf: it imports only evidence/boundedio (for FileKind).
package safefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/rlbench/rlbench/evidence/boundedio"
)

// RefusedError is a write refused because the existing entry at Path is not
// a regular file (Mode says what it is; Target is a symbolic link's target),
// or is a regular file with more than one hard link (Links).
type RefusedError struct {
	// Path is the file rlbench was asked to write, as given.
	Path string
	// Mode is the existing entry's type (lstat, so fs.ModeSymlink for a link).
	Mode fs.FileMode
	// Target is the link's target when Mode is a symbolic link ("" if unreadable).
	Target string
	// Links is the hard link count when a regular file has more than one.
	Links uint64
	// Dir is set when Path is a directory on the way to the file rlbench
	// writes (MkdirAll, CheckDir), not the file itself.
	Dir bool
}

func (e *RefusedError) Error() string {
	var what string
	if e.Dir {
		switch {
		case e.Mode&fs.ModeSymlink != 0 && e.Target != "":
			what = fmt.Sprintf("a symbolic link to %s", e.Target)
		case e.Mode&fs.ModeSymlink != 0:
			what = "a symbolic link"
		case e.Mode.IsRegular():
			what = "a regular file"
		default:
			what = boundedio.FileKind(e.Mode)
		}
		return fmt.Sprintf("%s: refusing to write below it: it is %s, not a directory; rlbench never writes through a link below the directory it was given (remove %s, or choose another path, and run again)",
			e.Path, what, e.Path)
	}
	switch {
	case e.Mode&fs.ModeSymlink != 0 && e.Target != "":
		what = fmt.Sprintf("a symbolic link to %s", e.Target)
	case e.Mode&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case e.Mode.IsRegular() && e.Links > 1:
		what = fmt.Sprintf("a regular file with %d hard links", e.Links)
	case e.Mode.IsRegular():
		what = "a regular file, where rlbench keeps a symbolic link"
	default:
		what = boundedio.FileKind(e.Mode)
	}
	return fmt.Sprintf("%s: refusing to write: it is %s; rlbench writes only regular files and never through a link (remove %s, or choose another path, and run again)",
		e.Path, what, e.Path)
}

// Check returns nil when path does not exist or is a regular file, a
// *RefusedError when it is anything else (a symbolic link, whatever it
// points to; a FIFO; a device; a socket; a directory), and lstat's other
// errors (*fs.PathError). It does not follow a link at the final component.
func Check(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		return nil
	}
	e := &RefusedError{Path: path, Mode: fi.Mode().Type()}
	if fi.Mode()&fs.ModeSymlink != 0 {
		e.Target, _ = os.Readlink(path)
	}
	return e
}

// Create creates path for writing (mode perm before the umask), replacing a
// regular file there, like os.Create but without following a link: the
// existing entry must be missing or a regular file (Check), is removed, and
// path is created anew with O_CREAT|O_EXCL|O_NOFOLLOW, so that nothing that
// existed (a hard link to another file, a link planted after the check) is
// written through. Errors name path.
func Create(path string, perm fs.FileMode) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, perm)
	if err != nil {
		// Something appeared at path between the removal and the open.
		if errors.Is(err, fs.ErrExist) {
			if cerr := Check(path); cerr != nil {
				return nil, cerr
			}
		}
		return nil, err
	}
	return f, nil
}

// WriteFile writes data to path (mode perm before the umask) as
// os.WriteFile does, through Create: refused with a *RefusedError when path
// is not a regular file.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteAtomic writes path through fn: into a temporary file in path's
// directory (".<base>.tmp*"), synced, given mode perm, then renamed over
// path, so that a reader (a textfile collector, a browser) sees the old
// file or the new one, never a partial one. The existing entry must be
// missing or a regular file (Check); the rename replaces the directory
// entry, so a link is never written through. On error the temporary file is
// removed; errors name path, not the temporary file.
func WriteAtomic(path string, perm fs.FileMode, fn func(io.Writer) error) (err error) {
	if err := Check(path); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	fail := func(err error) error {
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := fn(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		if le := (*os.LinkError)(nil); errors.As(err, &le) {
			err = le.Err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Append opens path for appending (creating it with mode perm before the
// umask), for a log that several starts of a process share. The existing
// entry must be missing or a regular file (Check); the open does not follow
// a link (O_NOFOLLOW) nor block on a FIFO (O_NONBLOCK), and the opened file
// must be a regular file with one hard link, or the open is refused with a
// *RefusedError.
func Append(path string, perm fs.FileMode) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|oNoFollow|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENXIO) { // a link or a reader-less FIFO planted after the check
			if cerr := Check(path); cerr != nil {
				return nil, cerr
			}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &RefusedError{Path: path, Mode: fi.Mode().Type()}
	}
	if n := links(fi); n > 1 {
		f.Close()
		return nil, &RefusedError{Path: path, Mode: fi.Mode().Type(), Links: n}
	}
	// O_NONBLOCK has no effect on a regular file's writes (open(2)).
	return f, nil
}

// ReplaceSymlink points the symbolic link at path to target: it creates the
// new link under a temporary name in path's directory and renames it over
// path (rename(2) replaces the entry: the old link is never followed, and a
// reader sees the old link or the new one). The existing entry must be
// missing or a symbolic link: anything else (a regular file, a directory the
// user made) is left alone and refused with a *RefusedError.
func ReplaceSymlink(target, path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		return &RefusedError{Path: path, Mode: fi.Mode().Type(), Links: links(fi)}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir, base := filepath.Split(path)
	var tmp string
	for i := 0; ; i++ {
		tmp = filepath.Join(dir, "."+base+".tmp"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(i))
		err := os.Symlink(target, tmp)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i >= 100 {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
