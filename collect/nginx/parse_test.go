package nginx

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/testfix"
)

func ptr[T any](v T) *T { return &v }

func TestAccessLogValues(t *testing.T) {
	log := strings.Join([]string{
		// rlbench's own format: quoted status, keys, remote_addr.
		`{"id":"r-1","status":"503","upstream_status":"","upstream_addr":"","request_time":0.000,"upstream_response_time":"","limit_req_status":"REJECTED","msec":1796115530.382,"method":"GET","uri":"/a?b=1","connection":7,"remote_addr":"127.0.0.1","pid":4242,"keys":{"rl":"127.0.0.1"}}`,
		``,
		// Unquoted "000" status, "-" values (non-json escape renders not-found as "-").
		`{"id":"-","status":000,"upstream_status":"-","upstream_addr":"127.0.0.1:8080","request_time":"1.5","upstream_response_time":"-","limit_req_status":"-","msec":"12.3456"}`,
		// Two upstream groups (an internal redirect) with three tries.
		`{"http_x_rlbench_id":"r-3","status":200,"upstream_status":"502, 504 : 200","upstream_addr":"10.0.0.1:80, [::1]:81 : unix:/run/x.sock","upstream_response_time":"0.000, 0.300 : 0.001","request_method":"POST","request_uri":"/x"}`,
		// Only $upstream_addr logged, with the group name nginx writes for "no live upstreams".
		`{"id":"r-4","status":502,"upstream_addr":"backend"}`,
	}, "\n")
	recs, err := nginxrec.ParseAccessLog(strings.NewReader(log), "access.log")
	if err != nil {
		t.Fatal(err)
	}
	want := []nginxrec.AccessRecord{
		{Line: 1, ID: "r-1", Status: 503, Method: "GET", URI: "/a?b=1", TimeMs: 1796115530382, RequestTimeMs: ptr(int64(0)),
			LimitReqStatus: nginxrec.LimitReqRejected, Connection: 7, RemoteAddr: "127.0.0.1", Pid: 4242, Keys: map[string]string{"rl": "127.0.0.1"}},
		{Line: 3, Status: 0, TimeMs: 12345, RequestTimeMs: ptr(int64(1500)),
			Upstreams: []nginxrec.UpstreamTry{{Addr: "127.0.0.1:8080", Server: true}}},
		{Line: 4, ID: "r-3", Status: 200, Method: "POST", URI: "/x", Upstreams: []nginxrec.UpstreamTry{
			{Addr: "10.0.0.1:80", Server: true, Status: 502, ResponseTimeMs: ptr(int64(0))},
			{Addr: "[::1]:81", Server: true, Status: 504, ResponseTimeMs: ptr(int64(300))},
			{Addr: "unix:/run/x.sock", Server: true, Status: 200, ResponseTimeMs: ptr(int64(1)), Group: 1},
		}},
		{Line: 5, ID: "r-4", Status: 502, Upstreams: []nginxrec.UpstreamTry{{Addr: "backend"}}},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", recs, want)
	}
	if recs[2].Tries() != 3 || recs[2].Retries() != 2 || recs[2].ServerTries() != 3 || recs[3].ServerTries() != 0 {
		t.Errorf("tries %d retries %d server tries %d / %d", recs[2].Tries(), recs[2].Retries(), recs[2].ServerTries(), recs[3].ServerTries())
	}
	if recs[0].PassedLimiter() || recs[1].PassedLimiter() {
		t.Errorf("PassedLimiter: REJECTED %v, none %v", recs[0].PassedLimiter(), recs[1].PassedLimiter())
	}
	for _, s := range []string{nginxrec.LimitReqPassed, nginxrec.LimitReqDelayed, nginxrec.LimitReqDelayedDryRun, nginxrec.LimitReqRejectedDryRun} {
		if !(nginxrec.AccessRecord{LimitReqStatus: s}).PassedLimiter() {
			t.Errorf("%s should have passed the limiter", s)
		}
	}
	s := nginxrec.Summarize(append(recs, recs[0]))
	if s.Requests != 5 || s.ByStatus[503] != 2 || s.ByLimitReqStatus["none"] != 3 || s.Proxied != 3 || s.Retried != 1 ||
		s.Tries != 5 || s.ServerTries != 4 || s.TriesByAddr["backend"] != 1 || !reflect.DeepEqual(s.DuplicateIDs, []string{"r-1"}) {
		t.Errorf("summary %+v", s)
	}
}

