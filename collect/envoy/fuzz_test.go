package envoy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// Fuzz targets for every parser of this package. Seeds are the fixtures
// (testdata, copies of shared/fixtures/envoy) and the inputs of the unit
// tests; crashers found are kept in testdata/fuzz/<FuzzXxx>/. Each target
// checks properties of the result, not only the absence of a panic.

func addFixtureSeeds(f *testing.F, names ...string) {
	for _, n := range names {
		f.Add(fixture(f, n))
	}
}

// lineCount is the number of lines a scanner sees in data.
func lineCount(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// checkLineError asserts that err is a *LineError naming name and a line
// of data (0 = the whole input; lines+1 = its end).
func checkLineError(t *testing.T, err error, name string, data []byte) {
	t.Helper()
	var le *envoyrec.LineError
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T) is not a *LineError", err, err)
	}
	if le.Source != name || le.Line < 0 || le.Line > lineCount(data)+1 {
		t.Fatalf("error %q names %s line %d; input has %d lines", err, le.Source, le.Line, lineCount(data))
	}
}

// checkSnapshot asserts what every parsed snapshot must satisfy: it
// marshals (no NaN or infinity anywhere), its derived groups are consistent
// with Values, and at least one stat was found.
func checkSnapshot(t *testing.T, s *envoyrec.Snapshot) {
	t.Helper()
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("snapshot does not marshal: %v", err)
	}
	if len(s.Values)+len(s.TextReadouts)+len(s.Histograms) == 0 {
		t.Fatalf("empty snapshot accepted")
	}
	for _, l := range s.Local {
		for ctr, v := range map[string]uint64{"enabled": l.Enabled, "ok": l.OK, "rate_limited": l.RateLimited, "enforced": l.Enforced} {
			if got, ok := s.Values[l.Prefix+".http_local_rate_limit."+ctr]; (ok && got != v) || (!ok && v != 0) {
				t.Fatalf("local %s.%s = %d, Values has %d (%v)", l.Prefix, ctr, v, got, ok)
			}
		}
	}
	// issue 27: every inexact key is a value, listed once, in order
	for i, k := range s.Inexact {
		if _, ok := s.Values[k]; !ok || i > 0 && s.Inexact[i-1] >= k {
			t.Fatalf("inexact %q: in values %v, list %q", k, ok, s.Inexact)
		}
	}
	for _, h := range s.Histograms {
		for _, q := range h.Quantiles {
			if math.IsNaN(q.Percent) || (q.Interval != nil && !finite(*q.Interval)) || (q.Cumulative != nil && !finite(*q.Cumulative)) {
				t.Fatalf("non-finite quantile %+v", q)
			}
		}
	}
}

// renderText writes the counters, gauges and text readouts of s the way
// Envoy's text /stats does, sorted by name.
func renderText(s *envoyrec.Snapshot) []byte {
	var b bytes.Buffer
	names := make([]string, 0, len(s.Values))
	for n := range s.Values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s: %d\n", n, s.Values[n])
	}
	names = names[:0]
	for n := range s.TextReadouts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s: \"%s\"\n", n, s.TextReadouts[n])
	}
	return b.Bytes()
}

func FuzzParseText(f *testing.F) {
	addFixtureSeeds(f, "gh_envoy_issue7351_stats_text_excerpt_2019.txt", "gh_envoy_issue6974_stats_text_rls_cluster_excerpt_2019.txt",
		"gh_envoy_issue27878_stats_text_readouts_excerpt_2023.txt", "gh_envoy_admin_rst_stats_detailed_histogram_text.txt",
		"gh_fsm_start_demo_osm_edge_pipy_local_rl_NOT_ENVOY.txt")
	f.Add([]byte("cluster.a.ratelimit.b.ratelimit.ok: 3\ncluster.a.upstream_rq_total: 1\nh: P0(nan,1) P100(2,3)\nb: B0.5(1,2) B1(3,4)\nx: No recorded values\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(bytes.NewReader(data), "f.txt", envoyrec.FormatText)
		if err != nil {
			checkLineError(t, err, "f.txt", data)
			return
		}
		checkSnapshot(t, s)
		// Re-parsing the canonical rendering of the values gives the same values.
		if len(s.Values)+len(s.TextReadouts) == 0 {
			return
		}
		again, err := Parse(bytes.NewReader(renderText(s)), "again", envoyrec.FormatText)
		if err != nil {
			t.Fatalf("canonical rendering does not parse: %v\n%s", err, renderText(s))
		}
		if !reflect.DeepEqual(again.Values, s.Values) || !reflect.DeepEqual(again.TextReadouts, s.TextReadouts) ||
			!reflect.DeepEqual(again.Local, s.Local) || !reflect.DeepEqual(again.Global, s.Global) || !reflect.DeepEqual(again.Upstream, s.Upstream) {
			t.Fatalf("re-parse differs:\n%+v\n%+v", s, again)
		}
		// The lenient parser accepts everything the strict one does, identically.
		ls, skipped, err := ParseLenient(bytes.NewReader(data), "f.txt", envoyrec.FormatText)
		if err != nil || len(skipped) != 0 || !reflect.DeepEqual(ls, s) {
			t.Fatalf("lenient parse differs: %v, %d skipped", err, len(skipped))
		}
	})
}

