package attack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
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
		peer[r.Header.Get(DefaultIDHeader)] = r.RemoteAddr
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
