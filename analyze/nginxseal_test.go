package analyze

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/nginxrec"
)

// nginxRetryEv is the nginx retry storm of examples/bursts: 3 requests
// through nginx-a, each tried on 3 failing upstreams (3 receipts, nginx's
// retries, which only its access log tells from client re-sends), every
// client getting the backend's 500, limit_req PASSED; stub_status before
// and after. The
// access log, sealed as the runner writes it, has a record for each
// request but skip; edit, when not nil, changes the scenario before it is
// written.
func nginxRetryEv(t *testing.T, skip string, edit func(*ev)) string {
	t.Helper()
	e := newEv(t)
	e.scenario.IntendedLimit = nil
	three := 3.0
	e.scenario.Expect = evidence.Expectation{Classes: map[string]evidence.Range{"backend_5xx": {Min: 3, Max: 3}},
		Amplification: &evidence.FactorRange{Min: &three, Max: &three}, LimitReqStatus: map[string]evidence.Range{"PASSED": {Min: 3, Max: 3}, "DELAYED": {Min: 0, Max: 0}}}
	var recs []nginxrec.AccessRecord
	for i := range 3 {
		id := fmt.Sprintf("r-%d", i)
		e.requests = append(e.requests, evidence.Request{ID: id, Target: "nginx-a", SentNs: t0 + int64(i)*ms, LatencyNs: ms, Code: 500, BytesIn: 5})
		var up []nginxrec.UpstreamTry
		for k := range 3 {
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: t0 + int64(i)*ms + int64(k)})
			up = append(up, nginxrec.UpstreamTry{Addr: fmt.Sprintf("127.0.0.1:%d", 9000+k), Server: true, Status: 500})
		}
		if id != skip {
			recs = append(recs, nginxrec.AccessRecord{Line: len(recs) + 1, ID: id, Status: 500, LimitReqStatus: nginxrec.LimitReqPassed, Upstreams: up})
		}
	}
	if edit != nil {
		edit(e)
	}
	e.attack["sent"] = len(e.requests)
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.NginxPath("nginx-a", evidence.NginxAccessFile)), recs)
	for label, n := range map[string]int64{evidence.LabelBefore: 1, evidence.LabelAfter: 5} {
		must(t, evidence.WriteNginxStubStatus(evidence.Dir(dir), "nginx-a", label, nil, &nginxrec.StubStatus{Active: 1, Accepts: n, Handled: n, Requests: n, Writing: 1}))
	}
	return dir
}

