package attack

import (
	"bufio"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// TestRunNotSent: dial errors (EMFILE on socket(), connection refused) are
// recorded as not_sent, never as "no response", and make the attack
// incomplete with the reason.
func TestRunNotSent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var dials atomic.Int32
	emfile := func(ctx context.Context, addr string) (net.Conn, error) {
		if dials.Add(1)%2 == 0 { // every second dial fails like a process out of descriptors
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(20, "e"), Targets: []Target{{Name: "s", URL: srv.URL}},
		DisableKeepAlives: true, Concurrency: 4, testDial: emfile})
	if err != nil || len(lines) != 20 {
		t.Fatalf("err %v, %d lines", err, len(lines))
	}
	notSent := 0
	for _, l := range lines {
		if l.NotSent {
			notSent++
			if l.Code != 0 || !strings.Contains(l.Error, "too many open files") {
				t.Errorf("%s: not sent with code %d error %q", l.ID, l.Code, l.Error)
			}
		} else if l.Code != 200 || l.Error != "" {
			t.Errorf("%s: %+v", l.ID, l)
		}
	}
	if notSent == 0 || notSent == 20 || sum.NotSent != notSent || sum.Complete || sum.Interrupted ||
		!strings.Contains(sum.Error, "requests were not sent") || !strings.Contains(sum.Error, "too many open files") {
		t.Fatalf("not sent %d, summary %+v", notSent, sum)
	}

	// Connection refused: a closed port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sum, err, lines = runToLines(t, context.Background(), Options{IDs: IDs(3, "r"), Targets: []Target{{Name: "c", URL: "http://" + addr}}})
	if err != nil || sum.NotSent != 3 || sum.Complete || sum.CodesByTarget["c"]["0"] != 3 || sum.FirstSendNs != 0 {
		t.Fatalf("refused: err %v summary %+v", err, sum)
	}
	for _, l := range lines {
		if !l.NotSent || !strings.Contains(l.Error, "refused") {
			t.Errorf("refused: %+v", l)
		}
	}
}

// countingServer is a test server that counts the connections it accepted
// (conns) and how many were open when the first request arrived (atFirst);
// handle runs for each request under mu.
type countingServer struct {
	*httptest.Server
	mu             sync.Mutex
	conns, atFirst int
}

func newCountingServer(tlsOn bool, handle func(w http.ResponseWriter, r *http.Request)) *countingServer {
	cs := &countingServer{atFirst: -1}
	cs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		if cs.atFirst < 0 {
			cs.atFirst = cs.conns
		}
		handle(w, r)
		cs.mu.Unlock()
	}))
	cs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			cs.mu.Lock()
			cs.conns++
			cs.mu.Unlock()
		}
	}
	if tlsOn {
		cs.StartTLS()
	} else {
		cs.Start()
	}
	return cs
}

// TestRunBurstWarmsFirst: in an unpaced attack every connection is open
// before the first request arrives, and all requests are released together.
func TestRunBurstWarmsFirst(t *testing.T) {
	const n = 30
	remotes := map[string]bool{}
	srv := newCountingServer(false, func(w http.ResponseWriter, r *http.Request) { remotes[r.RemoteAddr] = true })
	defer srv.Close()
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(n, "b"), Targets: []Target{{URL: srv.URL}}})
	if err != nil || !sum.Complete || len(lines) != n {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	// The client dialled every connection before the release
	// (Burst.WarmConnections, below) and no request needed a new one: the
	// server accepted exactly n. How many of them its accept loop had
	// taken when the first request arrived (atFirst) is the server's
	// scheduling, not the client's: on a loaded machine the kernel holds
	// connections the client opened in the accept queue while a request
	// on an accepted one is served, so it is only bounded, not pinned.
	if srv.conns != n || srv.atFirst < 1 || srv.atFirst > n || len(remotes) != n {
		t.Fatalf("%d connections accepted (%d at the first request), %d distinct connections; want %d", srv.conns, srv.atFirst, len(remotes), n)
	}
	b := sum.Burst
	if b == nil || b.Requests != n || b.WarmConnections != n || b.SendNs.N != n || b.SpreadNs != sum.SendSpreadNs ||
		b.ReleaseNs != sum.StartNs || b.SendNs.Max < b.SendNs.P50 || !sum.Config.Barrier || sum.Pacing != nil {
		t.Fatalf("burst %+v summary %+v", b, sum)
	}
	for _, l := range lines {
		if l.SentNs < b.ReleaseNs {
			t.Errorf("%s sent before the release", l.ID)
		}
	}
}

