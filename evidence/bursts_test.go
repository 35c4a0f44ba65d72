package evidence

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/model"
)

// TestLoadReceiptAttemptsAndEndpoints: the receipts' x-envoy-attempt-count
// and endpoint become columns, whether the scanner or the full decoder
// reads the line, across chunk boundaries; receipts without them get 0 and "".
func TestLoadReceiptAttemptsAndEndpoints(t *testing.T) {
	for _, cb := range []int64{64, 300, 16 << 20} {
		old := chunkBytes
		chunkBytes = cb
		dir := t.TempDir()
		var reqs []Request
		for i := range 4 {
			reqs = append(reqs, Request{ID: fmt.Sprintf("id-%d", i), Target: "proxy-a", Code: 503})
		}
		writeFile(t, Dir(dir).Requests(), lines(t, reqs))
		recs := strings.Join([]string{
			`{"id":"id-0","recv_ns":1}`, // a receipt of an older backend: no endpoint, no header
			`{"id":"id-1","recv_ns":2,"headers":{"x-envoy-attempt-count":"1"},"endpoint":"backend-0","status":503,"fault":"error"}`,
			`{"id":"id-1","recv_ns":3,"headers":{"x-envoy-attempt-count":"2"},"endpoint":"backend-2","status":503}`,
			`{"id":"id-1","recv_ns":4,"headers":{"X-Envoy-Attempt-Count":"3"},"endpoint":"backend-1"}`, // full decode
			`{"id":"id-2","recv_ns":5,"headers":{"x-envoy-attempt-count":"zero"},"endpoint":"backend-\u0030"}`,
			`{"id":"id-3","recv_ns":6,"endpoint":"backend-1"}`,
		}, "\n") + "\n"
		writeFile(t, Dir(dir).Receipts(), recs)
		s := LoadScenario(context.Background(), dir, false)
		chunkBytes = old
		if ps := append(problemsOf(s, RequestsFile), problemsOf(s, ReceiptsFile)...); len(ps) > 0 {
			t.Fatalf("chunk %d: %v", cb, ps)
		}
		rc := &s.Receipts
		var attempts []int
		var endpoints []string
		for i := 0; i < rc.Len(); i++ {
			attempts = append(attempts, rc.AttemptOf(i))
			endpoints = append(endpoints, rc.EndpointOf(i))
		}
		if want := []int{0, 1, 2, 3, 0, 0}; !reflect.DeepEqual(attempts, want) {
			t.Errorf("chunk %d: attempts %v, want %v", cb, attempts, want)
		}
		if want := []string{"", "backend-0", "backend-2", "backend-1", "backend-0", "backend-1"}; !reflect.DeepEqual(endpoints, want) {
			t.Errorf("chunk %d: endpoints %v, want %v", cb, endpoints, want)
		}
	}
	// No receipt names either: no columns.
	dir := t.TempDir()
	writeFile(t, Dir(dir).Requests(), lines(t, []Request{{ID: "a", Code: 200}}))
	writeFile(t, Dir(dir).Receipts(), `{"id":"a","recv_ns":1,"headers":{"x-request-id":"r"}}`+"\n")
	s := LoadScenario(context.Background(), dir, false)
	if s.Receipts.Attempt != nil || s.Receipts.Endpoint != nil || s.Receipts.AttemptOf(0) != 0 || s.Receipts.EndpointOf(0) != "" {
		t.Errorf("columns without data: %+v", s.Receipts)
	}
	// Receipts.Add fills the same columns.
	var rs Receipts
	var q Requests
	q.Add(&Request{ID: "a"})
	rs.Add(&q, &Receipt{ID: ptr("a"), RecvNs: 1})
	rs.Add(&q, &Receipt{ID: ptr("a"), RecvNs: 2, Headers: map[string]string{"x-envoy-attempt-count": "2"}, Endpoint: "backend-1"})
	if rs.AttemptOf(0) != 0 || rs.AttemptOf(1) != 2 || rs.EndpointOf(0) != "" || rs.EndpointOf(1) != "backend-1" {
		t.Errorf("Add: %+v", rs)
	}
}

