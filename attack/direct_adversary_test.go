package attack

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// Paced attacks (direct sends on parked connections, the job path, the
// fast response parser) against hostile or unusual servers. Every
// scenario checks the invariants of package doc "No replays": the attack
// returns before its guard context ends, every ID has exactly one line, no
// ID reaches the server twice, nothing was resent, and a line's code is
// the answer to its own request (the server echoes the ID in X-Echo and
// marks what it sends unasked "unsolicited").

// echoHeader carries, on every response of a rawIDServer, the ID of the
// request it answers.
const echoHeader = "X-Echo"

// rawIDServer is a raw TCP HTTP/1.1 server that reads requests with
// http.ReadRequest, counts the IDs it receives, and answers with respond:
// it writes whatever it likes on c (n is the request's number on its
// connection, from 1) and returns false to end the connection.
type rawIDServer struct {
	mu    sync.Mutex
	seen  map[string]int
	conns int
	// open and maxOpen: connections open now and at most at once.
	open, maxOpen int
}

type respondFunc func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool

func newRawIDServer(t *testing.T, respond respondFunc) (*rawIDServer, string) {
	return newRawIDServerUpTo(t, 0, respond)
}

// newRawIDServerUpTo is newRawIDServer closing at once every connection
// after the first upTo (0: none).
func newRawIDServerUpTo(t *testing.T, upTo int, respond respondFunc) (*rawIDServer, string) {
	s := &rawIDServer{seen: map[string]int{}}
	host := serveRaw(t, func(c net.Conn) {
		s.mu.Lock()
		s.conns++
		refuse := upTo > 0 && s.conns > upTo
		s.mu.Unlock()
		if refuse {
			return
		}
		s.mu.Lock()
		s.open++
		s.maxOpen = max(s.maxOpen, s.open)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.open--
			s.mu.Unlock()
		}()
		br := bufio.NewReader(c)
		for n := 1; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			id := req.Header.Get(evidence.IDHeader)
			s.mu.Lock()
			s.seen[id]++
			s.mu.Unlock()
			if !respond(c, br, req, id, n) {
				return
			}
		}
	})
	return s, "http://" + host
}

// drain reads the rest of req's body (a respond that answers first).
func drain(req *http.Request) { io.Copy(io.Discard, req.Body) }

// answerTimeout is the request timeout of the tests whose requests a
// server answers (or ends) and that count them answered: far above a
// response's time on a loaded host, where a few hundred requests at
// 1000/s queue for the CPU (a tight timeout would record some as code 0);
// a test of the timeout itself sets its own.
const answerTimeout = 30 * time.Second

// paced returns Options for a paced attack of n IDs on url, capturing
// X-Echo, with answerTimeout.
func paced(n int, prefix, url string, perSec int) Options {
	return Options{IDs: IDs(n, prefix), Targets: []Target{{URL: url}}, Rate: vegeta.Rate{Freq: perSec, Per: time.Second},
		CaptureHeaders: []string{echoHeader}, Timeout: answerTimeout}
}

// runGuarded runs opts with a guard context; it fails t if the guard had
// to end the attack (a hang).
func runGuarded(t *testing.T, opts Options, guard time.Duration) (*evidence.AttackSummary, error, []evidence.Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	sum, err, lines := runToLines(t, ctx, opts)
	if ctx.Err() != nil {
		t.Fatalf("the attack needed its %s guard to end (hang): summary %+v", guard, sum)
	}
	return sum, err, lines
}

// checkLines checks the invariants every scenario shares and returns the
// lines by code. seen may be nil (a server that does not count).
func checkLines(t *testing.T, ids []string, sum *evidence.AttackSummary, lines []evidence.Request, s *rawIDServer) map[int]int {
	t.Helper()
	if sum == nil {
		t.Fatal("no summary")
	}
	if sum.Resent != 0 {
		t.Errorf("Resent %d", sum.Resent)
	}
	per := map[string]int{}
	codes := map[int]int{}
	for _, l := range lines {
		per[l.ID]++
		codes[l.Code]++
		if l.Code != 0 {
			if got := l.Headers[strings.ToLower(echoHeader)]; got != l.ID {
				t.Errorf("%s: code %d answered request %q", l.ID, l.Code, got)
			}
		}
	}
	for _, id := range ids {
		if per[id] != 1 {
			t.Errorf("%s: %d lines", id, per[id])
		}
	}
	if len(lines) != len(ids) {
		t.Errorf("%d lines for %d IDs", len(lines), len(ids))
	}
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, l := range lines {
			if s.seen[l.ID] > 1 {
				t.Errorf("%s received %d times", l.ID, s.seen[l.ID])
			}
			if l.Code != 0 && s.seen[l.ID] != 1 {
				t.Errorf("%s: code %d but the server never received it", l.ID, l.Code)
			}
		}
	}
	return codes
}