// TestRunConnectionsPerRequest: with keep-alives, requests beyond the
// workers reuse connections (sharing an Envoy per-connection bucket);
// DisableKeepAlives gives each request its own connection.
func TestRunConnectionsPerRequest(t *testing.T) {
	for _, keep := range []bool{true, false} {
		var mu sync.Mutex
		remotes := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			remotes[r.RemoteAddr]++
			mu.Unlock()
		}))
		sum, err, _ := runToLines(t, context.Background(), Options{IDs: IDs(12, "k"), Targets: []Target{{URL: srv.URL}},
			Concurrency: 3, DisableKeepAlives: !keep})
		srv.Close()
		if err != nil || !sum.Complete {
			t.Fatalf("keep=%v: err %v summary %+v", keep, err, sum)
		}
		if keep && len(remotes) > 3 || !keep && len(remotes) != 12 {
			t.Errorf("keep-alive %v: %d connections for 12 requests with 3 workers: %v", keep, len(remotes), remotes)
		}
	}
}

// TestRunWireFormat pins the bytes on the wire: net/http's serialization,
// the ID header, no Accept-Encoding, Content-Length for bodies, and
// "Connection: close" without keep-alives.
func TestRunWireFormat(t *testing.T) {
	got := make(chan string, 4)
	host := serveRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		var req strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			req.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		if strings.Contains(req.String(), "Content-Length: 3") {
			b := make([]byte, 3)
			io.ReadFull(br, b)
			req.Write(b)
		}
		got <- req.String()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	cases := []struct {
		opts Options
		want string
	}{
		{Options{Path: "/p?q=1", Header: http.Header{"x-tenant": {"lab"}}},
			"GET /p?q=1 HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: Go-http-client/1.1\r\nX-Rlbench-Id: w-1\r\nX-Tenant: lab\r\n\r\n"},
		{Options{Method: "post", Body: []byte("abc"), DisableKeepAlives: true, Header: http.Header{"Host": {"api.example"}}},
			"POST / HTTP/1.1\r\nHost: api.example\r\nUser-Agent: Go-http-client/1.1\r\nConnection: close\r\nContent-Length: 3\r\nX-Rlbench-Id: w-1\r\n\r\nabc"},
		{Options{Method: "DELETE", IDHeader: "x-req"},
			"DELETE / HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: Go-http-client/1.1\r\nX-Req: w-1\r\n\r\n"},
	}
	for _, c := range cases {
		o := c.opts
		o.IDs, o.Targets = []string{"w-1"}, []Target{{URL: "http://" + host}}
		sum, err, _ := runToLines(t, context.Background(), o)
		if err != nil || !sum.Complete {
			t.Fatalf("err %v summary %+v", err, sum)
		}
		if w := <-got; w != c.want {
			t.Errorf("on the wire:\n%q\nwant\n%q", w, c.want)
		}
	}
}

// TestRunPacedSummary: a paced attack records the intended send times on
// vegeta's ConstantPacer schedule, a bounded pool and the pacing figures.
func TestRunPacedSummary(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	const n = 40
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(n, "p"), Targets: []Target{{URL: srv.URL}},
		Rate: vegeta.Rate{Freq: 400, Per: time.Second}})
	if err != nil || !sum.Complete || len(lines) != n {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	slices.SortFunc(lines, func(a, b evidence.Request) int { return int(a.IntendedNs - b.IntendedNs) })
	origin := lines[0].IntendedNs - int64(2500*time.Microsecond) // hit 0 at 1 interval
	for k, l := range lines {
		if want := origin + int64(k+1)*int64(2500*time.Microsecond); l.IntendedNs != want {
			t.Fatalf("hit %d intended %d, want %d", k, l.IntendedNs, want)
		}
		if l.SentNs < l.IntendedNs {
			t.Errorf("%s sent %s early", l.ID, time.Duration(l.IntendedNs-l.SentNs))
		}
	}
	pc := sum.Pacing
	if pc == nil || sum.Burst != nil || sum.Config.Barrier || pc.ErrorNs.N != n || pc.LatencyFromIntendedNs.N != n ||
		pc.WorkersPeak < 1 || pc.WorkersPeak > pc.WorkersBound || pc.WorkersBound > n || sum.Config.WorkersFrom != "rate" ||
		pc.LatencyFromIntendedNs.Max < sum.LatencyNs.P50 {
		t.Fatalf("pacing %+v summary %+v", pc, sum)
	}
	// The achieved rate is what the sends did, not the configured 400/s:
	// a loaded host sends the first ID late and the rest catch up, so it
	// has no bound of its own; it must be computed from the sends.
	if want := achievedPerSec(lines); !sameRate(pc.AchievedPerSec, want) {
		t.Fatalf("achieved %v/s, the sends give %v/s", pc.AchievedPerSec, want)
	}
}

// achievedPerSec is evidence.AttackPacing.AchievedPerSec computed from requests.jsonl
// lines: (sends-1)/(last-first SentNs), requests/s, over the lines sent.
func achievedPerSec(lines []evidence.Request) float64 {
	sends, first, last := 0, int64(math.MaxInt64), int64(0)
	for _, l := range lines {
		if !l.NotSent {
			sends, first, last = sends+1, min(first, l.SentNs), max(last, l.SentNs)
		}
	}
	if sends < 2 || last <= first {
		return 0
	}
	return float64(sends-1) / (float64(last-first) / 1e9)
}

