package attack

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// pipeServer is a raw HTTP/1.1 server for the pipelining tests: on each
// connection it reads depth whole requests before it answers any (a client
// that waits for a response before its next write never gets one, and
// times out), then answers them with answer(k) for k = 0..depth-1: the
// response bytes, and whether to end the connection after them (reset:
// with a TCP RST, SO_LINGER 0). It counts each ID it read.
type pipeServer struct {
	ln     net.Listener
	depth  int
	answer func(k int) (resp string, end, reset bool)
	mu     sync.Mutex
	seen   map[string]int
	conns  int
	wg     sync.WaitGroup
}

func startPipeServer(t *testing.T, depth int, answer func(k int) (string, bool, bool)) *pipeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &pipeServer{ln: ln, depth: depth, answer: answer, seen: map[string]int{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c.(*net.TCPConn))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *pipeServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *pipeServer) serve(c *net.TCPConn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		for k := 0; k < s.depth; k++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.seen[req.Header.Get(evidence.IDHeader)]++
			s.mu.Unlock()
		}
		for k := 0; k < s.depth; k++ {
			resp, end, reset := s.answer(k)
			if _, err := c.Write([]byte(resp)); err != nil {
				return
			}
			if reset {
				c.SetLinger(0)
				return
			}
			if end {
				return
			}
		}
	}
}

// onceEach fails t for each of ids the server did not read exactly once
// (s.mu held).
func (s *pipeServer) onceEach(t *testing.T, ids []string) {
	t.Helper()
	for _, id := range ids {
		if s.seen[id] != 1 {
			t.Errorf("%s on the wire %d times, want once", id, s.seen[id])
		}
	}
}

const pipeOK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// TestPipelineWritesTogether: with Pipeline 8 every chunk of 8 IDs is
// written before any response is read (the server answers none until it
// has all 8), each ID once, on the workers' own connections.
func TestPipelineWritesTogether(t *testing.T) {
	s := startPipeServer(t, 8, func(int) (string, bool, bool) { return pipeOK, false, false })
	ids := IDs(96, "p")
	sum, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{Name: "a", URL: s.url()}}, IDs: ids,
		Concurrency: 3, Pipeline: 8, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(ids) {
		t.Fatalf("%d lines, want %d", len(lines), len(ids))
	}
	for _, l := range lines {
		if l.Code != 200 || l.Error != "" || l.NotSent {
			t.Errorf("%s: code %d error %q not_sent %v", l.ID, l.Code, l.Error, l.NotSent)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onceEach(t, ids)
	if s.conns != 3 {
		t.Errorf("%d connections, want 3 (one per worker)", s.conns)
	}
	if sum.Config.Pipeline != 8 || sum.Config.Workers != 3 {
		t.Errorf("config pipeline %d workers %d, want 8 and 3", sum.Config.Pipeline, sum.Config.Workers)
	}
	if sum.Burst == nil || sum.Burst.Requests != 24 {
		t.Errorf("burst %+v, want the first 24 requests (3 connections x 8)", sum.Burst)
	}
}

// TestPipelineEndsMidway: a response that ends the connection (Connection:
// close, or a reset after it) leaves the requests written after it on
// that connection recorded sent without a response (code 0, the reason in
// the error), never written again; the next chunk takes a new connection.
func TestPipelineEndsMidway(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(k int) (string, bool, bool)
		want   string // in the error of the requests after the third
	}{
		{"connection close", func(k int) (string, bool, bool) {
			if k == 2 {
				return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", true, false
			}
			return pipeOK, false, false
		}, "Connection: close"},
		{"reset", func(k int) (string, bool, bool) { return pipeOK, false, k == 2 }, "connection reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startPipeServer(t, 8, tc.answer)
			ids := IDs(64, "p")
			_, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{Name: "a", URL: s.url()}}, IDs: ids,
				Concurrency: 2, Pipeline: 8, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]evidence.Request{}
			for _, l := range lines {
				byID[l.ID] = l
			}
			for k, id := range ids {
				l, ok := byID[id]
				switch {
				case !ok:
					t.Errorf("%s: no line", id)
				case l.NotSent:
					t.Errorf("%s: not_sent, but the server read it", id)
				case k%8 < 3 && tc.name == "reset" && l.Code != 200 && !strings.Contains(l.Error, tc.want):
					// The reset may overtake responses the client has not read yet.
					t.Errorf("%s: code %d error %q, want 200 or the reset", id, l.Code, l.Error)
				case k%8 < 3 && tc.name != "reset" && (l.Code != 200 || l.Error != ""):
					t.Errorf("%s: code %d error %q, want 200", id, l.Code, l.Error)
				case k%8 >= 3 && (l.Code != 0 || !strings.Contains(l.Error, tc.want)) && !(tc.name == "reset" && strings.Contains(l.Error, "EOF")):
					t.Errorf("%s: code %d error %q, want code 0 and %q", id, l.Code, l.Error, tc.want)
				}
				if strings.Contains(l.Error, "written") {
					t.Errorf("%s: %s", id, l.Error)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.onceEach(t, ids)
			if s.conns != 8 {
				t.Errorf("%d connections, want 8 (one per chunk of 8: each ended midway)", s.conns)
			}
		})
	}
}

