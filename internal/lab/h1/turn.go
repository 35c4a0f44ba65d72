package h1

import (
	"io"
	"net"
	"os"
	"syscall"
)

// TurnConn is a connection's reader and writer for request/response turns
// (the reader and writer under a connection's bufio pair). A message
// flushed with DeferNextWrite is not written at once: the next Read sends
// it and, the socket's readiness armed before the send, waits for the
// answer without first trying a read that can only fail with EAGAIN (a
// plain net.Conn read right after a write does: one read(2) per turn
// less). Everything else is the net.Conn's own Read and Write, and so is
// a deferred write that the socket does not take whole at once (the rest
// goes through the net.Conn's Write, with its deadline). Errors are the
// net.Conn's: *net.OpError around an *os.SyscallError, io.EOF at the end.
// A TurnConn is used by one goroutine at a time; Close of the net.Conn
// from another goroutine ends a waiting Read.
type TurnConn struct {
	c  net.Conn
	rc syscall.RawConn // nil: no deferred writes

	deferNext bool
	pending   []byte // the deferred message: the caller's buffer, untouched until the next Read returns
	werr      error  // the deferred write's failure
	rest      bool   // the socket did not take pending whole

	p     []byte // the Read's buffer
	n     int
	rerr  error
	turnF func(fd uintptr) bool // made once: rc.Read would allocate a closure per turn
}

// NewTurnConn returns a TurnConn on c; without syscall.Conn (not a socket)
// writes are never deferred.
func NewTurnConn(c net.Conn) *TurnConn {
	t := &TurnConn{c: c}
	if sc, ok := c.(syscall.Conn); ok {
		t.rc, _ = sc.SyscallConn()
	}
	t.turnF = t.turn
	return t
}

// DeferNextWrite defers the next Write (the Flush of a whole message) to
// the next Read. The bytes of that Write are kept, not copied: the caller
// leaves them unchanged until the next Read returns (a bufio.Writer's
// buffer, not written to before that read, is).
func (t *TurnConn) DeferNextWrite() { t.deferNext = t.rc != nil }

// DeferredWriteErr returns the error of the deferred write if the last
// Read failed because it did (a message that never left), else nil.
func (t *TurnConn) DeferredWriteErr() error { return t.werr }

// Write writes p, or keeps it for the next Read after DeferNextWrite.
func (t *TurnConn) Write(p []byte) (int, error) {
	if t.deferNext && len(t.pending) == 0 {
		t.deferNext = false
		t.pending = p
		return len(p), nil
	}
	t.deferNext = false
	return t.c.Write(p)
}

// Read sends a deferred message, then reads.
func (t *TurnConn) Read(p []byte) (int, error) {
	t.deferNext, t.werr = false, nil
	if len(t.pending) == 0 || t.rc == nil {
		return t.c.Read(p)
	}
	t.p, t.n, t.rerr, t.rest = p, 0, nil, false
	err := t.rc.Read(t.turnF)
	t.p = nil
	switch {
	case t.werr != nil:
		t.pending = nil
		return 0, t.werr
	case t.rest:
		_, werr := t.c.Write(t.pending)
		t.pending = nil
		if werr != nil {
			t.werr = werr
			return 0, werr
		}
		return t.c.Read(p)
	case len(t.pending) > 0:
		// The wait failed before the message went (a closed connection,
		// a passed deadline): it never left.
		t.pending = nil
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		t.werr = t.opError("write", err)
		return 0, t.werr
	case err != nil:
		return 0, t.opError("read", err)
	case t.rerr != nil:
		return 0, t.opError("read", os.NewSyscallError("read", t.rerr))
	case t.n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return t.n, nil
}

// turn is the raw step: first the pending message (false once it is out:
// wait for readability), then one read (false on EAGAIN: wait again).
func (t *TurnConn) turn(fd uintptr) bool {
	for len(t.pending) > 0 {
		n, err := syscall.Write(int(fd), t.pending)
		if n > 0 {
			t.pending = t.pending[n:]
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			t.rest = true
			return true
		case err != nil:
			t.werr = t.opError("write", os.NewSyscallError("write", err))
			return true
		case len(t.pending) == 0:
			return false
		}
	}
	for {
		n, err := syscall.Read(int(fd), t.p)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		t.n, t.rerr = max(n, 0), err
		return true
	}
}

// opError wraps err as the net.Conn's own Read and Write do; an error
// that already is a *net.OpError (from the RawConn) is returned as is.
func (t *TurnConn) opError(op string, err error) error {
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	return &net.OpError{Op: op, Net: t.c.LocalAddr().Network(), Source: t.c.LocalAddr(), Addr: t.c.RemoteAddr(), Err: err}
}
