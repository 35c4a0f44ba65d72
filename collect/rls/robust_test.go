package rls

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseLogSpaceInValue: a real 3fb7025 log (testdata, captured by
// TestIntegrationLogSpaceValue) of 14 calls for descriptor tenant="lab one".
// Cache keys hold the value verbatim, space included; the decisions were 9,
// with 5 lookups left "pending", before keys were read up to their
// template's fixed text.
func TestParseLogSpaceInValue(t *testing.T) {
	l := parseLogFixture(t, "rls_local_3fb7025_space_value.log")
	codes := l.CountCodes()
	eqInt(t, "decisions", len(l.Decisions), 14)
	eqInt(t, "OK", codes["OK"], 5)
	eqInt(t, "OVER_LIMIT", codes["OVER_LIMIT"], 9)
	eqInt(t, "pending lookups", len(l.PendingLookups), 0)
	eqInt(t, "unmatched statuses", l.UnmatchedStatuses, 0)
	for i, d := range l.Decisions {
		if d.Key != "inventory_tenant_lab one_1796115600" || d.Domain != "inventory" || d.DomainSource != "descriptor" ||
			len(d.Descriptor) != 1 || d.Descriptor[0].Value != "lab one" || d.Current != uint64(i+1) || d.CodeDerived {
			t.Errorf("decision %d = %+v", i, d)
		}
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings %q", l.Warnings)
	}
}

// TestParseLogSpaceTemplates: the other templates that print a key
// (limiter/base_limiter.go, redis/fixed_cache_impl.go, config_impl.go),
// with a value holding spaces.
func TestParseLogSpaceTemplates(t *testing.T) {
	const src = `time="2026-03-20T10:00:00Z" level=debug msg="loading descriptor: key=d.k_a b ratelimit={requests_per_unit=1, unit=MINUTE, unlimited=false, shadow_mode=true, quota_mode=false}"
time="2026-03-20T10:00:00Z" level=debug msg="loading descriptor: key=d.k"
time="2026-03-20T10:00:01Z" level=debug msg="got descriptor: (k=a b)"
time="2026-03-20T10:00:01Z" level=debug msg="applying limit: 1 requests per MINUTE, shadow_mode: true"
time="2026-03-20T10:00:01Z" level=debug msg="looking up cache key: d_k_a b_1773999600"
time="2026-03-20T10:00:01Z" level=debug msg="cache key: d_k_a b_1773999600 current: 2"
time="2026-03-20T10:00:01Z" level=debug msg="Limit with key d.k_a b, is in shadow_mode"
time="2026-03-20T10:00:01Z" level=debug msg="returning normal response: overall_code:OK  statuses:{code:OK  current_limit:{requests_per_unit:1  unit:MINUTE}}"
time="2026-03-20T10:00:02Z" level=debug msg="got descriptor: (k=a b)"
time="2026-03-20T10:00:02Z" level=debug msg="applying limit: 1 requests per MINUTE, shadow_mode: false"
time="2026-03-20T10:00:02Z" level=debug msg="cache key is over the limit: d_k_a b_1773999600"
time="2026-03-20T10:00:02Z" level=debug msg="Cache key d_k_a b_1773999600 would be rate limited but shadow mode is enabled on this rule"
`
	l, err := ParseLog(strings.NewReader(src), "s.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.LimitDefs) != 2 || l.LimitDefs[0].Key != "d.k_a b" || !l.LimitDefs[0].HasLimit || !l.LimitDefs[0].ShadowMode || l.LimitDefs[1].Key != "d.k" || l.LimitDefs[1].HasLimit {
		t.Errorf("limit defs %+v", l.LimitDefs)
	}
	if len(l.ShadowLines) != 1 || l.ShadowLines[0].Value != "d.k_a b" {
		t.Errorf("shadow lines %+v", l.ShadowLines)
	}
	if len(l.Decisions) != 3 {
		t.Fatalf("decisions %+v", l.Decisions)
	}
	if d := l.Decisions[0]; !d.Shadow || d.Code != "OK" || d.Current != 2 || d.Descriptor[0].Value != "a b" {
		t.Errorf("shadow decision %+v", d)
	}
	for _, d := range l.Decisions[1:] {
		if !d.LocalCache || d.Key != "d_k_a b_1773999600" || d.Domain != "d" {
			t.Errorf("local cache decision %+v", d)
		}
	}
	if !l.Decisions[2].Shadow || len(l.LocalCacheHits) != 2 {
		t.Errorf("local cache shadow: %+v, hits %d", l.Decisions[2], len(l.LocalCacheHits))
	}
}

// TestParseLogNoDebugWarning: a real log of the RLS at LOG_LEVEL=info
// (captured by TestIntegrationLogInfoLevel after three calls) has no
// decision line; that is a warning, not a silent 0.
func TestParseLogNoDebugWarning(t *testing.T) {
	l := parseLogFixture(t, "rls_local_3fb7025_info_level.log")
	eqInt(t, "decisions", len(l.Decisions), 0)
	if len(l.Warnings) != 1 || !strings.HasPrefix(l.Warnings[0], WarnNoDebugLines) || !strings.Contains(l.Warnings[0], "none of the 12 envoyproxy/ratelimit lines") {
		t.Errorf("warnings %q", l.Warnings)
	}
	for src, want := range map[string]string{
		"": "no decision lines: the log is empty",
		`time="2026-03-20T10:00:00Z" level=debug msg="loading domain: d"` + "\n": "no decision lines, though 1 lines are at level debug",
	} {
		l, err := ParseLog(strings.NewReader(src), "x.log")
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Warnings) != 1 || !strings.HasPrefix(l.Warnings[0], want) {
			t.Errorf("%q: warnings %q, want %q", src, l.Warnings, want)
		}
	}
	// A log with decisions has no warning.
	if l := parseLogFixture(t, "rls_local_3fb7025_text_debug.log"); len(l.Warnings) != 0 {
		t.Errorf("debug log warnings %q", l.Warnings)
	}
}

