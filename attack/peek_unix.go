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
	closed := false
	err := rc.Read(func(fd uintptr) bool {
		closed = peekFdClosed(int(fd))
		return true
	})
	return closed || err != nil
}

// peekFdClosed is peekClosed's test on the socket fd itself (the event
// loop's sockets are not in the runtime's poller).
func peekFdClosed(fd int) bool {
	var buf [1]byte
	_, _, err := unix.Recvfrom(fd, buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err != unix.EAGAIN && err != unix.EWOULDBLOCK
}