func TestParseAttemptCount(t *testing.T) {
	for s, want := range map[string]uint16{"1": 1, "4": 4, "65535": 65535, "0": 0, "65536": 0, "-1": 0, "": 0, "1.5": 0, " 2": 0, "123456": 0} {
		if got := ParseAttemptCount(s); got != want {
			t.Errorf("ParseAttemptCount(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestLoadNginx: nginx/<proxy>/access.jsonl (parsed) wins over access.log
// (raw, parsed at load), stub_status before/after are read, and a bad line
// is a Problem naming the file and line while the other proxy still loads.
func TestLoadNginx(t *testing.T) {
	dir := t.TempDir()
	d := Dir(dir)
	writeFile(t, d.Requests(), lines(t, []Request{{ID: "a", Target: "nginx-a", Code: 200}, {ID: "b", Target: "nginx-a", Code: 503}}))
	rec := []nginxrec.AccessRecord{
		{Line: 1, ID: "a", Status: 200, LimitReqStatus: nginxrec.LimitReqPassed, Upstreams: []nginxrec.UpstreamTry{{Addr: "127.0.0.1:1", Server: true, Status: 200}}},
		{Line: 2, ID: "b", Status: 503, LimitReqStatus: nginxrec.LimitReqRejected},
	}
	writeFile(t, d.Path(NginxPath("nginx-a", NginxAccessFile)), lines(t, rec))
	writeFile(t, d.Path(NginxPath("nginx-a", NginxAccessLogFile)), "not even JSON\n") // ignored: the parsed file wins
	before, _ := json.Marshal(nginxrec.StubStatus{Active: 1, Accepts: 3, Handled: 3, Requests: 1, Writing: 1})
	after, _ := json.Marshal(nginxrec.StubStatus{Active: 1, Accepts: 6, Handled: 6, Requests: 4, Writing: 1})
	writeFile(t, d.Path(NginxPath("nginx-a", NginxStubStatusJSON(LabelBefore))), string(before))
	writeFile(t, d.Path(NginxPath("nginx-a", NginxStubStatusJSON(LabelAfter))), string(after))
	// nginx-b has only the raw log, in rlbench's log_format.
	writeFile(t, d.Path(NginxPath("nginx-b", NginxAccessLogFile)),
		`{"id":"c","status":"429","upstream_status":"","upstream_addr":"","request_time":0.000,"upstream_response_time":"","limit_req_status":"REJECTED","msec":1796115529.123}`+"\n")
	// nginx-c has a bad parsed line.
	writeFile(t, d.Path(NginxPath("nginx-c", NginxAccessFile)), `{"line":1,"status":200}`+"\n"+`{"line":2,`+"\n")
	s := LoadScenario(context.Background(), dir, false)
	if len(s.Nginx) != 3 {
		t.Fatalf("%d nginx proxies: %+v", len(s.Nginx), s.Nginx)
	}
	a, b, c := s.Nginx[0], s.Nginx[1], s.Nginx[2]
	if a.Proxy != "nginx-a" || a.File != NginxPath("nginx-a", NginxAccessFile) || len(a.Records) != 2 || a.Records[1].LimitReqStatus != nginxrec.LimitReqRejected ||
		a.Before == nil || a.After == nil || a.After.Requests != 4 {
		t.Errorf("nginx-a: %+v", a)
	}
	if b.File != NginxPath("nginx-b", NginxAccessLogFile) || len(b.Records) != 1 || b.Records[0].Status != 429 || b.Records[0].TimeMs != 1796115529123 ||
		b.Before != nil {
		t.Errorf("nginx-b: %+v", b)
	}
	ps := problemsOf(s, NginxDir)
	if c.Proxy != "nginx-c" || len(ps) != 1 || !strings.Contains(ps[0], NginxPath("nginx-c", NginxAccessFile)+":2:") {
		t.Errorf("nginx-c: %+v, problems %v", c, ps)
	}
	// A run directory's nginx/ is never taken for a scenario directory.
	if IsScenarioDir(d.Path(NginxDir)) {
		t.Error("nginx/ is a scenario dir")
	}
}

func TestPeakExpectations(t *testing.T) {
	var e Expectation
	if err := json.Unmarshal([]byte(`{"backend_peak":{"window":"10ms","max":20},"amplification":{"max":4}}`), &e); err != nil {
		t.Fatal(err)
	}
	if len(e.BackendPeak) != 1 || time.Duration(e.BackendPeak[0].Window) != 10*time.Millisecond || *e.BackendPeak[0].Max != 20 ||
		e.Amplification == nil || *e.Amplification.Max != 4 || e.Amplification.Min != nil {
		t.Fatalf("%+v", e)
	}
	if err := json.Unmarshal([]byte(`{"backend_peak":[{"window":"10ms","model":true},{"window":"1s","min":3,"max":9,"target":"nginx-a"}]}`), &e); err != nil {
		t.Fatal(err)
	}
	if len(e.BackendPeak) != 2 || !e.BackendPeak[0].Model || e.BackendPeak[0].EffectiveTolerance() != DefaultPeakTolerance || e.BackendPeak[1].Target != "nginx-a" {
		t.Fatalf("%+v", e.BackendPeak)
	}
	out, _ := json.Marshal(e)
	if !strings.Contains(string(out), `"backend_peak":[{"window":"10ms","model":true}`) {
		t.Errorf("written as %s", out)
	}
	one, two, nine := 1, 2, 9
	for _, c := range []struct {
		p   PeakExpectation
		bad string
	}{
		{PeakExpectation{Window: 0, Max: &one}, "window"},
		{PeakExpectation{Window: durationOf(2 * time.Hour), Max: &one}, "window"},
		{PeakExpectation{Window: durationOf(time.Millisecond)}, "give max, min or model"},
		{PeakExpectation{Window: durationOf(time.Millisecond), Min: &nine, Max: &two}, "min 9 > max 2"},
		{PeakExpectation{Window: durationOf(time.Millisecond), Model: true, Tolerance: durationOf(-time.Millisecond)}, "tolerance"},
		{PeakExpectation{Window: durationOf(time.Millisecond), Model: true}, ""},
	} {
		err := c.p.Validate()
		if (err == nil) != (c.bad == "") || err != nil && !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.bad)
		}
	}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		r    FactorRange
		s    string
		in   []float64
		out  []float64
		bad  bool
		text string
	}{
		{FactorRange{Max: f(4)}, "<= 4", []float64{0, 4}, []float64{4.01}, false, ""},
		{FactorRange{Min: f(2.5), Max: f(3)}, "2.5..3", []float64{2.5, 3}, []float64{2.4, 3.1}, false, ""},
		{FactorRange{Min: f(1)}, ">= 1", []float64{1, 100}, []float64{0.9}, false, ""},
		{FactorRange{}, "any", nil, nil, true, "give min or max"},
		{FactorRange{Min: f(3), Max: f(2)}, "3..2", nil, nil, true, "min 3 > max 2"},
	} {
		if c.r.String() != c.s {
			t.Errorf("%+v: String %q, want %q", c.r, c.r.String(), c.s)
		}
		for _, v := range c.in {
			if !c.r.Contains(v) {
				t.Errorf("%s does not contain %v", c.s, v)
			}
		}
		for _, v := range c.out {
			if c.r.Contains(v) {
				t.Errorf("%s contains %v", c.s, v)
			}
		}
		if err := c.r.Validate(); (err != nil) != c.bad || err != nil && !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: Validate %v", c.s, err)
		}
	}
}

