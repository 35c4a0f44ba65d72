//go:build linux

package attack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rlbench/rlbench/evidence"
)

// localAddr matches the client's address in a *net.OpError's text ("read
// tcp 127.0.0.1:50412->127.0.0.1:8080: ..."), which differs between runs.
var localAddr = regexp.MustCompile(`[0-9a-f.:\[\]]+:\d+->`)

// serverAddr matches a test server's address (TestEvloopInterrupt starts
// one per run).
var serverAddr = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// engineRun is one Run's summary and its lines, by ID, without what differs
// between two runs (times, connection names, the client's port).
type engineRun struct {
	sum   *evidence.AttackSummary
	lines map[string]string
}

// runEngine runs opts once on the goroutine engine or on event loops
// (evloop), checking that the engine asked for ran the flow.
func runEngine(t *testing.T, ctx context.Context, opts Options, evloop bool) engineRun {
	t.Helper()
	if forceGoroutines {
		t.Skip("RLBENCH_ENGINE=goroutines runs every flow on goroutines")
	}
	opts.Engine = EngineGoroutines
	if evloop {
		opts.Engine = EngineAuto
	}
	before := evloopFlows.Load()
	sum, err, lines := runToLines(t, ctx, opts)
	if err != nil {
		t.Fatalf("evloop %v: %v", evloop, err)
	}
	if ran := evloopFlows.Load() != before; ran != evloop {
		t.Fatalf("asked for evloop %v, ran on the event loop: %v", evloop, ran)
	}
	if rec := sum.Config.Engine == evidence.EngineEventLoop; len(sum.Flows) == 0 && rec != evloop {
		t.Fatalf("asked for evloop %v, attack.json config.engine %q", evloop, sum.Config.Engine)
	}
	out := engineRun{sum: sum, lines: map[string]string{}}
	for _, l := range lines {
		if l.SentNs == 0 && !l.NotSent || l.LatencyNs < 0 {
			t.Errorf("evloop %v: %s: sent_ns %d latency_ns %d", evloop, l.ID, l.SentNs, l.LatencyNs)
		}
		l.SentNs, l.LatencyNs, l.Conn = 0, 0, ""
		if l.Code == 0 {
			// The goroutine engine keeps the body prefix of a response
			// cut short when it read the head on the fast path (finish:
			// setBody before the error) but not on net/http's (readBody
			// returns first), which its burst's first requests take
			// (startUnpaced): the event loop keeps it always.
			l.Body = ""
		}
		l.Error = localAddr.ReplaceAllString(l.Error, "CLIENT->")
		b, _ := json.Marshal(l)
		if _, dup := out.lines[l.ID]; dup {
			t.Errorf("evloop %v: %s recorded twice", evloop, l.ID)
		}
		out.lines[l.ID] = string(b)
	}
	return out
}