func TestAccessLogErrors(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"text", `127.0.0.1 - - [01/Dec/2026:08:58:50 +0000] "GET / HTTP/1.1" 200`, "access.log:2: not a JSON object"},
		{"default escape", `{"id":"a\x22b","status":200}`, "access.log:2: invalid JSON (is the log_format escape=json?)"},
		{"status", `{"status":"20x"}`, `access.log:2: key "status": "20x" is not an HTTP status`},
		{"status range", `{"status":1000}`, `access.log:2: key "status"`},
		{"request_time", `{"request_time":"abc"}`, `access.log:2: key "request_time": "abc" is not a time in seconds`},
		{"msec", `{"msec":-1.5}`, `access.log:2: key "msec"`},
		{"object value", `{"status":{"a":1}}`, `access.log:2: key "status": want a string or a number`},
		{"shape", `{"upstream_addr":"a:1, b:2","upstream_status":"500"}`, `access.log:2: keys "upstream_addr" and "upstream_status": different numbers of upstream tries`},
		{"groups", `{"upstream_addr":"a:1 : b:2","upstream_status":"500, 200"}`, `different numbers of upstream tries`},
		{"upstream status", `{"upstream_addr":"a:1","upstream_status":"5x"}`, `key "upstream_status": entry "5x"`},
		{"upstream time", `{"upstream_addr":"a:1","upstream_response_time":"x"}`, `key "upstream_response_time": entry "x"`},
		{"keys", `{"keys":["a"]}`, `key "keys": want an object of strings`},
		{"connection", `{"connection":1.5}`, `key "connection"`},
		{"pid", `{"pid":0}`, `key "pid": "0" is not a process ID`},
		{"pid text", `{"pid":"x1"}`, `key "pid"`},
		{"limit_req_status", `{"limit_req_status":"passed"}`, `key "limit_req_status": "passed" is not a $limit_req_status value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := nginxrec.ParseAccessLog(strings.NewReader(`{"id":"ok","status":200}`+"\n"+tc.line+"\n"), "access.log")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	stop := fmt.Errorf("stop")
	n := 0
	err := nginxrec.ReadAccessLog(strings.NewReader("{}\n{}\n{}\n"), "x", func(nginxrec.AccessRecord) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("callback error: got %v after %d records", err, n)
	}
}

func TestParseMillis(t *testing.T) {
	for in, want := range map[string]int64{"0.000": 0, "0.301": 301, "12": 12000, "1.5": 1500, "1.23456": 1234,
		"1796115530.382": 1796115530382} {
		if got, err := nginxrec.ParseMillis(in); err != nil || got != want {
			t.Errorf("ParseMillis(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".5", "-1", "1e3", "1.2.3", "+1", " 1", "9999999999999"} {
		if _, err := nginxrec.ParseMillis(in); err == nil {
			t.Errorf("ParseMillis(%q): no error", in)
		}
	}
}

func TestIsServerAddr(t *testing.T) {
	for in, want := range map[string]bool{"127.0.0.1:80": true, "[::1]:8080": true, "unix:/tmp/s": true,
		"backend": false, "unix:": false, "127.0.0.1": false, "host:80": false, "127.0.0.1:0": false, "": false} {
		if got := nginxrec.IsServerAddr(in); got != want {
			t.Errorf("IsServerAddr(%q) = %v", in, got)
		}
	}
}

func TestErrorLog(t *testing.T) {
	log := strings.Join([]string{
		`nginx: [alert] could not open error log file: open() "/var/log/nginx/error.log" failed (13: Permission denied)`,
		`2026/12/01 08:58:50 [notice] 28318#28318: nginx/1.22.1`,
		`2026/12/01 08:58:50 [info] 28319#28319: *2 client closed connection while waiting for request, client: 127.0.0.1, server: 127.0.0.1:40187`,
		`2026/12/01 08:59:02 [warn] 28494#28494: *4 delaying request, dry run, excess: 1.000, by zone "rl", client: 127.0.0.1, server: , request: "GET / HTTP/1.1", host: "127.0.0.1"`,
		`2026/12/01 08:59:02 [error] 28494#28494: *21 limiting requests, dry run, excess: 5.990 by zone "rl", client: ::1, server: s, request: "GET /a, client: x HTTP/1.1", host: "h", referrer: "http://r/"`,
		``,
		`2026/12/01 08:58:50 [error] 1#1: *20 limiting requests, excess: 10.990 by zone "global-2", client: 127.0.0.1, server: , request: "GET / HTTP/1.1", host: "127.0.0.1"`,
		`2026/12/01 08:58:50 [alert] 1#1: could not allocate node in limit_req zone "rl"`,
		`2026/12/01 08:59:00 [error] 2#2: *4 connect() failed (111: Connection refused) while connecting to upstream, client: 127.0.0.1, server: , request: "GET / HTTP/1.1", upstream: "http://127.0.0.1:33279/", host: "127.0.0.1"`,
		`2026/12/01 08:59:00 [error] 2#2: *5 upstream timed out (110: Connection timed out) while connecting to upstream, client: 127.0.0.1, server: , request: "GET / HTTP/1.1", upstream: "http://[::1]:81/x", host: "127.0.0.1"`,
		`2026/12/01 08:59:00 [error] 2#2: *6 upstream timed out (110: Connection timed out) while reading response header from upstream, client: 127.0.0.1, server: , request: "GET / HTTP/1.1", upstream: "http://127.0.0.1:1/", host: "127.0.0.1"`,
	}, "\n")
	l, err := nginxrec.ParseErrorLog(strings.NewReader(log), "error.log")
	if err != nil {
		t.Fatal(err)
	}
	if l.Lines != 11 || len(l.Entries) != 9 || !reflect.DeepEqual(l.Unparsed, []int{1}) {
		t.Fatalf("lines %d entries %d unparsed %v", l.Lines, len(l.Entries), l.Unparsed)
	}
	e := l.Entries[1]
	if e.Level != "info" || e.PID != 28319 || e.Conn != 2 || e.Message != "client closed connection while waiting for request" ||
		e.Client != "127.0.0.1" || e.Server != "127.0.0.1:40187" || e.Request != "" || e.Limit != nil {
		t.Errorf("entry %+v", e)
	}
	if e := l.Entries[0]; e.Conn != 0 || e.Message != "nginx/1.22.1" || e.Level != "notice" {
		t.Errorf("entry %+v", e)
	}
	wantLimits := []nginxrec.LimitEvent{
		{Action: nginxrec.LimitActionDelay, DryRun: true, ExcessMilli: 1000, Zone: "rl"},
		{Action: nginxrec.LimitActionReject, DryRun: true, ExcessMilli: 5990, Zone: "rl"},
		{Action: nginxrec.LimitActionReject, ExcessMilli: 10990, Zone: "global-2"},
		{Action: nginxrec.LimitActionNoMemory, Zone: "rl"},
	}
	var got []nginxrec.LimitEvent
	for _, e := range l.Limits() {
		got = append(got, *e.Limit)
	}
	if !reflect.DeepEqual(got, wantLimits) {
		t.Errorf("limits %+v", got)
	}
	if e := l.Entries[3]; e.Request != "GET /a, client: x HTTP/1.1" || e.Client != "::1" || e.Server != "s" || e.Host != "h" || e.Referrer != "http://r/" {
		t.Errorf("context %+v", e)
	}
	if c := l.LimitCounts(); !reflect.DeepEqual(c, map[string]int{"delay, dry run": 1, "reject, dry run": 1, "reject": 1, "no_memory": 1}) {
		t.Errorf("counts %v", c)
	}
	var failed []string
	for _, e := range l.Entries {
		if e.ConnectFailed() {
			failed = append(failed, e.UpstreamAddr())
		}
	}
	if !reflect.DeepEqual(failed, []string{"127.0.0.1:33279", "[::1]:81"}) {
		t.Errorf("connect failures %v", failed)
	}
	at, err := l.Entries[0].At(time.UTC)
	if err != nil || at.Unix() != 1796115530 {
		t.Errorf("At: %v %v", at, err)
	}
	// UpstreamHits subtracts connect failures on the record's connection only.
	recs := []nginxrec.AccessRecord{
		{Connection: 4, Upstreams: []nginxrec.UpstreamTry{{Addr: "127.0.0.1:33279", Server: true}, {Addr: "127.0.0.1:1", Server: true}}},
		{Connection: 9, Upstreams: []nginxrec.UpstreamTry{{Addr: "[::1]:81", Server: true}}},
	}
	if h := nginxrec.UpstreamHits(recs, l); !reflect.DeepEqual(h, map[string]int{"127.0.0.1:33279": 0, "127.0.0.1:1": 1, "[::1]:81": 1}) {
		t.Errorf("hits %v", h)
	}
	if h := nginxrec.UpstreamHits(recs, nil); !reflect.DeepEqual(h, map[string]int{"127.0.0.1:33279": 1, "127.0.0.1:1": 1, "[::1]:81": 1}) {
		t.Errorf("hits without error log %v", h)
	}
}