// TestStatsdNonFinite: one line with NaN, an infinity, an absurd sample
// rate or an overflowing value lost all totals ("json: unsupported value:
// NaN"). Such lines are now named and left out; the rest is summed.
func TestStatsdNonFinite(t *testing.T) {
	in := strings.Join([]string{
		"a:1|c",
		"a:NaN|c",          // 2
		"a:+Inf|c",         // 3
		"a:1|c|@1e-320",    // 4: 1/1e-320 = +Inf
		"g:1e999|g",        // 5: out of range
		"a:1|c|@0.5",       // counts 2
		"big:1e308|c",      // 7
		"big:1e308|c",      // 8: the sum overflows
		"t:-Inf|ms",        // 9
		"a:1|c|@0.0000001", // 10: below MinSampleRate
	}, "\n") + "\n"
	tot, err := ParseStatsd(strings.NewReader(in), "raw.statsd")
	if err != nil {
		t.Fatal(err)
	}
	eqF(t, "a", tot.Counters["a"], 3)
	eqF(t, "big", tot.Counters["big"], 1e308)
	eqInt(t, "lines", tot.Lines, 3)
	eqInt(t, "rejected", tot.Rejected, 7)
	for i, want := range []string{"raw.statsd:2: ", "raw.statsd:3: ", "raw.statsd:4: ", "raw.statsd:5: ", "raw.statsd:8: ", "raw.statsd:9: ", "raw.statsd:10: "} {
		if i >= len(tot.RejectedLines) || !strings.HasPrefix(tot.RejectedLines[i], want) {
			t.Errorf("rejected line %d = %q, want prefix %q", i, tot.RejectedLines, want)
		}
	}
	if !strings.Contains(tot.RejectedLines[2], "sample rate 1e-320 is outside") || !strings.Contains(tot.RejectedLines[4], "overflows") {
		t.Errorf("messages %q", tot.RejectedLines)
	}
	if _, err := json.Marshal(tot); err != nil {
		t.Errorf("totals do not marshal: %v", err)
	}
	// The same lines received by ListenStatsd (JSONL capture).
	tot, err = ParseStatsd(strings.NewReader(`{"recv_ns":1,"proto":"udp","line":"a:NaN|c"}`+"\n"+`{"recv_ns":2,"proto":"udp","line":"a:2|c"}`+"\n"), "cap.jsonl")
	if err != nil || tot.Rejected != 1 || tot.Malformed != 0 || tot.Counters["a"] != 2 || !strings.HasPrefix(tot.RejectedLines[0], "cap.jsonl:1: ") {
		t.Errorf("capture: %+v, %v", tot, err)
	}
	// gostats' logging sink and the Prometheus sink's Flush lines inside an RLS log.
	log := `{"level":"debug","ts":1.5,"logger":"gostats.loggingsink","msg":"flushing counter","json":{"name":"x","type":"counter","value":"NaN"}}
time="2026-03-20T10:00:00Z" level=debug msg="FlushCounter: y 1e999"
time="2026-03-20T10:00:00Z" level=debug msg="FlushCounter: y 2"
`
	l, err := ParseLog(strings.NewReader(log), "rls.log")
	if err != nil {
		t.Fatal(err)
	}
	if l.Sink.Rejected != 2 || l.Sink.Counters["y"] != 2 || !strings.HasPrefix(l.Sink.RejectedLines[1], "rls.log:2: ") {
		t.Errorf("sink %+v", l.Sink)
	}
	if _, err := json.Marshal(l); err != nil {
		t.Errorf("log does not marshal: %v", err)
	}
}