// sameRate: two rates equal up to float rounding, both positive.
func sameRate(a, b float64) bool { return a > 0 && b > 0 && math.Abs(a-b) <= 1e-9*b }

// TestRunDescriptorCap: the default worker count is capped below the
// descriptor limit and the cap is recorded.
func TestRunDescriptorCap(t *testing.T) {
	fd := fdLimits()
	if fd.limit == 0 {
		t.Skip("no descriptor limit on this OS")
	}
	p, err := prepare(Options{IDs: IDs(fd.capacity()+10, "d"), Targets: []Target{{URL: "http://127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	c := p.config
	if c.FDLimit != fd.limit || c.FDCap <= 0 || uint64(c.FDCap) >= c.FDLimit || c.Workers != c.FDCap || c.WorkersFrom != "fd_limit" || c.FDOpen <= 0 {
		t.Fatalf("config %+v", c)
	}
}

func TestHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h hist
	var vals []int64
	for range 50000 {
		v := int64(rng.ExpFloat64() * 1e6)
		vals = append(vals, v)
		h.add(v)
	}
	slices.Sort(vals)
	q := h.quantiles()
	exact := func(p int) int64 { return vals[(len(vals)*p+99)/100-1] }
	for _, c := range []struct {
		got, want int64
	}{{q.P50, exact(50)}, {q.P90, exact(90)}, {q.P99, exact(99)}} {
		if c.got < c.want || float64(c.got-c.want) > float64(c.want)/histSub+1 {
			t.Errorf("quantile %d, exact %d", c.got, c.want)
		}
	}
	if q.Max != vals[len(vals)-1] || q.N != len(vals) {
		t.Errorf("max %d n %d", q.Max, q.N)
	}
	for _, v := range []uint64{0, 1, 255, 256, 257, 1 << 20, 1<<40 + 12345, 1 << 62} {
		if i := histIndex(v); histUpper(i) < int64(v) || (i > 0 && histUpper(i-1) >= int64(v)) {
			t.Errorf("value %d in bucket %d [%d, %d]", v, i, histUpper(i-1)+1, histUpper(i))
		}
	}
}

// TestRunTLS: https targets are warmed with the TLS handshake before the
// burst, and a paced attack reuses its warm TLS connections instead of
// dialing again. (Servers that send TLS 1.3 session tickets after the
// client's Finished, as OpenSSL and BoringSSL do, leave them in the socket,
// which is why an unused TLS connection is not peeked; Go's server sends
// them with its own Finished, so this test cannot show that case.)
func TestRunTLS(t *testing.T) {
	srv := newCountingServer(true, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls") })
	defer srv.Close()
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(10, "t"), Targets: []Target{{Name: "s", URL: srv.URL}}, TLSConfig: cfg})
	if err != nil || !sum.Complete || sum.CodesByTarget["s"]["200"] != 10 || len(lines) != 10 || lines[0].Body != "tls" {
		t.Fatalf("burst: err %v summary %+v", err, sum)
	}
	srv.mu.Lock()
	if srv.atFirst != 10 || sum.Burst.WarmConnections != 10 {
		t.Errorf("%d TLS connections open at the first request, %d warm; want 10", srv.atFirst, sum.Burst.WarmConnections)
	}
	srv.conns = 0
	srv.mu.Unlock()
	sum, err, _ = runToLines(t, context.Background(), Options{IDs: IDs(30, "p"), Targets: []Target{{Name: "s", URL: srv.URL}}, TLSConfig: cfg,
		Rate: vegeta.Rate{Freq: 300, Per: time.Second}})
	if err != nil || !sum.Complete || sum.CodesByTarget["s"]["200"] != 30 {
		t.Fatalf("paced: err %v summary %+v", err, sum)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if w := sum.Pacing.WarmConnections; w == 0 || srv.conns != w {
		t.Errorf("paced: %d TLS connections, %d warm: warm connections were discarded and dialed again", srv.conns, w)
	}
}

// serveRaw accepts TCP connections on 127.0.0.1 until the test ends and
// runs handle on each (closing it after); it returns host:port.
func serveRaw(tb testing.TB, handle func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestStoppedReadsTheContext: a cancelled attack claims no more IDs as soon
// as its context is done, not only once the interrupt's AfterFunc has set
// stop (on a loaded host that goroutine ran late, and a loop sent every
// remaining ID first: TestRunInterrupted saw 200 of 200 sent).
func TestStoppedReadsTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &engine{done: ctx.Done()}
	if e.stopped() {
		t.Fatal("stopped before the cancel")
	}
	cancel()
	if !e.stopped() || e.stop.Load() {
		t.Fatalf("stopped %v, stop flag %v: want stopped by the context alone", e.stopped(), e.stop.Load())
	}
	e = &engine{}
	e.stop.Store(true)
	if !e.stopped() {
		t.Fatal("the stop flag alone")
	}
}
