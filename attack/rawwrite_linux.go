package attack

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawWrite makes one non-blocking write(2) of b on c's TCP socket as a raw
// system call, which keeps the goroutine's P: the runtime's syscall state is
// not entered, so the scheduler cannot hand the P to another goroutine (a
// response reader, say) while the kernel copies the bytes, and the sender
// never waits to get a P back afterwards. It returns how many bytes left (0
// for TLS connections, a closed connection, a full send buffer, or an error:
// the caller writes the rest through c, which then reports the error). The
// socket is non-blocking (the runtime's netpoller opens it so), so the call
// never sleeps in the kernel.
func rawWrite(c *hconn, b []byte) int {
	if c.isTLS || c.raw == nil || len(b) == 0 {
		return 0
	}
	n := 0
	_ = c.raw.Write(func(fd uintptr) bool {
		r, _, errno := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if errno == 0 {
			n = int(r)
		}
		return true
	})
	return n
}