// answer is a respondFunc that reads the request's body, writes head(id)
// in one write and keeps the connection when keep.
func answer(keep bool, head func(id string) string) respondFunc {
	return func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
		drain(req)
		io.WriteString(c, head(id))
		return keep
	}
}

func okResp(id, extra string) string {
	return "HTTP/1.1 200 OK\r\n" + echoHeader + ": " + id + "\r\nContent-Length: 2\r\n" + extra + "\r\nok"
}

// TestPacedHostileServers: a paced keep-alive attack against servers that
// answer in unusual or hostile ways. want is the code every line must
// have (-1: any, the invariants only); direct whether some sends must be
// direct.
func TestPacedHostileServers(t *testing.T) {
	big := strings.Repeat("b", 6000)
	cases := []struct {
		name    string
		method  string
		body    []byte
		respond respondFunc
		want    int
		direct  bool
	}{
		{name: "answers before reading the body", body: []byte(strings.Repeat("x", 3000)), want: 200, direct: true,
			respond: func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
				io.WriteString(c, okResp(id, ""))
				drain(req)
				return true
			}},
		{name: "answers twice (one write)", want: 200, direct: true,
			respond: answer(true, func(id string) string { return okResp(id, "") + okResp("unsolicited", "") })},
		{name: "garbage after the body", want: 200, direct: true,
			respond: answer(true, func(id string) string { return okResp(id, "") + "GARBAGE\r\n\r\n" })},
		{name: "chunked", want: 200, direct: true,
			respond: func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
				drain(req)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n%s: %s\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", echoHeader, id, len(id), id)
				return true
			}},
		{name: "HTTP/1.0 keep-alive", want: 200, direct: true,
			respond: answer(true, func(id string) string {
				return "HTTP/1.0 200 OK\r\n" + echoHeader + ": " + id + "\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"
			})},
		{name: "HTTP/1.0 body until close", want: 200,
			respond: answer(false, func(id string) string {
				return "HTTP/1.0 200 OK\r\n" + echoHeader + ": " + id + "\r\n\r\nbody until the close"
			})},
		{name: "204", want: 204, direct: true,
			respond: answer(true, func(id string) string { return "HTTP/1.1 204 No Content\r\n" + echoHeader + ": " + id + "\r\n\r\n" })},
		{name: "304 with a Content-Length", want: 304, direct: true,
			respond: answer(true, func(id string) string {
				return "HTTP/1.1 304 Not Modified\r\n" + echoHeader + ": " + id + "\r\nContent-Length: 50\r\n\r\n"
			})},
		{name: "100 Continue then 200 (one write)", want: 200, direct: true,
			respond: answer(true, func(id string) string { return "HTTP/1.1 100 Continue\r\n\r\n" + okResp(id, "") })},
		{name: "100 Continue then 200 (two writes)", want: 200, direct: true,
			respond: func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
				drain(req)
				io.WriteString(c, "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n")
				io.WriteString(c, okResp(id, ""))
				return true
			}},
		{name: "HEAD with a Content-Length", method: http.MethodHead, want: 200, direct: true,
			respond: func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n%s: %s\r\nContent-Length: 1000\r\n\r\n", echoHeader, id)
				return true
			}},
		{name: "head larger than 4 KB", want: 200, direct: true,
			respond: answer(true, func(id string) string { return okResp(id, "X-Big: "+big+"\r\n") })},
		{name: "body larger than the prefix", want: 200, direct: true,
			respond: func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
				drain(req)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s", echoHeader, id, len(big), big)
				return true
			}},
		{name: "Content-Length longer than the body, then close", want: 0,
			respond: answer(false, func(id string) string {
				return "HTTP/1.1 200 OK\r\n" + echoHeader + ": " + id + "\r\nContent-Length: 10\r\n\r\nshort"
			})},
		{name: "Connection: close on every response", want: 200,
			respond: answer(false, func(id string) string { return okResp(id, "Connection: close\r\n") })},
		{name: "a byte per write", want: 200, direct: true,
			respond: func(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
				drain(req)
				for _, b := range []byte(okResp(id, "")) {
					c.Write([]byte{b})
				}
				return true
			}},
		{name: "bare LF line ends", want: 200, direct: true,
			respond: answer(true, func(id string) string {
				return "HTTP/1.1 200 OK\n" + echoHeader + ": " + id + "\nContent-Length: 2\n\nok"
			})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, url := newRawIDServer(t, tc.respond)
			const n = 100
			opts := paced(n, "h", url, 1000)
			opts.Method, opts.Body = tc.method, tc.body
			opts.BodyPrefix = 8
			sum, err, lines := runGuarded(t, opts, 20*time.Second)
			if err != nil {
				t.Fatalf("err %v", err)
			}
			codes := checkLines(t, opts.IDs, sum, lines, s)
			if tc.want >= 0 && codes[tc.want] != n {
				t.Errorf("codes %v, want %d for all", codes, tc.want)
			}
			if tc.want > 0 && !sum.Complete {
				t.Errorf("incomplete: %+v", sum)
			}
			if pc := sum.Pacing; pc == nil || (tc.direct && pc.DirectSends == 0) || pc.DirectSends > n {
				t.Errorf("pacing %+v", pc)
			}
			for _, l := range lines {
				if l.Code == 200 && tc.method != http.MethodHead && (l.BytesIn == 0 || len(l.Body) > 8) {
					t.Errorf("%s: %d bytes in, body %q", l.ID, l.BytesIn, l.Body)
				}
			}
		})
	}
}

