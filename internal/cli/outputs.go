package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// The checks of output paths, one owner for every command that writes:
// a path that cannot be written as asked is a usage error (exit 2) naming
// the flag, the path and what is wrong, before anything is sent or written.

// checkOutputFile refuses (usage error) an output path whose directory
// does not exist (nothing creates it silently) or that names something
// other than a regular file (a FIFO, a device, a directory): a receipt
// written into a pipe is not evidence anyone can read back.
func checkOutputFile(flag, path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("%s %s: directory %s does not exist (create it first)", flag, path, dir)
	case err != nil:
		return usageErrorf("%s %s: %v", flag, path, err)
	case !st.IsDir():
		return usageErrorf("%s %s: %s is not a directory but %s", flag, path, dir, boundedio.FileKind(st.Mode()))
	}
	if err := refuseLink(flag, path); err != nil {
		return err
	}
	st, err = os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usageErrorf("%s %s: %v", flag, path, err)
	case !st.Mode().IsRegular():
		return usageErrorf("%s %s: not a regular file but %s", flag, path, boundedio.FileKind(st.Mode()))
	}
	return nil
}

// checkOutputDir refuses (usage error) an output directory path that
// exists as something other than a directory, or under a parent that is
// not one (the command would create it with MkdirAll). With empty, an
// existing directory must also have no entries (merge writes a new
// scenario directory and refuses to mix runs). A path that does not exist
// yet is accepted: the command creates it.
func checkOutputDir(flag, path string, empty bool) error {
	st, err := os.Stat(path)
	if err != nil {
		// Not there (or a parent is a file: ENOTDIR): MkdirAll needs
		// the nearest existing ancestor to be a directory.
		if anc, m, ok := nonDirAncestor(filepath.Dir(filepath.Clean(path))); ok {
			return usageErrorf("%s %s: %s is not a directory but %s", flag, path, anc, fileKind(m))
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return usageErrorf("%s %s: %v", flag, path, err)
	}
	if !st.IsDir() {
		return usageErrorf("%s %s: not a directory but %s", flag, path, fileKind(st.Mode()))
	}
	if empty {
		entries, err := os.ReadDir(path)
		if err != nil {
			return usageErrorf("%s %s: %v", flag, path, err)
		}
		if len(entries) > 0 {
			return usageErrorf("%s %s: not empty (it holds %s): give a new or empty directory", flag, path, someEntries(entries))
		}
	}
	return nil
}

// checkOutputNewFile refuses (usage error) an output file path that
// exists as something other than a regular file (a directory, a FIFO) or
// whose parent cannot be a directory; the command creates the parents.
func checkOutputNewFile(flag, path string) error {
	if anc, m, ok := nonDirAncestor(filepath.Dir(filepath.Clean(path))); ok {
		return usageErrorf("%s %s: %s is not a directory but %s", flag, path, anc, fileKind(m))
	}
	if err := refuseLink(flag, path); err != nil {
		return err
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return usageErrorf("%s %s: not a regular file but %s", flag, path, fileKind(st.Mode()))
	}
	return nil
}

// refuseLink refuses (usage error) an output file path that is a symbolic
// link: rlbench never writes through one (evidence/safefile), whatever it
// points to; the message says to remove it.
func refuseLink(flag, path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return usageErrorf("%s %v", flag, safefile.Check(path))
	}
	return nil
}

// checkReceiptsOut is checkOutputDir for `collect receipts`: DIR may hold
// other evidence, but DIR/receipts/ must not hold files already (receipts
// pulled earlier would be overwritten by, or mixed with, these).
func checkReceiptsOut(flag, path string) error {
	if err := checkOutputDir(flag, path, false); err != nil {
		return err
	}
	sub := evidence.Dir(path).Path(evidence.ReceiptsDir)
	entries, err := os.ReadDir(sub)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usageErrorf("%s %s: %s cannot hold the receipts: %v", flag, path, sub, err)
	case len(entries) > 0:
		return usageErrorf("%s %s: %s is not empty (it holds %s, from an earlier collection: these receipts would overwrite or mix with them): give a new directory", flag, path, sub, someEntries(entries))
	}
	return nil
}

// nonDirAncestor returns dir, or the nearest of its parents that exists,
// when that is not a directory; ok is false when it is one (or nothing
// on the way exists).
func nonDirAncestor(dir string) (string, fs.FileMode, bool) {
	for {
		if st, err := os.Stat(dir); err == nil {
			return dir, st.Mode(), !st.IsDir()
		}
		next := filepath.Dir(dir)
		if next == dir {
			return "", 0, false
		}
		dir = next
	}
}

// someEntries names the first of entries and how many more there are.
func someEntries(entries []os.DirEntry) string {
	if len(entries) == 1 {
		return entries[0].Name()
	}
	return fmt.Sprintf("%s and %d more", entries[0].Name(), len(entries)-1)
}

// fileKind is what a path is, for messages: "a regular file", "a
// directory", "a named pipe (FIFO)"...
func fileKind(m fs.FileMode) string {
	if m.IsRegular() {
		return "a regular file"
	}
	return boundedio.FileKind(m)
}
