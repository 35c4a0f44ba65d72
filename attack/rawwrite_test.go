package attack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// tcpPair is a connected loopback TCP pair: the client side as an hconn
// (with its raw socket, as pool.dial makes it) and the server side.
func tcpPair(t *testing.T) (*hconn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); peer.Close() })
	return &hconn{Conn: nc, raw: raw}, peer
}

// TestSendBytes: a request goes out whole and once whether the raw write
// takes all of it (a small request), part of it (a body larger than the
// socket's send buffer, with a peer that has not read yet: the rest goes
// through the connection's Write, which waits), or none (a TLS connection,
// an aborted attack, a closed connection: nothing raw, and the Write's
// error is the answer).
func TestSendBytes(t *testing.T) {
	e := &engine{abortCtx: context.Background(), timeout: 5 * time.Second}
	linux := runtime.GOOS == "linux"

	c, peer := tcpPair(t)
	small := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if n, err := rawWrite(c, small); err != nil || linux && n != len(small) || !linux && n != 0 {
		t.Fatalf("rawWrite of %d bytes: %d, %v", len(small), n, err)
	}
	if !linux {
		c.Write(small)
	}
	got := make([]byte, len(small))
	if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("peer read %q, %v", got, err)
	}

	// A body far larger than the send and receive buffers, not read yet.
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if linux {
		n, err := rawWrite(c, big)
		if n <= 0 || n >= len(big) || err != nil {
			t.Fatalf("rawWrite of %d bytes to a peer not reading: %d, %v (want a part)", len(big), n, err)
		}
		// Raw writes go on until the send buffer is full: then one
		// returns 0, nil (EAGAIN) instead of waiting. The next write is
		// not necessarily that one: the kernel may still be moving the
		// first write's segments to the peer's receive buffer (in softirq
		// context, which a loaded host defers to ksoftirqd), and frees
		// send buffer space as it does. Only the buffers bound the loop:
		// 64 MB is more than tcp_wmem's and tcp_rmem's largest together.
		for {
			m, err := rawWrite(c, big[n:])
			if err != nil || m < 0 {
				t.Fatalf("rawWrite after %d bytes to a peer not reading: %d, %v", n, m, err)
			}
			if m == 0 {
				break // EAGAIN: the send buffer is full
			}
			if n += m; n >= len(big) {
				t.Fatalf("rawWrite took all %d bytes, the peer reading none: no EAGAIN", n)
			}
		}
		// Read what came, then check writeRequest sends everything once.
		if _, err := io.CopyN(io.Discard, peer, int64(n)); err != nil {
			t.Fatal(err)
		}
	}
	sum := make(chan [32]byte)
	go func() {
		h := sha256.New()
		io.CopyN(h, peer, int64(len(big)))
		sum <- [32]byte(h.Sum(nil))
	}()
	a := &attempt{}
	e.writeRequest(a, c, big)
	if a.wn != len(big) || a.werr != nil || a.writes != 1 {
		t.Fatalf("writeRequest: wn %d werr %v writes %d", a.wn, a.werr, a.writes)
	}
	if <-sum != sha256.Sum256(big) {
		t.Fatal("the peer received other bytes than were sent")
	}

	// TLS: nothing raw (the bytes would bypass the record layer).
	c.isTLS = true
	if n, err := rawWrite(c, small); n != 0 || err != nil {
		t.Fatalf("rawWrite on a TLS connection: %d, %v", n, err)
	}
	c.isTLS = false

	// Aborted: nothing leaves, and the write fails at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ea := &engine{abortCtx: ctx, timeout: 5 * time.Second}
	a = &attempt{}
	ea.writeRequest(a, c, small)
	if a.wn != 0 || a.werr == nil || a.writes != 0 {
		t.Fatalf("aborted writeRequest: wn %d werr %v writes %d", a.wn, a.werr, a.writes)
	}
	peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _ := peer.Read(got); n != 0 {
		t.Fatalf("an aborted send left %d bytes", n)
	}

	// Closed: nothing raw; the Write reports the close.
	c.Conn.Close()
	if n, err := rawWrite(c, small); n != 0 || err != nil {
		t.Fatalf("rawWrite on a closed connection: %d, %v (want 0, nil: the Write reports the close)", n, err)
	}
	a = &attempt{}
	e.writeRequest(a, c, small)
	if a.wn != 0 || a.werr == nil {
		t.Fatalf("writeRequest on a closed connection: wn %d werr %v", a.wn, a.werr)
	}
}

// TestBurstLargeBodies: a burst whose requests are larger than the
// socket's send buffer, to a server that reads each body only after a
// pause: every sender's raw write leaves a part, the rest follows through
// the connection, and the server receives each ID once with its whole
// body.
func TestBurstLargeBodies(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16)
	want := sha256.Sum256(body)
	bad := make(chan string, 16)
	s, url := newRawIDServer(t, func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
		time.Sleep(20 * time.Millisecond) // a server slow to read (the condition, not a synchronisation)
		h := sha256.New()
		if k, err := io.Copy(h, req.Body); err != nil || k != int64(len(body)) || [32]byte(h.Sum(nil)) != want {
			bad <- id
		}
		io.WriteString(c, okResp(id, ""))
		return true
	})
	const n = 6
	opts := Options{IDs: IDs(n, "lb"), Targets: []Target{{URL: url}}, CaptureHeaders: []string{echoHeader}, Timeout: 10 * time.Second,
		Method: http.MethodPost, Body: body}
	sum, err, lines := runGuarded(t, opts, 30*time.Second)
	if err != nil || !sum.Complete || sum.Burst == nil || sum.Burst.WarmConnections != n {
		t.Fatalf("err %v summary %+v burst %+v", err, sum, sum.Burst)
	}
	if codes := checkLines(t, opts.IDs, sum, lines, s); codes[200] != n {
		t.Fatalf("codes %v", codes)
	}
	close(bad)
	for id := range bad {
		t.Errorf("%s: the server did not receive the whole body", id)
	}
}