func echoOK(c net.Conn, _ *bufio.Reader, req *http.Request, id string, _ int) bool {
	drain(req)
	io.WriteString(c, okResp(id, ""))
	return true
}

// TestPacedSplitCountsSecondTarget: with counts=N,N the first IDs, and so
// every warm (parked) connection, go to the first target; the second
// target's IDs then need job workers although the parked workers fill the
// bound.
func TestPacedSplitCountsSecondTarget(t *testing.T) {
	for _, conc := range []int{0, 4} { // the bound from the rate, or fixed
		t.Run(fmt.Sprint("concurrency ", conc), func(t *testing.T) { splitCountsSecondTarget(t, conc) })
	}
}

func splitCountsSecondTarget(t *testing.T, conc int) {
	sa, ua := newRawIDServer(t, echoOK)
	sb, ub := newRawIDServer(t, echoOK)
	const n = 120
	opts := paced(n, "s", ua, 1000)
	opts.Concurrency = conc
	opts.Targets = []Target{{Name: "a", URL: ua}, {Name: "b", URL: ub}}
	opts.Split = Split{Mode: SplitCounts, Values: []int{n / 2, n / 2}}
	sum, err, lines := runGuarded(t, opts, 20*time.Second)
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	codes := checkLines(t, opts.IDs, sum, lines, nil)
	if codes[200] != n {
		t.Fatalf("codes %v", codes)
	}
	for _, s := range []*rawIDServer{sa, sb} {
		s.mu.Lock()
		if len(s.seen) != n/2 {
			t.Errorf("a target received %d IDs, want %d", len(s.seen), n/2)
		}
		s.mu.Unlock()
	}
	for _, l := range lines {
		if want := map[bool]string{true: "a", false: "b"}[l.ID < opts.IDs[n/2]]; l.Target != want {
			t.Errorf("%s went to %s", l.ID, l.Target)
		}
	}
}

// slowFor answers the first slow requests of a server after d (a latency
// the test imposes, not a synchronisation), the others at once.
func slowFor(slow int, d time.Duration) respondFunc {
	var mu sync.Mutex
	k := 0
	return func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
		mu.Lock()
		k++
		late := k <= slow
		mu.Unlock()
		if late {
			time.Sleep(d)
		}
		return echoOK(c, br, req, id, n)
	}
}

