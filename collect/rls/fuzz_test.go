package rls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// Fuzz targets for every parser of this package, seeded from the fixtures
// (testdata: copies of shared/fixtures/rls and captures of the pinned RLS).
// Each checks properties of the result, not only the absence of a panic.
// Crashers found are kept in testdata/fuzz/<FuzzXxx>/.

// addSeeds adds each fixture, cut after about max bytes at a line end so
// that mutation stays fast.
func addSeeds(f *testing.F, max int, rels ...string) {
	for _, rel := range rels {
		b, err := os.ReadFile(fixture(f, rel))
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > max {
			if i := bytes.IndexByte(b[max:], '\n'); i >= 0 {
				b = b[:max+i+1]
			}
		}
		f.Add(b)
	}
}

func lineCount(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

var lineErrRE = regexp.MustCompile(`^([^:]+):(\d+): `)

// checkErrLine asserts that err starts with "name:N: " where N is a line of
// data (or its end), or with "name: ".
func checkErrLine(t *testing.T, err error, name string, data []byte) {
	t.Helper()
	m := lineErrRE.FindStringSubmatch(err.Error())
	if m == nil {
		if !strings.HasPrefix(err.Error(), name+": ") {
			t.Fatalf("error %q names neither %s nor a line", err, name)
		}
		return
	}
	n, _ := strconv.Atoi(m[2])
	if m[1] != name || n < 0 || n > lineCount(data)+1 {
		t.Fatalf("error %q: want %s and a line in 0..%d", err, name, lineCount(data)+1)
	}
}

func finiteTotals(t *testing.T, s *StatsdTotals) {
	t.Helper()
	for k, v := range s.Counters {
		if !finite(v) {
			t.Fatalf("counter %s = %v", k, v)
		}
	}
	for k, v := range s.Gauges {
		if !finite(v) {
			t.Fatalf("gauge %s = %v", k, v)
		}
	}
	for k, v := range s.Timers {
		if !finite(v.Sum) || !finite(v.Min) || !finite(v.Max) || v.Count <= 0 || v.Min > v.Max {
			t.Fatalf("timer %s = %+v", k, v)
		}
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("totals do not marshal: %v", err)
	}
}

func FuzzParseLog(f *testing.F) {
	addSeeds(f, 4096, "rls_local_3fb7025_text_debug.log", "rls_local_3fb7025_json_debug.log", "rls_local_3fb7025_space_value.log",
		"rls_local_3fb7025_info_level.log", "gh_ratelimit_README_log_text_2020.log", "gh_ratelimit_README_log_json_2020.log",
		"outage-fast/rls-text.log", "json-prometheus/rls-json.log")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLog(bytes.NewReader(data), "rls.log")
		if err != nil {
			t.Fatalf("ParseLog of bytes failed: %v", err)
		}
		// Every line is blank, an RLS envelope line, a stats sink line or unparsed.
		blank := 0
		for _, s := range strings.SplitAfter(string(data), "\n") {
			if s != "" && strings.TrimSpace(s) == "" {
				blank++
			}
		}
		if l.Lines != lineCount(data) || l.TextLines+l.JSONLines+l.SinkLines+len(l.Unparsed)+blank != l.Lines {
			t.Fatalf("lines %d (input %d) != text %d + json %d + sink %d + unparsed %d + blank %d",
				l.Lines, lineCount(data), l.TextLines, l.JSONLines, l.SinkLines, len(l.Unparsed), blank)
		}
		prev := 0
		for _, d := range l.Decisions {
			if d.Line < prev || d.Line < 1 || d.Line > l.Lines {
				t.Fatalf("decision line %d after %d, log has %d lines", d.Line, prev, l.Lines)
			}
			prev = d.Line
			switch d.Code {
			case "OK", "OVER_LIMIT", "ERROR", "UNKNOWN":
			default:
				t.Fatalf("decision code %q", d.Code)
			}
			if d.ResponseLine != 0 && (d.ResponseLine < d.Line || d.ResponseLine > l.Lines) {
				t.Fatalf("decision at %d paired with response line %d", d.Line, d.ResponseLine)
			}
			if !d.CodeDerived && d.Code != "ERROR" && d.ResponseLine == 0 {
				t.Fatalf("code %s not derived but no response line: %+v", d.Code, d)
			}
			// A domain comes with its source; a no-limit decision's domain
			// from the configuration is one it loaded.
			switch d.DomainSource {
			case "":
				if d.Domain != "" {
					t.Fatalf("domain %q without a source: %+v", d.Domain, d)
				}
			case "descriptor", "key_prefix", "unknown_domain", DomainSourceCall:
			case DomainSourceConfig:
				if !d.NoLimit && !d.Unlimited || !strings.Contains(string(data), "domain: "+d.Domain) {
					t.Fatalf("domain %q from a configuration that does not load it: %+v", d.Domain, d)
				}
			default:
				t.Fatalf("domain source %q", d.DomainSource)
			}
		}
		if (len(l.Decisions) == 0) != (len(l.Warnings) > 0) {
			t.Fatalf("%d decisions, warnings %q", len(l.Decisions), l.Warnings)
		}
		if len(l.EvidenceDecisions()) != len(l.Decisions) {
			t.Fatal("EvidenceDecisions lost decisions")
		}
		finiteTotals(t, l.Sink)
		b1, err := json.Marshal(l)
		if err != nil {
			t.Fatalf("log does not marshal: %v", err)
		}
		// The same bytes read one at a time give the same result.
		l2, err := ParseLog(iotest.OneByteReader(bytes.NewReader(data)), "rls.log")
		if err != nil {
			t.Fatal(err)
		}
		if b2, _ := json.Marshal(l2); !bytes.Equal(b1, b2) {
			t.Fatalf("one-byte reads parse differently")
		}
	})
}

