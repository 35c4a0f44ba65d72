package attack

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// endingServer answers requests with 200 and ends its connections in the
// ways a server may while the client keeps them parked: every third
// connection answers its second request with "Connection: close" and
// closes; every third (offset 1) sends an unsolicited 408 right after its
// second response and closes; the others close silently after their
// second response. It counts the IDs it received.
type endingServer struct {
	mu    sync.Mutex
	seen  map[string]int
	conns int
}

func (s *endingServer) handle(c net.Conn) {
	s.mu.Lock()
	s.conns++
	kind := s.conns % 3
	s.mu.Unlock()
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		s.mu.Lock()
		s.seen[req.Header.Get(evidence.IDHeader)]++
		s.mu.Unlock()
		resp := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
		if n < 2 {
			io.WriteString(c, resp)
			continue
		}
		switch kind {
		case 0:
			io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
		case 1:
			io.WriteString(c, resp+"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		default:
			io.WriteString(c, resp)
		}
		return
	}
}

// TestDirectSendsConnectionsEnd: a paced keep-alive attack sends directly
// on parked connections; when the server ends them (a close announced, an
// unsolicited 408, a silent close), every ID still leaves at most once, the
// 408 is never taken for a response, and the attack finishes.
func TestDirectSendsConnectionsEnd(t *testing.T) {
	s := &endingServer{seen: map[string]int{}}
	host := serveRaw(t, s.handle)
	const n = 120
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(n, "d"), Targets: []Target{{URL: "http://" + host}},
		Rate: vegeta.Rate{Freq: 1000, Per: time.Second}})
	if err != nil || !sum.Complete || len(lines) != n || sum.Resent != 0 {
		t.Fatalf("err %v summary %+v, %d lines", err, sum, len(lines))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := 0
	for _, l := range lines {
		switch {
		case s.seen[l.ID] > 1:
			t.Errorf("%s received %d times", l.ID, s.seen[l.ID])
		case l.Code == 408:
			t.Errorf("%s: the unsolicited 408 was taken for its response", l.ID)
		case l.Code == 200:
			ok++
			if s.seen[l.ID] != 1 {
				t.Errorf("%s: 200 but the server never received it", l.ID)
			}
		case l.Code != 0:
			t.Errorf("%s: code %d", l.ID, l.Code)
		}
	}
	pc := sum.Pacing
	// Connections end after two requests: the parked ones carry some, job
	// workers on fresh connections the rest.
	if pc == nil || pc.DirectSends == 0 || pc.DirectSends > n || s.conns <= pc.WarmConnections {
		t.Fatalf("pacing %+v, %d connections", pc, s.conns)
	}
	// A connection the server closed silently can still be picked before
	// its close is seen (code 0, at most once); most IDs are answered.
	if ok < n/2 {
		t.Fatalf("only %d of %d answered 200", ok, n)
	}
}

// TestDirectSendsKeepAlive: against a keep-alive server every paced ID is
// written by the scheduler on a parked connection (DirectSends), each once,
// on no more connections than were warmed.
func TestDirectSendsKeepAlive(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	srv := newLocalServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
	}))
	const n = 200
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(n, "k"), Targets: []Target{{URL: srv}},
		Rate: vegeta.Rate{Freq: 2000, Per: time.Second}})
	if err != nil || !sum.Complete || len(lines) != n {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	pc := sum.Pacing
	if pc == nil || pc.DirectSends < n/2 || pc.WarmConnections == 0 {
		t.Fatalf("pacing %+v", pc)
	}
	conns := map[string]bool{}
	for _, l := range lines {
		if l.Code != 200 || !strings.HasPrefix(l.Conn, "127.0.0.1:") {
			t.Fatalf("line %+v", l)
		}
		conns[l.Conn] = true
	}
	mu.Lock()
	defer mu.Unlock()
	if pc.DirectSends == n && len(remotes) > pc.WarmConnections {
		t.Fatalf("%d server-side connections for %d warmed, all sends direct", len(remotes), pc.WarmConnections)
	}
	if len(conns) != len(remotes) {
		t.Fatalf("lines name %d connections, the server saw %d", len(conns), len(remotes))
	}
}

func newLocalServer(t *testing.T, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return fmt.Sprintf("http://%s", ln.Addr())
}
