//go:build linux

package attack

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rlbench/rlbench/evidence"
)

// early408Server answers its first k connections with "408 Request
// Timeout" and a close before any request (as HAProxy does to a
// connection that sent none within its timeout http-request), and every
// other request with "ok <ID>". done is closed once those k answers are in
// the client's receive queue (the server's send queue is empty: SIOCOUTQ).
type early408Server struct {
	ln   net.Listener
	done chan struct{}
	mu   sync.Mutex
	seen map[string]int
}

func startEarly408(t *testing.T, k int) *early408Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &early408Server{ln: ln, done: make(chan struct{}), seen: map[string]int{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func(n int) {
				defer wg.Done()
				defer c.Close()
				if n < k {
					s.answer408(t, c.(*net.TCPConn), n == k-1)
					return
				}
				s.serve(c)
			}(n)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

// answer408 writes the early 408 and waits until the client has it (its
// socket's send queue empty); the last of them closes s.done.
func (s *early408Server) answer408(t *testing.T, c *net.TCPConn, last bool) {
	if _, err := c.Write([]byte("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Error(err)
	}
	rc, _ := c.SyscallConn()
	for queued := 1; queued > 0; {
		rc.Control(func(fd uintptr) {
			var err error
			if queued, err = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ); err != nil {
				t.Error(err)
				queued = 0
			}
		})
	}
	if last {
		close(s.done)
	}
}

func (s *early408Server) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		id := req.Header.Get(evidence.IDHeader)
		s.mu.Lock()
		s.seen[id]++
		s.mu.Unlock()
		body := "ok " + id
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			return
		}
	}
}

// TestPeekWarm: warm connections the server answered with an early 408
// and closed before the release are peeked and not written on; their first
// requests go on new connections. On both engines, and pipelined, every ID
// reaches the server once and gets its own answer, none the 408.
func TestPeekWarm(t *testing.T) {
	for _, tc := range []struct {
		name     string
		engine   string
		pipeline int
	}{{"event loops", EngineAuto, 0}, {"goroutines", EngineGoroutines, 0}, {"pipelined", EngineAuto, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			if forceGoroutines && tc.engine == EngineAuto && tc.pipeline == 0 {
				t.Skip("RLBENCH_ENGINE=goroutines")
			}
			s := startEarly408(t, 5)
			ids := IDs(20, "pw")
			before := evloopFlows.Load()
			_, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{Name: "a", URL: "http://" + s.ln.Addr().String()}},
				IDs: ids, Engine: tc.engine, Pipeline: tc.pipeline, Timeout: 20 * time.Second, testPeekWarm: func() { <-s.done }})
			if err != nil {
				t.Fatal(err)
			}
			if onLoops := evloopFlows.Load() != before; onLoops != (tc.engine == EngineAuto && tc.pipeline == 0) {
				t.Fatalf("ran on the event loops: %v", onLoops)
			}
			if len(lines) != len(ids) {
				t.Fatalf("%d lines, want %d", len(lines), len(ids))
			}
			for _, l := range lines {
				if l.Code != 200 || l.Body != "ok "+l.ID || l.Error != "" || l.NotSent {
					t.Errorf("%s: code %d body %q error %q not_sent %v", l.ID, l.Code, l.Body, l.Error, l.NotSent)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, id := range ids {
				if s.seen[id] != 1 {
					t.Errorf("%s read %d times by the server, want once", id, s.seen[id])
				}
			}
		})
	}
}