// TestPacedSlowThenFast: a latency above the bound's worth of the rate
// (16 workers at 1000/s: 16 ms) keeps every parked worker busy; once the
// sizing sample (200 latencies) raised the bound, job workers start on new
// connections; the server then answers at once.
func TestPacedSlowThenFast(t *testing.T) {
	s, url := newRawIDServer(t, slowFor(250, 40*time.Millisecond))
	const n = 400
	opts := paced(n, "sf", url, 1000)
	sum, err, lines := runGuarded(t, opts, 20*time.Second)
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if codes := checkLines(t, opts.IDs, sum, lines, s); codes[200] != n {
		t.Fatalf("codes %v", codes)
	}
	pc := sum.Pacing
	s.mu.Lock()
	conns := s.conns
	s.mu.Unlock()
	if pc == nil || pc.DirectSends == 0 || pc.DirectSends == n || pc.WorkersPeak <= pc.WarmConnections || conns <= pc.WarmConnections {
		t.Fatalf("pacing %+v, %d connections: want direct sends and job workers on new connections", pc, conns)
	}
}

// TestPacedNoNewConnections: a server that keeps its warm connections but
// closes every later one at once, while slow enough that job workers are
// needed (once the sizing sample raised the bound): their IDs fail (never
// received, never retried), the parked connections' IDs are answered.
func TestPacedNoNewConnections(t *testing.T) {
	// 16: the warm connections of 1000/s (rateBound).
	s, url := newRawIDServerUpTo(t, 16, slowFor(1<<30, 30*time.Millisecond))
	const n = 400
	opts := paced(n, "nn", url, 1000)
	sum, err, lines := runGuarded(t, opts, 20*time.Second)
	if err != nil {
		t.Fatalf("err %v", err)
	}
	codes := checkLines(t, opts.IDs, sum, lines, s)
	if codes[200] == 0 || codes[0] == 0 || codes[200]+codes[0] != n || sum.Complete && sum.NotSent != 0 {
		t.Fatalf("codes %v summary %+v", codes, sum)
	}
	if pc := sum.Pacing; pc == nil || pc.WarmConnections != 16 || pc.DirectSends < codes[200] {
		t.Fatalf("pacing %+v, codes %v", pc, codes)
	}
}

// TestPacedCancelled: the context ends in the middle of a paced run (the
// server cancels it when it has the 50th request): Run returns, marked
// interrupted and incomplete, every line once, no ID sent twice.
func TestPacedCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got sync.WaitGroup
	got.Add(1)
	var once sync.Once
	var mu sync.Mutex
	k := 0
	s, url := newRawIDServer(t, func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
		mu.Lock()
		k++
		if k == 50 {
			once.Do(func() { cancel(); got.Done() })
		}
		mu.Unlock()
		return echoOK(c, br, req, id, n)
	})
	const n = 300
	lines := runInterrupted(t, ctx, paced(n, "cx", url, 1000), 50, s)
	got.Wait()
	for _, l := range lines {
		if l.Code != 0 && l.Headers[strings.ToLower(echoHeader)] != l.ID {
			t.Errorf("%s answered by %q", l.ID, l.Headers[strings.ToLower(echoHeader)])
		}
	}
}

