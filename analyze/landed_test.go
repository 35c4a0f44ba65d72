package analyze

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// TestLandedWithin: expect.landed_within judges the width the burst landed
// at, never the limiter: met it passes beside the other checks; wider it
// is unknown and the scenario NOT_RUN even where the rest passes; measured
// at the backend without access logs, and in the proxy's own access log
// when it records every request (its clock, its times win).
func TestLandedWithin(t *testing.T) {
	const name = "burst landed within 10ms"
	burst := func(gap time.Duration, n int) []int64 {
		var recv []int64
		for i := range n {
			recv = append(recv, int64(i)*int64(gap))
		}
		return recv
	}
	// 100 receipts 50 µs apart: 4.95 ms wide.
	e := burstEv(t, burst(50*time.Microsecond, 100))
	e.scenario.Expect.LandedWithin = model.Duration(10 * time.Millisecond)
	s := run(t, e.write()).Scenarios[0]
	if c := mustCheck(t, s, name); c.Status != report.CheckPass || c.Got != "100 requests landed over 4.95ms at the backend (receipts)" || s.Status != evidence.Pass {
		t.Errorf("narrow: %+v, status %s", c, s.Status)
	}
	// 100 receipts 1 ms apart: 99 ms wide, the rest of the checks pass.
	e = burstEv(t, burst(time.Millisecond, 100))
	e.scenario.Expect.LandedWithin = model.Duration(10 * time.Millisecond)
	s = run(t, e.write()).Scenarios[0]
	if c := mustCheck(t, s, name); c.Status != report.CheckUnknown || !strings.Contains(c.Got, "landed over 99ms at the backend") || s.Status != evidence.NotRun {
		t.Errorf("wide: %+v, status %s", c, s.Status)
	}
	if !strings.Contains(strings.Join(s.Reasons, "\n"), "inconclusive: "+name) {
		t.Errorf("reasons %q", s.Reasons)
	}
	// Alone, a met landing proves nothing about a limiter: not PASS.
	e = burstEv(t, burst(50*time.Microsecond, 100))
	e.scenario.Expect = evidence.Expectation{LandedWithin: model.Duration(10 * time.Millisecond)}
	s = run(t, e.write()).Scenarios[0]
	if c := checkNamed(s, name); c != nil && c.Status != report.CheckNotChecked || s.Status != evidence.NotRun {
		t.Errorf("alone: %+v, status %s", c, s.Status)
	}
	// A request without a receipt and no access log: the width is not measured.
	e = burstEv(t, burst(50*time.Microsecond, 100))
	e.scenario.Expect = evidence.Expectation{LandedWithin: model.Duration(10 * time.Millisecond), Admitted: evidence.AdmittedIn(evidence.Range{Min: 0, Max: 99})}
	e.receipts = e.receipts[:99]
	s = run(t, e.write()).Scenarios[0]
	if c := checkNamed(s, name); c == nil || c.Status != report.CheckUnknown || !strings.Contains(c.Got, "not measured") || s.Status == evidence.Pass {
		t.Errorf("unmeasured: %+v, status %s %q", c, s.Status, s.Reasons)
	}
	// The proxy's access log records every request 1 ms apart (99 ms) though
	// the receipts are 4.95 ms wide: the limiter's own times are judged.
	e = burstEv(t, burst(50*time.Microsecond, 100))
	e.scenario.Expect.LandedWithin = model.Duration(10 * time.Millisecond)
	var lines []string
	for i := range 100 {
		at := time.Unix(0, t0+int64(i)*int64(time.Millisecond)).UTC().Format("2006-01-02T15:04:05.000Z")
		lines = append(lines, fmt.Sprintf(`{"start_time":%q,"response_code":200,"response_flags":"-","response_code_details":"via_upstream","upstream_host":"127.0.0.1:8080","rlbench_id":"id-%03d"}`, at, i))
	}
	must(t, os.MkdirAll(filepath.Join(e.dir, evidence.AccessLogDir), 0o755))
	must(t, os.WriteFile(filepath.Join(e.dir, evidence.AccessLogDir, "proxy-a.log"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	s = run(t, e.write()).Scenarios[0]
	if c := mustCheck(t, s, name); c.Status != report.CheckUnknown || !strings.Contains(c.Got, "100 requests landed over 99ms in the access log of proxy-a") {
		t.Errorf("access log: %+v", c)
	}
	// An nginx access log times every request on nginx's 1 ms clock ($msec
	// - $request_time): k ms between the first and the last record is at
	// most k+1 ms wide, judged so. The receipts (4.95 ms) do not count.
	for _, tc := range []struct {
		per    int // requests per ms
		status string
		got    string
	}{
		{12, report.CheckPass, "100 requests landed over 9ms in the access log of nginx proxy-a (1 ms resolution)"},
		{10, report.CheckPass, "100 requests landed over 10ms in the access log of nginx proxy-a (1 ms resolution)"},
		{9, report.CheckUnknown, "100 requests landed over 12ms in the access log of nginx proxy-a (1 ms resolution): wider"},
	} {
		e = burstEv(t, burst(50*time.Microsecond, 100))
		e.scenario.Expect.LandedWithin = model.Duration(10 * time.Millisecond)
		lines = lines[:0]
		for i := range 100 {
			ms := t0/int64(time.Millisecond) + int64(i/tc.per)
			lines = append(lines, fmt.Sprintf(`{"id":"id-%03d","status":"200","upstream_status":"200","upstream_addr":"127.0.0.1:8080","request_time":0.000,"upstream_response_time":"0.000","limit_req_status":"PASSED","msec":%d.%03d}`,
				i, ms/1000, ms%1000))
		}
		must(t, os.MkdirAll(filepath.Join(e.dir, evidence.NginxPath("proxy-a", "")), 0o755))
		must(t, os.WriteFile(filepath.Join(e.dir, evidence.NginxPath("proxy-a", evidence.NginxAccessLogFile)), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
		s = run(t, e.write()).Scenarios[0]
		if c := mustCheck(t, s, name); c.Status != tc.status || !strings.Contains(c.Got, tc.got) {
			t.Errorf("nginx, %d per ms: %+v, want %s %q", tc.per, c, tc.status, tc.got)
		}
	}
}

// TestLandedWithinRefusedOutOfRange: a negative or over-an-hour width is a
// bad expectation, named by its path.
func TestLandedWithinRefusedOutOfRange(t *testing.T) {
	for _, w := range []time.Duration{-time.Millisecond, 2 * time.Hour} {
		e := evidence.Expectation{LandedWithin: model.Duration(w)}
		if p, err := e.CheckCounts(); p != "expect.landed_within" || err == nil {
			t.Errorf("%v: %q %v", w, p, err)
		}
	}
	e := evidence.Expectation{LandedWithin: model.Duration(10 * time.Millisecond)}
	if _, err := e.CheckCounts(); err != nil {
		t.Error(err)
	}
}

// TestLandedWidthOneFigure: the harness line and expect.landed_within give
// the same width of a burst that nginx records to the ms: records 8 ms
// apart put the requests within at most 9 ms, the figure the check judges
// (previous release: the harness line said "over 8ms", the check "over
// 9ms").
func TestLandedWidthOneFigure(t *testing.T) {
	e := burstEv(t, nil)
	e.scenario.Expect.LandedWithin = model.Duration(10 * time.Millisecond)
	var lines []string
	for i := range 100 {
		id := fmt.Sprintf("id-%03d", i)
		sent := t0 + int64(i)*85_000 // 100 sends over 8.415 ms
		e.requests = append(e.requests, evidence.Request{ID: id, Target: "proxy-a", SentNs: sent, LatencyNs: 500_000, Code: 200, BytesIn: 2})
		e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: sent + 200_000})
		ms := (sent + 100_000) / int64(time.Millisecond) // nginx's cached clock: 0 .. 8 ms after t0
		lines = append(lines, fmt.Sprintf(`{"id":%q,"status":"200","upstream_status":"200","upstream_addr":"127.0.0.1:8080","request_time":0.000,"upstream_response_time":"0.000","limit_req_status":"PASSED","msec":%d.%03d}`,
			id, ms/1000, ms%1000))
	}
	e.attack["sent"] = 100
	must(t, os.MkdirAll(filepath.Join(e.dir, evidence.NginxPath("proxy-a", "")), 0o755))
	must(t, os.WriteFile(filepath.Join(e.dir, evidence.NginxPath("proxy-a", evidence.NginxAccessLogFile)), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	s := run(t, e.write()).Scenarios[0]
	c := mustCheck(t, s, "burst landed within 10ms")
	if c.Status != report.CheckPass || !strings.Contains(c.Got, "100 requests landed over 9ms in the access log of nginx proxy-a (1 ms resolution)") {
		t.Errorf("check: %+v", c)
	}
	if s.Harness == nil || s.Harness.Seen != 100 {
		t.Fatalf("harness %+v", s.Harness)
	}
	if h := s.Harness.String(); !strings.Contains(h, "seen by the limiters over at most 9ms (records 8ms apart, 1 ms resolution)") {
		t.Errorf("harness line %q: want the check's 9ms, the records' 8ms named as such", h)
	}
}
