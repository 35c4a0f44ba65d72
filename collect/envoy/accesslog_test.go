package envoy

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

func TestAccessLogDefaultFormatFixture(t *testing.T) {
	name := "gh_envoy_issue7351_envoy_access_log_default_2019.log"
	entries, err := envoyrec.ParseAccessLog(bytes.NewReader(fixture(t, name)), name)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 5 {
		t.Fatalf("%d entries, want 5", len(entries))
	}
	e := entries[0]
	wantTime := time.Date(2019, 6, 21, 2, 11, 45, 131_000_000, time.UTC)
	if !e.Time.Equal(wantTime) || e.StartTime != "2019-06-21T02:11:45.131Z" {
		t.Errorf("time %v %q", e.Time, e.StartTime)
	}
	if e.Line != 1 || e.Method != "POST" || e.Path != "/anyservice.AnyService/GetStream" || e.Protocol != "HTTP/1.1" ||
		e.Code != 200 || e.Flags != nil || e.BytesReceived != 8 || e.BytesSent != 0 ||
		e.RequestID != "1327974d-12d4-46f1-b226-8f1307383c4f" || e.Authority != "localhost:7815" ||
		e.UpstreamHost != "127.0.0.1:7810" || e.CodeDetails != "" || e.RlbenchID != "" ||
		!strings.HasPrefix(e.UserAgent, "Mozilla/5.0 (linux)") {
		t.Errorf("entry %+v", e)
	}
	var durs []int64
	for _, e := range entries {
		durs = append(durs, *e.DurationMs)
		if p := envoyrec.Producer(e); p != envoyrec.ProducerBackend {
			t.Errorf("line %d producer %q", e.Line, p)
		}
	}
	if !reflect.DeepEqual(durs, []int64{258, 256, 260, 266, 259}) {
		t.Errorf("durations %v", durs)
	}
	if entries[4].RequestID != "63a3c56b-00a2-4c06-85cf-226e8c4e55ca" || entries[4].Line != 5 {
		t.Errorf("last entry %+v", entries[4])
	}
}

// The RLS debug log in the same issue is not an access log: the error must
// name the file and the first line.
func TestAccessLogRejectsRLSLogFixture(t *testing.T) {
	name := "gh_envoy_issue7351_rls_debug_text_2019.log"
	_, err := envoyrec.ParseAccessLog(bytes.NewReader(fixture(t, name)), name)
	var le *envoyrec.LineError
	if !errors.As(err, &le) || le.Line != 1 || !strings.HasPrefix(err.Error(), name+":1: ") {
		t.Fatalf("error %v, want %s:1", err, name)
	}
}