// TestNginxLostAccessLogIsNeverFail: nginx's access log is the harness's
// record; when it is lost or damaged, the scenario is NOT_RUN, never FAIL
// ("requests without nginx log entry" blamed the system under test for a
// recorder's loss). A sealed, complete log that lacks a request nginx
// answered still FAILs.
func TestNginxLostAccessLogIsNeverFail(t *testing.T) {
	parsed := evidence.NginxPath("nginx-a", evidence.NginxAccessFile)
	raw := evidence.NginxPath("nginx-a", evidence.NginxAccessLogFile)
	for _, tc := range []struct {
		name   string
		skip   string
		damage func(dir string)
		status string
		// checks wanted, by name; reason a fragment of the scenario's reasons.
		checks map[string]string
		reason string
	}{
		{name: "intact", status: evidence.Pass, checks: map[string]string{"requests without nginx log entry": report.CheckPass, "limit_req_status PASSED": report.CheckPass,
			"limit_req_status DELAYED":                               report.CheckPass,
			"nginx-a: stub_status requests = access log records + 1": report.CheckPass, "duplicate receipts (re-sent)": report.CheckPass}},
		{name: "sealed, complete, a request missing", skip: "r-1", status: evidence.Fail,
			checks: map[string]string{"requests without nginx log entry": report.CheckFail}, reason: "requests without nginx log entry: want 0, got 1 (r-1)"},
		{name: "emptied", damage: func(dir string) { must(t, os.Truncate(filepath.Join(dir, parsed), 0)) }, status: evidence.NotRun,
			reason: parsed + ": 0 bytes, but its writer"},
		{name: "last line cut", damage: func(dir string) {
			p := filepath.Join(dir, parsed)
			fi, err := os.Stat(p)
			must(t, err)
			must(t, os.Truncate(p, fi.Size()-7))
		}, status: evidence.NotRun, reason: "but its writer"},
		{name: "removed with the raw log", damage: func(dir string) {
			must(t, os.Remove(filepath.Join(dir, parsed)))
			_ = os.Remove(filepath.Join(dir, raw))
		}, status: evidence.NotRun, reason: parsed + ": missing, but its writer"},
		// A pid no process has, its size kept so the seal holds: the log
		// is damaged, so lost, and nginx is not judged by it (the trial
		// found a FAIL of its admission timing).
		{name: "impossible pid", damage: func(dir string) {
			p := filepath.Join(dir, parsed)
			b, err := os.ReadFile(p)
			must(t, err)
			// valid JSON of the same size: the seal holds
			b2 := strings.Replace(string(b), `"id":"r-0","status":500,`, `"id":"r-0","pid":-1,    `, 1)
			if len(b2) != len(b) || !strings.Contains(b2, `"pid":-1`) {
				t.Fatalf("the test's premise: %q", b2)
			}
			must(t, os.WriteFile(p, []byte(b2), 0o644))
		}, status: evidence.NotRun, checks: map[string]string{"requests without nginx log entry": report.CheckUnknown},
			reason: `key "pid": -1 is not a process ID`},
		// The raw log (no parsed one) with a line that does not parse: lost,
		// not read as far as the line and judged.
		{name: "raw log with a bad line", damage: func(dir string) {
			p := filepath.Join(dir, parsed)
			b, err := os.ReadFile(p)
			must(t, err)
			lines := strings.SplitAfter(string(b), "\n")
			must(t, os.WriteFile(filepath.Join(dir, raw), []byte(lines[0]+`{"id":"r-1","pid":"x"}`+"\n"+lines[2]), 0o644))
			must(t, os.Remove(p))
			must(t, os.Remove(evidence.StatePath(p)))
		}, status: evidence.NotRun, checks: map[string]string{"requests without nginx log entry": report.CheckUnknown, "limit_req_status PASSED": report.CheckUnknown},
			reason: raw + `:2: key "pid": "x" is not a process ID`},
		// An unsealed log (an earlier release's) gone without a trace: the
		// checks it decides are unknown, never failed.
		{name: "removed with its seal", damage: func(dir string) {
			must(t, os.Remove(filepath.Join(dir, parsed)))
			must(t, os.Remove(evidence.StatePath(filepath.Join(dir, parsed))))
		}, status: evidence.NotRun, checks: map[string]string{"requests without nginx log entry": report.CheckUnknown, "limit_req_status PASSED": report.CheckUnknown,
			"limit_req_status DELAYED":                               report.CheckUnknown,
			"nginx-a: stub_status requests = access log records + 1": report.CheckUnknown, "duplicate receipts (re-sent)": report.CheckUnknown},
			reason: "inconclusive: requests without nginx log entry: want 0, got 0; 3 requests answered by nginx-a (nginx/nginx-a: no access.jsonl nor access.log), whose access log is absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := nginxRetryEv(t, tc.skip, nil)
			if tc.damage != nil {
				tc.damage(dir)
			}
			s := run(t, dir).Scenarios[0]
			if s.Status != tc.status {
				t.Errorf("status %s, want %s; reasons %q", s.Status, tc.status, s.Reasons)
			}
			for name, st := range tc.checks {
				if c := mustCheck(t, s, name); c.Status != st {
					t.Errorf("%s: %+v, want %s", name, c, st)
				}
			}
			if tc.status != evidence.Fail {
				for _, c := range s.Checks {
					if c.Status == report.CheckFail {
						t.Errorf("a lost log fails %+v", c)
					}
				}
			}
			if !strings.Contains(strings.Join(s.Reasons, "\n"), tc.reason) {
				t.Errorf("reasons %q, want %q", s.Reasons, tc.reason)
			}
		})
	}
}

// TestNginxLostLogOfOneProxy: a second proxy, nginx-b, answered a request
// and has no access log (its directory holds only stub_status). Its
// requests are unknown, never missing; a limit_req_status count already
// above its range from nginx-a's complete log still fails as a check
// (nginx-b's records could only add to it), one within its range is
// unknown; the scenario is NOT_RUN, the lost log named among its reasons.
func TestNginxLostLogOfOneProxy(t *testing.T) {
	dir := nginxRetryEv(t, "", func(e *ev) {
		e.scenario.Expect.LimitReqStatus = map[string]evidence.Range{"PASSED": {Min: 0, Max: 1}, "REJECTED": {Min: 0, Max: 5}}
		e.requests = append(e.requests, evidence.Request{ID: "b-0", Target: "nginx-b", SentNs: t0, LatencyNs: ms, Code: 503, BytesIn: 5})
	})
	st := nginxrec.StubStatus{Active: 1, Accepts: 1, Handled: 1, Requests: 1, Writing: 1}
	must(t, evidence.WriteNginxStubStatus(evidence.Dir(dir), "nginx-b", evidence.LabelBefore, nil, &st))
	s := run(t, dir).Scenarios[0]
	if s.Nginx == nil || s.Nginx.MissingCount != 0 || len(s.Nginx.Proxies) != 2 || s.Nginx.Proxies[1].File != "" {
		t.Fatalf("nginx %+v", s.Nginx)
	}
	lost := "1 request answered by nginx-b (nginx/nginx-b: no access.jsonl nor access.log), whose access log is absent"
	for name, want := range map[string]report.Check{
		"requests without nginx log entry": {Status: report.CheckUnknown, Want: "0", Got: "0; " + lost},
		"limit_req_status PASSED":          {Status: report.CheckFail, Want: "0..1", Got: "3; " + lost},
		"limit_req_status REJECTED":        {Status: report.CheckUnknown, Want: "0..5", Got: "0; " + lost},
	} {
		if c := mustCheck(t, s, name); c.Status != want.Status || c.Want != want.Want || c.Got != want.Got {
			t.Errorf("%s: %+v, want %+v", name, c, want)
		}
	}
	if s.Status != evidence.NotRun || !strings.Contains(strings.Join(s.Reasons, "\n"), "incomplete: "+lost+": the requests it answered are not judged") {
		t.Errorf("status %s, reasons %q", s.Status, s.Reasons)
	}
}