// runInterrupted runs opts with ctx, which the test ends during the run:
// Run must return before a guard, interrupted and incomplete, with at
// least least and fewer than all lines, each ID once, none received twice,
// every ID the server received recorded.
func runInterrupted(t *testing.T, ctx context.Context, opts Options, least int, s *rawIDServer) []evidence.Request {
	t.Helper()
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	done := make(chan struct{})
	var sum *evidence.AttackSummary
	var err error
	var lines []evidence.Request
	go func() {
		defer close(done)
		sum, err, lines = runToLines(t, ctx, opts)
	}()
	select {
	case <-done:
	case <-guard.C:
		t.Fatal("Run did not return after its context ended")
	}
	if err != nil || !sum.Interrupted || sum.Complete || len(lines) >= len(opts.IDs) || len(lines) < least || sum.Recorded != len(lines) || sum.Resent != 0 {
		t.Fatalf("err %v, %d lines, summary %+v", err, len(lines), sum)
	}
	per := map[string]int{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range lines {
		if per[l.ID]++; per[l.ID] > 1 || s.seen[l.ID] > 1 {
			t.Errorf("line %+v: %d lines, received %d times", l, per[l.ID], s.seen[l.ID])
		}
	}
	for id, c := range s.seen {
		if c > 0 && per[id] == 0 {
			t.Errorf("%s received but has no line", id)
		}
	}
	return lines
}

// TestPacedMaxConnectionsBelowWarm: MaxConnections below the warm count
// (16 at 1000/s): only that many connections are opened, parked, and
// every ID is answered on them, none waiting for the schedule's end.
func TestPacedMaxConnectionsBelowWarm(t *testing.T) {
	s, url := newRawIDServer(t, slowFor(1<<30, 3*time.Millisecond))
	const n = 300
	opts := paced(n, "mc", url, 500)
	opts.MaxConnections = 2
	sum, err, lines := runGuarded(t, opts, 30*time.Second)
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if codes := checkLines(t, opts.IDs, sum, lines, s); codes[200] != n {
		t.Fatalf("codes %v", codes)
	}
	s.mu.Lock()
	conns, open := s.conns, s.maxOpen
	s.mu.Unlock()
	pc := sum.Pacing
	if open > 2 || pc == nil || pc.WarmConnections != 2 || pc.DirectSends == 0 {
		t.Fatalf("%d connections at once, pacing %+v", open, pc)
	}
	// The parked workers hold both slots for the whole run: a job worker
	// would have waited for one until the schedule's end (its ID sent last,
	// on a third connection).
	if conns != 2 || pc.DirectSends != n {
		t.Fatalf("%d connections, pacing %+v: IDs left the parked connections", conns, pc)
	}
}

// TestPacedFlowsOneTarget: several paced flows on one target, each with
// its own parked connections.
func TestPacedFlowsOneTarget(t *testing.T) {
	s, url := newRawIDServer(t, echoOK)
	const n = 100
	opts := Options{Targets: []Target{{URL: url}}, CaptureHeaders: []string{echoHeader}, Timeout: answerTimeout,
		Flows: []Flow{
			{Name: "a", IDs: IDs(n, "fa"), Rate: vegeta.Rate{Freq: 800, Per: time.Second}},
			{Name: "b", IDs: IDs(n, "fb"), Rate: vegeta.Rate{Freq: 500, Per: time.Second}},
			{Name: "c", IDs: IDs(n, "fc"), Rate: vegeta.Rate{Freq: 1200, Per: time.Second}, Method: http.MethodHead},
		}}
	sum, err, lines := runGuarded(t, opts, 20*time.Second)
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	var all []string
	for _, f := range opts.Flows {
		all = append(all, f.IDs...)
	}
	if codes := checkLines(t, all, sum, lines, s); codes[200] != len(all) {
		t.Fatalf("codes %v", codes)
	}
	if len(sum.Flows) != 3 || sum.Pacing == nil || sum.Pacing.DirectSends == 0 {
		t.Fatalf("flows %+v pacing %+v", sum.Flows, sum.Pacing)
	}
	for _, f := range sum.Flows {
		if f.Pacing == nil || f.Pacing.DirectSends == 0 || f.Recorded != n {
			t.Errorf("flow %s: %+v", f.Config.Flow, f)
		}
	}
}

// TestPacedSplitDeadTarget: an even split over a live target and a dead
// one (its port closed): the live one's IDs are answered, the dead one's
// recorded not sent, once each.
func TestPacedSplitDeadTarget(t *testing.T) {
	s, live := newRawIDServer(t, echoOK)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	const n = 150
	opts := paced(n, "dt", live, 1000)
	opts.Targets = []Target{{Name: "live", URL: live}, {Name: "dead", URL: dead}}
	sum, err, lines := runGuarded(t, opts, 20*time.Second)
	if err != nil || sum.Complete || sum.NotSent != n/2 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	codes := checkLines(t, opts.IDs, sum, lines, s)
	if codes[200] != n/2 || codes[0] != n/2 {
		t.Fatalf("codes %v", codes)
	}
	for _, l := range lines {
		if (l.Target == "dead") != l.NotSent || (l.Target == "dead") != (l.Code == 0) {
			t.Errorf("line %+v", l)
		}
	}
	if sum.Pacing == nil || sum.Pacing.DirectSends == 0 {
		t.Fatalf("pacing %+v", sum.Pacing)
	}
}

// TestPacedTLS: a paced attack over TLS sends directly on parked TLS
// connections (TLS 1.3 session tickets arrive before the first response).
func TestPacedTLS(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(evidence.IDHeader)
		mu.Lock()
		seen[id]++
		mu.Unlock()
		w.Header().Set(echoHeader, id)
	}))
	t.Cleanup(srv.Close)
	const n = 150
	opts := paced(n, "tls", srv.URL, 1000)
	opts.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	sum, err, lines := runGuarded(t, opts, 20*time.Second)
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if codes := checkLines(t, opts.IDs, sum, lines, nil); codes[200] != n {
		t.Fatalf("codes %v", codes)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range opts.IDs {
		if seen[id] != 1 {
			t.Errorf("%s received %d times", id, seen[id])
		}
	}
	if pc := sum.Pacing; pc == nil || pc.DirectSends == 0 || pc.WarmConnections == 0 {
		t.Fatalf("pacing %+v", pc)
	}
}

