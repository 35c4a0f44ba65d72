package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestHead: a head written with StatusLine, Header and HeaderInt reads
// back with net/http, registered reason or not, without allocating.
func TestHead(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for _, code := range []int{200, 429, 599} {
		buf.Reset()
		w.Reset(&buf)
		StatusLine(w, code)
		Header(w, "Content-Type", "text/plain")
		HeaderInt(w, "Content-Length", 2)
		w.WriteString("\r\nok")
		w.Flush()
		resp, err := http.ReadResponse(bufio.NewReader(&buf), nil)
		if err != nil || resp.StatusCode != code || resp.ContentLength != 2 || resp.Header.Get("Content-Type") != "text/plain" {
			t.Fatalf("%d: %v %+v", code, err, resp)
		}
		want := http.StatusText(code)
		if want == "" {
			want = fmt.Sprintf("status code %d", code)
		}
		if resp.Status != fmt.Sprintf("%d %s", code, want) {
			t.Fatalf("status %q", resp.Status)
		}
	}
	w.Reset(&buf)
	if n := testing.AllocsPerRun(100, func() {
		buf.Reset()
		StatusLine(w, 503)
		HeaderInt(w, "Content-Length", 12345)
		Header(w, "Date", Date(time.Unix(1e9, 0)))
		w.Flush()
	}); n != 0 {
		t.Fatalf("%v allocations per head", n)
	}
}

func TestDate(t *testing.T) {
	at := time.Date(2026, 12, 1, 18, 0, 0, 0, time.FixedZone("x", 3600))
	if got, want := Date(at), "Tue, 01 Dec 2026 17:00:00 GMT"; got != want {
		t.Fatalf("Date = %q, want %q", got, want)
	}
	if got := Date(at.Add(time.Second)); got != "Tue, 01 Dec 2026 17:00:01 GMT" {
		t.Fatalf("next second: %q", got)
	}
}

func TestBodyAllowedAndConnGone(t *testing.T) {
	for code, want := range map[int]bool{100: false, 200: true, 204: false, 304: false, 404: true, 503: true} {
		if BodyAllowed(code) != want {
			t.Errorf("BodyAllowed(%d) = %v", code, !want)
		}
	}
	if !ConnGone(fmt.Errorf("read: %w", syscall.ECONNRESET)) || !ConnGone(syscall.EPIPE) || ConnGone(errors.New("malformed")) || ConnGone(nil) {
		t.Fatal("ConnGone")
	}
}

// TestConns: Serve runs serve for each accepted connection; Close calls
// each on the open ones (here: closing them, which ends their serve) and
// Wait returns once every serve has; a connection accepted after Close is
// closed unserved.
func TestConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var s Conns[net.Conn]
	started := make(chan struct{}, 2)
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.Serve(ln, func(c net.Conn) net.Conn { return c }, func(c net.Conn) {
			started <- struct{}{}
			io.Copy(io.Discard, c) // until closed
		})
	}()
	var clients []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
		<-started
	}
	n := 0
	s.Close(func(c net.Conn) { n++; c.Close() })
	s.Wait()
	if n != 2 || !s.Closing() {
		t.Fatalf("each called %d times, closing %v", n, s.Closing())
	}
	// Accepted after Close: closed unserved, and Serve returns.
	late, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	<-served
	late.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := late.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("late connection: %v, want closed", err)
	}
	ln.Close()
	for _, c := range clients {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("served connection still open: %v", err)
		}
	}
}