// TestPromNonFiniteNamed: a NaN in an RLS series came back with no series
// named; the error now names the series and its line.
func TestPromNonFiniteNamed(t *testing.T) {
	in := `# HELP go_gc_duration_seconds x
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} NaN
go_gc_duration_seconds_sum 0
go_gc_duration_seconds_count 0
# TYPE ratelimit_service_rate_limit_total_hits counter
ratelimit_service_rate_limit_total_hits{domain="inventory",key1="tenant"} 3
ratelimit_service_rate_limit_total_hits{domain="inventory",key1="tenant_lab"} NaN
`
	_, err := ParsePrometheus(strings.NewReader(in), "metrics.prom")
	if err == nil || !strings.HasPrefix(err.Error(), `metrics.prom:8: series ratelimit_service_rate_limit_total_hits{domain="inventory",key1="tenant_lab"}: value NaN`) {
		t.Fatalf("err = %v", err)
	}
	for _, bad := range []string{
		"ratelimit_service_should_rate_limit_error{err_type=\"redis_error\"} +Inf\n",
		"ratelimit_service_config_load_success -1\n",
		"ratelimit_redis_pool_cx_active NaN\n",
	} {
		if _, err := ParsePrometheus(strings.NewReader(bad), "m"); err == nil || !strings.HasPrefix(err.Error(), "m:1: series ") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
	// The NaN quantile of an unrelated family is no error, and the page marshals.
	s, err := ParsePrometheus(strings.NewReader(strings.Join(strings.Split(in, "\n")[:7], "\n")+"\n"), "ok.prom")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("marshal: %v", err)
	}
}

// TestParseLogBounds: a line longer than MaxLogLine is kept cut in Unparsed
// (the whole line was held in memory before), and a prototext response
// nested absurdly deep is an unparsed response, not a stack overflow.
func TestParseLogBounds(t *testing.T) {
	long := strings.Repeat("x", 3*MaxLogLine)
	deep := strings.Repeat("a{", 100000)
	src := long + "\n" + `time="2026-03-20T10:00:00Z" level=debug msg="returning normal response: ` + deep + `"` + "\n" +
		`time="2026-03-20T10:00:00Z" level=debug msg="loading domain: d"` + "\n"
	l, err := ParseLog(strings.NewReader(src), "big.log")
	if err != nil {
		t.Fatal(err)
	}
	eqInt(t, "lines", l.Lines, 3)
	if len(l.Unparsed) != 1 || l.Unparsed[0].Line != 1 || !strings.HasPrefix(l.Unparsed[0].Text, "(line longer than 1048576 bytes, not read) xxx") || len(l.Unparsed[0].Text) > 300 {
		t.Errorf("unparsed %+v", l.Unparsed)
	}
	eqInt(t, "unparsed responses", l.Counts["response_unparsed"], 1)
	if len(l.Domains) != 1 || l.Domains[0].Line != 3 {
		t.Errorf("domains %+v", l.Domains)
	}
	if _, err := ParseResponseText(deep); err == nil || !strings.Contains(err.Error(), "nested deeper than 32") {
		t.Errorf("deep prototext: %v", err)
	}
}
