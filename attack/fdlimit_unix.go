//go:build unix

package attack

import (
	"os"
	"syscall"
)

// fdLimits reads the soft RLIMIT_NOFILE, first raising it to the hard limit
// when it is below hard-1 (Go's runtime already raises it to hard-1 at
// startup, syscall/rlimit.go; this only matters if something lowered it
// since), and counts the descriptors open now (/proc/self/fd or /dev/fd).
func fdLimits() fdInfo {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fdInfo{}
	}
	if l.Max > 0 && l.Cur < l.Max-1 {
		nl := l
		nl.Cur = l.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &nl) == nil {
			l = nl
		}
	}
	open := 0
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if ents, err := os.ReadDir(dir); err == nil {
			open = len(ents)
			break
		}
	}
	return fdInfo{limit: uint64(l.Cur), open: open}
}
