//go:build unix

package safefile

import (
	"io/fs"
	"syscall"
)

// oNoFollow makes open(2) fail on a symbolic link at the final component.
const oNoFollow = syscall.O_NOFOLLOW

// links is fi's hard link count (1 when the platform does not say).
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
