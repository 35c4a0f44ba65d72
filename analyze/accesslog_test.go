package analyze

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// producerCase is one response seen by a client and logged by its proxy.
type producerCase struct {
	id      string
	req     evidence.Request
	receipt bool   // the backend received it
	xrid    string // x-request-id the backend recorded (JoinReceipt)
	line    string // access log line
	prod    string
	class   string
	joined  string
}

const (
	bodyOverflow = "upstream connect error or disconnect/reset before headers. reset reason: overflow"
	bodyConnFail = "upstream connect error or disconnect/reset before headers. reset reason: connection failure"
)

// everyProducer covers each producer twice: proxy-a logs JSON (the keys of
// examples/envoy's bootstraps and of the lab proxies), proxy-b logs Envoy's
// default text format, joined through x-request-id.
func everyProducer() []producerCase {
	req := func(id, target string, code int, body string, hdr map[string]string) evidence.Request {
		return evidence.Request{ID: id, Target: target, Method: "GET", URL: "/inventory", SentNs: t0, LatencyNs: 1_000_000,
			Code: code, Body: body, BytesIn: uint64(len(body)), Headers: hdr}
	}
	rl := map[string]string{"x-envoy-ratelimited": "true"}
	ust := map[string]string{"x-envoy-upstream-service-time": "1"}
	return []producerCase{
		// proxy-a: JSON, examples/envoy key names (rlbench_id) ...
		{id: "a-local", req: req("a-local", "proxy-a", 429, "local_rate_limited", nil),
			line: `{"proxy":"a","start_time":"2026-11-30T10:00:00.001Z","method":"GET","path":"/inventory","protocol":"HTTP/1.1","response_code":"429","response_flags":"RL","response_code_details":"local_rate_limited","upstream_host":"-","duration":"0","rlbench_id":"a-local"}`,
			prod: envoyrec.ProducerLocalLimiter, class: evidence.ClassLocal429.String(), joined: JoinRlbenchID},
		{id: "a-global", req: req("a-global", "proxy-a", 429, "", rl),
			line: `{"proxy":"a","start_time":"2026-11-30T10:00:00.002Z","response_code":"429","response_flags":"RL","response_code_details":"request_rate_limited","upstream_host":"-","rlbench_id":"a-global"}`,
			prod: envoyrec.ProducerGlobalLimiter, class: evidence.ClassGlobal429.String(), joined: JoinRlbenchID},
		{id: "a-rlse", req: req("a-rlse", "proxy-a", 500, "", nil),
			line: `{"proxy":"a","start_time":"2026-11-30T10:00:00.003Z","response_code":"500","response_flags":"RLSE","response_code_details":"rate_limiter_error","upstream_host":"-","rlbench_id":"a-rlse"}`,
			prod: envoyrec.ProducerRLSError, class: evidence.ClassRLSError.String(), joined: JoinRlbenchID},
		// ... and the lab proxies' key names (x_rlbench_id, numbers).
		{id: "a-uo", req: req("a-uo", "proxy-a", 503, bodyOverflow, nil),
			line: `{"start_time":"2026-11-30T10:00:00.004Z","response_code":503,"response_flags":"UO","response_code_details":"upstream_reset_before_response_started{overflow}","bytes_sent":81,"x_rlbench_id":"a-uo","x_request_id":"r1","proxy":"proxy-a"}`,
			prod: envoyrec.ProducerCircuitBreaker, class: evidence.ClassOther5xx.String(), joined: JoinRlbenchID},
		{id: "a-uf", req: req("a-uf", "proxy-a", 503, bodyConnFail, nil),
			line: `{"start_time":"2026-11-30T10:00:00.005Z","response_code":503,"response_flags":"UF","response_code_details":"upstream_reset_before_response_started{connection_failure}","x_rlbench_id":"a-uf","proxy":"proxy-a"}`,
			prod: envoyrec.ProducerUpstreamFailure, class: evidence.ClassOther5xx.String(), joined: JoinRlbenchID},
		{id: "a-urx", req: req("a-urx", "proxy-a", 503, bodyConnFail, nil),
			line: `{"start_time":"2026-11-30T10:00:00.006Z","response_code":503,"response_flags":"URX","response_code_details":"upstream_reset_before_response_started{connection_failure}","x_rlbench_id":"a-urx","proxy":"proxy-a"}`,
			prod: envoyrec.ProducerUpstreamFailure, class: evidence.ClassOther5xx.String(), joined: JoinRlbenchID},
		{id: "a-200", req: req("a-200", "proxy-a", 200, "ok", ust), receipt: true,
			line: `{"start_time":"2026-11-30T10:00:00.007Z","response_code":200,"response_flags":"-","response_code_details":"via_upstream","upstream_host":"127.0.0.1:8080","x_rlbench_id":"a-200","proxy":"proxy-a"}`,
			prod: envoyrec.ProducerBackend, class: evidence.ClassAdmitted.String(), joined: JoinRlbenchID},
		{id: "a-b429", req: req("a-b429", "proxy-a", 429, "slow down", ust), receipt: true,
			line: `{"start_time":"2026-11-30T10:00:00.008Z","response_code":429,"response_flags":"-","response_code_details":"via_upstream","upstream_host":"127.0.0.1:8080","x_rlbench_id":"a-b429","proxy":"proxy-a"}`,
			prod: envoyrec.ProducerBackend, class: evidence.ClassBackend429.String(), joined: JoinRlbenchID},
		// proxy-b: Envoy's default format. Rejected requests carry their ID as
		// x-request-id; backend responses join through the receipt's x-request-id.
		{id: "b-local", req: req("b-local", "proxy-b", 429, "local_rate_limited", nil),
			line: `[2026-11-30T10:00:00.011Z] "GET /inventory HTTP/1.1" 429 RL 0 18 0 - "-" "rlbench" "b-local" "127.0.0.1:10001" "-"`,
			prod: envoyrec.ProducerLocalLimiter, class: evidence.ClassLocal429.String(), joined: JoinRequestID},
		{id: "b-global", req: req("b-global", "proxy-b", 429, "", rl),
			line: `[2026-11-30T10:00:00.012Z] "GET /inventory HTTP/1.1" 429 RL 0 0 1 - "-" "rlbench" "b-global" "127.0.0.1:10001" "-"`,
			prod: envoyrec.ProducerGlobalLimiter, class: evidence.ClassGlobal429.String(), joined: JoinRequestID},
		{id: "b-rlse", req: req("b-rlse", "proxy-b", 500, "", nil),
			line: `[2026-11-30T10:00:00.013Z] "GET /inventory HTTP/1.1" 500 RLSE 0 0 100 - "-" "rlbench" "b-rlse" "127.0.0.1:10001" "-"`,
			prod: envoyrec.ProducerRLSError, class: evidence.ClassRLSError.String(), joined: JoinRequestID},
		{id: "b-uo", req: req("b-uo", "proxy-b", 503, bodyOverflow, nil),
			line: `[2026-11-30T10:00:00.014Z] "GET /inventory HTTP/1.1" 503 UO 0 81 0 - "-" "rlbench" "b-uo" "127.0.0.1:10001" "-"`,
			prod: envoyrec.ProducerCircuitBreaker, class: evidence.ClassOther5xx.String(), joined: JoinRequestID},
		{id: "b-uf", req: req("b-uf", "proxy-b", 503, bodyConnFail, nil),
			line: `[2026-11-30T10:00:00.015Z] "GET /inventory HTTP/1.1" 503 UF 0 91 1 - "-" "rlbench" "b-uf" "127.0.0.1:10001" "127.0.0.1:8080"`,
			prod: envoyrec.ProducerUpstreamFailure, class: evidence.ClassOther5xx.String(), joined: JoinRequestID},
		{id: "b-urx", req: req("b-urx", "proxy-b", 503, bodyConnFail, nil),
			line: `[2026-11-30T10:00:00.016Z] "GET /inventory HTTP/1.1" 503 UF,URX 0 91 3 - "-" "rlbench" "b-urx" "127.0.0.1:10001" "127.0.0.1:8080"`,
			prod: envoyrec.ProducerUpstreamFailure, class: evidence.ClassOther5xx.String(), joined: JoinRequestID},
		{id: "b-200", req: req("b-200", "proxy-b", 200, "ok", ust), receipt: true, xrid: "5f0c1d7e-0000-4000-8000-000000000001",
			line: `[2026-11-30T10:00:00.017Z] "GET /inventory HTTP/1.1" 200 - 0 2 1 1 "-" "rlbench" "5f0c1d7e-0000-4000-8000-000000000001" "127.0.0.1:10001" "127.0.0.1:8080"`,
			prod: envoyrec.ProducerBackend, class: evidence.ClassAdmitted.String(), joined: JoinReceipt},
		{id: "b-b429", req: req("b-b429", "proxy-b", 429, "slow down", ust), receipt: true, xrid: "5f0c1d7e-0000-4000-8000-000000000002",
			line: `[2026-11-30T10:00:00.018Z] "GET /inventory HTTP/1.1" 429 - 0 9 1 1 "-" "rlbench" "5f0c1d7e-0000-4000-8000-000000000002" "127.0.0.1:10001" "127.0.0.1:8080"`,
			prod: envoyrec.ProducerBackend, class: evidence.ClassBackend429.String(), joined: JoinReceipt},
	}
}