// renderResponse writes r as protobuf-go's prototext String() does.
func renderResponse(r *Response) string {
	var b strings.Builder
	if r.OverallCode != "UNKNOWN" {
		fmt.Fprintf(&b, "overall_code:%s ", r.OverallCode)
	}
	for _, s := range r.Statuses {
		b.WriteString("statuses:{")
		if s.Code != "UNKNOWN" {
			fmt.Fprintf(&b, "code:%s ", s.Code)
		}
		if s.HasLimit {
			b.WriteString("current_limit:{")
			if s.Limit != 0 {
				fmt.Fprintf(&b, "requests_per_unit:%d ", s.Limit)
			}
			if s.Unit != "" {
				fmt.Fprintf(&b, "unit:%s", strconv.Quote(s.Unit))
			}
			b.WriteString("} ")
		}
		if s.LimitRemaining != 0 {
			fmt.Fprintf(&b, "limit_remaining:%d ", s.LimitRemaining)
		}
		if s.DurationUntilResetNs != 0 {
			fmt.Fprintf(&b, "duration_until_reset:{nanos:%d} ", s.DurationUntilResetNs)
		}
		b.WriteString("} ")
	}
	for _, h := range r.HeadersToAdd {
		fmt.Fprintf(&b, "response_headers_to_add:{key:%s value:%s} ", strconv.Quote(h.Key), strconv.Quote(h.Value))
	}
	return b.String()
}

func FuzzParseResponseText(f *testing.F) {
	for _, s := range []string{
		"overall_code:OVER_LIMIT  statuses:{code:OVER_LIMIT  current_limit:{requests_per_unit:3  unit:MINUTE}  duration_until_reset:{seconds:4}}",
		"overall_code:OK statuses:{code:OK current_limit:{requests_per_unit:2 unit:MINUTE} limit_remaining:1}",
		`overall_code:OK statuses:{code:OK limit_remaining:4294967295} response_headers_to_add:{key:"RateLimit-Limit" value:"3, 3;w=60"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseResponseText(s)
		if err != nil {
			return
		}
		if r.OverallCode == "" {
			t.Fatal("empty overall code")
		}
		for _, st := range r.Statuses {
			if st.Code == "" {
				t.Fatal("empty status code")
			}
		}
		// Codes are prototext identifiers or strings; only identifiers
		// render back unquoted.
		for _, c := range append([]string{r.OverallCode}, codes(r)...) {
			if !regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`).MatchString(c) {
				return
			}
		}
		again, err := ParseResponseText(renderResponse(r))
		if err != nil {
			t.Fatalf("rendering %q does not parse: %v", renderResponse(r), err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("re-parse differs:\n%+v\n%+v", r, again)
		}
	})
}

func codes(r *Response) []string {
	var out []string
	for _, s := range r.Statuses {
		out = append(out, s.Code)
	}
	return out
}