// TestPacedDisableKeepAlives: without keep-alive nothing is parked: every
// ID goes to a job worker on its own connection (direct_sends 0).
func TestPacedDisableKeepAlives(t *testing.T) {
	s, url := newRawIDServer(t, func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
		drain(req)
		if !req.Close {
			fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\n%s: %s\r\nContent-Length: 0\r\n\r\n", echoHeader, id)
			return false
		}
		io.WriteString(c, okResp(id, "Connection: close\r\n"))
		return false
	})
	const n = 100
	opts := paced(n, "dk", url, 1000)
	opts.DisableKeepAlives = true
	sum, err, lines := runGuarded(t, opts, 20*time.Second)
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if codes := checkLines(t, opts.IDs, sum, lines, s); codes[200] != n {
		t.Fatalf("codes %v", codes)
	}
	s.mu.Lock()
	conns := s.conns
	s.mu.Unlock()
	if pc := sum.Pacing; pc == nil || pc.DirectSends != 0 || conns < n {
		t.Fatalf("pacing %+v, %d connections", pc, conns)
	}
}

// TestPacedServerEndsConnections: servers that end parked connections
// under the client: an idle timeout shorter than the gap between two
// requests on a connection, a reset (SO_LINGER 0) after every third
// response, a server that never answers (the client's timeout ends each
// request). Every ID still leaves at most once and is recorded once.
func TestPacedServerEndsConnections(t *testing.T) {
	cases := []struct {
		name    string
		respond respondFunc
		timeout time.Duration
		minOK   int
	}{
		{name: "idle timeout", minOK: 1, respond: func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
			echoOK(c, br, req, id, n)
			c.SetReadDeadline(time.Now().Add(5 * time.Millisecond)) // the server's keep-alive timeout
			return true
		}},
		{name: "reset", minOK: 1, respond: func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
			echoOK(c, br, req, id, n)
			if n%3 == 0 {
				c.(*net.TCPConn).SetLinger(0)
				return false
			}
			return true
		}},
		{name: "never answers", timeout: 200 * time.Millisecond, respond: func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
			drain(req)
			return true
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, url := newRawIDServer(t, tc.respond)
			const n = 120
			opts := paced(n, "se", url, 500)
			if tc.timeout > 0 {
				opts.Timeout = tc.timeout
			}
			sum, err, lines := runGuarded(t, opts, 30*time.Second)
			if err != nil {
				t.Fatalf("err %v", err)
			}
			codes := checkLines(t, opts.IDs, sum, lines, s)
			if codes[200] < tc.minOK || codes[200]+codes[0] != n {
				t.Fatalf("codes %v", codes)
			}
			if tc.minOK == 0 && codes[0] != n {
				t.Fatalf("codes %v", codes)
			}
			t.Logf("codes %v, %d connections, pacing %+v", codes, s.conns, sum.Pacing)
		})
	}
}