func TestErrorLogErrors(t *testing.T) {
	for _, line := range []string{
		`2026/12/01 08:58:50 [error] 1#1: *20 limiting requests, excess: 6 by zone "rl", client: 127.0.0.1, server: `,
		`2026/12/01 08:58:50 [warn] 1#1: *20 delaying request, excess: 1.000 by zone "rl", client: 127.0.0.1, server: `,
		`2026/12/01 08:58:50 [alert] 1#1: could not allocate node in limit_req zone rl`,
	} {
		_, err := nginxrec.ParseErrorLog(strings.NewReader("\n"+line+"\n"), "error.log")
		if err == nil || !strings.HasPrefix(err.Error(), "error.log:2: limit_req line does not parse") {
			t.Errorf("%q: error %v", line, err)
		}
	}
	_, err := nginxrec.ParseErrorLog(strings.NewReader(`2026/12/01 08:58:50 [error] 99999999999999999999#1: x`), "e")
	if err == nil || !strings.HasPrefix(err.Error(), "e:1: pid") {
		t.Errorf("pid overflow: %v", err)
	}
}

const stubPage = "Active connections: 1 \nserver accepts handled requests\n 24 24 22 \nReading: 0 Writing: 1 Waiting: 0 \n"

func TestStubStatus(t *testing.T) {
	s, err := ParseStubStatus(strings.NewReader(strings.ReplaceAll(stubPage, "\n", "\r\n")), "s")
	if err != nil || s != (nginxrec.StubStatus{Active: 1, Accepts: 24, Handled: 24, Requests: 22, Writing: 1}) {
		t.Fatalf("%+v %v", s, err)
	}
	for _, tc := range []struct{ page, want string }{
		{"", "s:1: stub_status page ends after 0 of its 4 lines"},
		{"Active connections: x\n", `s:1: active connections "x"`},
		{"Active connections: 1\nserver accepts\n", "s:2: want \"server accepts handled requests\""},
		{"Active connections: 1\nserver accepts handled requests\n 1 2\n", "s:3: want three counters"},
		{"Active connections: 1\nserver accepts handled requests\n 1 2 -3\n", `s:3: requests "-3"`},
		{"Active connections: 1\nserver accepts handled requests\n 1 2 3\nReading: 0 Writing: 1\n", "s:4: want \"Reading: r"},
		{stubPage + "extra\n", "s:5: unexpected line"},
		{"<html>404</html>\n", "s:1: want \"Active connections: N\""},
	} {
		if _, err := ParseStubStatus(strings.NewReader(tc.page), "s"); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want prefix %q", tc.page, err, tc.want)
		}
	}
	before := nginxrec.StubStatus{Active: 1, Accepts: 3, Handled: 3, Requests: 1, Writing: 1}
	d, err := Delta(before, nginxrec.StubStatus{Active: 2, Accepts: 10, Handled: 9, Requests: 30})
	if err != nil || d.Accepts != 7 || d.Handled != 6 || d.Requests != 29 || d.Dropped != 1 || d.After.Active != 2 {
		t.Errorf("delta %+v %v", d, err)
	}
	if _, err := Delta(before, nginxrec.StubStatus{Accepts: 1, Handled: 1, Requests: 1}); err == nil || !strings.Contains(err.Error(), "counters went down") {
		t.Errorf("restart: %v", err)
	}
}

func TestFetchStubStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stub_status":
			fmt.Fprint(w, stubPage)
		case "/bad":
			fmt.Fprint(w, "nope\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	raw, s, err := FetchStubStatus(ctx, srv.Client(), srv.URL+"/stub_status")
	if err != nil || string(raw) != stubPage || s.Requests != 22 {
		t.Fatalf("%q %+v %v", raw, s, err)
	}
	raw, _, err = FetchStubStatus(ctx, srv.Client(), srv.URL+"/bad")
	if err == nil || string(raw) != "nope\n" || !strings.Contains(err.Error(), srv.URL+"/bad:1:") {
		t.Errorf("bad page: %q %v", raw, err)
	}
	if _, _, err = FetchStubStatus(ctx, srv.Client(), srv.URL+"/missing"); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("404: %v", err)
	}
}

// fuzzSeeds adds, from the fixture files called name in every capture directory (when shared/ is beside the
// repository; without it only the inline seeds run), each line of a distinct shape (digits ignored) as a seed, and
// with lines true also the first three lines together. Whole files make slow seeds to minimise.
func fuzzSeeds(f *testing.F, name string, lines bool) {
	root := testfix.RepoRoot(f)
	paths, _ := filepath.Glob(filepath.Join(root, "..", "shared", "fixtures", "nginx", "*", name))
	seen := map[string]bool{}
	digits := strings.NewReplacer("1", "0", "2", "0", "3", "0", "4", "0", "5", "0", "6", "0", "7", "0", "8", "0", "9", "0")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if !lines {
			f.Add(string(b))
			continue
		}
		ls := strings.Split(string(b), "\n")
		for _, l := range ls {
			if k := digits.Replace(l); !seen[k] {
				seen[k] = true
				f.Add(l)
			}
		}
		if len(ls) >= 3 {
			f.Add(strings.Join(ls[:3], "\n"))
		}
	}
}