func TestAccessLogMixedFormatsAndProducers(t *testing.T) {
	lines := []string{
		// 1 local limiter, Envoy default format
		`[2026-11-30T10:00:00.001Z] "GET /a HTTP/1.1" 429 RL 0 18 0 - "-" "rlbench" "rid-1" "edge" "-"`,
		// 2 Istio format with details: global limiter
		`[2026-11-30T10:00:00.002Z] "GET /a HTTP/1.1" 429 RL request_rate_limited - "-" 0 0 3 - "-" "rlbench" "rid-2" "edge" "-" outbound|8080||svc.ns.svc.cluster.local - 10.0.0.1:8080 10.0.0.2:5000 - default`,
		// 3 Istio format: local limiter
		`[2026-11-30T10:00:00.003Z] "GET /a HTTP/1.1" 429 RL local_rate_limited - "-" 0 18 0 - "-" "rlbench" "rid-3" "edge" "-" - - 10.0.0.1:8080 10.0.0.2:5000 - default`,
		// 4 JSON, long-form flags, RLS error
		`{"start_time":"2026-11-30T10:00:00.004Z","method":"GET","path":"/a","response_code":500,"response_flags":"RateLimitServiceError","response_code_details":"rate_limiter_error","x-request-id":"rid-4","x-rlbench-id":"rb-4","upstream_host":null,"duration":2}`,
		// 5 JSON, circuit breaker, flags as array, alternative keys
		`{"timestamp":"2026-11-30T10:00:00.005Z","request_method":"POST","request_path":"/b","status":"503","flags":["UpstreamOverflow"],"request_id":"rid-5","rlbench_id":"rb-5","duration_ms":"1","bytes_sent":81}`,
		// 6 JSON, upstream failure, several flags
		`{"START_TIME":1796031180123,"METHOD":"GET","PATH":"/c","RESPONSE_CODE":503,"RESPONSE_FLAGS":"UF,URX","RESPONSE_CODE_DETAILS":"upstream_reset_before_response_started{connection_failure}","UPSTREAM_HOST":"127.0.0.1:9000","DURATION":"-"}`,
		// 7 JSON, backend 429 without flags
		`{"start_time":"2026-11-30T10:00:00.007Z","method":"GET","path":"/d","response_code":429,"response_flags":"-","response_code_details":"via_upstream","upstream_host":"127.0.0.1:9000","x_rlbench_id":"rb-7"}`,
		// 8 global limiter, long form, JSON without details
		`{"start_time":"2026-11-30T10:00:00.008Z","response_code":429,"response_flags_long":"RateLimited"}`,
		// 9 other flag
		`[2026-11-30T10:00:00.009Z] "GET /nothing HTTP/1.1" 404 NR 0 0 0 - "-" "curl" "rid-9" "edge" "-"`,
		// 10 upstream timeout
		`[2026-11-30T10:00:00.010Z] "GET /slow HTTP/1.1" 504 UT 0 24 15000 - "-" "curl" "rid-10" "edge" "127.0.0.1:9000"`,
		// 11 details only (flags not logged): local limiter
		`{"response_code":429,"response_code_details":"local_rate_limited"}`,
		// 12 default format, RL with empty body: global limiter
		`[2026-11-30T10:00:00.012Z] "GET /a HTTP/1.1" 429 RL 0 0 1 - "-" "rlbench" "rid-12" "edge" "-"`,
		"",
	}
	entries, err := envoyrec.ParseAccessLog(strings.NewReader(strings.Join(lines, "\n")), "mixed.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 12 {
		t.Fatalf("%d entries", len(entries))
	}
	wantProducers := []string{
		envoyrec.ProducerLocalLimiter, envoyrec.ProducerGlobalLimiter, envoyrec.ProducerLocalLimiter, envoyrec.ProducerRLSError, envoyrec.ProducerCircuitBreaker,
		envoyrec.ProducerUpstreamFailure, envoyrec.ProducerBackend, envoyrec.ProducerGlobalLimiter, envoyrec.ProducerOther, envoyrec.ProducerUpstreamFailure, envoyrec.ProducerLocalLimiter,
		envoyrec.ProducerGlobalLimiter,
	}
	for i, e := range entries {
		if got := envoyrec.Producer(e); got != wantProducers[i] {
			t.Errorf("line %d: producer %q, want %q (flags %v details %q)", e.Line, got, wantProducers[i], e.Flags, e.CodeDetails)
		}
	}
	if e := entries[1]; e.CodeDetails != "request_rate_limited" || e.UpstreamCluster != "outbound|8080||svc.ns.svc.cluster.local" || *e.DurationMs != 3 || e.RequestID != "rid-2" {
		t.Errorf("istio entry %+v", e)
	}
	if e := entries[2]; e.UpstreamCluster != "" || e.BytesSent != 18 {
		t.Errorf("istio local entry %+v", e)
	}
	if e := entries[3]; !reflect.DeepEqual(e.Flags, []string{"RLSE"}) || e.Code != 500 || e.RlbenchID != "rb-4" || e.RequestID != "rid-4" || e.UpstreamHost != "" || *e.DurationMs != 2 ||
		!e.Time.Equal(time.Date(2026, 11, 30, 10, 0, 0, 4_000_000, time.UTC)) {
		t.Errorf("json entry %+v", e)
	}
	if e := entries[4]; !reflect.DeepEqual(e.Flags, []string{"UO"}) || e.Code != 503 || e.Method != "POST" || e.Path != "/b" || e.RequestID != "rid-5" || e.RlbenchID != "rb-5" || *e.DurationMs != 1 || e.BytesSent != 81 {
		t.Errorf("json entry 5 %+v", e)
	}
	if e := entries[5]; !reflect.DeepEqual(e.Flags, []string{"UF", "URX"}) || e.DurationMs != nil || !e.Time.Equal(time.UnixMilli(1796031180123)) || e.Method != "GET" {
		t.Errorf("json entry 6 %+v", e)
	}
	if e := entries[6]; e.Flags != nil || e.RlbenchID != "rb-7" {
		t.Errorf("json entry 7 %+v", e)
	}
	if e := entries[10]; e.Line != 11 || !e.Time.IsZero() {
		t.Errorf("entry 11 %+v", e)
	}
}

func TestAccessLogErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
	}{
		{"\n[2026-11-30T10:00:00.001Z] \"GET /a HTTP/1.1\" 200 - 0 0 1 - \"-\" \"x\" \"r\" \"a\"\n", 2},
		{`[yesterday] "GET /a HTTP/1.1" 200 - 0 0 1 - "-" "x" "r" "a" "h"`, 1},
		{"{\"response_code\":200}\n{\"response_code\":\"abc\"}", 2},
		{`{"response_code":200,"method":{"x":1}}`, 1},
		{`{"response_flags":3}`, 1},
		{`{"broken":`, 1},
		{"{}\n{}\n{\"local_ns\":-5}", 3},
		{`{"upstream_start_ns":"soon"}`, 1},
		{`{"rls_end_ns":1e300}`, 1},
		{`{"duration":-1e19}`, 1},
	} {
		_, err := envoyrec.ParseAccessLog(strings.NewReader(c.in), "a.log")
		var le *envoyrec.LineError
		if !errors.As(err, &le) || le.Line != c.line || le.Source != "a.log" {
			t.Errorf("ParseAccessLog(%q) error %v, want a.log line %d", c.in, err, c.line)
		}
	}
}

// The lab proxy's own times (start_ns, local_ns, rls_start_ns, rls_end_ns,
// upstream_start_ns) are read from JSON lines that carry them, as integers,
// numeric strings or floats (rounded to float64 precision: 1.796032800006144e18
// is exact); a line without them (Envoy's formats) has zeros.
func TestAccessLogProxyTimes(t *testing.T) {
	in := `{"start_ns":1796032800004000000,"local_ns":1796032800004100000,"rls_start_ns":"1796032800004200000","rls_end_ns":1796032800005000000,"upstream_start_ns":1796032800005100000,"response_code":200}
{"START_NS":1796032800006000000,"local_ns":1.796032800006144e18,"rls_start_ns":"-","response_code":429,"response_flags":"RL","response_code_details":"local_rate_limited"}
{"start_time":"2026-11-30T10:00:00.004Z","response_code":200}
[2026-11-30T10:00:00.001Z] "GET /a HTTP/1.1" 200 - 0 0 1 - "-" "x" "r" "a" "h"
`
	es, err := envoyrec.ParseAccessLog(strings.NewReader(in), "a.log")
	if err != nil {
		t.Fatal(err)
	}
	type times struct{ start, local, rlsStart, rlsEnd, upstream int64 }
	got := make([]times, len(es))
	for i, e := range es {
		got[i] = times{e.StartNs, e.LocalNs, e.RLSStartNs, e.RLSEndNs, e.UpstreamStartNs}
	}
	want := []times{
		{1796032800004000000, 1796032800004100000, 1796032800004200000, 1796032800005000000, 1796032800005100000},
		{1796032800006000000, 1796032800006144000, 0, 0, 0},
		{}, {},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("times\n got %v\nwant %v", got, want)
	}
	if es[2].StartTime == "" || es[3].Code != 200 {
		t.Errorf("lines without the times parse as before: %+v %+v", es[2], es[3])
	}
}

func TestParseFlags(t *testing.T) {
	cases := map[string][]string{
		"-":                                    nil,
		"":                                     nil,
		"RL":                                   {"RL"},
		"UF,URX":                               {"UF", "URX"},
		"RateLimited":                          {"RL"},
		"UpstreamOverflow,NoHealthyUpstream":   {"UO", "UH"},
		"OverloadManagerTerminated,SomethingX": {"OM", "SomethingX"},
	}
	for in, want := range cases {
		if got := envoyrec.ParseFlags(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseFlags(%q) = %v, want %v", in, got, want)
		}
	}
	// Every long form in the reference table maps to its documented short form.
	for long, short := range map[string]string{
		"RateLimited": "RL", "RateLimitServiceError": "RLSE", "UpstreamOverflow": "UO", "UpstreamConnectionTermination": "UC",
		"UpstreamRetryLimitExceeded": "URX", "UpstreamConnectionFailure": "UF", "NoHealthyUpstream": "UH", "UpstreamRequestTimeout": "UT",
		"LocalReset": "LR", "UpstreamRemoteReset": "UR", "DownstreamConnectionTermination": "DC", "NoRouteFound": "NR",
		"UnauthorizedExternalService": "UAEX", "DropOverload": "DO", "DownstreamRemoteReset": "DR",
	} {
		if got := envoyrec.ShortFlag(long); got != short {
			t.Errorf("ShortFlag(%q) = %q, want %q", long, got, short)
		}
	}
}