func durationOf(d time.Duration) model.Duration { return model.Duration(d) }

// TestWriteNginxEvidenceLoads: what the WriteNginx* functions write is what
// Load reads back, raw copies byte for byte.
func TestWriteNginxEvidenceLoads(t *testing.T) {
	dir := t.TempDir()
	d := Dir(dir)
	writeFile(t, d.Requests(), lines(t, []Request{{ID: "a", Target: "nginx-a", Code: 503}}))
	access := `{"id":"a","status":"503","upstream_status":"","upstream_addr":"","request_time":0.000,"upstream_response_time":"","limit_req_status":"REJECTED","msec":1796115529.123}` + "\n"
	errlog := `2026/12/01 08:58:50 [error] 28319#28319: *20 limiting requests, excess: 6.000 by zone "rl", client: 127.0.0.1, server: , request: "GET / HTTP/1.1", host: "127.0.0.1"` + "\n"
	recs, err := WriteNginxAccessLog(d, "nginx-a", "access.log", strings.NewReader(access))
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	l, err := WriteNginxErrorLog(d, "nginx-a", "error.log", strings.NewReader(errlog))
	if err != nil || len(l.Limits()) != 1 {
		t.Fatalf("%+v %v", l, err)
	}
	st := nginxrec.StubStatus{Active: 1, Accepts: 3, Handled: 3, Requests: 1, Writing: 1}
	raw := "Active connections: 1 \nserver accepts handled requests\n 3 3 1 \nReading: 0 Writing: 1 Waiting: 0 \n"
	if err := WriteNginxStubStatus(d, "nginx-a", LabelBefore, []byte(raw), &st); err != nil {
		t.Fatal(err)
	}
	if err := WriteNginxStubStatus(d, "nginx-a", LabelAfter, []byte("garbage"), nil); err != nil { // a page that did not parse: raw only
		t.Fatal(err)
	}
	if err := WriteNginxConf(d, "nginx-a", []byte("daemon off;\n")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{NginxAccessLogFile: access, NginxErrorLogFile: errlog, NginxStubStatusRaw(LabelBefore): raw,
		NginxStubStatusRaw(LabelAfter): "garbage", NginxConfFile: "daemon off;\n"} {
		b, err := os.ReadFile(d.Path(NginxPath("nginx-a", name)))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	s := LoadScenario(context.Background(), dir, false)
	if len(s.Nginx) != 1 || len(s.Nginx[0].Records) != 1 || s.Nginx[0].Records[0].LimitReqStatus != nginxrec.LimitReqRejected ||
		s.Nginx[0].Before == nil || *s.Nginx[0].Before != st || s.Nginx[0].After != nil || len(problemsOf(s, NginxDir)) != 0 {
		t.Errorf("loaded %+v, problems %v", s.Nginx, problemsOf(s, NginxDir))
	}
	if _, err := WriteNginxAccessLog(d, "nginx-b", "bad.log", strings.NewReader("{not json\n")); err == nil || !strings.Contains(err.Error(), "bad.log:1") {
		t.Errorf("bad access log: %v", err)
	}
}

// FuzzPeakExpectations: whatever decodes as backend_peak re-encodes and
// decodes to the same list.
func FuzzPeakExpectations(f *testing.F) {
	f.Add([]byte(`{"window":"10ms","max":20}`))
	f.Add([]byte(`[{"window":"10ms","model":true,"tolerance":"2ms"},{"window":"1s","min":1,"target":"nginx-a"}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var l PeakExpectations
		if err := json.Unmarshal(b, &l); err != nil {
			return
		}
		out, err := json.Marshal(l)
		if err != nil {
			t.Fatalf("%q decoded to %+v, which does not encode: %v", b, l, err)
		}
		var back PeakExpectations
		if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(l, back) {
			t.Fatalf("%q: %+v -> %s -> %+v (%v)", b, l, out, back, err)
		}
	})
}