func FuzzParseAccessLog(f *testing.F) {
	fuzzSeeds(f, "access.log", true)
	f.Add(`{"id":"x","status":000,"upstream_addr":"a:1, b : c:2","upstream_status":"-, 502 : 200","upstream_response_time":"0.001, - : 1"}`)
	f.Add(`{"status":"200","keys":{"rl":"k"},"msec":"1.5"}` + "\n\n{}")
	f.Add(`{"id":"a","pid":4242,"msec":1.5,"request_time":0.001}` + "\n" + `{"pid":"-"}`)
	f.Fuzz(func(t *testing.T, s string) {
		recs, err := nginxrec.ParseAccessLog(strings.NewReader(s), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error does not name the source: %v", err)
			}
			return
		}
		last := 0
		for _, a := range recs {
			if a.Line <= last {
				t.Fatalf("line numbers not increasing: %d after %d", a.Line, last)
			}
			last = a.Line
			if a.Status < 0 || a.Status > 999 || a.TimeMs < 0 || a.Pid < 0 || (a.RequestTimeMs != nil && *a.RequestTimeMs < 0) {
				t.Fatalf("out of range: %+v", a)
			}
			prev := 0
			for _, u := range a.Upstreams {
				if u.Server != nginxrec.IsServerAddr(u.Addr) || u.Group < prev || u.Status > 999 {
					t.Fatalf("try %+v", u)
				}
				prev = u.Group
			}
			if a.Retries() != max(a.Tries()-1, 0) || a.ServerTries() > a.Tries() {
				t.Fatalf("counts of %+v", a)
			}
		}
	})
}

func FuzzParseErrorLog(f *testing.F) {
	fuzzSeeds(f, "error.log", true)
	f.Add(`2026/12/01 08:58:50 [alert] 1#1: could not allocate node in limit_req zone "rl"` + "\nnot a line\n")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := nginxrec.ParseErrorLog(strings.NewReader(s), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error does not name the source: %v", err)
			}
			return
		}
		if len(l.Entries)+len(l.Unparsed) > l.Lines {
			t.Fatalf("%d entries + %d unparsed > %d lines", len(l.Entries), len(l.Unparsed), l.Lines)
		}
		for _, e := range l.Entries {
			if e.Limit != nil && (e.Limit.ExcessMilli < 0 || e.Limit.Action == "") {
				t.Fatalf("limit %+v", e.Limit)
			}
			if e.Line < 1 || e.Line > l.Lines {
				t.Fatalf("line %d of %d", e.Line, l.Lines)
			}
		}
	})
}

func FuzzParseStubStatus(f *testing.F) {
	fuzzSeeds(f, "stub_status_before.txt", false)
	fuzzSeeds(f, "stub_status_after.txt", false)
	f.Add(stubPage)
	f.Add("Active connections: 1\n\nserver accepts handled requests\n 1 2 3\nReading: 0 Writing: 1 Waiting: 0")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStubStatus(strings.NewReader(s), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error does not name the source: %v", err)
			}
			return
		}
		// What parses renders back, in nginx's own layout, to a page that parses to the same values.
		page := fmt.Sprintf("Active connections: %d \nserver accepts handled requests\n %d %d %d \nReading: %d Writing: %d Waiting: %d \n",
			st.Active, st.Accepts, st.Handled, st.Requests, st.Reading, st.Writing, st.Waiting)
		again, err := ParseStubStatus(strings.NewReader(page), "again")
		if err != nil || again != st {
			t.Fatalf("round trip: %+v -> %q -> %+v, %v", st, page, again, err)
		}
	})
}

func FuzzParseMillis(f *testing.F) {
	for _, s := range []string{"0.301", "1796115530.382", "12", "1.23456", "-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := nginxrec.ParseMillis(s)
		if err != nil {
			return
		}
		if ms < 0 {
			t.Fatalf("ParseMillis(%q) = %d", s, ms)
		}
		back, err := nginxrec.ParseMillis(fmt.Sprintf("%d.%03d", ms/1000, ms%1000))
		if err != nil || back != ms {
			t.Fatalf("round trip of %q: %d -> %d, %v", s, ms, back, err)
		}
	})
}
