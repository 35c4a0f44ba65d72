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
func rawWrite(c *hconn, b []byte) (int, error) {
	if c.isTLS || c.raw == nil || len(b) == 0 {
		return 0, nil
	}
	rs := &c.rs
	if rs.fn == nil {
		rs.fn = rs.write
	}
	rs.b, rs.n, rs.errno = b, 0, 0
	_ = c.raw.Write(rs.fn)
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
