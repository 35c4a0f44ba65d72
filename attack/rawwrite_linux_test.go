package attack

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitTCPClosed waits until c's socket is in TCP_CLOSE (a reset from the
// peer has arrived), polling its TCP_INFO.
func waitTCPClosed(t *testing.T, c *hconn) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		var state uint8
		if err := c.raw.Control(func(fd uintptr) {
			if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				state = ti.State
			}
		}); err != nil {
			t.Fatal(err)
		}
		if state == 7 { // TCP_CLOSE (include/net/tcp_states.h)
			return
		}
	}
	t.Fatal("the peer's reset did not arrive")
}

// TestSendBytesReset: a request written on a connection the server has
// reset reports the reset ("connection reset by peer", as a plain Write
// would), not the "broken pipe" of a second write(2) after the raw one
// consumed the socket's error, and counts not one byte.
func TestSendBytesReset(t *testing.T) {
	e := &engine{abortCtx: context.Background(), timeout: 5 * time.Second}
	c, peer := tcpPair(t)
	if err := peer.(*net.TCPConn).SetLinger(0); err != nil { // close sends a RST
		t.Fatal(err)
	}
	peer.Close()
	waitTCPClosed(t, c)
	a := &attempt{}
	e.writeRequest(a, c, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	if a.wn != 0 || a.writes != 0 || !errors.Is(a.werr, syscall.ECONNRESET) {
		t.Fatalf("wn %d writes %d werr %v (want ECONNRESET)", a.wn, a.writes, a.werr)
	}
	// The error reads as net.Conn.Write's would: op, addresses, errno.
	var oe *net.OpError
	if !errors.As(a.werr, &oe) || oe.Op != "write" || oe.Net != "tcp" || oe.Addr == nil ||
		!strings.HasSuffix(a.werr.Error(), "write: connection reset by peer") || !strings.Contains(a.werr.Error(), c.RemoteAddr().String()) {
		t.Fatalf("error %q (%T)", a.werr, a.werr)
	}
}

// TestRawWriteAllocs: a raw write allocates nothing (its callback is made
// once per connection): before rawState, each request's closure escaped,
// two allocations per request.
func TestRawWriteAllocs(t *testing.T) {
	c, peer := tcpPair(t)
	go io.Copy(io.Discard, peer)
	b := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	rawWrite(c, b) // the callback is bound at the first write
	if allocs := testing.AllocsPerRun(200, func() {
		if n, err := rawWrite(c, b); n != len(b) || err != nil {
			t.Fatalf("rawWrite: %d, %v", n, err)
		}
	}); allocs != 0 {
		t.Fatalf("rawWrite allocates %.1f times per call, want 0", allocs)
	}
}

// TestWriteAwaitWaitsForResponse: rawWriteAwait returns only once the
// peer's answer is readable (a non-blocking peek then finds it), having
// written the request whole, once; a response that came before the wait
// began is not missed (a peer answering at once, many times over).
func TestWriteAwaitWaitsForResponse(t *testing.T) {
	c, peer := tcpPair(t)
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	go func() {
		buf := make([]byte, len(req))
		for {
			if _, err := io.ReadFull(peer, buf); err != nil {
				return
			}
			if _, err := peer.Write([]byte("R")); err != nil {
				return
			}
		}
	}()
	c.SetDeadline(time.Now().Add(time.Minute))
	for k := 0; k < 200; k++ {
		if n, err := rawWriteAwait(c, req); n != len(req) || err != nil {
			t.Fatalf("round %d: rawWriteAwait: %d, %v", k, n, err)
		}
		var b [2]byte
		got := -1
		if err := c.raw.Read(func(fd uintptr) bool {
			got, _, _ = unix.Recvfrom(int(fd), b[:], unix.MSG_DONTWAIT)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if got != 1 || b[0] != 'R' {
			t.Fatalf("round %d: after the wait, a non-blocking read got %d bytes %q (want the answer)", k, got, b[:max(got, 0)])
		}
	}
}

// TestWriteAwaitPastDeadline: with the deadline in the past (an aborted
// attack) not one byte is written and the call returns at once.
func TestWriteAwaitPastDeadline(t *testing.T) {
	c, peer := tcpPair(t)
	c.SetDeadline(time.Unix(1, 0))
	if n, err := rawWriteAwait(c, []byte("GET / HTTP/1.1\r\n\r\n")); n != 0 || err != nil {
		t.Fatalf("rawWriteAwait past the deadline: %d, %v (want 0, nil)", n, err)
	}
	peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if m, err := peer.Read(make([]byte, 64)); m != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the peer read %d bytes (%v), want none", m, err)
	}
}

// TestWriteAwaitAllocs: rawWriteAwait allocates nothing (its callback is
// bound once per connection, as rawWrite's).
func TestWriteAwaitAllocs(t *testing.T) {
	c, peer := tcpPair(t)
	go func() {
		buf, resp := make([]byte, 64), []byte("R") // the peer allocates nothing either: AllocsPerRun counts it
		for {
			if _, err := peer.Read(buf); err != nil {
				return
			}
			peer.Write(resp)
		}
	}()
	b := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetDeadline(time.Now().Add(time.Minute))
	r := make([]byte, 64)
	drain := func() { c.Read(r) }
	rawWriteAwait(c, b)
	drain()
	if allocs := testing.AllocsPerRun(100, func() {
		if n, err := rawWriteAwait(c, b); n != len(b) || err != nil {
			t.Fatalf("rawWriteAwait: %d, %v", n, err)
		}
		drain()
	}); allocs != 0 {
		t.Fatalf("rawWriteAwait allocates %.1f times per call, want 0", allocs)
	}
}