// producerEv writes the cases as a scenario directory with access logs.
func producerEv(t *testing.T, cases []producerCase) *ev {
	e := newEv(t)
	e.scenario.Expect = evidence.Expectation{Label: "every producer", ReceiptsEqualAdmitted: true}
	e.scenario.IntendedLimit = nil
	logs := map[string][]string{}
	for _, c := range cases {
		e.requests = append(e.requests, c.req)
		if c.receipt {
			rc := evidence.Receipt{ID: sp(c.id), RecvNs: t0 + 500}
			if c.xrid != "" {
				rc.Headers = map[string]string{"x-request-id": c.xrid}
			}
			e.receipts = append(e.receipts, rc)
		}
		logs[c.req.Target] = append(logs[c.req.Target], c.line)
	}
	e.attack["sent"] = len(cases)
	must(t, os.MkdirAll(filepath.Join(e.dir, evidence.AccessLogDir), 0o755))
	for p, lines := range logs {
		must(t, os.WriteFile(filepath.Join(e.dir, evidence.AccessLogDir, p+".log"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	return e
}

func checkNamed(s report.ScenarioReport, name string) *report.Check {
	for i := range s.Checks {
		if s.Checks[i].Name == name {
			return &s.Checks[i]
		}
	}
	return nil
}

func TestAccessLogsClassifyEveryProducer(t *testing.T) {
	cases := everyProducer()
	e := producerEv(t, cases)
	dir := e.write()
	checkProducersJoined(t, dir, cases)
	checkProducersReported(t, dir)
}

// checkProducersJoined: each response of TestAccessLogsClassifyEveryProducer,
// joined to its access log entry and classified by producer.
func checkProducersJoined(t *testing.T, dir string, cases []producerCase) {
	t.Helper()
	ld := loadScenario(t, dir)
	j := JoinAccessLogs(ld.AccessLogs, &ld.Requests, &ld.Receipts)
	if !reflect.DeepEqual(j.Files, []string{"accesslog/proxy-a.log", "accesslog/proxy-b.log"}) {
		t.Fatalf("files %v", j.Files)
	}
	if len(j.Responses) != len(cases) || j.Entries != len(cases) || len(j.Missing) != 0 || len(j.Several) != 0 || len(j.Unjoined) != 0 {
		t.Fatalf("join: %d responses, %d entries, missing %v, several %v, unjoined %v", len(j.Responses), j.Entries, j.Missing, j.Several, j.Unjoined)
	}
	byID := map[string]AccessLogResponse{}
	for _, r := range j.Responses {
		byID[r.ID] = r
	}
	for _, c := range cases {
		r, ok := byID[c.id]
		if !ok {
			t.Errorf("%s: not joined", c.id)
			continue
		}
		if r.Producer != c.prod || r.Class != c.class || r.JoinedBy != c.joined || r.Disagreement != "" || r.Proxy != c.req.Target || r.Code != c.req.Code {
			t.Errorf("%s: got producer %s class %s joined %s proxy %s code %d disagreement %q; want %s %s %s",
				c.id, r.Producer, r.Class, r.JoinedBy, r.Proxy, r.Code, r.Disagreement, c.prod, c.class, c.joined)
		}
	}
	if r := byID["b-urx"]; !reflect.DeepEqual(r.Flags, []string{"UF", "URX"}) || r.Line != 6 || r.File != "accesslog/proxy-b.log" {
		t.Errorf("b-urx entry %+v", r)
	}
}

// checkProducersReported: the report of TestAccessLogsClassifyEveryProducer
// counts the producers, every access log check passes, and the report with
// producers matches the published schema.
func checkProducersReported(t *testing.T, dir string) {
	t.Helper()
	rep := run(t, dir)
	s := rep.Scenarios[0]
	want := map[string]int{envoyrec.ProducerLocalLimiter: 2, envoyrec.ProducerGlobalLimiter: 2, envoyrec.ProducerRLSError: 2,
		envoyrec.ProducerCircuitBreaker: 2, envoyrec.ProducerUpstreamFailure: 4, envoyrec.ProducerBackend: 4}
	if !reflect.DeepEqual(s.ProducerCounts, want) {
		t.Errorf("producers %v, want %v", s.ProducerCounts, want)
	}
	for _, name := range []string{"requests without access log entry", "access log producer agrees with client", "requests with several access log entries"} {
		c := checkNamed(s, name)
		if c == nil || c.Status != report.CheckPass {
			t.Errorf("check %q: %+v", name, c)
		}
	}
	if s.Status != evidence.Pass {
		t.Errorf("status %s, reasons %v", s.Status, s.Reasons)
	}
	if s.Totals.N[evidence.ClassOther5xx] != 6 || s.Totals.N[evidence.ClassBackend429] != 2 || s.Totals.N[evidence.ClassOther4xx] != 0 ||
		s.Totals.N[evidence.ClassLocal429] != 2 || s.Totals.N[evidence.ClassGlobal429] != 2 || s.Totals.N[evidence.ClassRLSError] != 2 || s.Totals.N[evidence.ClassAdmitted] != 2 || s.Totals.Passed != 4 {
		t.Errorf("totals %+v", s.Totals)
	}

	var buf bytes.Buffer
	must(t, report.WriteJSON(&buf, rep))
	if !strings.Contains(buf.String(), `"producers"`) {
		t.Fatal("no producers in the JSON report")
	}
	validReport(t, rep)
}

func TestAccessLogDisagreementFails(t *testing.T) {
	cases := everyProducer()
	// The client saw the local limiter's 429, but proxy-a logged a backend 429.
	cases[0].line = `{"start_time":"2026-11-30T10:00:00.001Z","response_code":429,"response_flags":"-","response_code_details":"via_upstream","upstream_host":"127.0.0.1:8080","rlbench_id":"a-local"}`
	// And proxy-b logged a 200 for a request its client got a 503 for.
	cases[11].line = `[2026-11-30T10:00:00.014Z] "GET /inventory HTTP/1.1" 200 - 0 81 0 - "-" "rlbench" "b-uo" "127.0.0.1:10001" "-"`
	rep := run(t, producerEv(t, cases).write())
	s := rep.Scenarios[0]
	c := checkNamed(s, "access log producer agrees with client")
	if c == nil || c.Status != report.CheckFail {
		t.Fatalf("agreement check %+v", c)
	}
	if !strings.HasPrefix(c.Got, "2 (") || !strings.Contains(c.Got, "a-local accesslog/proxy-a.log:1: client class local_429, log producer backend") ||
		!strings.Contains(c.Got, "b-uo accesslog/proxy-b.log:4: client code 503, logged 200") {
		t.Errorf("got %q", c.Got)
	}
	if s.Status != evidence.Fail || rep.Status != evidence.Fail {
		t.Errorf("status %s/%s", s.Status, rep.Status)
	}
	if s.ProducerCounts[envoyrec.ProducerBackend] != 6 || s.ProducerCounts[envoyrec.ProducerLocalLimiter] != 1 {
		t.Errorf("producers %v", s.ProducerCounts)
	}
}

func TestProducerAgrees(t *testing.T) {
	yes := map[string][]string{
		evidence.ClassLocal429.String():       {envoyrec.ProducerLocalLimiter},
		evidence.ClassGlobal429.String():      {envoyrec.ProducerGlobalLimiter},
		evidence.ClassRLSError.String():       {envoyrec.ProducerRLSError},
		evidence.ClassAdmitted.String():       {envoyrec.ProducerBackend},
		evidence.ClassBackend4xx.String():     {envoyrec.ProducerBackend},
		evidence.ClassBackend429.String():     {envoyrec.ProducerBackend},
		evidence.ClassBackend5xx.String():     {envoyrec.ProducerBackend, envoyrec.ProducerUpstreamFailure, envoyrec.ProducerCircuitBreaker},
		evidence.ClassCircuitBreaker.String(): {envoyrec.ProducerCircuitBreaker},
		evidence.ClassOther4xx.String():       {envoyrec.ProducerBackend, envoyrec.ProducerOther},
		evidence.ClassOther5xx.String():       {envoyrec.ProducerBackend, envoyrec.ProducerCircuitBreaker, envoyrec.ProducerUpstreamFailure, envoyrec.ProducerOther},
		evidence.ClassOther.String():          {envoyrec.ProducerBackend, envoyrec.ProducerOther},
		evidence.ClassNoResponse.String():     {envoyrec.ProducerLocalLimiter, envoyrec.ProducerGlobalLimiter, envoyrec.ProducerRLSError, envoyrec.ProducerCircuitBreaker, envoyrec.ProducerUpstreamFailure, envoyrec.ProducerBackend, envoyrec.ProducerOther},
	}
	all := yes[evidence.ClassNoResponse.String()]
	for class, ok := range yes {
		for _, p := range all {
			want := false
			for _, q := range ok {
				want = want || p == q
			}
			if got := ProducerAgrees(class, p); got != want {
				t.Errorf("ProducerAgrees(%s, %s) = %v, want %v", class, p, got, want)
			}
		}
	}
}

// A request answered by a proxy whose log has no entry for it fails; when
// that log also holds entries that join nothing (default format, no ID),
// the check is unknown instead.
func TestAccessLogMissingEntries(t *testing.T) {
	cases := everyProducer()
	e := producerEv(t, cases[:8]) // only proxy-a's cases
	e.requests = append(e.requests, evidence.Request{ID: "a-lost", Target: "proxy-a", Code: 200, SentNs: t0, LatencyNs: 1})
	e.receipts = append(e.receipts, evidence.Receipt{ID: sp("a-lost"), RecvNs: t0})
	e.attack["sent"] = 9
	dir := e.write()
	s := run(t, dir).Scenarios[0]
	if c := checkNamed(s, "requests without access log entry"); c == nil || c.Status != report.CheckFail || c.Got != "1 (a-lost)" {
		t.Fatalf("missing check %+v", c)
	}
	if s.Status != evidence.Fail {
		t.Errorf("status %s", s.Status)
	}
	// An entry that carries no ID: the missing one may be it.
	f, err := os.OpenFile(filepath.Join(dir, evidence.AccessLogDir, "proxy-a.log"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(`[2026-11-30T10:00:00.020Z] "GET /inventory HTTP/1.1" 200 - 0 2 1 1 "-" "rlbench" "-" "127.0.0.1:10000" "127.0.0.1:8080"` + "\n")
	must(t, err)
	must(t, f.Close())
	s = run(t, dir).Scenarios[0]
	if c := checkNamed(s, "requests without access log entry"); c == nil || c.Status != report.CheckUnknown || c.Got != "1 (a-lost); 1 entries join no request" {
		t.Fatalf("missing check with an unjoined entry %+v", c)
	}
	// Lost by rlbench's own lab proxy: the harness's record is incomplete,
	// NOT_RUN, not a failure of the system under test.
	e3 := producerEv(t, cases[:8])
	e3.scenario.HarnessParts = []string{"proxy-a", evidence.HarnessBackend}
	e3.requests = append(e3.requests, evidence.Request{ID: "a-lost", Target: "proxy-a", Code: 200, SentNs: t0, LatencyNs: 1})
	e3.receipts = append(e3.receipts, evidence.Receipt{ID: sp("a-lost"), RecvNs: t0})
	e3.attack["sent"] = 9
	s = run(t, e3.write()).Scenarios[0]
	if c := checkNamed(s, "requests without access log entry"); c == nil || c.Status != report.CheckUnknown ||
		c.Got != "1 (a-lost); 1 of them answered by rlbench's own lab proxies, whose log is the harness's record, not the system under test's" {
		t.Fatalf("missing check, lab proxy %+v", c)
	}
	if s.Status != evidence.NotRun {
		t.Errorf("lab proxy lost a line: status %s %v", s.Status, s.Reasons)
	}
	// A request without response is never required in the log.
	e2 := producerEv(t, cases[:8])
	e2.requests = append(e2.requests, evidence.Request{ID: "a-reset", Target: "proxy-a", Code: 0, Error: "EOF", SentNs: t0, LatencyNs: 1})
	e2.attack["sent"] = 9
	if c := checkNamed(run(t, e2.write()).Scenarios[0], "requests without access log entry"); c == nil || c.Status != report.CheckPass {
		t.Fatalf("no-response request counted missing: %+v", c)
	}
}

// A real Envoy default-format log (envoyproxy/envoy issue 7351): its
// x-request-ids join to requests only through the backend's receipts.
func TestAccessLogRealDefaultFormatJoinsThroughReceipts(t *testing.T) {
	raw := fixtureBytes(t, "gh_envoy_issue7351_envoy_access_log_default_2019.log")
	var xrids []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Split(sc.Text(), `"`)
		xrids = append(xrids, f[len(f)-6]) // "%REQ(X-REQUEST-ID)%" is the third quoted field from the end
	}
	if len(xrids) != 5 || xrids[0] != "1327974d-12d4-46f1-b226-8f1307383c4f" {
		t.Fatalf("x-request-ids %v", xrids)
	}
	e := newEv(t)
	e.scenario.Expect = evidence.Expectation{ReceiptsEqualAdmitted: true}
	e.scenario.IntendedLimit = nil
	for i := 0; i < 5; i++ {
		id := "rid-" + string(rune('0'+i))
		e.requests = append(e.requests, evidence.Request{ID: id, Target: "envoy", Code: 200, SentNs: t0, LatencyNs: 1})
		if i < 4 { // the backend's receipt for the last one carries no x-request-id
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: t0, Headers: map[string]string{"X-Request-Id": xrids[i]}})
		} else {
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: t0})
		}
	}
	e.attack["sent"] = 5
	must(t, os.MkdirAll(filepath.Join(e.dir, evidence.AccessLogDir), 0o755))
	must(t, os.WriteFile(filepath.Join(e.dir, evidence.AccessLogDir, "envoy.log"), raw, 0o644))
	dir := e.write()
	ld := loadScenario(t, dir)
	j := JoinAccessLogs(ld.AccessLogs, &ld.Requests, &ld.Receipts)
	if len(j.Responses) != 4 || j.Unjoined["envoy"] != 1 || !reflect.DeepEqual(j.Missing, []string{"rid-4"}) {
		t.Fatalf("join: %d responses, unjoined %v, missing %v", len(j.Responses), j.Unjoined, j.Missing)
	}
	for i, r := range j.Responses {
		if r.JoinedBy != JoinReceipt || r.Producer != envoyrec.ProducerBackend || r.Line != i+1 || r.ID != "rid-"+string(rune('0'+i)) {
			t.Errorf("response %d: %+v", i, r)
		}
	}
	s := run(t, dir).Scenarios[0]
	if !reflect.DeepEqual(s.ProducerCounts, map[string]int{envoyrec.ProducerBackend: 5}) {
		t.Errorf("producers %v", s.ProducerCounts)
	}
	if c := checkNamed(s, "requests without access log entry"); c == nil || c.Status != report.CheckUnknown {
		t.Errorf("missing check %+v", c)
	}
	// Without receipts' x-request-id nothing joins: that is reported, not passed.
	e.receipts = nil
	for i := range e.requests {
		e.receipts = append(e.receipts, evidence.Receipt{ID: sp(e.requests[i].ID)})
	}
	s = run(t, e.write()).Scenarios[0]
	if c := checkNamed(s, "access log joined to requests"); c == nil || c.Status != report.CheckUnknown || c.Want != ">= 1 of 5 entries" || s.Status != evidence.NotRun {
		t.Errorf("unjoinable log: check %+v, status %s", c, s.Status)
	}
}

func TestAccessLogMalformedIsIncomplete(t *testing.T) {
	cases := everyProducer()[:2]
	e := producerEv(t, cases)
	dir := e.write()
	p := filepath.Join(dir, evidence.AccessLogDir, "proxy-a.log")
	b, err := os.ReadFile(p)
	must(t, err)
	must(t, os.WriteFile(p, append(b, []byte("not an access log line\n")...), 0o644))
	s := run(t, dir).Scenarios[0]
	if s.Status != evidence.NotRun || !s.Incomplete {
		t.Fatalf("status %s incomplete %v", s.Status, s.Incomplete)
	}
	found := false
	for _, r := range s.Reasons {
		found = found || strings.Contains(r, p+":3:")
	}
	if !found {
		t.Errorf("reasons %v do not name %s:3", s.Reasons, p)
	}
}

// No accesslog folder, or an empty log: no producers and no access log checks.
func TestNoAccessLogsNoChecks(t *testing.T) {
	e := newEv(t).demo()
	dir := e.write()
	s := run(t, dir).Scenarios[0]
	must(t, os.MkdirAll(filepath.Join(dir, evidence.AccessLogDir), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, evidence.AccessLogDir, "proxy-a.log"), nil, 0o644))
	s2 := run(t, dir).Scenarios[0]
	for _, sr := range []report.ScenarioReport{s, s2} {
		if sr.ProducerCounts != nil || sr.Status != evidence.Pass {
			t.Errorf("producers %v status %s", sr.ProducerCounts, sr.Status)
		}
		for _, c := range sr.Checks {
			if strings.Contains(c.Name, "access log") {
				t.Errorf("unexpected check %+v", c)
			}
		}
	}
}

// fixtureBytes reads a fixture from testdata/, else from <repo>/../shared/fixtures/envoy.
func fixtureBytes(t *testing.T, name string) []byte {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
		return b
	}
	wd, err := os.Getwd()
	must(t, err)
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			b, err := os.ReadFile(filepath.Join(d, "..", "shared", "fixtures", "envoy", name))
			if err != nil {
				t.Skipf("fixture %s: %v", name, err)
			}
			return b
		}
		if filepath.Dir(d) == d {
			t.Skipf("fixture %s: no go.mod above %s", name, wd)
		}
	}
}

// loadScenario loads one scenario directory, failing on any load problem.
func loadScenario(t *testing.T, dir string) *evidence.ScenarioEvidence {
	t.Helper()
	s := evidence.LoadScenario(context.Background(), dir, false)
	if len(s.Problems) > 0 {
		t.Fatalf("load %s: %v", dir, s.Problems)
	}
	return s
}