func FuzzParsePrometheus(f *testing.F) {
	addSeeds(f, 4096, "rls_local_3fb7025_prometheus_metrics.txt", "json-prometheus/prom_metrics_4_during_outage.txt", "gh_ratelimit_issue286_prometheus_line_2021.txt")
	f.Add([]byte("# TYPE ratelimit_service_rate_limit_total_hits counter\nratelimit_service_rate_limit_total_hits{domain=\"d\",key1=\"k\"} 3\n" +
		"ratelimit_service_rate_limit_x_domain_not_found 1\n# TYPE ratelimit_service_response_time_seconds histogram\n" +
		"ratelimit_service_response_time_seconds_bucket{grpc_method=\"m\",le=\"+Inf\"} 2\nratelimit_service_response_time_seconds_sum{grpc_method=\"m\"} 3\n" +
		"ratelimit_service_response_time_seconds_count{grpc_method=\"m\"} 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParsePrometheus(bytes.NewReader(data), "metrics.prom")
		if err != nil {
			checkErrLine(t, err, "metrics.prom", data)
			return
		}
		for id, kc := range s.Rules {
			for _, v := range []float64{kc.TotalHits, kc.WithinLimit, kc.OverLimit, kc.NearLimit, kc.ShadowMode, kc.OverLimitWithLocalCache} {
				if !finite(v) || v < 0 {
					t.Fatalf("rule %+v value %v", id, v)
				}
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("snapshot does not marshal: %v", err)
		}
		c := s.RLSCounters()
		if _, err := json.Marshal(c); err != nil {
			t.Fatalf("counters do not marshal: %v", err)
		}
		if _, err := json.Marshal(CheckIdentities(nil, c)); err != nil {
			t.Fatalf("identities do not marshal: %v", err)
		}
	})
}

// renderStatsd writes counters as one `name:sum|c` line each and gauges as
// `name:v|g` (a negative gauge as 0 then a delta, since a leading sign
// makes a statsd gauge line a change).
func renderStatsd(s *StatsdTotals) []byte {
	var b bytes.Buffer
	names := make([]string, 0, len(s.Counters))
	for n := range s.Counters {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s:%s|c\n", n, strconv.FormatFloat(s.Counters[n], 'g', -1, 64))
	}
	names = names[:0]
	for n := range s.Gauges {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := s.Gauges[n]
		if math.Signbit(v) {
			fmt.Fprintf(&b, "%s:0|g\n", n)
		}
		fmt.Fprintf(&b, "%s:%s|g\n", n, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return b.Bytes()
}

// plainName reports whether a statsd name survives a raw line unchanged.
func plainName(n string) bool {
	return n != "" && n == strings.TrimSpace(n) && !strings.ContainsAny(n, "\t\n\r") && n[0] != '#' && n[0] != '{'
}

func FuzzParseStatsd(f *testing.F) {
	addSeeds(f, 4096, "outage-fast/statsd_lines.tsv", "gh_ratelimit_README_statsd_stat_lines.txt")
	f.Add([]byte("a.b:2|c\n\n# comment\na.b:3|c\ns:1|c|@0.5\ng:4|g\ng:-6|g\nt:10|ms\nt:30|ms\n"))
	f.Add([]byte(`{"recv_ns":1,"proto":"udp","line":"a:1|c"}` + "\n" + `{"recv_ns":2,"proto":"tcp","line":"junk"}` + "\n1\ttcp-conn\taccepted 127.0.0.1:1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseStatsd(bytes.NewReader(data), "statsd")
		if err != nil {
			checkErrLine(t, err, "statsd", data)
			return
		}
		finiteTotals(t, s)
		if s.Lines+s.Rejected+s.Malformed+s.Conns > lineCount(data) {
			t.Fatalf("lines %d + rejected %d + malformed %d + conns %d > %d input lines", s.Lines, s.Rejected, s.Malformed, s.Conns, lineCount(data))
		}
		for _, r := range append(append([]string{}, s.RejectedLines...), s.MalformedLines...) {
			checkErrLine(t, fmt.Errorf("%s", r), "statsd", data)
		}
		flushes := 0
		for _, n := range s.CounterFlushes {
			flushes += n
		}
		if len(s.CounterFlushes) != len(s.Counters) || flushes > s.Lines {
			t.Fatalf("%d counters, %d with flushes, %d flushes for %d lines", len(s.Counters), len(s.CounterFlushes), flushes, s.Lines)
		}
		for n := range s.Counters {
			if !plainName(n) {
				return
			}
		}
		for n := range s.Gauges {
			if !plainName(n) {
				return
			}
		}
		again, err := ParseStatsd(bytes.NewReader(renderStatsd(s)), "again")
		if err != nil {
			t.Fatalf("rendering does not parse: %v\n%s", err, renderStatsd(s))
		}
		if !reflect.DeepEqual(again.Counters, s.Counters) || !reflect.DeepEqual(again.Gauges, s.Gauges) || again.Rejected != 0 {
			t.Fatalf("re-parse differs:\n%v %v\n%v %v", s.Counters, s.Gauges, again.Counters, again.Gauges)
		}
	})
}
