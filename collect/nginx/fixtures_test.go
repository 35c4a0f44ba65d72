package nginx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/testfix"
)

// The captures under shared/fixtures/nginx (README.md there gives the expected counts quoted below; PROVENANCE.md
// how they were made): Debian 12 nginx-light 1.22.1 in front of a small upstream, every request with an
// X-Rlbench-Id.

// clientLine is a line of client.jsonl.
type clientLine struct {
	ID        string `json:"id"`
	SendNs    int64  `json:"send_ns"`
	Code      int    `json:"code"`
	LatencyNs int64  `json:"latency_ns"`
	XLimitReq string `json:"x_limit_req_status"`
	Method    string `json:"method"`
}

// upstreamLine is a line of upstream.jsonl: one receipt of the capture's upstream.
type upstreamLine struct {
	ID     string `json:"id"`
	RecvNs int64  `json:"recv_ns"`
	Port   int    `json:"port"`
	Method string `json:"method"`
}

type metaFile struct {
	UpstreamPorts []int `json:"upstream_ports"`
}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// capture is one fixture directory, parsed.
type capture struct {
	dir      string
	access   []nginxrec.AccessRecord
	errs     *nginxrec.ErrorLog
	before   nginxrec.StubStatus
	after    nginxrec.StubStatus
	clients  []clientLine
	receipts []upstreamLine
	ports    []int
}