// TestPacedLargeRequestNotDirect: a flow with a request longer than
// directMaxRequest is not sent direct (the dispatcher's write of a request
// larger than the socket's send buffer would wait for the server to read
// it, and the schedule with it: measured with 4 MB bodies read after
// 50 ms, the small requests between them left 200 ms late at the median):
// every ID goes through job workers, once.
func TestPacedLargeRequestNotDirect(t *testing.T) {
	big := make([]byte, 64<<10)
	s, url := newRawIDServer(t, func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
		if req.ContentLength > 0 {
			time.Sleep(20 * time.Millisecond) // a server slow to read (the condition, not a synchronisation)
		}
		return echoOK(c, br, req, id, n)
	})
	const n = 40
	opts := Options{Targets: []Target{{URL: url}}, CaptureHeaders: []string{echoHeader}, Timeout: answerTimeout,
		Flows: []Flow{{Name: "mixed", IDs: IDs(n, "lb"), Rate: vegeta.Rate{Freq: 200, Per: time.Second},
			Requests: []RequestTemplate{{Method: http.MethodPost, Body: big}, {}}}}}
	sum, err, lines := runGuarded(t, opts, 30*time.Second)
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if codes := checkLines(t, opts.Flows[0].IDs, sum, lines, s); codes[200] != n {
		t.Fatalf("codes %v", codes)
	}
	if pc := sum.Pacing; pc == nil || pc.DirectSends != 0 || pc.WarmConnections == 0 {
		t.Fatalf("pacing %+v", pc)
	}
	// Small requests alone are sent direct.
	opts.Flows[0].Requests = []RequestTemplate{{Method: http.MethodPost, Body: big[:directMaxRequest/2]}, {}}
	opts.Flows[0].IDs = IDs(n, "sb")
	sum, err, lines = runGuarded(t, opts, 30*time.Second)
	if err != nil || !sum.Complete || sum.Pacing == nil || sum.Pacing.DirectSends == 0 {
		t.Fatalf("err %v summary %+v pacing %+v", err, sum, sum.Pacing)
	}
	checkLines(t, opts.Flows[0].IDs, sum, lines, s)
}

// TestPacedCancelledInFlight: the context ends while every parked worker
// waits for a server that never answers (the request timeout far away):
// the interrupt's grace aborts them, and Run returns with each sent ID
// recorded once, as a transport error.
func TestPacedCancelledInFlight(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	k := 0
	s, url := newRawIDServer(t, func(c net.Conn, br *bufio.Reader, req *http.Request, id string, n int) bool {
		drain(req)
		mu.Lock()
		if k++; k == 10 {
			cancel()
		}
		mu.Unlock()
		return true // never answers
	})
	const n = 100
	opts := paced(n, "ci", url, 1000)
	opts.Timeout = time.Minute
	opts.InterruptGrace = 100 * time.Millisecond
	for _, l := range runInterrupted(t, ctx, opts, 10, s) {
		if l.Code != 0 || l.Error == "" {
			t.Errorf("line %+v: want a transport error", l)
		}
	}
}

// TestPacedMaxConnectionsServerEnds: parked connections holding every
// MaxConnections slot end under the client (endingServer): their slots go
// to job workers, and the attack finishes with every ID once.
func TestPacedMaxConnectionsServerEnds(t *testing.T) {
	s := &endingServer{seen: map[string]int{}}
	host := serveRaw(t, s.handle)
	const n = 120
	opts := Options{IDs: IDs(n, "me"), Targets: []Target{{URL: "http://" + host}}, Rate: vegeta.Rate{Freq: 1000, Per: time.Second},
		MaxConnections: 3, Timeout: answerTimeout}
	sum, err, lines := runGuarded(t, opts, 20*time.Second)
	if err != nil || len(lines) != n || sum.Resent != 0 || sum.Recorded != n {
		t.Fatalf("err %v summary %+v, %d lines", err, sum, len(lines))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	per := map[string]int{}
	ok := 0
	for _, l := range lines {
		if per[l.ID]++; per[l.ID] > 1 || s.seen[l.ID] > 1 || l.Code == 408 {
			t.Errorf("line %+v: %d lines, received %d times", l, per[l.ID], s.seen[l.ID])
		}
		if l.Code == 200 {
			ok++
		}
	}
	if pc := sum.Pacing; pc == nil || pc.WarmConnections != 3 || s.conns <= 3 || ok < n/2 {
		t.Fatalf("pacing %+v, %d connections, %d answered", pc, s.conns, ok)
	}
}
