package attack

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// staleConn is a connection the server has reset after its first request:
// its first Write goes through, every later one writes nothing and fails as
// a write on a reset socket does. It is not a *net.TCPConn, so it has no
// raw socket (no raw write, no liveness peek).
type staleConn struct {
	net.Conn
	writes atomic.Int32
}

func (s *staleConn) Write(b []byte) (int, error) {
	if s.writes.Add(1) > 1 {
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	}
	return s.Conn.Write(b)
}

// TestRunRetryAfterStaleConnection: a request whose write on a reused
// connection left not one byte is written once more on a new connection
// (package doc, "No replays"); when that write goes through, the request
// is answered and recorded with its answer, not with the first write's
// error.
func TestRunRetryAfterStaleConnection(t *testing.T) {
	rec := newRecorder()
	url := newLocalServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }))
	var dials atomic.Int32
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil || dials.Add(1) > 1 {
			return c, err // a plain TCP connection: raw writes
		}
		return &staleConn{Conn: c}, nil
	}
	ids := IDs(3, "st")
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: ids, Targets: []Target{{Name: "s", URL: url}}, Concurrency: 1, testDial: dial})
	if err != nil || len(lines) != len(ids) {
		t.Fatalf("err %v, %d lines", err, len(lines))
	}
	for _, l := range lines {
		if l.Code != 200 || l.Error != "" || l.NotSent {
			t.Errorf("%s: code %d error %q not sent %v", l.ID, l.Code, l.Error, l.NotSent)
		}
	}
	seen := rec.snapshot()
	for _, id := range ids {
		if len(seen[id]) != 1 {
			t.Errorf("%s received %d times", id, len(seen[id]))
		}
	}
	if !sum.Complete || sum.Resent != 0 || dials.Load() != 2 {
		t.Fatalf("summary %+v, %d dials (want 2: the reset connection, then one more)", sum, dials.Load())
	}
}

// deadlineConn records the last deadline set on it; hook, if set, runs
// once inside the next SetDeadline, before the deadline is recorded (as
// another goroutine running between the caller's decision and the call
// would).
type deadlineConn struct {
	net.Conn
	mu   sync.Mutex
	last time.Time
	hook func()
}

func (d *deadlineConn) SetDeadline(t time.Time) error {
	d.mu.Lock()
	h := d.hook
	d.hook = nil
	d.mu.Unlock()
	if h != nil {
		h()
	}
	d.mu.Lock()
	d.last = t
	d.mu.Unlock()
	return d.Conn.SetDeadline(t)
}

// TestSetDeadlineRacingAbort: when the attack is aborted (abortAll: the
// abort context ends, and every connection in use gets a deadline in the
// past) while a send sets its connection's deadline, the deadline ends in
// the past, whatever the interleaving, so that the response read fails at
// once rather than at the timeout.
func TestSetDeadlineRacingAbort(t *testing.T) {
	for _, via := range []string{"setDeadline", "writeRequest"} {
		t.Run(via, func(t *testing.T) {
			nc, peer := tcpPair(t)
			go func() { _, _ = peer.Read(make([]byte, 4096)) }()
			dc := &deadlineConn{Conn: nc.Conn}
			c := &hconn{Conn: dc, raw: nc.raw} // on Linux, the request goes out in one raw write
			e := &engine{timeout: time.Hour}
			e.abortCtx, e.abortFn = context.WithCancel(context.Background())
			defer e.abortFn()
			w := &worker{e: e}
			w.cur.Store(c)
			e.workers = []*worker{w}
			dc.hook = e.abortAll
			a := &attempt{sent: time.Now()}
			if via == "setDeadline" {
				e.setDeadline(a, c)
			} else {
				e.writeRequest(a, c, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			}
			dc.mu.Lock()
			last := dc.last
			dc.mu.Unlock()
			if e.abortCtx.Err() == nil || !last.Before(time.Now()) {
				t.Fatalf("aborted %v, deadline %s (want in the past)", e.abortCtx.Err() != nil, last)
			}
			_, err := c.Read(make([]byte, 1))
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read after the abort: %v", err)
			}
		})
	}
}
