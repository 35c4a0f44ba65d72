package attack

import (
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawWrite makes one non-blocking write(2) of b on c's TCP socket as a raw
// system call, which keeps the goroutine's P: the runtime's syscall state is
// not entered, so the scheduler cannot hand the P to another goroutine (a
// response reader, say) while the kernel copies the bytes, and the sender
// never waits to get a P back afterwards. The socket is non-blocking (the
// runtime's netpoller opens it so), so the call never sleeps in the kernel.
//
// It returns how many bytes left: 0 for TLS connections (the bytes would
// bypass the record layer), a closed connection or one whose deadline has
// passed (the poller refuses the call), a full send buffer (EAGAIN) or an
// interrupted call (EINTR); the caller writes the rest through c, which
// waits or reports the error. Any other errno is returned as c's Write
// would have reported it (a *net.OpError around the *os.SyscallError): the
// caller must not write again, as a second write(2) would report EPIPE
// instead (the kernel clears the socket's error, ECONNRESET say, when it
// reports it once).
func rawWrite(c *hconn, b []byte) (int, error) { return rawSend(c, b, false) }

// rawWriteAwait is rawWrite for a sender that reads the response itself:
// when every byte left, it also waits, before it returns, until c's socket
// is readable (the response's first bytes, an EOF or a reset), its deadline
// passes, or c is closed. The write and the wait are one
// syscall.RawConn.Read: the poller's readiness is reset before the write
// (internal/poll's prepareRead), so a response that comes before the wait
// is not missed, and the read that follows finds its bytes at once instead
// of a first read(2) that finds nothing (EAGAIN) before the goroutine
// parks. What the wait ended with is not reported: the read that follows
// reports it (a deadline, a close). Results as rawWrite's.
func rawWriteAwait(c *hconn, b []byte) (int, error) { return rawSend(c, b, true) }

// rawSend is rawWrite, waiting as rawWriteAwait when wait is set.
func rawSend(c *hconn, b []byte, wait bool) (int, error) {
	if c.isTLS || c.raw == nil || len(b) == 0 {
		return 0, nil
	}
	rs := &c.rs
	if rs.fn == nil {
		rs.fn, rs.waitFn = rs.write, rs.writeWait
	}
	rs.b, rs.n, rs.errno, rs.done = b, 0, 0, false
	if wait {
		_ = c.raw.Read(rs.waitFn)
	} else {
		_ = c.raw.Write(rs.fn)
	}
	n, errno := rs.n, rs.errno
	rs.b = nil
	if n > 0 {
		raceRead(b[:n])
	}
	if errno == 0 || errno == unix.EAGAIN || errno == unix.EINTR {
		return n, nil
	}
	la := c.LocalAddr()
	return 0, &net.OpError{Op: "write", Net: la.Network(), Source: la, Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", errno)}
}

// rawState is a connection's raw-write callback with its argument and
// results. syscall.RawConn.Write takes a func, and a closure made for each
// write would escape to the heap (two allocations per request); this one is
// made once per connection, at its first raw write. The connection's writer
// owns it: one goroutine writes a connection at a time.
type rawState struct {
	b     []byte
	n     int
	errno unix.Errno
	fn    func(fd uintptr) bool // rs.write, bound once
	// waitFn is rs.writeWait, bound once; done says its write was made.
	waitFn func(fd uintptr) bool
	done   bool
}

// write is the callback: one write(2) of rs.b on fd.
func (rs *rawState) write(fd uintptr) bool {
	r, _, en := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rs.b[0])), uintptr(len(rs.b)))
	if en == 0 {
		rs.n = int(r)
	}
	rs.errno = en
	return true
}

// writeWait is rawWriteAwait's callback: its first call writes rs.b and
// asks the poller to wait for readability (false) when every byte left;
// a later call (the socket is readable) ends the wait.
func (rs *rawState) writeWait(fd uintptr) bool {
	if rs.done {
		return true
	}
	rs.write(fd)
	rs.done = true
	return rs.errno != 0 || rs.n < len(rs.b)
}