// sameRuns fails unless the two runs recorded the same lines (apart from
// times) and the same summary counts; it returns the lines' errors by ID.
func sameRuns(t *testing.T, g, l engineRun) {
	t.Helper()
	ids := make([]string, 0, len(g.lines))
	for id := range g.lines {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(g.lines) != len(l.lines) {
		t.Errorf("goroutine engine %d lines, event loop %d", len(g.lines), len(l.lines))
	}
	bad := 0
	for _, id := range ids {
		if g.lines[id] != l.lines[id] && bad < 5 {
			bad++
			t.Errorf("%s:\n goroutine %s\n evloop    %s", id, g.lines[id], l.lines[id])
		}
	}
	gs, ls := g.sum, l.sum
	if gs.Sent != ls.Sent || gs.Recorded != ls.Recorded || gs.NotSent != ls.NotSent || gs.Complete != ls.Complete ||
		gs.Interrupted != ls.Interrupted || fmt.Sprint(gs.CodesByTarget) != fmt.Sprint(ls.CodesByTarget) ||
		localAddr.ReplaceAllString(gs.Error, "") != localAddr.ReplaceAllString(ls.Error, "") {
		t.Errorf("summaries differ:\n goroutine sent %d recorded %d not sent %d complete %v interrupted %v codes %v error %q\n evloop    sent %d recorded %d not sent %d complete %v interrupted %v codes %v error %q",
			gs.Sent, gs.Recorded, gs.NotSent, gs.Complete, gs.Interrupted, gs.CodesByTarget, gs.Error,
			ls.Sent, ls.Recorded, ls.NotSent, ls.Complete, ls.Interrupted, ls.CodesByTarget, ls.Error)
	}
}

// TestEvloopSameLines: the event loop records the same lines as the
// goroutine engine (apart from times and connection names) against the same
// servers: 200s and 429s with captured headers and bodies, a server that
// closes after each response, chunked responses (net/http's parser, fed
// again as bytes arrive), HEAD, 8 MB request and response bodies, a closed
// port.
func TestEvloopSameLines(t *testing.T) {
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(evidence.IDHeader)
		w.Header().Set("X-Ratelimit-Remaining", fmt.Sprint(len(id)))
		if id[len(id)-1]%2 == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, "limited %s\n", id)
			return
		}
		fmt.Fprintf(w, "ok %s\n", id)
	}))
	defer limited.Close()
	closing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprintf(w, "bye %s\n", r.Header.Get(evidence.IDHeader))
	}))
	defer closing.Close()
	chunked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "first %s\n", r.Header.Get(evidence.IDHeader))
		w.(http.Flusher).Flush()
		fmt.Fprint(w, strings.Repeat("x", 3000))
	}))
	defer chunked.Close()
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%s read %d %v\n", r.Header.Get(evidence.IDHeader), n, err)
	}))
	defer sink.Close()
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(8<<20))
		fmt.Fprintf(w, "%-20s", r.Header.Get(evidence.IDHeader))
		w.Write(bytes.Repeat([]byte("z"), 8<<20-20))
	}))
	defer big.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"limited", Options{IDs: IDs(300, "l"), Targets: []Target{{Name: "lim", URL: limited.URL}}, Concurrency: 7}},
		{"closing", Options{IDs: IDs(60, "c"), Targets: []Target{{Name: "cl", URL: closing.URL}}, Concurrency: 5}},
		{"chunked", Options{IDs: IDs(40, "k"), Targets: []Target{{Name: "ch", URL: chunked.URL}}, Concurrency: 3, BodyPrefix: 20}},
		{"head", Options{IDs: IDs(20, "h"), Targets: []Target{{Name: "hd", URL: limited.URL}}, Method: "HEAD", Concurrency: 3}},
		// Bodies larger than the socket buffers: short writes, EPOLLOUT.
		{"bigpost", Options{IDs: IDs(8, "p"), Targets: []Target{{Name: "bp", URL: sink.URL}}, Method: "POST", Body: bytes.Repeat([]byte("b"), 8<<20), Concurrency: 2}},
		// 8 MB responses: read in many parts, the body past its prefix dropped.
		{"bigbody", Options{IDs: IDs(6, "g"), Targets: []Target{{Name: "bg", URL: big.URL}}, Concurrency: 2}},
		{"refused", Options{IDs: IDs(6, "r"), Targets: []Target{{Name: "rf", URL: refused}}, Concurrency: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := runEngine(t, context.Background(), tc.opts, false)
			l := runEngine(t, context.Background(), tc.opts, true)
			if len(g.lines) != len(tc.opts.IDs) {
				t.Fatalf("%d lines for %d IDs", len(g.lines), len(tc.opts.IDs))
			}
			sameRuns(t, g, l)
		})
	}
}