func FuzzParseJSON(f *testing.F) {
	addFixtureSeeds(f, "gh_envoy_admin_rst_stats_json_histograms_doc_example.json")
	f.Add([]byte(`{"stats":[{"name":"cluster.a.upstream_rq_429","value":3},{"name":"v","value":"text"},{"histograms":[{"name":"h","buckets":[{"upper_bound":1,"interval":0,"cumulative":2}]}]}]}`))
	f.Add([]byte(`{"stats":[{"histograms":{"supported_quantiles":[50],"computed_quantiles":[{"name":"q","values":[{"interval":null,"cumulative":1.5}]}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(bytes.NewReader(data), "f.json", envoyrec.FormatJSON)
		if err != nil {
			checkLineError(t, err, "f.json", data)
			return
		}
		checkSnapshot(t, s)
		if len(s.Values)+len(s.TextReadouts) == 0 {
			return
		}
		type elem struct {
			Name  string `json:"name"`
			Value any    `json:"value"`
		}
		var out struct {
			Stats []elem `json:"stats"`
		}
		for n, v := range s.Values {
			out.Stats = append(out.Stats, elem{n, v})
		}
		for n, v := range s.TextReadouts {
			out.Stats = append(out.Stats, elem{n, v})
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(bytes.NewReader(b), "again", envoyrec.FormatJSON)
		if err != nil {
			t.Fatalf("canonical rendering does not parse: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(again.Values, s.Values) || !reflect.DeepEqual(again.TextReadouts, s.TextReadouts) {
			t.Fatalf("re-parse differs:\n%+v\n%+v", s, again)
		}
	})
}

func FuzzParsePrometheus(f *testing.F) {
	addFixtureSeeds(f, "gh_aeraki_pr40_prometheus_empty_braces_2022.txt", "gh_envoy_pr21912_changelog_prometheus_rename_2022.txt")
	f.Add([]byte("# TYPE envoy_cluster_ratelimit_ok counter\nenvoy_cluster_ratelimit_ok{envoy_cluster_name=\"c\"} 3\n" +
		"# TYPE envoy_http_local_rate_limit_enforced counter\nenvoy_http_local_rate_limit_enforced{envoy_local_http_ratelimit_prefix=\"p\"} 2\n" +
		"# TYPE envoy_cluster_upstream_rq counter\nenvoy_cluster_upstream_rq{envoy_response_code=\"429\",envoy_cluster_name=\"c\"} 1\n" +
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n" +
		"# TYPE s summary\ns{quantile=\"0.5\"} NaN\ns_sum 0\ns_count 0\n# TYPE v gauge\nv{text_value=\"x\"} 0\n"))
	// issue 27: counters past 2^53 and past 2^64-1
	f.Add([]byte("# TYPE envoy_http_local_rate_limit_ok counter\nenvoy_http_local_rate_limit_ok{envoy_local_http_ratelimit_prefix=\"p\"} 18446744073709551615\n" +
		"# TYPE envoy_cluster_ratelimit_ok counter\nenvoy_cluster_ratelimit_ok{envoy_cluster_name=\"c\"} 9007199254740993\n# TYPE big gauge\nbig 1e300\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(bytes.NewReader(data), "f.prom", envoyrec.FormatPrometheus)
		if err != nil {
			checkLineError(t, err, "f.prom", data)
			return
		}
		checkSnapshot(t, s)
		for k, h := range s.Histograms {
			if h.Sum != nil && !finite(*h.Sum) {
				t.Fatalf("histogram %s sum %v", k, *h.Sum)
			}
		}
		// Parsing is deterministic (families are visited in sorted order).
		again, err := Parse(bytes.NewReader(data), "f.prom", envoyrec.FormatPrometheus)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("second parse differs: %v", err)
		}
	})
}

func FuzzDetectFormat(f *testing.F) {
	addFixtureSeeds(f, "gh_envoy_issue7351_stats_text_excerpt_2019.txt", "gh_aeraki_pr40_prometheus_empty_braces_2022.txt", "gh_envoy_admin_rst_stats_json_histograms_doc_example.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		format := DetectFormat(data)
		s, err := Parse(bytes.NewReader(data), "f", "")
		if err != nil {
			checkLineError(t, err, "f", data)
			return
		}
		if s.Format != format {
			t.Fatalf("Parse with format \"\" chose %s, DetectFormat %s", s.Format, format)
		}
	})
}

// renderAccessJSON writes entries as JSON access log lines with the keys
// ParseAccessLog looks for first.
func renderAccessJSON(es []envoyrec.AccessLogEntry) []byte {
	var b bytes.Buffer
	for _, e := range es {
		m := map[string]any{}
		for k, v := range map[string]string{"start_time": e.StartTime, "method": e.Method, "path": e.Path, "protocol": e.Protocol,
			"response_code_details": e.CodeDetails, "x-request-id": e.RequestID, "x-rlbench-id": e.RlbenchID, "upstream_host": e.UpstreamHost,
			"upstream_cluster": e.UpstreamCluster, "authority": e.Authority, "user_agent": e.UserAgent, "response_flags": strings.Join(e.Flags, ",")} {
			if v != "" {
				m[k] = v
			}
		}
		m["response_code"] = e.Code
		if e.DurationMs != nil {
			m["duration"] = *e.DurationMs
		}
		m["bytes_received"], m["bytes_sent"] = e.BytesReceived, e.BytesSent
		for k, v := range map[string]int64{"start_ns": e.StartNs, "local_ns": e.LocalNs, "rls_start_ns": e.RLSStartNs, "rls_end_ns": e.RLSEndNs,
			"upstream_start_ns": e.UpstreamStartNs} {
			if v != 0 {
				m[k] = v
			}
		}
		line, _ := json.Marshal(m)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func FuzzParseAccessLog(f *testing.F) {
	addFixtureSeeds(f, "gh_envoy_issue7351_envoy_access_log_default_2019.log")
	f.Add([]byte(`{"start_time":"2026-11-30T10:00:00.004Z","method":"GET","path":"/a","response_code":500,"response_flags":"RateLimitServiceError","response_code_details":"rate_limiter_error","x-request-id":"rid-4","x-rlbench-id":"rb-4","upstream_host":null,"duration":2}
{"timestamp":"2026-11-30T10:00:00.005Z","request_method":"POST","request_path":"/b","status":"503","flags":["UpstreamOverflow"],"request_id":"rid-5","rlbench_id":"rb-5","duration_ms":"1","bytes_sent":81}
{"START_TIME":1796031180123,"METHOD":"GET","PATH":"/c","RESPONSE_CODE":503,"RESPONSE_FLAGS":"UF,URX","DURATION":"-"}
`))
	f.Add([]byte(`{"start_time":"2026-11-30T10:00:00.004Z","start_ns":1796032800004000000,"local_ns":1796032800004100000,"rls_start_ns":1796032800004200000,"rls_end_ns":"1796032800005000000","upstream_start_ns":1796032800005100000,"method":"GET","path":"/r/1","response_code":200,"response_flags":"-","proxy":"proxy-a"}
{"start_ns":1796032800006000000,"local_ns":1.7960328000061e18,"rls_start_ns":"-","response_code":429,"response_flags":"RL"}
`))
	f.Add([]byte(`[2026-11-30T10:00:00.001Z] "GET /x HTTP/1.1" 429 RL local_rate_limited - "-" 0 18 0 - "-" "curl/8" "rid" "a:1" "-" outbound|80||backend -` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := envoyrec.ParseAccessLog(bytes.NewReader(data), "access.log")
		if err != nil {
			checkLineError(t, err, "access.log", data)
			return
		}
		prev := 0
		for _, e := range es {
			if e.Line <= prev || e.Line > lineCount(data) {
				t.Fatalf("entry line %d after %d (input has %d lines)", e.Line, prev, lineCount(data))
			}
			prev = e.Line
			if p := envoyrec.Producer(e); p == "" {
				t.Fatalf("no producer for %+v", e)
			}
		}
		if _, err := json.Marshal(es); err != nil {
			t.Fatalf("entries do not marshal: %v", err)
		}
		// Parsing is deterministic, and the JSON rendering of the entries
		// parses back to the same entries (but for line numbers and the
		// parsed time, which depends on how the original wrote it).
		again, err := envoyrec.ParseAccessLog(bytes.NewReader(data), "access.log")
		if err != nil || !reflect.DeepEqual(again, es) {
			t.Fatalf("second parse differs: %v", err)
		}
		if !utf8.Valid(data) {
			return // JSON would render invalid bytes as U+FFFD
		}
		back, err := envoyrec.ParseAccessLog(bytes.NewReader(renderAccessJSON(es)), "again")
		if err != nil {
			t.Fatalf("JSON rendering does not parse: %v\n%s", err, renderAccessJSON(es))
		}
		if len(back) != len(es) {
			t.Fatalf("%d entries, re-parse %d", len(es), len(back))
		}
		for i := range es {
			a, b := es[i], back[i]
			a.Line, b.Line = 0, 0
			a.Time, b.Time = a.Time.UTC(), b.Time.UTC()
			if _, perr := time.Parse(time.RFC3339Nano, a.StartTime); perr != nil {
				a.Time = b.Time // a unix number or unparsed text: rendered as a string
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("entry %d re-parsed differs:\n%+v\n%+v", i, a, b)
			}
		}
	})
}

func FuzzParseServerInfo(f *testing.F) {
	addFixtureSeeds(f, "gh_envoy_admin_rst_server_info_example.json")
	f.Add([]byte(`{"version":"v","state":"LIVE","command_line_options":{"concurrency":"4"},"node":{"id":"a","cluster":"b"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		si, err := ParseServerInfo(bytes.NewReader(data), "server_info.json")
		if err != nil {
			checkLineError(t, err, "server_info.json", data)
			return
		}
		if si.Version == "" || si.Concurrency < 0 {
			t.Fatalf("accepted %+v", si)
		}
		if _, err := json.Marshal(si); err != nil {
			t.Fatal(err)
		}
	})
}
