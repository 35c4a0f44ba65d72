package h1

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-acc
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestTurnConnDeferred: a deferred message reaches the peer when Read
// runs, whole and once, and Read returns the answer; a message larger
// than the socket takes at once (the rest through the net.Conn's Write)
// arrives whole too; EOF is io.EOF.
func TestTurnConnDeferred(t *testing.T) {
	c, s := tcpPair(t)
	tc := NewTurnConn(c)
	for _, size := range []int{5, 8 << 20} {
		msg := bytes.Repeat([]byte("abcdefgh"), size/8+1)[:size]
		tc.DeferNextWrite()
		if n, err := tc.Write(msg); n != size || err != nil {
			t.Fatalf("deferred write: %d %v", n, err)
		}
		got := make(chan []byte, 1)
		go func() {
			b := make([]byte, size)
			if _, err := io.ReadFull(s, b); err != nil {
				got <- nil
				return
			}
			got <- b
			s.Write([]byte("answer"))
		}()
		buf := make([]byte, 64)
		n, err := io.ReadAtLeast(tc, buf, len("answer"))
		if err != nil || string(buf[:n]) != "answer" {
			t.Fatalf("size %d: read %q %v", size, buf[:n], err)
		}
		if b := <-got; !bytes.Equal(b, msg) {
			t.Fatalf("size %d: the peer got %d bytes, not the message", size, len(b))
		}
		if tc.DeferredWriteErr() != nil {
			t.Fatal(tc.DeferredWriteErr())
		}
	}
	// Not deferred: written at once.
	if _, err := tc.Write([]byte("now")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(s, b); err != nil || string(b) != "now" {
		t.Fatalf("plain write: %q %v", b, err)
	}
	s.Close()
	tc.DeferNextWrite()
	tc.Write([]byte("late")) // to a closed peer: may go, or be reset
	if _, err := tc.Read(b); err == nil {
		t.Fatal("read after the peer closed: no error")
	}
}

// TestTurnConnFailedDeferredWrite: a deferred message that cannot go (the
// connection closed, the deadline passed) fails the Read and
// DeferredWriteErr says so; a failed plain read does not.
func TestTurnConnFailedDeferredWrite(t *testing.T) {
	c, _ := tcpPair(t)
	tc := NewTurnConn(c)
	c.SetDeadline(time.Now().Add(-time.Second))
	tc.DeferNextWrite()
	tc.Write([]byte("x"))
	_, err := tc.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) || tc.DeferredWriteErr() == nil {
		t.Fatalf("past deadline: %v, deferred write error %v", err, tc.DeferredWriteErr())
	}
	_, err = tc.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) || tc.DeferredWriteErr() != nil {
		t.Fatalf("plain read past deadline: %v, deferred write error %v", err, tc.DeferredWriteErr())
	}
	c.SetDeadline(time.Time{})
	c.Close()
	tc.DeferNextWrite()
	tc.Write([]byte("x"))
	if _, err := tc.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) || tc.DeferredWriteErr() == nil {
		t.Fatalf("closed: %v, deferred write error %v", err, tc.DeferredWriteErr())
	}
}