// TestEvloopHandOff: responses that net/http frames and that outgrow the
// loop's buffer (evHandOffBytes) are read by a goroutine: a 2 MB chunked
// body, a 1 MB body ended by the close and a chunked body that stalls past
// the timeout give the same lines on both engines, and the hand-off ran.
func TestEvloopHandOff(t *testing.T) {
	chunked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%-20s", r.Header.Get(evidence.IDHeader))
		for range 32 {
			w.Write(bytes.Repeat([]byte("c"), 64<<10))
			w.(http.Flusher).Flush()
		}
	}))
	defer chunked.Close()
	stall := make(chan struct{})
	stalling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("s"), 256<<10))
		w.(http.Flusher).Flush()
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	defer stalling.Close()
	defer close(stall)
	closeDelimited := "http://" + serveRaw(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n%-20s", req.Header.Get(evidence.IDHeader))
		c.Write(bytes.Repeat([]byte("e"), 1<<20))
	})
	for _, tc := range []struct {
		name string
		opts Options
		// handOff: the hand-off must run (the stalled bodies may time out
		// before 64 KB of them arrive on a loaded machine)
		handOff bool
	}{
		{"chunked", Options{IDs: IDs(12, "k"), Targets: []Target{{Name: "ch", URL: chunked.URL}}, Concurrency: 3, BodyPrefix: 20}, true},
		{"close-delimited", Options{IDs: IDs(12, "e"), Targets: []Target{{Name: "cd", URL: closeDelimited}}, Concurrency: 3, BodyPrefix: 20}, true},
		{"stall", Options{IDs: IDs(4, "s"), Targets: []Target{{Name: "st", URL: stalling.URL}}, Concurrency: 2, Timeout: 500 * time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := runEngine(t, context.Background(), tc.opts, false)
			before := evloopHandOffs.Load()
			l := runEngine(t, context.Background(), tc.opts, true)
			if tc.handOff && evloopHandOffs.Load() == before {
				t.Error("no response was handed off")
			}
			if len(l.lines) != len(tc.opts.IDs) {
				t.Fatalf("%d lines for %d IDs", len(l.lines), len(tc.opts.IDs))
			}
			sameRuns(t, g, l)
		})
	}
}

// resetServer answers every request with a head promising 100 bytes, 10 of
// them, then resets the connection (SO_LINGER 0).
func resetServer(t *testing.T) string {
	return "http://" + serveRaw(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"))
		c.(*net.TCPConn).SetLinger(0)
	})
}

// TestEvloopResetMidResponse: a response cut by a reset is recorded with
// the same error by both engines.
func TestEvloopResetMidResponse(t *testing.T) {
	opts := Options{IDs: IDs(20, "x"), Targets: []Target{{Name: "rs", URL: resetServer(t)}}, Concurrency: 4}
	g := runEngine(t, context.Background(), opts, false)
	l := runEngine(t, context.Background(), opts, true)
	sameRuns(t, g, l)
	for id, line := range l.lines {
		if !strings.Contains(line, `"code":0`) || !strings.Contains(line, "connection reset by peer") && !strings.Contains(line, "unexpected EOF") {
			t.Errorf("%s: %s", id, line)
		}
	}
}

// TestEvloopTimeout: requests the server never answers time out with the
// goroutine engine's error; the others are answered.
func TestEvloopTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(evidence.IDHeader)
		if strings.HasSuffix(id, "3") {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprintf(w, "ok %s\n", id)
	}))
	defer srv.Close()
	defer close(release)
	opts := Options{IDs: IDs(30, "t"), Targets: []Target{{Name: "to", URL: srv.URL}}, Concurrency: 4, Timeout: 200 * time.Millisecond}
	g := runEngine(t, context.Background(), opts, false)
	l := runEngine(t, context.Background(), opts, true)
	sameRuns(t, g, l)
	timedOut := 0
	for _, line := range l.lines {
		if strings.Contains(line, `timeout after 200ms (read tcp CLIENT-\u003e`) {
			timedOut++
		}
	}
	if timedOut != 3 {
		t.Errorf("%d timed out, want 3", timedOut)
	}
}

// TestEvloopInterrupt: an interrupted attack whose requests are all in
// flight ends them, after InterruptGrace, with the goroutine engine's
// "aborted" error, and takes no further IDs.
func TestEvloopInterrupt(t *testing.T) {
	const conc = 5
	run := func(evloop bool) engineRun {
		var count atomic.Int32
		all := make(chan struct{})
		release := make(chan struct{})
		var once sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if count.Add(1) == conc {
				close(all)
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer once.Do(func() { close(release) })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-all
			cancel()
		}()
		return runEngine(t, ctx, Options{IDs: IDs(50, "i"), Targets: []Target{{Name: "t", URL: srv.URL}}, Concurrency: conc,
			Timeout: time.Minute, InterruptGrace: 50 * time.Millisecond}, evloop)
	}
	g, l := run(false), run(true)
	for _, r := range []engineRun{g, l} {
		for id, line := range r.lines {
			r.lines[id] = serverAddr.ReplaceAllString(line, "SERVER")
		}
	}
	sameRuns(t, g, l)
	if !l.sum.Interrupted || l.sum.Sent != conc || len(l.lines) != conc {
		t.Fatalf("evloop: interrupted %v sent %d lines %d", l.sum.Interrupted, l.sum.Sent, len(l.lines))
	}
	for id, line := range l.lines {
		if !strings.Contains(line, "aborted: the attack was interrupted and its interrupt grace ended") {
			t.Errorf("%s: %s", id, line)
		}
	}
}

