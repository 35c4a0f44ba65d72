package attack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestRunRecordsConnections: every line names the connection that carried
// it, "<local addr>/<n>", and the local address is the peer the server saw;
// one worker on keep-alive reuses one connection, DisableKeepAlives gives
// every request its own.
func TestRunRecordsConnections(t *testing.T) {
	var mu sync.Mutex
	peer := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peer[r.Header.Get(evidence.IDHeader)] = r.RemoteAddr
		mu.Unlock()
	}))
	defer srv.Close()
	for _, c := range []struct {
		name      string
		noKeep    bool
		wantConns int
	}{{"keep-alive", false, 1}, {"no keep-alive", true, 5}} {
		t.Run(c.name, func(t *testing.T) {
			_, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(5, c.name), Targets: []Target{{Name: "t", URL: srv.URL}},
				Concurrency: 1, DisableKeepAlives: c.noKeep})
			if err != nil {
				t.Fatal(err)
			}
			conns := map[string]bool{}
			for _, l := range lines {
				addr, n, ok := strings.Cut(l.Conn, "/")
				mu.Lock()
				p := peer[l.ID]
				mu.Unlock()
				if !ok || n == "" || addr != p {
					t.Fatalf("%s: conn %q, the server saw %q", l.ID, l.Conn, p)
				}
				conns[l.Conn] = true
			}
			if len(lines) != 5 || len(conns) != c.wantConns {
				t.Fatalf("%d lines on %d connections %v, want %d", len(lines), len(conns), conns, c.wantConns)
			}
		})
	}
}

// TestRunH2RecordsConnections: over HTTP/2 a line names the connection its
// stream went on: as many distinct conns as connections the server saw,
// each a local address the server saw as a peer.
func TestRunH2RecordsConnections(t *testing.T) {
	h := newH2Recorder(t, false, 4, nil)
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(20, "c"), Targets: []Target{{URL: h.URL}}, Protocol: ProtoH2C})
	if err != nil || !sum.Complete || len(lines) != 20 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	conns := map[string]bool{}
	for _, l := range lines {
		addr, n, ok := strings.Cut(l.Conn, "/")
		if !ok || n == "" || !h.remotes[addr] {
			t.Fatalf("%s: conn %q, the server saw %v", l.ID, l.Conn, h.remotes)
		}
		conns[l.Conn] = true
	}
	if len(conns) != len(h.remotes) {
		t.Fatalf("%d conns %v, the server saw %d connections", len(conns), conns, len(h.remotes))
	}
}

// TestClosedLoopKeepsConnections: a closed-loop worker sending IDs split
// over two targets reuses one connection per target (the one it kept, or
// the other target's, put back in its pool when the next ID went
// elsewhere), every line naming a connection of its own target; every ID
// is recorded once.
func TestClosedLoopKeepsConnections(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	a := httptest.NewServer(h)
	defer a.Close()
	b := httptest.NewServer(h)
	defer b.Close()
	opts := Options{IDs: IDs(40, "k"), Targets: []Target{{Name: "a", URL: a.URL}, {Name: "b", URL: b.URL}},
		Split: Split{Mode: SplitEven}, Concurrency: 1}
	sum, err, lines := runToLines(t, context.Background(), opts)
	if err != nil || sum.Recorded != 40 || len(lines) != 40 {
		t.Fatalf("run: %v, recorded %d, %d lines", err, sum.Recorded, len(lines))
	}
	conns := map[string]map[string]bool{"a": {}, "b": {}}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.ID] || l.Code != 200 {
			t.Fatalf("line %+v (seen before: %v)", l, seen[l.ID])
		}
		seen[l.ID] = true
		conns[l.Target][l.Conn] = true
	}
	for tg, cs := range conns {
		if len(cs) != 1 {
			t.Errorf("target %s: connections %v, want one", tg, cs)
		}
	}
	for c := range conns["a"] {
		if conns["b"][c] {
			t.Errorf("connection %s carried requests of both targets", c)
		}
	}
}