// TestPipelineRefused: a target that refuses connections leaves every ID
// of the chunk not sent.
func TestPipelineRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ids := IDs(20, "p")
	_, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{Name: "a", URL: "http://" + addr}}, IDs: ids,
		Concurrency: 2, Pipeline: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(ids) {
		t.Fatalf("%d lines, want %d", len(lines), len(ids))
	}
	for _, l := range lines {
		if !l.NotSent || l.Code != 0 || !strings.Contains(l.Error, "refused") {
			t.Errorf("%s: not_sent %v code %d error %q, want not sent, refused", l.ID, l.NotSent, l.Code, l.Error)
		}
	}
}

// TestPipelineInvalid: the options pipelining cannot honour are refused.
func TestPipelineInvalid(t *testing.T) {
	one := []Target{{Name: "a", URL: "http://127.0.0.1:1"}}
	two := []Target{{Name: "a", URL: "http://127.0.0.1:1"}, {Name: "b", URL: "http://127.0.0.1:2"}}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Targets: one, IDs: IDs(4, "p"), Pipeline: -1}, "pipeline -1: want 0 .. 1024"},
		{Options{Targets: one, IDs: IDs(4, "p"), Pipeline: MaxPipeline + 1}, "pipeline 1025"},
		{Options{Targets: one, IDs: IDs(4, "p"), Pipeline: 4, Rate: vegeta.Rate{Freq: 10, Per: time.Second}}, "not with a rate"},
		{Options{Targets: one, IDs: IDs(4, "p"), Pipeline: 4, DisableKeepAlives: true}, "needs keep-alive"},
		{Options{Targets: one, IDs: IDs(4, "p"), Pipeline: 4, Protocol: ProtoH2C}, "HTTP/1.1 pipelining"},
		{Options{Targets: two, IDs: IDs(4, "p"), Pipeline: 4}, "to one target"},
		{Options{Targets: one, IDs: IDs(4, "p"), Pipeline: 4, Header: http.Header{"Connection": {"keep-alive, Close"}}}, "not with a Connection: close header"},
	} {
		_, err := Run(context.Background(), tc.opts, evidence.NewWriter(&strings.Builder{}))
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrInvalidOptions with %q", tc.opts.Pipeline, err, tc.want)
		}
	}
	// Pipeline 1 is one request at a time: allowed with anything.
	if _, err := prepare(Options{Targets: two, IDs: IDs(4, "p"), Pipeline: 1, Rate: vegeta.Rate{Freq: 10, Per: time.Second}}); err != nil {
		t.Errorf("pipeline 1: %v", err)
	}
}