// TestMain runs the suite with every flow on goroutines when
// RLBENCH_ENGINE=goroutines (forceGoroutines): the whole suite checks the
// goroutine engine then, as it checks the event loops by default.
func TestMain(m *testing.M) {
	forceGoroutines = os.Getenv("RLBENCH_ENGINE") == EngineGoroutines
	os.Exit(m.Run())
}

// keepCloser is a loopback HTTP/1.1 server whose keep-alive connections the
// test closes: it counts every request it reads by ID and by connection, and
// the hooks (Options.testReuse, testIdle) close the server's end of a
// client's connection, found by the client's local address.
type keepCloser struct {
	addr  string
	mu    sync.Mutex
	conns map[string]net.Conn // by the client's address
	seen  map[string]int      // requests read, by ID
	// on: by ID, the client address of the connection it arrived on and
	// how many requests that connection had carried before it.
	on  map[string]arrival
	per map[string]int // requests read, by client address
	// closed: by ID, the client address of the connection a hook closed
	// before that ID was written.
	closed map[string]string
	// kill reports whether the server closes the connection after reading
	// ID id's request, without answering.
	kill func(id string) bool
}

type arrival struct {
	conn  string
	prior int
}

func newKeepCloser(t *testing.T, kill func(id string) bool) *keepCloser {
	s := &keepCloser{conns: map[string]net.Conn{}, seen: map[string]int{}, on: map[string]arrival{}, per: map[string]int{}, closed: map[string]string{}, kill: kill}
	s.addr = serveRaw(t, func(c net.Conn) {
		ca := c.RemoteAddr().String()
		s.mu.Lock()
		s.conns[ca] = c
		s.mu.Unlock()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			id := req.Header.Get(evidence.IDHeader)
			s.mu.Lock()
			s.seen[id]++
			s.on[id] = arrival{ca, s.per[ca]}
			s.per[ca]++
			s.mu.Unlock()
			if s.kill(id) {
				return // serveRaw closes it: the request was read, not answered
			}
			body := "ok " + id + "\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	})
	return s
}

// How keepCloser.end ends a kept-alive connection.
const (
	endReset = iota // close it, abortive (SO_LINGER 0): a RST
	endClose        // close it silently: a FIN, no response
	endWrite        // write an unsolicited 408 on it, leave it open
)

// end ends the server's side of the client's connection fd before ID id
// goes on it (how) and returns once the client's socket has it: readable
// (the FIN, the 408) or in error (the RST), waited for with poll(2), no
// timer.
func (s *keepCloser) end(t *testing.T, id string, fd uintptr, how int) {
	ca := sockLocalAddr(int(fd)).String()
	s.mu.Lock()
	sc := s.conns[ca]
	s.closed[id] = ca
	s.mu.Unlock()
	if sc == nil {
		t.Errorf("%s: the server has no connection from %s", id, ca)
		return
	}
	switch how {
	case endReset:
		sc.(*net.TCPConn).SetLinger(0)
		sc.Close()
	case endClose:
		sc.Close()
	case endWrite:
		io.WriteString(sc, "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
	for {
		if _, err := unix.Poll(pfd, -1); err != unix.EINTR {
			if err != nil {
				t.Errorf("%s: poll: %v", id, err)
			}
			return
		}
	}
}

// TestEvloopResendsUnsentWrite: a write on a reused connection that puts not
// one byte on the wire (the server reset the idle keep-alive connection just
// before it: the write fails with ECONNRESET) sends the ID on a freshly
// dialled connection (the goroutine engine's worker.do: on another from
// its pool, fresh when it has no other); a request whose write went out and
// whose connection then ended is never sent again (at most once). Against a
// server that resets the connection before every ID n%3 == 1 is written
// (after the liveness check: Options.testReuse) and closes the connection
// without answering after reading every ID n%3 == 2, on both engines: every
// ID reaches the server exactly once; each reset ID arrives on a connection
// other than the one reset, as its first request on the event loop (and at
// concurrency 1 on both), and is answered (200,
// sent, no error); each unanswered ID is recorded sent, code 0, with an
// error; the lines agree between the engines.
func TestEvloopResendsUnsentWrite(t *testing.T) {
	ids := IDs(30, "rs")
	pos := map[string]int{}
	for i, id := range ids {
		pos[id] = i
	}
	idx := func(id string) int { return pos[id] }
	for _, conc := range []int{1, 3} {
		t.Run(fmt.Sprint("concurrency-", conc), func(t *testing.T) {
			var runs []engineRun
			for _, evloop := range []bool{false, true} {
				s := newKeepCloser(t, func(id string) bool { return idx(id)%3 == 2 })
				opts := Options{IDs: ids, Targets: []Target{{Name: "kc", URL: "http://" + s.addr}}, Concurrency: conc,
					testReuse: func(i int, fd uintptr) {
						if i%3 == 1 {
							s.end(t, ids[i], fd, endReset)
						}
					}}
				r := runEngine(t, context.Background(), opts, evloop)
				runs = append(runs, r)
				s.mu.Lock()
				for _, id := range ids {
					if s.seen[id] != 1 {
						t.Errorf("evloop %v: %s received %d times", evloop, id, s.seen[id])
					}
				}
				for id, ca := range s.closed {
					if got := s.on[id]; got.conn == ca || got.prior != 0 && (evloop || conc == 1) {
						t.Errorf("evloop %v: %s: its connection %s was reset before its write, it arrived on %s after %d requests (want a fresh connection)", evloop, id, ca, got.conn, got.prior)
					}
				}
				reset := len(s.closed)
				s.mu.Unlock()
				// Concurrency 1: the connection of every ID n%3 == 0
				// carries the next one, which the hook resets.
				if conc == 1 && reset != len(ids)/3 || reset == 0 {
					t.Errorf("evloop %v: %d connections reset before a write, want %d", evloop, reset, len(ids)/3)
				}
				if r.sum.Resent != 0 || r.sum.NotSent != 0 {
					t.Errorf("evloop %v: resent %d not sent %d", evloop, r.sum.Resent, r.sum.NotSent)
				}
				for _, id := range ids {
					var l evidence.Request
					if err := json.Unmarshal([]byte(r.lines[id]), &l); err != nil {
						t.Fatalf("%s: %v", id, err)
					}
					if idx(id)%3 == 2 {
						if l.Code != 0 || l.Error == "" || l.NotSent {
							t.Errorf("evloop %v: %s (not answered): code %d error %q not sent %v", evloop, id, l.Code, l.Error, l.NotSent)
						}
					} else if l.Code != 200 || l.Error != "" || l.NotSent {
						t.Errorf("evloop %v: %s: code %d error %q not sent %v", evloop, id, l.Code, l.Error, l.NotSent)
					}
				}
			}
			for _, r := range runs {
				for id, line := range r.lines {
					r.lines[id] = serverAddr.ReplaceAllString(line, "SERVER")
				}
			}
			sameRuns(t, runs[0], runs[1])
		})
	}
}

// TestEvloopIdleLiveness: a connection idle for staleAfter is peeked before
// it is reused (hconn.liveAt, the event loop's drain), so that a request is
// not written into a connection the server ended. A server ends the
// connection of every ID n%4 == 1 while it is idle (a FIN, no response)
// and writes an unsolicited 408 on that of every ID n%4 == 3 (then leaves
// it open), both before the client's liveness check (Options.testIdle),
// which runs after the connection was idle for at least staleAfter; on both
// engines every ID is answered 200 once, each such ID on another
// connection (a fresh one on the event loop, and at concurrency 1 on both),
// and the lines agree: no request met an "unexpected EOF", a
// reset or the 408 (the event loop is not worse than the goroutine engine).
func TestEvloopIdleLiveness(t *testing.T) {
	ids := IDs(40, "lv")
	for _, conc := range []int{1, 3} {
		t.Run(fmt.Sprint("concurrency-", conc), func(t *testing.T) {
			var runs []engineRun
			bad := map[bool]int{}
			for _, evloop := range []bool{false, true} {
				s := newKeepCloser(t, func(string) bool { return false })
				opts := Options{IDs: ids, Targets: []Target{{Name: "kc", URL: "http://" + s.addr}}, Concurrency: conc,
					testIdle: func(i int, fd uintptr) {
						switch i % 4 {
						case 1:
							s.end(t, ids[i], fd, endClose)
						case 3:
							s.end(t, ids[i], fd, endWrite)
						default:
							return
						}
						// Requests spaced by more than staleAfter: the
						// connection stays idle at least that long (the
						// condition of the peek, not a synchronisation:
						// the server's end was awaited above).
						time.Sleep(staleAfter)
					}}
				r := runEngine(t, context.Background(), opts, evloop)
				runs = append(runs, r)
				s.mu.Lock()
				for _, id := range ids {
					if s.seen[id] != 1 {
						t.Errorf("evloop %v: %s received %d times", evloop, id, s.seen[id])
					}
				}
				for id, ca := range s.closed {
					if got := s.on[id]; got.conn == ca || got.prior != 0 && (evloop || conc == 1) {
						t.Errorf("evloop %v: %s: its idle connection %s was ended, it arrived on %s after %d requests (want a fresh connection)", evloop, id, ca, got.conn, got.prior)
					}
				}
				ended := len(s.closed)
				s.mu.Unlock()
				if conc == 1 && ended != len(ids)/2 || ended == 0 {
					t.Errorf("evloop %v: %d idle connections ended, want %d", evloop, ended, len(ids)/2)
				}
				for _, id := range ids {
					var l evidence.Request
					if err := json.Unmarshal([]byte(r.lines[id]), &l); err != nil {
						t.Fatalf("%s: %v", id, err)
					}
					if l.Code != 200 || l.Error != "" || l.NotSent {
						bad[evloop]++
						t.Errorf("evloop %v: %s: code %d error %q not sent %v", evloop, id, l.Code, l.Error, l.NotSent)
					}
				}
			}
			if bad[true] > bad[false] {
				t.Errorf("the event loop recorded %d requests that met an ended connection, the goroutine engine %d", bad[true], bad[false])
			}
			for _, r := range runs {
				for id, line := range r.lines {
					r.lines[id] = serverAddr.ReplaceAllString(line, "SERVER")
				}
			}
			sameRuns(t, runs[0], runs[1])
		})
	}
}

// TestEvloopSpareP: with 1, 2 and 4 Ps the loops (one per P, with one P
// more while they run: holdSpareP) send every ID to the server once, each
// line answered by its own response, and GOMAXPROCS is restored after the
// attack.
func TestEvloopSpareP(t *testing.T) {
	if forceGoroutines {
		t.Skip("RLBENCH_ENGINE=goroutines runs every flow on goroutines")
	}
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(procs, "procs"), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			s, url := newRawIDServer(t, answer(true, func(id string) string { return okResp(id, "") }))
			ids := IDs(300, fmt.Sprint("sp", procs, "-"))
			opts := Options{IDs: ids, Targets: []Target{{URL: url}}, Concurrency: 24,
				CaptureHeaders: []string{echoHeader}, Timeout: answerTimeout}
			before := evloopFlows.Load()
			sum, err, lines := runGuarded(t, opts, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if evloopFlows.Load() == before {
				t.Fatal("the flow did not run on the event loops")
			}
			if codes := checkLines(t, ids, sum, lines, s); codes[200] != len(ids) {
				t.Errorf("codes %v, want 300 200s", codes)
			}
			if got := runtime.GOMAXPROCS(0); got != procs {
				t.Errorf("GOMAXPROCS %d after the attack, want %d", got, procs)
			}
		})
	}
}
