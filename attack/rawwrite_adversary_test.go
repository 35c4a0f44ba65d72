package attack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
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

// lineWatcher is an evidence sink that counts the lines whose URL ends
// with suffix and closes reached once want of them were written.
type lineWatcher struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	suffix  string
	want, n int
	reached chan struct{}
}

func (lw *lineWatcher) Write(b []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.buf.Write(b)
	for _, line := range bytes.Split(b, []byte("\n")) {
		var r evidence.Request
		if json.Unmarshal(line, &r) == nil && strings.HasSuffix(r.URL, lw.suffix) {
			if lw.n++; lw.n == lw.want {
				close(lw.reached)
			}
		}
	}
	return len(b), nil
}

// TestBurstWakesBeforeLongWrite: a burst sender whose share holds a
// request longer than the socket can take at once (a body the server reads
// only later) writes every other request of its share, and wakes their
// workers, before it waits on that write: their responses are read and
// recorded meanwhile, not after the long write (which would add its wait to
// their sends and latencies, and here would never end: the server reads the
// long bodies only once the short requests' lines are written). The burst
// is [short, long, short, long, ...] or [long, short, ...] (ID k is
// template k mod 2), 2×GOMAXPROCS requests: one claim of a sender
// (burstChunk) or several, whichever senders run first.
func TestBurstWakesBeforeLongWrite(t *testing.T) {
	for _, longFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("long first ", longFirst), func(t *testing.T) { burstWakesBeforeLongWrite(t, longFirst) })
	}
}

