package rls

import (
	"bufio"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

func decisionsInLines(l *Log, from, to int) []Decision {
	var out []Decision
	for _, d := range l.Decisions {
		if d.Line >= from && d.Line <= to {
			out = append(out, d)
		}
	}
	return out
}

// checkConcurrent20 asserts the 20-concurrent-calls capture on a fresh
// counter: currents 1..20 unique in one window key, 5 OK (currents 1..5,
// remaining 4..0) and 15 OVER_LIMIT, all paired with a response line.
func checkConcurrent20(t *testing.T, ds []Decision) {
	t.Helper()
	if len(ds) != 20 {
		t.Fatalf("concurrent decisions = %d, want 20", len(ds))
	}
	seen := map[uint64]bool{}
	codes := map[string]int{}
	var remaining []int
	for _, d := range ds {
		eqStr(t, "key", d.Key, "inventory_tenant_lab_1796029200")
		eqStr(t, "domain", d.Domain, "inventory")
		eqStr(t, "domain source", d.DomainSource, "descriptor")
		if d.WindowStart != 1796029200 || d.Limit != 5 || d.Unit != "HOUR" || !d.HasCurrent || d.CodeDerived {
			t.Errorf("decision %+v: want window 1796029200, 5/HOUR, current, paired", d)
		}
		if len(d.Descriptor) != 1 || d.Descriptor[0].Key != "tenant" || d.Descriptor[0].Value != "lab" {
			t.Errorf("line %d descriptor = %v", d.Line, d.Descriptor)
		}
		if seen[d.Current] {
			t.Errorf("current %d repeated", d.Current)
		}
		seen[d.Current] = true
		codes[d.Code]++
		wantCode := "OVER_LIMIT"
		if d.Current <= 5 {
			wantCode = "OK"
			remaining = append(remaining, int(d.LimitRemaining))
			if int(d.LimitRemaining) != 5-int(d.Current) {
				t.Errorf("line %d current %d remaining %d", d.Line, d.Current, d.LimitRemaining)
			}
		}
		eqStr(t, fmt.Sprintf("code of current %d", d.Current), d.Code, wantCode)
	}
	for i := uint64(1); i <= 20; i++ {
		if !seen[i] {
			t.Errorf("current %d missing", i)
		}
	}
	eqInt(t, "OK", codes["OK"], 5)
	eqInt(t, "OVER_LIMIT", codes["OVER_LIMIT"], 15)
	sort.Ints(remaining)
	if fmt.Sprint(remaining) != "[0 1 2 3 4]" {
		t.Errorf("OK remaining = %v, want [0 1 2 3 4]", remaining)
	}
}

// Counts by hand (grep) on outage-fast/rls-text.log: 492 lines, 1 marker line
// (443 "----- RLS RESTART"), 49 `got descriptor`, 47 `looking up cache key`,
// 42 `cache key: … current:`, 44 `returning normal response` (22 OK statuses,
// 22 OVER_LIMIT), 8 `resp:`, 6 `caught error` (5 EOF, 1 empty domain),
// 4 `creating redis connection error`, 3 `error:` warnings.
func TestParseLogOutageText(t *testing.T) {
	l := parseLogFixture(t, "outage-fast/rls-text.log")
	eqInt(t, "lines", l.Lines, 492)
	eqInt(t, "text lines", l.TextLines, 491)
	eqInt(t, "json lines", l.JSONLines, 0)
	if len(l.Unparsed) != 1 || l.Unparsed[0].Line != 443 || !strings.HasPrefix(l.Unparsed[0].Text, "----- RLS RESTART") {
		t.Errorf("unparsed = %+v", l.Unparsed)
	}
	for id, want := range map[string]int{"got_descriptor": 49, "lookup_cache_key": 47, "cache_key": 42, "response": 44,
		"resp": 8, "caught_error": 6, "redis_connection_error": 4, "json_error": 3, "applying_limit": 47, "no_match": 2,
		"unknown_domain": 1, "config_loaded": 4, "start": 2, "shutdown": 2} {
		eqInt(t, "count "+id, l.Counts[id], want)
	}
	codes := l.CountCodes()
	eqInt(t, "OK", codes["OK"], 22)
	eqInt(t, "OVER_LIMIT", codes["OVER_LIMIT"], 22)
	eqInt(t, "ERROR", codes["ERROR"], 5)
	eqInt(t, "decisions", len(l.Decisions), 49)
	eqInt(t, "unmatched statuses", l.UnmatchedStatuses, 0)
	eqInt(t, "pending lookups", len(l.PendingLookups), 0)
	for _, d := range l.Decisions {
		if d.CodeDerived {
			t.Errorf("line %d: code derived, want paired", d.Line)
		}
	}

	// First decision: 09:42:29Z at 1 s resolution.
	d0 := l.Decisions[0]
	eqInt(t, "first decision line", d0.Line, 28)
	want := time.Date(2026, 11, 30, 9, 42, 29, 0, time.UTC).UnixNano()
	if d0.TimeNs != want || d0.TimeResolutionNs != int64(time.Second) || d0.ResponseLine != 29 {
		t.Errorf("first decision time %d res %d resp %d", d0.TimeNs, d0.TimeResolutionNs, d0.ResponseLine)
	}

	// hits_addend 2: counter 8 -> 10, OVER_LIMIT.
	if d := decisionsInLines(l, 168, 168); len(d) != 1 || d[0].Current != 10 || d[0].Code != "OVER_LIMIT" {
		t.Errorf("hits_addend decision = %+v", d)
	}
	// The 20 concurrent calls: lines 171-350.
	checkConcurrent20(t, decisionsInLines(l, 171, 350))

	// ERROR decisions during the outage.
	var errLines []int
	for _, d := range l.Decisions {
		if d.Code == "ERROR" {
			errLines = append(errLines, d.Line)
			eqStr(t, "error", d.Error, "response returned from Conn: EOF")
			eqStr(t, "error key", d.Key, "inventory_tenant_lab_1796029200")
		}
	}
	if fmt.Sprint(errLines) != "[376 385 393 401 409]" {
		t.Errorf("ERROR decision lines = %v", errLines)
	}

	// No-limit decisions: unknown domain and unmatched value.
	nl := decisionsInLines(l, 143, 157)
	if len(nl) != 2 || nl[0].Domain != "nosuch" || !nl[0].NoLimit || nl[1].Domain != "" || nl[1].Descriptor[0].Value != "pro" {
		t.Errorf("no-limit decisions = %+v", nl)
	}

	// Errors by kind and class; the NBSP stays U+00A0 after unquoting.
	kinds := map[string]int{}
	for _, e := range l.Errors {
		kinds[e.Kind+"/"+e.Class]++
	}
	for k, n := range map[string]int{"call/redis_error": 5, "call/service_error": 1, "redis_connection/redis_error": 4,
		"json_endpoint/service_error": 1, "json_endpoint/bad_request": 1, "json_endpoint/redis_error": 1} {
		eqInt(t, "errors "+k, kinds[k], n)
	}
	eqInt(t, "errors", len(l.Errors), 13)
	found := false
	for _, e := range l.Errors {
		if e.Line == 160 {
			found = true
			eqStr(t, "line 160 message", e.Message, "proto:\u00a0unexpected EOF")
		}
	}
	if !found {
		t.Error("no error at line 160")
	}

	// Lifecycle.
	eqInt(t, "config loads", len(l.ConfigLoads), 4)
	for _, c := range l.ConfigLoads {
		if !c.OK {
			t.Errorf("config load %+v not OK", c)
		}
	}
	eqInt(t, "limit defs", len(l.LimitDefs), 4)
	eqInt(t, "starts", len(l.Starts), 2)
	eqStr(t, "start sink", l.Starts[1].Value, "statsd")
	eqInt(t, "start 2 line", l.Starts[1].Line, 444)
	eqInt(t, "shutdowns", len(l.Shutdowns), 2)
	eqStr(t, "signal", l.Shutdowns[0].Value, "terminated")
	eqInt(t, "listeners", len(l.Listeners), 6)
	if len(l.UnknownDomains) != 1 || l.UnknownDomains[0].Value != "nosuch" {
		t.Errorf("unknown domains = %+v", l.UnknownDomains)
	}

	ev := l.EvidenceDecisions()
	eqInt(t, "evidence decisions", len(ev), 49)
	if ev[0].Key != "inventory_tenant_lab_1796029200" || ev[0].Current != 1 || ev[0].Code != "OK" || ev[0].Limit != 5 || ev[0].Domain != "inventory" {
		t.Errorf("evidence[0] = %+v", ev[0])
	}
}

// rls-json.log: 784 lines (8 text, 1 marker at 687, 775 JSON), 290 Flush*
// lines (82 counters, 168 gauges, 40 timers); same drive as outage-fast.
func TestParseLogJSONPrometheus(t *testing.T) {
	l := parseLogFixture(t, "json-prometheus/rls-json.log")
	eqInt(t, "lines", l.Lines, 784)
	eqInt(t, "text lines", l.TextLines, 8)
	eqInt(t, "json lines", l.JSONLines, 775)
	eqInt(t, "flush lines", l.FlushLines, 290)
	if len(l.Unparsed) != 1 || l.Unparsed[0].Line != 687 {
		t.Errorf("unparsed = %+v", l.Unparsed)
	}
	codes := l.CountCodes()
	eqInt(t, "OK", codes["OK"], 22)
	eqInt(t, "OVER_LIMIT", codes["OVER_LIMIT"], 22)
	eqInt(t, "ERROR", codes["ERROR"], 5)
	eqInt(t, "unmatched statuses", l.UnmatchedStatuses, 0)
	for _, d := range l.Decisions {
		if d.TimeResolutionNs != 1 && d.Line > 8 {
			t.Errorf("line %d resolution %d, want 1", d.Line, d.TimeResolutionNs)
		}
	}

	// The 20 concurrent calls, selected by the client's time window.
	var lo, hi int64
	var clientRemaining []int
	f := openFixture(t, "json-prometheus/c_concurrent.jsonl")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Start    int64           `json:"start_unix_ns"`
			End      int64           `json:"end_unix_ns"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if lo == 0 || rec.Start < lo {
			lo = rec.Start
		}
		if rec.End > hi {
			hi = rec.End
		}
		r, err := ParseResponseJSON(rec.Response)
		if err != nil {
			t.Fatal(err)
		}
		if r.OverallCode == "OK" {
			clientRemaining = append(clientRemaining, int(r.Statuses[0].LimitRemaining))
		}
	}
	var in []Decision
	for _, d := range l.Decisions {
		if d.TimeNs >= lo && d.TimeNs <= hi {
			in = append(in, d)
		}
	}
	checkConcurrent20(t, in)
	sort.Ints(clientRemaining)
	if fmt.Sprint(clientRemaining) != "[0 1 2 3 4]" {
		t.Errorf("client OK remaining = %v", clientRemaining)
	}

	// JSON keeps U+00A0 literally.
	for _, e := range l.Errors {
		if e.Class == ClassBadRequest {
			eqStr(t, "bad request message", e.Message, "proto:\u00a0unexpected EOF")
		}
	}

	// Prometheus-sink Flush lines: counter deltas summed (python sums).
	s := l.Sink
	eqF(t, "sink inventory total_hits", s.Counters["ratelimit.service.rate_limit.inventory.tenant_lab.total_hits"], 43)
	eqF(t, "sink inventory within", s.Counters["ratelimit.service.rate_limit.inventory.tenant_lab.within_limit"], 17)
	eqF(t, "sink inventory over", s.Counters["ratelimit.service.rate_limit.inventory.tenant_lab.over_limit"], 21)
	eqF(t, "sink redis_error", s.Counters["ratelimit.service.call.should_rate_limit.redis_error"], 5)
	eqF(t, "sink total_requests", s.Counters["ratelimit_server.ShouldRateLimit.total_requests"], 40)
	if tt := s.Timers["ratelimit_server.ShouldRateLimit.response_time"]; tt == nil || tt.Count != 40 {
		t.Errorf("response_time timer = %+v, want 40 samples", tt)
	}
	res := CheckIdentities(nil, s.RLSCounters())
	st := map[string]string{}
	for _, r := range res {
		st[r.Key] = r.Status
	}
	eqStr(t, "edge identity", st["edge.plan_free"], IdentityPass)
	eqStr(t, "inventory identity", st["inventory.tenant_lab"], IdentityErrorGap)
}

// rls_local text/json debug logs: shadow, unlimited, no match, unknown domain,
// empty domain, bad JSON and a two-descriptor request (text), plus 3 gRPC
// calls (json). Sink totals must equal what the RLS exported.
func TestParseLogLocalDebug(t *testing.T) {
	l := parseLogFixture(t, "rls_local_3fb7025_text_debug.log")
	eqInt(t, "lines", l.Lines, 221)
	eqInt(t, "text lines", l.TextLines, 163)
	eqInt(t, "sink lines", l.SinkLines, 58)
	eqInt(t, "unparsed", len(l.Unparsed), 0)
	codes := l.CountCodes()
	eqInt(t, "OK", codes["OK"], 11)
	eqInt(t, "OVER_LIMIT", codes["OVER_LIMIT"], 3)
	eqInt(t, "decisions", len(l.Decisions), 14)
	byLine := map[int]Decision{}
	for _, d := range l.Decisions {
		byLine[d.Line] = d
	}
	if d := byLine[137]; !d.Shadow || d.Code != "OK" || d.Current != 2 || d.Limit != 1 || d.ResponseLine != 139 {
		t.Errorf("shadow decision = %+v", d)
	}
	if d := byLine[145]; !d.Unlimited || d.Code != "OK" || d.Descriptor[0].Key != "free" {
		t.Errorf("unlimited decision = %+v", d)
	}
	if d := byLine[160]; !d.NoLimit || d.Domain != "unknown_domain" || d.DomainSource != "unknown_domain" {
		t.Errorf("unknown-domain decision = %+v", d)
	}
	// Two descriptors, one response with two statuses (line 183).
	if d := byLine[181]; d.Code != "OVER_LIMIT" || d.Current != 5 || d.ResponseLine != 183 || d.Unit != "MINUTE" {
		t.Errorf("multi[0] = %+v", d)
	}
	if d := byLine[182]; d.Code != "OK" || d.LimitRemaining != 1 || d.ResponseLine != 183 || d.Key != "rlbench_remote_address_10.0.0.8_1796031236" || d.Descriptor[0].Value != "10.0.0.8" {
		t.Errorf("multi[1] = %+v", d)
	}
	eqInt(t, "shadow lines", len(l.ShadowLines), 1)
	eqStr(t, "shadow stat key", l.ShadowLines[0].Value, "rlbench.shadow_x")
	eqInt(t, "errors", len(l.Errors), 3)
	eqF(t, "sink generic total", l.Sink.Counters["ratelimit.service.rate_limit.rlbench.generic_key_fixed.total_hits"], 5)
	eqF(t, "sink shadow_mode", l.Sink.Counters["ratelimit.service.rate_limit.rlbench.shadow_x.shadow_mode"], 1)
	eqF(t, "sink gauge cx_active", l.Sink.Gauges["ratelimit.redis_pool.cx_active"], 10)
	for _, r := range CheckIdentities(nil, l.Sink.RLSCounters()) {
		if r.Status != IdentityPass {
			t.Errorf("identity %s: %s %s", r.Key, r.Status, r.Detail)
		}
	}

	j := parseLogFixture(t, "rls_local_3fb7025_json_debug.log")
	eqInt(t, "json lines", j.JSONLines, 246)
	eqInt(t, "json text lines", j.TextLines, 3)
	eqInt(t, "json flush lines", j.FlushLines, 58)
	jc := j.CountCodes()
	eqInt(t, "json OK", jc["OK"], 12)
	eqInt(t, "json OVER_LIMIT", jc["OVER_LIMIT"], 5)
	eqInt(t, "json caught errors", j.Counts["caught_error"], 2)
	// The Prometheus sink's Flush lines add up to the /metrics page of the same run.
	prom := parsePromFixture(t, "rls_local_3fb7025_prometheus_metrics.txt").RLSCounters()
	sink := j.Sink.RLSCounters()
	for k, want := range prom.Keys {
		if got := sink.Keys[k]; got != want {
			t.Errorf("sink %s = %+v, prometheus %+v", k, got, want)
		}
	}
	eqInt(t, "sink keys", len(sink.Keys), len(prom.Keys))
	eqF(t, "sink service errors", sink.ServiceErrors, prom.ServiceErrors)
	eqF(t, "sink domain_not_found", sink.DomainNotFound["unknown_domain"], 1)
}

// The 2020 README excerpts: config loading only, one intermediate node.
func TestParseLogREADME(t *testing.T) {
	for _, rel := range []string{"gh_ratelimit_README_log_text_2020.log", "gh_ratelimit_README_log_json_2020.log"} {
		l := parseLogFixture(t, rel)
		eqInt(t, rel+" lines", l.Lines, 8)
		eqInt(t, rel+" unparsed", len(l.Unparsed), 0)
		eqInt(t, rel+" decisions", len(l.Decisions), 0)
		eqInt(t, rel+" listeners", len(l.Listeners), 3)
		if len(l.LimitDefs) != 3 || l.LimitDefs[0].HasLimit || l.LimitDefs[2].RequestsPerUnit != 100 || l.LimitDefs[2].Unit != "DAY" ||
			l.LimitDefs[1].Key != "messaging.message_type_marketing.to_number" || l.LimitDefs[1].RequestsPerUnit != 5 {
			t.Errorf("%s limit defs = %+v", rel, l.LimitDefs)
		}
		if len(l.Domains) != 1 || l.Domains[0].Value != "messaging" {
			t.Errorf("%s domains = %+v", rel, l.Domains)
		}
	}
}

// Non-log inputs (debug-port pages) yield no phantom decisions: every line
// is counted as unparsed.
func TestParseLogNonLogInput(t *testing.T) {
	for rel, lines := range map[string]int{"rls_local_3fb7025_debugport_root.txt": 5, "gh_ratelimit_README_debugport_root.txt": 4,
		"rls_local_3fb7025_debugport_stats_expvar.txt": 2} {
		l := parseLogFixture(t, rel)
		eqInt(t, rel+" unparsed", len(l.Unparsed), lines)
		eqInt(t, rel+" decisions", len(l.Decisions), 0)
		if l.Unparsed[0].Line != 1 {
			t.Errorf("%s first unparsed line %d", rel, l.Unparsed[0].Line)
		}
	}
}

// Template variants across versions and a hand-made interleaving.
func TestParseLogVariants(t *testing.T) {
	const src = `{"@message":"ShouldRateLimit: domain:\"d\" descriptors:{entries:{key:\"k\" value:\"v\"}}","@timestamp":"2026-03-20T10:00:00.5Z","level":"debug"}
{"@message":"got descriptor: (k=v)","@timestamp":"2026-03-20T10:00:00.5Z","level":"debug"}
{"@message":"got descriptor: (k=v)","@timestamp":"2026-03-20T10:00:00.5Z","level":"debug"}
{"@message":"applying limit: 2 requests per MINUTE, shadow_mode: false, quota: false","@timestamp":"2026-03-20T10:00:00.5Z","level":"debug"}
{"@message":"applying limit: 2 requests per MINUTE, shadow_mode: false, quota: false","@timestamp":"2026-03-20T10:00:00.5Z","level":"debug"}
{"@message":"looking up cache key: d_k_v_1773999600","@timestamp":"2026-03-20T10:00:00.5Z","level":"debug"}
{"@message":"looking up cache key: d_k_v_1773999600","@timestamp":"2026-03-20T10:00:00.5Z","level":"debug"}
{"@message":"cache key: d_k_v_1773999600 current: 1 limit: 2","@timestamp":"2026-03-20T10:00:00.6Z","level":"debug"}
{"@message":"cache key: d_k_v_1773999600 current: 2 limit: 2","@timestamp":"2026-03-20T10:00:00.6Z","level":"debug"}
{"@message":"descriptor statuses: [code:OK]","@timestamp":"2026-03-20T10:00:00.6Z","level":"debug"}
{"@message":"returning normal response: overall_code:OK statuses:{code:OK current_limit:{requests_per_unit:2 unit:MINUTE}}","@timestamp":"2026-03-20T10:00:00.7Z","level":"debug"}
{"@message":"returning normal response: overall_code:OK statuses:{code:OK current_limit:{requests_per_unit:2 unit:MINUTE} limit_remaining:1}","@timestamp":"2026-03-20T10:00:00.7Z","level":"debug"}
garbage that is no log line
time="2026-03-20T10:00:01Z" level=debug msg="got descriptor: (k=v)"
time="2026-03-20T10:00:01Z" level=debug msg="applying limit: 2 requests per MINUTE"
time="2026-03-20T10:00:01Z" level=debug msg="looking up cache key: d_k_v_1773999600"
time="2026-03-20T10:00:01Z" level=debug msg="cache key: d_k_v_1773999600 current: 3" extra=field
time="2026-03-20T10:00:01Z" level=debug msg="returning normal response"
time="2026-03-20T10:00:02Z" level=debug msg="cache key is over the limit: d_k_v_1773999600"
time="2026-03-20T10:00:02Z" level=debug msg="returning normal response: overall_code:OVER_LIMIT  statuses:{code:OVER_LIMIT  current_limit:{requests_per_unit:2  unit:MINUTE}}"
time="2026-03-20T10:00:03Z" level=debug msg="looking up cache key: d_k_v_1773999600"
`
	l, err := ParseLog(strings.NewReader(src), "variants.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Unparsed) != 1 || l.Unparsed[0].Line != 13 {
		t.Errorf("unparsed = %+v", l.Unparsed)
	}
	if len(l.Decisions) != 4 {
		t.Fatalf("decisions = %d: %+v", len(l.Decisions), l.Decisions)
	}
	d := l.Decisions
	// Responses came in the opposite order: remaining 1 pairs with current 1.
	if d[0].Current != 1 || d[0].Code != "OK" || d[0].LimitRemaining != 1 || d[0].ResponseLine != 12 {
		t.Errorf("d0 = %+v", d[0])
	}
	if d[1].Current != 2 || d[1].Code != "OK" || d[1].ResponseLine != 11 {
		t.Errorf("d1 = %+v", d[1])
	}
	if d[0].TimeNs != time.Date(2026, 3, 20, 10, 0, 0, 600e6, time.UTC).UnixNano() || d[0].TimeResolutionNs != 1 {
		t.Errorf("d0 time %d res %d", d[0].TimeNs, d[0].TimeResolutionNs)
	}
	// Old response line without prototext: code derived from current > limit.
	if d[2].Current != 3 || d[2].Code != "OVER_LIMIT" || !d[2].CodeDerived || d[2].Limit != 2 || d[2].ResponseLine != 18 || d[2].TimeResolutionNs != int64(time.Second) {
		t.Errorf("d2 = %+v", d[2])
	}
	if !d[3].LocalCache || d[3].HasCurrent || d[3].Code != "OVER_LIMIT" || d[3].CodeDerived || d[3].Domain != "d" {
		t.Errorf("d3 = %+v", d[3])
	}
	if len(l.PendingLookups) != 1 || l.PendingLookups[0].Line != 21 {
		t.Errorf("pending lookups = %+v", l.PendingLookups)
	}
	eqInt(t, "local cache hits", len(l.LocalCacheHits), 1)
}

// Responses out of counter order pair by limit_remaining, not by position.
func TestParseLogPairsByRemaining(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3; i++ {
		b.WriteString(`time="2026-03-20T10:00:00Z" level=debug msg="got descriptor: (k=v)"` + "\n")
		b.WriteString(`time="2026-03-20T10:00:00Z" level=debug msg="applying limit: 5 requests per HOUR, shadow_mode: false"` + "\n")
	}
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&b, "time=\"2026-03-20T10:00:00Z\" level=debug msg=\"cache key: d_k_v_1773997200 current: %d\"\n", i)
	}
	for _, rem := range []int{2, 4, 3} {
		fmt.Fprintf(&b, "time=\"2026-03-20T10:00:00Z\" level=debug msg=\"returning normal response: overall_code:OK  statuses:{code:OK  current_limit:{requests_per_unit:5  unit:HOUR}  limit_remaining:%d}\"\n", rem)
	}
	l, err := ParseLog(strings.NewReader(b.String()), "order.log")
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]int{1: 11, 2: 12, 3: 10} // current -> response line
	eqInt(t, "decisions", len(l.Decisions), 3)
	for _, d := range l.Decisions {
		if d.ResponseLine != want[d.Current] || int(d.LimitRemaining) != 5-int(d.Current) || d.Code != "OK" || d.Domain != "d" {
			t.Errorf("current %d: response line %d remaining %d, want line %d", d.Current, d.ResponseLine, d.LimitRemaining, want[d.Current])
		}
	}
}