// TestNginxLostStubStatusAndLimitReq: the check "stub_status requests =
// access log records + 1" needs both snapshots; with one of the pair gone
// it is unknown (NOT_RUN, the missing file named), never dropped (previous
// release: the check vanished and the scenario PASSed). limit_req.jsonl is
// read by no check: emptied after it was written, it is a notice in the
// report and in the table, the verdict unchanged.
func TestNginxLostStubStatusAndLimitReq(t *testing.T) {
	const check = "nginx-a: stub_status requests = access log records + 1"
	for _, label := range []string{evidence.LabelAfter, evidence.LabelBefore} {
		dir := nginxRetryEv(t, "", nil)
		gone := evidence.NginxPath("nginx-a", evidence.NginxStubStatusJSON(label))
		must(t, os.Remove(filepath.Join(dir, gone)))
		s := run(t, dir).Scenarios[0]
		c := checkNamed(s, check)
		if c == nil || c.Status != report.CheckUnknown || !strings.Contains(c.Got, gone+": missing") {
			t.Errorf("%s removed: check %+v, want unknown naming %s", label, c, gone)
		}
		if s.Status != evidence.NotRun {
			t.Errorf("%s removed: status %s, want NOT_RUN; reasons %q", label, s.Status, s.Reasons)
		}
	}
	// No snapshot at all (collect nginx without a status URL): nothing to
	// compare, as before.
	dir := nginxRetryEv(t, "", nil)
	for _, label := range []string{evidence.LabelBefore, evidence.LabelAfter} {
		must(t, os.Remove(filepath.Join(dir, evidence.NginxPath("nginx-a", evidence.NginxStubStatusJSON(label)))))
	}
	if s := run(t, dir).Scenarios[0]; checkNamed(s, check) != nil || s.Status != evidence.Pass {
		t.Errorf("no snapshots: %+v, status %s %q", checkNamed(s, check), s.Status, s.Reasons)
	}

	// limit_req.jsonl, sealed with one line, then emptied.
	dir = nginxRetryEv(t, "", nil)
	lr := evidence.NginxPath("nginx-a", evidence.NginxLimitReqFile)
	writeLines(t, filepath.Join(dir, lr), []nginxrec.ErrorEntry{{Line: 1, Time: "2026/12/07 01:00:00", Level: "error", PID: 1, Message: "limiting requests, excess: 0.500 by zone \"rl\""}})
	must(t, os.Truncate(filepath.Join(dir, lr), 0))
	rep := run(t, dir)
	s := rep.Scenarios[0]
	if s.Status != evidence.Pass {
		t.Errorf("emptied limit_req.jsonl: status %s, want PASS (no check reads it); reasons %q", s.Status, s.Reasons)
	}
	if n := strings.Join(s.Notices, "\n"); !strings.Contains(n, lr+": 0 bytes, but its writer") || !strings.Contains(n, "no check reads it") {
		t.Errorf("notices %q, want %s named", s.Notices, lr)
	}
	var b strings.Builder
	must(t, report.WriteTable(&b, rep))
	if !strings.Contains(b.String(), "two local buckets: notice: "+filepath.Join(dir, lr)+": 0 bytes") {
		t.Errorf("table without the notice:\n%s", b.String())
	}
	b.Reset()
	must(t, report.WriteMarkdown(&b, rep))
	if !strings.Contains(b.String(), "- notice: ") || !strings.Contains(b.String(), "0 bytes, but its writer") {
		t.Errorf("markdown without the notice:\n%s", b.String())
	}
	b.Reset()
	must(t, report.WriteHTML(&b, rep))
	if !strings.Contains(b.String(), `<ul class="notices">`) || !strings.Contains(b.String(), "0 bytes, but its writer") {
		t.Errorf("HTML without the notice")
	}
}