func burstWakesBeforeLongWrite(t *testing.T, longFirst bool) {
	p := runtime.GOMAXPROCS(0)
	n := 2 * p
	big := bytes.Repeat([]byte("x"), 8<<20) // twice tcp_wmem's largest, beyond a receive buffer not read
	lw := &lineWatcher{suffix: "/short", want: p, reached: make(chan struct{})}
	var stuck atomic.Bool
	s, url := newRawIDServer(t, func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
		if req.URL.Path == "/long" {
			select {
			case <-lw.reached:
			case <-time.After(10 * time.Second): // a guard against the hang, not a synchronisation
				stuck.Store(true)
			}
		}
		drain(req)
		io.WriteString(c, okResp(id, ""))
		return true
	})
	templates := []RequestTemplate{{Path: "/short"}, {Method: http.MethodPost, Path: "/long", Body: big}}
	if longFirst {
		templates[0], templates[1] = templates[1], templates[0]
	}
	opts := Options{Targets: []Target{{URL: url}}, CaptureHeaders: []string{echoHeader}, Timeout: time.Minute,
		Flows: []Flow{{Name: "f", IDs: IDs(n, "wk"), Requests: templates}}}
	w := evidence.NewSyncWriter(lw)
	sum, err := Run(context.Background(), opts, w)
	if cerr := w.Close(); err != nil || cerr != nil {
		t.Fatalf("run: %v, %v", err, cerr)
	}
	var lines []evidence.Request
	if err := evidence.ReadLines(&lw.buf, "requests.jsonl", func(_ int, r *evidence.Request) error {
		lines = append(lines, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if codes := checkLines(t, opts.Flows[0].IDs, sum, lines, s); codes[200] != n || sum.Burst == nil || sum.Burst.WarmConnections != n {
		t.Fatalf("codes %v burst %+v", codes, sum.Burst)
	}
	if stuck.Load() {
		t.Fatal("the short requests' workers were woken only after the long writes")
	}
}

// TestBurstLargeBodiesAborted: an attack aborted (interrupted, then its
// InterruptGrace over) while its burst senders wait on long bodies the
// server never reads: the attack ends at once. Every request began in the
// burst (its raw write took the head and part of the body before any
// sender waited), so each has one line as sent with an error, its head
// read once by the server and never resent; the errors name the abort,
// not a timeout. The interrupt comes once the server has read every
// request's head: then every sender has made all its raw writes and waits
// on the first of its rests, whichever sender ran first (an interrupt at
// the first GOMAXPROCS heads assumed every sender had started by then: on
// a loaded host one had not, and its requests were rightly not sent).
func TestBurstLargeBodiesAborted(t *testing.T) {
	p := runtime.GOMAXPROCS(0)
	n := 3 * p // each sender: three long writes, the first of its rests waits
	big := bytes.Repeat([]byte("y"), 8<<20)
	quit := make(chan struct{})
	defer close(quit)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var heads atomic.Int32
	s, url := newRawIDServer(t, func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
		if int(heads.Add(1)) == n {
			cancel() // every request began: each sender waits on its first rest
		}
		<-quit // never reads the body
		return false
	})
	opts := Options{IDs: IDs(n, "ab"), Targets: []Target{{URL: url}}, Method: http.MethodPost, Body: big,
		Timeout: time.Minute, InterruptGrace: 50 * time.Millisecond}
	began := time.Now()
	guard, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	go func() {
		<-guard.Done()
		cancel()
	}()
	sum, err, lines := runToLines(t, ctx, opts)
	if took := time.Since(began); err != nil || took > 20*time.Second || guard.Err() != nil {
		t.Fatalf("err %v, took %s", err, took)
	}
	if !sum.Interrupted || sum.Complete || sum.Resent != 0 || len(lines) != n {
		t.Fatalf("summary %+v, %d lines", sum, len(lines))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sent := 0
	for _, l := range lines {
		switch {
		case l.Code != 0 || l.Error == "":
			t.Errorf("%s: code %d error %q", l.ID, l.Code, l.Error)
		case l.NotSent:
			if s.seen[l.ID] != 0 {
				t.Errorf("%s: not sent, but the server read its head", l.ID)
			}
		default:
			sent++
			if s.seen[l.ID] != 1 {
				t.Errorf("%s: sent, the server read its head %d times", l.ID, s.seen[l.ID])
			}
		}
	}
	for _, l := range lines {
		// Not "timeout after 1m0s": the abort's deadline is not the timeout.
		if !strings.Contains(l.Error, "aborted: the attack was interrupted") || strings.Contains(l.Error, "timeout after") {
			t.Errorf("%s: error %q", l.ID, l.Error)
		}
	}
	if sent != n || sum.NotSent != 0 {
		t.Fatalf("%d sent, %d not sent (want %d, 0)", sent, sum.NotSent, n)
	}
}

// TestPacedBodiesWhole: a paced flow whose request templates have bodies
// from one byte to far more than a socket takes at once (job-worker sends:
// the raw write takes a part, the connection the rest), on two targets:
// every body reaches the server whole, in order and once, under its own
// ID and template.
func TestPacedBodiesWhole(t *testing.T) {
	bodies := [][]byte{[]byte("1"), bytes.Repeat([]byte("0123456789"), 600), make([]byte, 8<<20)}
	for i := range bodies[2] {
		bodies[2][i] = byte(i * 31 >> 3)
	}
	var mu sync.Mutex
	bad := map[string]string{}
	check := func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
		got, err := io.ReadAll(req.Body)
		k := 0
		fmt.Sscan(strings.TrimPrefix(req.URL.Path, "/b"), &k)
		if err != nil || k < 0 || k >= len(bodies) || !bytes.Equal(got, bodies[k]) {
			mu.Lock()
			bad[id] = fmt.Sprintf("path %s: %d bytes, %v", req.URL.Path, len(got), err)
			mu.Unlock()
		}
		io.WriteString(c, okResp(id, ""))
		return true
	}
	s1, url1 := newRawIDServer(t, check)
	s2, url2 := newRawIDServer(t, check)
	var tmpls []RequestTemplate
	for k, b := range bodies {
		tmpls = append(tmpls, RequestTemplate{Target: []string{"one", "two"}[k%2], Method: http.MethodPut, Path: fmt.Sprintf("/b%d", k), Body: b})
	}
	const n = 12
	opts := Options{Targets: []Target{{Name: "one", URL: url1}, {Name: "two", URL: url2}}, CaptureHeaders: []string{echoHeader}, Timeout: 20 * time.Second,
		Flows: []Flow{{Name: "bodies", IDs: IDs(n, "pb"), Rate: vegeta.Rate{Freq: 100, Per: time.Second}, Requests: tmpls}}}
	sum, err, lines := runGuarded(t, opts, time.Minute)
	if err != nil || !sum.Complete || sum.Pacing == nil || sum.Pacing.DirectSends != 0 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	checkLines(t, opts.Flows[0].IDs, sum, lines, nil)
	for _, l := range lines {
		if l.Code != 200 {
			t.Errorf("%s: code %d %s", l.ID, l.Code, l.Error)
		}
		s := s1
		if l.Target == "two" {
			s = s2
		}
		s.mu.Lock()
		if s.seen[l.ID] != 1 {
			t.Errorf("%s: received %d times by %s", l.ID, s.seen[l.ID], l.Target)
		}
		s.mu.Unlock()
	}
	for id, why := range bad {
		t.Errorf("%s: the body arrived altered: %s", id, why)
	}
}

// TestLongBodyReset: a server that reads each request's head and then
// resets the connection, its long body unread: every request, its raw
// write taken in part, is recorded once as sent and indeterminate (code 0,
// the reset as its error), never written again, in the burst and after it.
func TestLongBodyReset(t *testing.T) {
	s, url := newRawIDServer(t, func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
		c.(*net.TCPConn).SetLinger(0) // the close sends a RST
		return false
	})
	const n = 8
	for _, rate := range []int{0, 50} {
		opts := Options{IDs: IDs(n, fmt.Sprintf("rs%d", rate)), Targets: []Target{{URL: url}}, Method: http.MethodPost, Body: make([]byte, 8<<20),
			Concurrency: 2, Timeout: 10 * time.Second, Rate: vegeta.Rate{Freq: rate, Per: time.Second}}
		sum, err, lines := runGuarded(t, opts, time.Minute)
		if err != nil || sum.NotSent != 0 {
			t.Fatalf("rate %d: err %v summary %+v", rate, err, sum)
		}
		if codes := checkLines(t, opts.IDs, sum, lines, s); codes[0] != n {
			t.Fatalf("rate %d: codes %v", rate, codes)
		}
		s.mu.Lock()
		for _, l := range lines {
			if s.seen[l.ID] != 1 || l.NotSent || !strings.Contains(l.Error, "connection reset by peer") && !strings.Contains(l.Error, "broken pipe") {
				t.Errorf("rate %d: %s seen %d times, not sent %v, error %q", rate, l.ID, s.seen[l.ID], l.NotSent, l.Error)
			}
		}
		s.mu.Unlock()
		t.Logf("rate %d: %s: %s", rate, lines[0].ID, lines[0].Error)
	}
}

// TestBurstSendersShareClaims: a burst of many more requests than the
// senders claim at a time (burstChunk), with four senders: each ID is
// written once, on its own warm connection, after the release, whichever
// sender claimed it, and each is answered.
func TestBurstSendersShareClaims(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	n := 10*burstChunk + 3
	s, url := newRawIDServer(t, func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
		drain(req)
		io.WriteString(c, okResp(id, ""))
		return true
	})
	opts := Options{IDs: IDs(n, "sc"), Targets: []Target{{URL: url}}, CaptureHeaders: []string{echoHeader}, Timeout: time.Minute}
	sum, err, lines := runToLines(t, context.Background(), opts)
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if codes := checkLines(t, opts.IDs, sum, lines, s); codes[200] != n {
		t.Fatalf("codes %v", codes)
	}
	if b := sum.Burst; b == nil || b.Requests != n || b.WarmConnections != n || b.SendNs.N != n {
		t.Fatalf("burst %+v", sum.Burst)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns != n {
		t.Errorf("%d connections accepted, want %d (one warm connection per request)", s.conns, n)
	}
	for _, l := range lines {
		if l.SentNs < sum.Burst.ReleaseNs {
			t.Errorf("%s sent before the release", l.ID)
		}
	}
}
