//go:build unix

package attack

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peekClosed reports whether the server closed an idle connection or sent
// something unsolicited on it (a 408, a TLS alert): a non-blocking
// recv(MSG_PEEK) that finds EOF, an error or data. Only EAGAIN — nothing to
// read — means the connection is still usable.
func peekClosed(rc syscall.RawConn) bool {
	var buf [1]byte
	closed := false
	err := rc.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		closed = err != unix.EAGAIN && err != unix.EWOULDBLOCK
		return true
	})
	return closed || err != nil
}