func loadCapture(t *testing.T, dir string) *capture {
	t.Helper()
	c := &capture{dir: dir}
	open := func(name string) *os.File {
		f, err := os.Open(testfix.Fixture(t, "nginx", dir+"/"+name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	var err error
	if c.access, err = nginxrec.ParseAccessLog(open("access.log"), dir+"/access.log"); err != nil {
		t.Fatal(err)
	}
	if c.errs, err = nginxrec.ParseErrorLog(open("error.log"), dir+"/error.log"); err != nil {
		t.Fatal(err)
	}
	if c.before, err = ParseStubStatus(open("stub_status_before.txt"), dir+"/stub_status_before.txt"); err != nil {
		t.Fatal(err)
	}
	if c.after, err = ParseStubStatus(open("stub_status_after.txt"), dir+"/stub_status_after.txt"); err != nil {
		t.Fatal(err)
	}
	c.clients = readJSONL[clientLine](t, testfix.Fixture(t, "nginx", dir+"/client.jsonl"))
	c.receipts = readJSONL[upstreamLine](t, testfix.Fixture(t, "nginx", dir+"/upstream.jsonl"))
	var m metaFile
	if err := json.Unmarshal(testfix.ReadFixture(t, "nginx", dir+"/meta.json"), &m); err != nil {
		t.Fatal(err)
	}
	c.ports = m.UpstreamPorts
	return c
}

func (c *capture) byID() map[string]nginxrec.AccessRecord {
	m := map[string]nginxrec.AccessRecord{}
	for _, a := range c.access {
		m[a.ID] = a
	}
	return m
}

// limitsByConn maps a connection number to its limit_req line.
func (c *capture) limitsByConn(t *testing.T) map[int64]nginxrec.ErrorEntry {
	m := map[int64]nginxrec.ErrorEntry{}
	for _, e := range c.errs.Limits() {
		if _, dup := m[e.Conn]; dup {
			t.Fatalf("%s: two limit_req lines on connection *%d", c.dir, e.Conn)
		}
		m[e.Conn] = e
	}
	return m
}

// excessKey renders a limit line's excess as "<action>[, dry run] X.XXX", the form of the README.
func excessKey(l *nginxrec.LimitEvent) string {
	k := l.Action
	if l.DryRun {
		k += ", dry run"
	}
	return fmt.Sprintf("%s %d.%03d", k, l.ExcessMilli/1000, l.ExcessMilli%1000)
}

// fixtureWant is what fixtures/nginx/README.md says of one capture.
type fixtureWant struct {
	dir        string
	codes      map[int]int
	limitReq   map[string]int
	receipts   int
	limitLines map[string]int // by LimitCounts key
	excess     map[string]int // by excessKey
	zone       string         // every limit line names this zone
	burst      int            // of the zone that logged (rejects show excess > burst)
	afterCount [3]int64       // stub_status_after accepts handled requests
}

var fixtureWants = []fixtureWant{
	{dir: "a-rate10-noburst", codes: map[int]int{200: 1, 503: 19}, limitReq: map[string]int{"PASSED": 1, "REJECTED": 19},
		receipts: 1, limitLines: map[string]int{"reject": 19},
		excess: map[string]int{"reject 0.990": 12, "reject 0.980": 5, "reject 0.960": 2},
		zone:   "rl", afterCount: [3]int64{24, 24, 22}},
	{dir: "b-burst5-delay", codes: map[int]int{200: 6, 503: 14}, limitReq: map[string]int{"PASSED": 1, "DELAYED": 5, "REJECTED": 14},
		receipts: 6, limitLines: map[string]int{"delay": 5, "reject": 14},
		excess: map[string]int{"delay 1.000": 1, "delay 2.000": 1, "delay 3.000": 1, "delay 4.000": 1, "delay 5.000": 1,
			"reject 6.000": 6, "reject 5.990": 8},
		zone: "rl", burst: 5, afterCount: [3]int64{24, 24, 22}},
	{dir: "c-burst5-nodelay", codes: map[int]int{200: 9, 503: 16}, limitReq: map[string]int{"PASSED": 9, "REJECTED": 16},
		receipts: 9, limitLines: map[string]int{"reject": 16},
		excess: map[string]int{"reject 5.990": 14, "reject 5.480": 2},
		zone:   "rl", burst: 5, afterCount: [3]int64{29, 29, 27}},
	{dir: "d-burst10-delay4", codes: map[int]int{200: 11, 503: 9}, limitReq: map[string]int{"PASSED": 5, "DELAYED": 6, "REJECTED": 9},
		receipts: 11, limitLines: map[string]int{"delay": 6, "reject": 9},
		excess: map[string]int{"delay 5.000": 1, "delay 5.990": 1, "delay 6.990": 1, "delay 7.990": 1, "delay 8.990": 1,
			"delay 9.990": 1, "reject 10.990": 9},
		zone: "rl", burst: 10, afterCount: [3]int64{24, 24, 22}},
	{dir: "e-status429", codes: map[int]int{200: 1, 429: 19}, limitReq: map[string]int{"PASSED": 1, "REJECTED": 19},
		receipts: 1, limitLines: map[string]int{"reject": 19},
		excess: map[string]int{"reject 1.000": 10, "reject 0.990": 5, "reject 0.980": 4},
		zone:   "rl", afterCount: [3]int64{24, 24, 22}},
	{dir: "f-next-upstream-500", codes: map[int]int{500: 1, 502: 3}, limitReq: map[string]int{"none": 4},
		receipts: 4, afterCount: [3]int64{8, 8, 6}},
	{dir: "f2-next-upstream-500-maxfails0", codes: map[int]int{500: 4}, limitReq: map[string]int{"none": 4},
		receipts: 10, afterCount: [3]int64{8, 8, 6}},
	{dir: "f3-next-upstream-timeout-error", codes: map[int]int{200: 1}, limitReq: map[string]int{"none": 1},
		receipts: 2, afterCount: [3]int64{5, 5, 3}},
	{dir: "h-dry-run", codes: map[int]int{200: 20}, limitReq: map[string]int{"PASSED": 1, "DELAYED_DRY_RUN": 5, "REJECTED_DRY_RUN": 14},
		receipts: 20, limitLines: map[string]int{"delay, dry run": 5, "reject, dry run": 14},
		excess: map[string]int{"delay, dry run 1.000": 1, "delay, dry run 2.000": 1, "delay, dry run 3.000": 1,
			"delay, dry run 3.990": 1, "delay, dry run 4.990": 1, "reject, dry run 5.990": 14},
		zone: "rl", burst: 5, afterCount: [3]int64{24, 24, 22}},
	{dir: "k-two-zones", codes: map[int]int{200: 3, 503: 17}, limitReq: map[string]int{"PASSED": 3, "REJECTED": 17},
		receipts: 3, limitLines: map[string]int{"reject": 17},
		excess: map[string]int{"reject 2.990": 1, "reject 2.992": 1, "reject 2.994": 4, "reject 2.996": 6, "reject 2.998": 5},
		zone:   "global", burst: 2, afterCount: [3]int64{24, 24, 22}},
	{dir: "m-rate1rpm-truncation", codes: map[int]int{200: 2, 503: 1}, limitReq: map[string]int{"PASSED": 2, "REJECTED": 1},
		receipts: 2, limitLines: map[string]int{"reject": 1}, excess: map[string]int{"reject 0.024": 1},
		zone: "rl", afterCount: [3]int64{7, 7, 5}},
	{dir: "x-upstream-backlog5-artifact", codes: map[int]int{200: 20}, limitReq: map[string]int{"PASSED": 1, "DELAYED_DRY_RUN": 5, "REJECTED_DRY_RUN": 14},
		receipts: 20, limitLines: map[string]int{"delay, dry run": 5, "reject, dry run": 14},
		excess: map[string]int{"delay, dry run 1.000": 1, "delay, dry run 2.000": 1, "delay, dry run 3.000": 1,
			"delay, dry run 4.000": 1, "delay, dry run 5.000": 1, "reject, dry run 5.990": 14},
		zone: "rl", burst: 5, afterCount: [3]int64{24, 24, 22}},
}

// TestFixtureCaptures reproduces, for every capture directory, the counts of fixtures/nginx/README.md from the
// parsed access log, error log and stub_status pages, and the README's join rules against client.jsonl and
// upstream.jsonl.
func TestFixtureCaptures(t *testing.T) {
	dirs := map[string]bool{}
	ents, err := os.ReadDir(testfix.SharedFixtureDir(t, "nginx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() && e.Name() != "tools" {
			dirs[e.Name()] = true
		}
	}
	for _, w := range fixtureWants {
		delete(dirs, w.dir)
		t.Run(w.dir, func(t *testing.T) {
			c := loadCapture(t, w.dir)
			s := nginxrec.Summarize(c.access)
			if s.Requests != len(c.clients) || s.IDs != len(c.clients) || len(s.DuplicateIDs) != 0 {
				t.Errorf("%d records, %d with IDs, duplicates %v; want one per client request (%d)", s.Requests, s.IDs, s.DuplicateIDs, len(c.clients))
			}
			if !reflect.DeepEqual(s.ByStatus, w.codes) {
				t.Errorf("statuses %v, want %v", s.ByStatus, w.codes)
			}
			if !reflect.DeepEqual(s.ByLimitReqStatus, w.limitReq) {
				t.Errorf("$limit_req_status %v, want %v", s.ByLimitReqStatus, w.limitReq)
			}
			if len(c.receipts) != w.receipts {
				t.Errorf("upstream.jsonl has %d receipts, README says %d", len(c.receipts), w.receipts)
			}
			// Upstream hits per server from the logs equal the upstream's own receipts per port.
			got := nginxrec.UpstreamHits(c.access, c.errs)
			want := map[string]int{}
			for _, r := range c.receipts {
				want["127.0.0.1:"+strconv.Itoa(r.Port)]++
			}
			for k, v := range got {
				if v == 0 {
					delete(got, k)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("upstream hits from the logs %v, receipts per port %v", got, want)
			}
			// Every client result joins its access record: same status and X-Limit-Req-Status.
			byID := c.byID()
			for _, cl := range c.clients {
				a, ok := byID[cl.ID]
				if !ok {
					t.Errorf("%s: no access record", cl.ID)
					continue
				}
				if a.Status != cl.Code || a.LimitReqStatus != cl.XLimitReq || a.Method != cl.Method {
					t.Errorf("%s: access %d %q %s, client %d %q %s", cl.ID, a.Status, a.LimitReqStatus, a.Method, cl.Code, cl.XLimitReq, cl.Method)
				}
			}
			checkLimitLines(t, c, w)
			checkStubStatus(t, c, w)
		})
	}
	if len(dirs) > 0 {
		t.Errorf("capture directories without expectations here: %v", dirs)
	}
}

func checkLimitLines(t *testing.T, c *capture, w fixtureWant) {
	t.Helper()
	counts := c.errs.LimitCounts()
	if len(counts) == 0 {
		counts = nil
	}
	if !reflect.DeepEqual(counts, w.limitLines) {
		t.Errorf("limit_req lines %v, want %v", counts, w.limitLines)
	}
	excess := map[string]int{}
	for _, e := range c.errs.Limits() {
		excess[excessKey(e.Limit)]++
		if e.Limit.Zone != w.zone {
			t.Errorf("line %d: zone %q, want %q", e.Line, e.Limit.Zone, w.zone)
		}
		if e.Limit.Action == nginxrec.LimitActionReject && e.Limit.ExcessMilli <= int64(w.burst)*1000 {
			t.Errorf("line %d: reject with excess %d ≤ burst %d (nginx rejects only above burst)", e.Line, e.Limit.ExcessMilli, w.burst)
		}
		if e.Client != "127.0.0.1" || e.Request != "GET / HTTP/1.1" || e.Host != "127.0.0.1" {
			t.Errorf("line %d: context client %q request %q host %q", e.Line, e.Client, e.Request, e.Host)
		}
	}
	if len(excess) == 0 {
		excess = nil
	}
	if !reflect.DeepEqual(excess, w.excess) {
		t.Errorf("excess values %v, want %v", excess, w.excess)
	}
	// Each limit line is on the connection of the request whose $limit_req_status it explains.
	byConn := c.limitsByConn(t)
	for _, a := range c.access {
		e, has := byConn[a.Connection]
		want := map[string]string{nginxrec.LimitReqRejected: "reject", nginxrec.LimitReqDelayed: "delay",
			nginxrec.LimitReqRejectedDryRun: "reject, dry run", nginxrec.LimitReqDelayedDryRun: "delay, dry run"}[a.LimitReqStatus]
		switch {
		case want == "" && has:
			t.Errorf("%s (%s): unexpected limit_req line %d", a.ID, a.LimitReqStatus, e.Line)
		case want != "" && !has:
			t.Errorf("%s (%s): no limit_req line on connection *%d", a.ID, a.LimitReqStatus, a.Connection)
		case want != "":
			got := e.Limit.Action
			if e.Limit.DryRun {
				got += ", dry run"
			}
			if got != want {
				t.Errorf("%s (%s): line %d says %s", a.ID, a.LimitReqStatus, e.Line, got)
			}
		}
	}
}

func checkStubStatus(t *testing.T, c *capture, w fixtureWant) {
	t.Helper()
	// README (g): "before" is always 3 3 1 (2 probes and the status request); Active and Writing are 1.
	if c.before != (nginxrec.StubStatus{Active: 1, Accepts: 3, Handled: 3, Requests: 1, Writing: 1}) {
		t.Errorf("before %+v", c.before)
	}
	if got := [3]int64{c.after.Accepts, c.after.Handled, c.after.Requests}; got != w.afterCount || c.after.Active != 1 || c.after.Writing != 1 {
		t.Errorf("after %+v, want counters %v, active 1, writing 1", c.after, w.afterCount)
	}
	d, err := Delta(c.before, c.after)
	if err != nil {
		t.Fatal(err)
	}
	// One connection and one request per client request (Connection: close), plus the second status request.
	if n := int64(len(c.access)) + 1; d.Accepts != n || d.Requests != n || d.Dropped != 0 {
		t.Errorf("delta %+v, want accepts = requests = %d, none dropped", d, n)
	}
}

// TestFixtureNextUpstream checks the proxy_next_upstream captures try by try (README f, f2, f3).
func TestFixtureNextUpstream(t *testing.T) {
	type try struct {
		addr   string // "A", "B", "C" for the capture's upstream ports in meta.json order, or a group name
		status int
	}
	tries := func(c *capture, a nginxrec.AccessRecord) []try {
		var out []try
		for _, u := range a.Upstreams {
			name := u.Addr
			for i, p := range c.ports {
				if u.Addr == "127.0.0.1:"+strconv.Itoa(p) {
					name = string(rune('A' + i))
				}
			}
			if u.Server != (name != u.Addr) {
				t.Errorf("%s: %q Server=%v", a.ID, u.Addr, u.Server)
			}
			out = append(out, try{name, u.Status})
		}
		return out
	}
	t.Run("f", func(t *testing.T) {
		c := loadCapture(t, "f-next-upstream-500")
		want := map[string][]try{
			"f-01": {{"A", 500}, {"B", 500}, {"C", 500}},
			"f-02": {{"C", 500}, {"backend", 502}},
			"f-03": {{"backend", 502}},
			"f-04": {{"backend", 502}},
		}
		for id, a := range c.byID() {
			if got := tries(c, a); !reflect.DeepEqual(got, want[id]) {
				t.Errorf("%s: tries %v, want %v", id, got, want[id])
			}
		}
		if r := c.byID()["f-01"]; r.Retries() != 2 || r.ServerTries() != 3 {
			t.Errorf("f-01: retries %d server tries %d", r.Retries(), r.ServerTries())
		}
		if r := c.byID()["f-03"]; r.Retries() != 0 || r.ServerTries() != 0 || r.Tries() != 1 {
			t.Errorf("f-03: retries %d server tries %d tries %d", r.Retries(), r.ServerTries(), r.Tries())
		}
		msgs := map[string]int{}
		for _, e := range c.errs.Entries {
			msgs[e.Level+" "+e.Message]++
		}
		if msgs["warn upstream server temporarily disabled while reading response header from upstream"] != 3 ||
			msgs["error no live upstreams while connecting to upstream"] != 3 {
			t.Errorf("error log messages %v", msgs)
		}
		s := nginxrec.Summarize(c.access)
		if s.Tries != 7 || s.ServerTries != 4 || s.Retried != 2 || s.Proxied != 4 {
			t.Errorf("summary %+v", s)
		}
	})
	t.Run("f2", func(t *testing.T) {
		c := loadCapture(t, "f2-next-upstream-500-maxfails0")
		want := map[string][]try{ // smooth round robin: A,B,C / C,B,A / A,B,C; the POST is not retried
			"f2-01": {{"A", 500}, {"B", 500}, {"C", 500}},
			"f2-02": {{"C", 500}, {"B", 500}, {"A", 500}},
			"f2-03": {{"A", 500}, {"B", 500}, {"C", 500}},
			"f2-04": {{"C", 500}},
		}
		for id, a := range c.byID() {
			if got := tries(c, a); !reflect.DeepEqual(got, want[id]) {
				t.Errorf("%s: tries %v, want %v", id, got, want[id])
			}
		}
		if a := c.byID()["f2-04"]; a.Method != "POST" || a.Retries() != 0 {
			t.Errorf("f2-04: %s with %d retries", a.Method, a.Retries())
		}
	})
	t.Run("f3", func(t *testing.T) {
		c := loadCapture(t, "f3-next-upstream-timeout-error")
		a := c.byID()["f3-01"]
		if got := tries(c, a); !reflect.DeepEqual(got, []try{{"A", 504}, {"B", 502}, {"C", 200}}) {
			t.Errorf("tries %v", got)
		}
		var rts []int64
		for _, u := range a.Upstreams {
			rts = append(rts, *u.ResponseTimeMs)
		}
		if !reflect.DeepEqual(rts, []int64{301, 0, 1}) || a.Status != 200 || *a.RequestTimeMs != 302 {
			t.Errorf("response times %v status %d request time %d", rts, a.Status, *a.RequestTimeMs)
		}
		var failed []string
		for _, e := range c.errs.Entries {
			if e.ConnectFailed() {
				failed = append(failed, e.UpstreamAddr())
			}
		}
		if !reflect.DeepEqual(failed, []string{"127.0.0.1:" + strconv.Itoa(c.ports[1])}) {
			t.Errorf("connect failures %v, want only B", failed)
		}
	})
}

// TestFixtureDelays checks the delayed requests of b and d against nginx's computed delay: a DELAYED request with
// logged excess E waits (E - delay·1000)·1000/rate ms (ngx_http_limit_req_account), so its upstream receipt comes
// that long after the client's send, up to ~3 ms later and at most 1 ms earlier (the delay timer runs on nginx's
// cached ms clock, ngx_current_msec). In h (dry run) nothing waits.
func TestFixtureDelays(t *testing.T) {
	const rate = 10000 // 10r/s in milli-requests per second
	for _, tc := range []struct {
		dir       string
		threshold int64 // delay=N, in milli-requests
		wantMs    []int64
	}{
		{"b-burst5-delay", 0, []int64{100, 200, 300, 400, 500}},
		{"d-burst10-delay4", 4000, []int64{100, 199, 299, 399, 499, 599}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			c := loadCapture(t, tc.dir)
			send := map[string]int64{}
			for _, cl := range c.clients {
				send[cl.ID] = cl.SendNs
			}
			recv := map[string]int64{}
			for _, r := range c.receipts {
				recv[r.ID] = r.RecvNs
			}
			byConn := c.limitsByConn(t)
			var delays []int64
			for _, a := range c.access {
				if a.LimitReqStatus != nginxrec.LimitReqDelayed {
					continue
				}
				e := byConn[a.Connection]
				delay := (e.Limit.ExcessMilli - tc.threshold) * 1000 / rate
				delays = append(delays, delay)
				waited := float64(recv[a.ID]-send[a.ID]) / 1e6
				if waited < float64(delay)-1 || waited > float64(delay)+3 {
					t.Errorf("%s: upstream receipt %.1f ms after the send, computed delay %d ms", a.ID, waited, delay)
				}
				if *a.RequestTimeMs < delay-1 || *a.RequestTimeMs > delay+3 {
					t.Errorf("%s: $request_time %d ms, computed delay %d ms", a.ID, *a.RequestTimeMs, delay)
				}
			}
			sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
			if !reflect.DeepEqual(delays, tc.wantMs) {
				t.Errorf("computed delays %v, want %v", delays, tc.wantMs)
			}
		})
	}
	t.Run("h-dry-run", func(t *testing.T) {
		c := loadCapture(t, "h-dry-run")
		lo, hi := c.receipts[0].RecvNs, c.receipts[0].RecvNs
		for _, r := range c.receipts {
			lo, hi = min(lo, r.RecvNs), max(hi, r.RecvNs)
		}
		if spread := float64(hi-lo) / 1e6; spread > 9.4 {
			t.Errorf("dry run receipts spread over %.1f ms, README says all within 9.4 ms", spread)
		}
	})
}
