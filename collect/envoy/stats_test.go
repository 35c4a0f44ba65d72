package envoy

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

func mustParse(t *testing.T, data []byte, name string, f envoyrec.Format) *envoyrec.Snapshot {
	t.Helper()
	s, err := Parse(bytes.NewReader(data), name, f)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	if s.Schema != envoyrec.SnapshotSchema {
		t.Fatalf("schema %q", s.Schema)
	}
	return s
}

func wantValue(t *testing.T, s *envoyrec.Snapshot, name string, want uint64) {
	t.Helper()
	got, ok := s.Value(name)
	if !ok || got != want {
		t.Errorf("Value(%q) = %d, %v; want %d, true", name, got, ok, want)
	}
}

func TestDetectFormatFixtures(t *testing.T) {
	cases := map[string]envoyrec.Format{
		"gh_aeraki_pr40_prometheus_empty_braces_2022.txt":            envoyrec.FormatPrometheus,
		"gh_envoy_admin_rst_stats_detailed_histogram_text.txt":       envoyrec.FormatText,
		"gh_envoy_admin_rst_stats_json_histograms_doc_example.json":  envoyrec.FormatJSON,
		"gh_envoy_issue27878_stats_text_readouts_excerpt_2023.txt":   envoyrec.FormatText,
		"gh_envoy_issue6974_stats_text_rls_cluster_excerpt_2019.txt": envoyrec.FormatText,
		"gh_envoy_issue7351_stats_text_excerpt_2019.txt":             envoyrec.FormatText,
		"gh_fsm_start_demo_osm_edge_pipy_local_rl_NOT_ENVOY.txt":     envoyrec.FormatText,
	}
	for name, want := range cases {
		if got := DetectFormat(fixture(t, name)); got != want {
			t.Errorf("DetectFormat(%s) = %q, want %q", name, got, want)
		}
	}
	if got := DetectFormat([]byte("envoy_x{} 3\n")); got != envoyrec.FormatPrometheus {
		t.Errorf("untyped prometheus sample detected as %q", got)
	}
	if got := DetectFormat(nil); got != envoyrec.FormatText {
		t.Errorf("empty input detected as %q", got)
	}
}

func TestTextRLSClusterFixture(t *testing.T) {
	name := "gh_envoy_issue6974_stats_text_rls_cluster_excerpt_2019.txt"
	s := mustParse(t, fixture(t, name), name, envoyrec.FormatText)
	if len(s.Values) != 25 {
		t.Errorf("%d values, want 25 (one per line)", len(s.Values))
	}
	wantValue(t, s, "cluster.rate_limit_cluster.internal.upstream_rq_503", 16)
	wantValue(t, s, "cluster.rate_limit_cluster.membership_total", 1)
	wantValue(t, s, "cluster.rate_limit_cluster.lb_healthy_panic", 0)
	want := []envoyrec.ClusterCodes{{
		Cluster:  "rate_limit_cluster",
		Codes:    map[string]uint64{"503": 16, "5xx": 16, "completed": 16},
		Internal: map[string]uint64{"503": 16, "5xx": 16, "completed": 16},
	}}
	if !reflect.DeepEqual(s.Upstream, want) {
		t.Errorf("Upstream = %+v, want %+v", s.Upstream, want)
	}
	if s.Local != nil || s.Global != nil {
		t.Errorf("unexpected limiter entries: %+v %+v", s.Local, s.Global)
	}
}

func TestText7351Fixture(t *testing.T) {
	name := "gh_envoy_issue7351_stats_text_excerpt_2019.txt"
	s := mustParse(t, fixture(t, name), name, "")
	if s.Format != envoyrec.FormatText {
		t.Errorf("format %q", s.Format)
	}
	if len(s.Values) != 22 {
		t.Errorf("%d values, want 22", len(s.Values))
	}
	wantValue(t, s, "cluster.anyservice_service.upstream_cx_rx_bytes_buffered", 86)
	wantValue(t, s, "cluster.anyservice_service.upstream_cx_tx_bytes_total", 2930)
	want := []envoyrec.ClusterCodes{{Cluster: "anyservice_service", Codes: map[string]uint64{"200": 20, "2xx": 20}}}
	if !reflect.DeepEqual(s.Upstream, want) {
		t.Errorf("Upstream = %+v, want %+v", s.Upstream, want)
	}
}

func TestTextReadoutsFixture(t *testing.T) {
	name := "gh_envoy_issue27878_stats_text_readouts_excerpt_2023.txt"
	s := mustParse(t, fixture(t, name), name, envoyrec.FormatText)
	if len(s.TextReadouts) != 8 {
		t.Errorf("%d text readouts, want 8: %v", len(s.TextReadouts), s.TextReadouts)
	}
	for k, want := range map[string]string{
		"http.http.rds.public-gateway-route.version_text": "9f0aeb96-b3c2-4126-a299-dbf66b644028",
		"listener_manager.lds.version_text":               "adde6360-18d6-4a15-a87f-dcb25c1dbeca",
		"cluster_manager.cds.version_text":                "",
	} {
		if got, ok := s.TextReadouts[k]; !ok || got != want {
			t.Errorf("TextReadouts[%q] = %q, %v; want %q", k, got, ok, want)
		}
	}
	if len(s.Values) != 14 {
		t.Errorf("%d values, want 14", len(s.Values))
	}
	wantValue(t, s, "cluster.rate-limiter.default.total_match_count", 619)
	wantValue(t, s, "cluster.rate-limiter.circuit_breakers.high.rq_retry_open", 0)
	if _, ok := s.Value("runtime.version_text"); ok {
		t.Error("a text readout leaked into Values")
	}
}

func TestTextDetailedHistogramFixture(t *testing.T) {
	name := "gh_envoy_admin_rst_stats_detailed_histogram_text.txt"
	s := mustParse(t, fixture(t, name), name, envoyrec.FormatText)
	h, ok := s.Histograms["http.admin.downstream_rq_time"]
	if !ok {
		t.Fatalf("histogram missing: %v", s.Histograms)
	}
	wantTotals := []envoyrec.DetailBucket{{LowerBound: 1, Width: 0.25, Count: 25}, {LowerBound: 2, Width: 0.25, Count: 9}}
	wantIntervals := []envoyrec.DetailBucket{{LowerBound: 1, Width: 0.25, Count: 2}, {LowerBound: 2, Width: 0.25, Count: 3}}
	if !reflect.DeepEqual(h.Totals, wantTotals) || !reflect.DeepEqual(h.Intervals, wantIntervals) {
		t.Errorf("totals %+v intervals %+v", h.Totals, h.Intervals)
	}
	if len(h.Quantiles) != 10 {
		t.Fatalf("%d quantiles, want 10", len(h.Quantiles))
	}
	q := h.Quantiles[7]
	if q.Percent != 99.5 || !eqF(q.Interval, ptrF(2.099)) || !eqF(q.Cumulative, ptrF(2.098)) {
		t.Errorf("P99.5 = %+v", q)
	}
	if q := h.Quantiles[2]; q.Percent != 50 || *q.Interval != 2.0166 || *q.Cumulative != 1.068 {
		t.Errorf("P50 = %+v", q)
	}
	if len(s.Values) != 0 {
		t.Errorf("values %v", s.Values)
	}
}

func TestTextHistogramLines(t *testing.T) {
	in := strings.Join([]string{
		`cluster.c.upstream_cx_connect_ms: P0(nan,1) P25(nan,1.025) P50(nan,1.05) P75(2,1.075) P90(nan,1.09) P95(nan,1.095) P99(nan,1.099) P99.5(nan,1.0995) P99.9(nan,1.0999) P100(nan,1.1)`,
		`cluster.c.upstream_cx_length_ms: No recorded values`,
		`http.admin.downstream_cx_length_ms: B0.5(0,0) B1(1,3) B5(2,7) B10(0,7)`,
		`http.admin.downstream_rq_total: 12`,
		``,
	}, "\n")
	s := mustParse(t, []byte(in), "hist.txt", envoyrec.FormatText)
	h := s.Histograms["cluster.c.upstream_cx_connect_ms"]
	if len(h.Quantiles) != 10 || h.Quantiles[0].Interval != nil || *h.Quantiles[0].Cumulative != 1 ||
		*h.Quantiles[3].Interval != 2 || h.Quantiles[9].Percent != 100 || *h.Quantiles[9].Cumulative != 1.1 {
		t.Errorf("quantiles %+v", h.Quantiles)
	}
	if !s.Histograms["cluster.c.upstream_cx_length_ms"].NoValues {
		t.Error("No recorded values not flagged")
	}
	b := s.Histograms["http.admin.downstream_cx_length_ms"].Buckets
	if len(b) != 4 || b[1].UpperBound != 1 || *b[1].Interval != 1 || b[1].Cumulative != 3 || b[0].UpperBound != 0.5 || b[2].Cumulative != 7 {
		t.Errorf("buckets %+v", b)
	}
	wantValue(t, s, "http.admin.downstream_rq_total", 12)
	// JSON has no NaN: nil pointers must encode as null.
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `{"percent":0,"interval":null,"cumulative":1}`) {
		t.Errorf("nan quantile not encoded as null: %s", out)
	}
}

func TestTextMalformedLine(t *testing.T) {
	in := "cluster.a.upstream_rq_200: 3\ncluster.a.upstream_rq_2xx: 3\nthis line is not a stat\ncluster.a.upstream_rq_429: 1\n"
	_, err := Parse(strings.NewReader(in), "bad.txt", envoyrec.FormatText)
	if err == nil {
		t.Fatal("want error")
	}
	var le *envoyrec.LineError
	if !errors.As(err, &le) || le.Line != 3 || le.Source != "bad.txt" {
		t.Fatalf("error %v (%#v), want bad.txt line 3", err, le)
	}
	if !strings.HasPrefix(err.Error(), "bad.txt:3: ") {
		t.Errorf("error text %q", err)
	}
	for _, bad := range []struct {
		in   string
		line int
	}{
		{"a: 1\nb: -5\n", 2},
		{"a: 1\na: 2\n", 2},
		{"a: \"unterminated\n", 1},
		{"a: P0(1,x)\n", 1},
		{"a: 18446744073709551616\n", 1},
		{"  totals=1,1:1\n", 1},
		{"h:\n  bogus=1\n", 2},
		{"x: 1\nh:\n", 2},
	} {
		_, err := Parse(strings.NewReader(bad.in), "b", envoyrec.FormatText)
		if !errors.As(err, &le) || le.Line != bad.line {
			t.Errorf("Parse(%q) error %v, want line %d", bad.in, err, bad.line)
		}
	}
}

func TestTextIstioAndStatPrefix(t *testing.T) {
	istio := "outbound|8080||svc.ns.svc.cluster.local"
	rls := "outbound|8081||ratelimit.default.svc.cluster.local"
	in := strings.Join([]string{
		"cluster." + istio + ".membership_total: 2",
		"cluster." + istio + ".ratelimit.ok: 10",
		"cluster." + istio + ".ratelimit.over_limit: 5",
		"cluster." + istio + ".ratelimit.error: 1",
		"cluster." + istio + ".ratelimit.failure_mode_allowed: 1",
		"cluster." + istio + ".upstream_rq_200: 10",
		"cluster." + istio + ".upstream_rq_429: 5",
		"cluster." + istio + ".upstream_rq_4xx: 5",
		"cluster." + istio + ".external.upstream_rq_429: 5",
		"cluster." + istio + ".canary.upstream_rq_200: 1",
		"cluster." + istio + ".upstream_rq_completed: 15",
		"cluster." + rls + ".internal.upstream_rq_503: 16",
		// global filter with stat_prefix (Envoy >= 1.29)
		"cluster.backend.ratelimit.edge.ok: 7",
		"cluster.backend.ratelimit.edge.over_limit: 3",
		"cluster.backend.ratelimit.over_limit: 2",
		// ambiguous: cluster "svc.ratelimit.ns" (known below) vs cluster "svc" + prefix "ns.ratelimit"
		"cluster.svc.ratelimit.ns.membership_total: 1",
		"cluster.svc.ratelimit.ns.ratelimit.p.ok: 4",
		// ambiguous, unknown cluster: resolved to the shortest (dot-free) prefix
		"cluster.a.ratelimit.b.ratelimit.c.over_limit: 9",
		"ingress_http.http_local_rate_limit.enabled: 20",
		"ingress_http.http_local_rate_limit.ok: 13",
		"ingress_http.http_local_rate_limit.rate_limited: 7",
		"ingress_http.http_local_rate_limit.enforced: 7",
		"vhost.a.b.route_limiter.http_local_rate_limit.rate_limited: 2",
	}, "\n")
	s := mustParse(t, []byte(in), "istio.txt", envoyrec.FormatText)
	wantGlobal := []envoyrec.GlobalRateLimit{
		{Cluster: "a.ratelimit.b", StatPrefix: "c", OverLimit: 9},
		{Cluster: "backend", OverLimit: 2},
		{Cluster: "backend", StatPrefix: "edge", OK: 7, OverLimit: 3},
		{Cluster: istio, OK: 10, OverLimit: 5, Error: 1, FailureModeAllowed: 1},
		{Cluster: "svc.ratelimit.ns", StatPrefix: "p", OK: 4},
	}
	if !reflect.DeepEqual(s.Global, wantGlobal) {
		t.Errorf("Global =\n%+v\nwant\n%+v", s.Global, wantGlobal)
	}
	wantUp := []envoyrec.ClusterCodes{
		{Cluster: istio, Codes: map[string]uint64{"200": 10, "429": 5, "4xx": 5, "completed": 15}, External: map[string]uint64{"429": 5}},
		{Cluster: rls, Codes: map[string]uint64{"503": 16}, Internal: map[string]uint64{"503": 16}},
	}
	if !reflect.DeepEqual(s.Upstream, wantUp) {
		t.Errorf("Upstream =\n%+v\nwant\n%+v", s.Upstream, wantUp)
	}
	wantLocal := []envoyrec.LocalRateLimit{
		{Prefix: "ingress_http", Enabled: 20, OK: 13, RateLimited: 7, Enforced: 7},
		{Prefix: "vhost.a.b.route_limiter", RateLimited: 2},
	}
	if !reflect.DeepEqual(s.Local, wantLocal) {
		t.Errorf("Local = %+v, want %+v", s.Local, wantLocal)
	}
}

func TestPipyNotEnvoyFixture(t *testing.T) {
	name := "gh_fsm_start_demo_osm_edge_pipy_local_rl_NOT_ENVOY.txt"
	data := fixture(t, name)
	// Strict parsing stops at the first non-Envoy line (fortio summary, line 3).
	_, err := Parse(bytes.NewReader(data), name, envoyrec.FormatText)
	var le *envoyrec.LineError
	if !errors.As(err, &le) || le.Line != 3 {
		t.Fatalf("strict Parse error %v, want line 3", err)
	}
	// Lenient parsing keeps what is Envoy-like: the emulated stat line, and
	// (unavoidably) the header line "content-length: 17", which has the shape
	// of a stat. Other header and summary lines are skipped.
	s, skipped, err := ParseLenient(bytes.NewReader(data), name, envoyrec.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, e := range skipped {
		lines = append(lines, e.Line)
	}
	if !reflect.DeepEqual(lines, []int{3, 4, 8, 9, 11}) {
		t.Errorf("skipped lines %v, want [3 4 8 9 11]", lines)
	}
	wantValue(t, s, "http_local_rate_limiter.http_local_rate_limit.rate_limited", 7)
	wantValue(t, s, "content-length", 17)
	if len(s.Values) != 2 {
		t.Errorf("values %v", s.Values)
	}
	want := []envoyrec.LocalRateLimit{{Prefix: "http_local_rate_limiter", RateLimited: 7}}
	if !reflect.DeepEqual(s.Local, want) {
		t.Errorf("Local = %+v", s.Local)
	}
	// Reconciliation: the fortio summary's 429 count (a skipped line) equals rate_limited.
	m := regexp.MustCompile(`Code 429 : (\d+) `).FindSubmatch(data)
	if m == nil || string(m[1]) != "7" || s.Local[0].RateLimited != 7 {
		t.Errorf("fortio 429 count %q vs rate_limited %d", m, s.Local[0].RateLimited)
	}
}

func TestJSONDocExampleFixture(t *testing.T) {
	name := "gh_envoy_admin_rst_stats_json_histograms_doc_example.json"
	s := mustParse(t, fixture(t, name), name, "")
	if s.Format != envoyrec.FormatJSON || len(s.Histograms) != 2 {
		t.Fatalf("format %q histograms %v", s.Format, s.Histograms)
	}
	h := s.Histograms["cluster.external_auth_cluster.upstream_cx_length_ms"]
	if len(h.Quantiles) != 9 {
		t.Fatalf("quantiles %+v", h.Quantiles)
	}
	if q := h.Quantiles[7]; q.Percent != 99.9 || *q.Interval != 229.57333 || *q.Cumulative != 229.57333 {
		t.Errorf("P99.9 = %+v", q)
	}
	h2 := s.Histograms["http.admin.downstream_rq_time"]
	if q := h2.Quantiles[8]; q.Percent != 100 || q.Interval != nil || *q.Cumulative != 260 {
		t.Errorf("P100 with null interval = %+v", q)
	}
}

// TestJSONHistogramsInsideStatsArray builds the real shape: the histograms
// object is one element of the stats array, with counters, text readouts and
// an element without name around it.
func TestJSONHistogramsInsideStatsArray(t *testing.T) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(fixture(t, "gh_envoy_admin_rst_stats_json_histograms_doc_example.json"), &doc); err != nil {
		t.Fatal(err)
	}
	in := `{
  "stats": [
    {"name": "http_local_rate_limiter.http_local_rate_limit.rate_limited", "value": 7},
    {"value": 3, "name": "cluster.backend.ratelimit.over_limit"},
    {"name": "listener_manager.lds.version_text", "value": "adde6360"},
    {"unknown": true},
    {"histograms": ` + string(doc["histograms"]) + `}
  ]
}`
	s := mustParse(t, []byte(in), "stats.json", envoyrec.FormatJSON)
	wantValue(t, s, "http_local_rate_limiter.http_local_rate_limit.rate_limited", 7)
	if len(s.Values) != 2 || s.TextReadouts["listener_manager.lds.version_text"] != "adde6360" {
		t.Errorf("values %v readouts %v", s.Values, s.TextReadouts)
	}
	if len(s.Histograms) != 2 || s.Histograms["http.admin.downstream_rq_time"].Quantiles[2].Interval != nil {
		t.Errorf("histograms %+v", s.Histograms)
	}
	if !reflect.DeepEqual(s.Global, []envoyrec.GlobalRateLimit{{Cluster: "backend", OverLimit: 3}}) {
		t.Errorf("Global %+v", s.Global)
	}
	if !reflect.DeepEqual(s.Local, []envoyrec.LocalRateLimit{{Prefix: "http_local_rate_limiter", RateLimited: 7}}) {
		t.Errorf("Local %+v", s.Local)
	}
}

func TestJSONBucketAndDetailedShapes(t *testing.T) {
	in := `{"stats":[{"name":"a","value":1},{"histograms":[{"name":"h1","buckets":[{"upper_bound":0.5,"interval":1,"cumulative":2},{"upper_bound":1,"interval":0,"cumulative":5}]}]}]}`
	s := mustParse(t, []byte(in), "b.json", envoyrec.FormatJSON)
	b := s.Histograms["h1"].Buckets
	if len(b) != 2 || b[0].UpperBound != 0.5 || *b[0].Interval != 1 || b[1].Cumulative != 5 {
		t.Errorf("buckets %+v", b)
	}
	in = `{"stats":[{"histograms":{"supported_percentiles":[0,50,100],"details":[{"name":"h2","totals":[{"lower_bound":1,"width":0.25,"count":25}],"intervals":[],"percentiles":[{"cumulative":1,"interval":null},{"cumulative":1.5,"interval":null},{"cumulative":2,"interval":null}]}]}}]}`
	s = mustParse(t, []byte(in), "d.json", envoyrec.FormatJSON)
	h := s.Histograms["h2"]
	if !reflect.DeepEqual(h.Totals, []envoyrec.DetailBucket{{LowerBound: 1, Width: 0.25, Count: 25}}) || len(h.Intervals) != 0 || len(h.Quantiles) != 3 || *h.Quantiles[1].Cumulative != 1.5 || h.Quantiles[1].Percent != 50 {
		t.Errorf("detailed %+v", h)
	}
}

func TestJSONErrorsNameLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
	}{
		{"{\"stats\": [\n {\"name\": \"a\", \"value\": 1},\n {\"name\": \"b\", \"value\": -1}\n]}", 3},
		{"{\"stats\": [\n {\"name\": \"a\", \"value\": 1},\n {\"name\": \"b\", \"value\": 1.5}\n]}", 3},
		{"{\"stats\": [\n {\"name\": \"a\", \"value\": 1}\n", 3},
		{"{\"stats\": [\n {\"name\": \"a\" \"value\": 1}\n]}", 2},
		{"{\"other\": 1}", 1},
		{"[1]", 1},
	} {
		_, err := Parse(strings.NewReader(c.in), "s.json", envoyrec.FormatJSON)
		var le *envoyrec.LineError
		if !errors.As(err, &le) || le.Line != c.line || le.Source != "s.json" {
			t.Errorf("Parse(%q) error %v, want s.json line %d", c.in, err, c.line)
		}
	}
}

func TestPrometheusEmptyBracesFixture(t *testing.T) {
	name := "gh_aeraki_pr40_prometheus_empty_braces_2022.txt"
	s := mustParse(t, fixture(t, name), name, "")
	if s.Format != envoyrec.FormatPrometheus {
		t.Fatalf("format %q", s.Format)
	}
	wantValue(t, s, "envoy_meta_protocol_thrift_sample_server_meta_thrift_svc_cluster_local_local_rate_limit_ok", 25)
	wantValue(t, s, "envoy_meta_protocol_thrift_sample_server_meta_thrift_svc_cluster_local_local_rate_limit_rate_limited", 19)
	if len(s.Values) != 2 || s.Local != nil {
		t.Errorf("values %v local %+v (meta-protocol limiter is not the HTTP local filter)", s.Values, s.Local)
	}
}

// TestPrometheusBothLocalEras takes the two names from the PR #21912
// changelog and checks they map to the same local limiter.
func TestPrometheusBothLocalEras(t *testing.T) {
	text := string(fixture(t, "gh_envoy_pr21912_changelog_prometheus_rename_2022.txt"))
	m := regexp.MustCompile(`from\s+(envoy_\S+\{\})\s+to\s+(envoy_\S+\{[^}]*\})`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("changelog names not found")
	}
	oldName, newName := m[1], m[2]
	if oldName != "envoy_myprefix_http_local_rate_limit_rate_limited{}" {
		t.Fatalf("old name %q", oldName)
	}
	// The reviewer's alternative reading of the old name, quoted in the fixture.
	rm := regexp.MustCompile("`(envoy_http_local_rate_\\S+\\{\\})`").FindStringSubmatch(text)
	if rm == nil || rm[1] != "envoy_http_local_rate_myprefix_limit_rate_limited{}" {
		t.Fatalf("reviewer name %q", rm)
	}
	want := []envoyrec.LocalRateLimit{{Prefix: "myprefix", RateLimited: 7}}
	for _, series := range []string{oldName, newName, rm[1]} {
		fam := series[:strings.Index(series, "{")]
		in := "# TYPE " + fam + " counter\n" + series + " 7\n"
		s := mustParse(t, []byte(in), "prom", envoyrec.FormatPrometheus)
		if !reflect.DeepEqual(s.Local, want) {
			t.Errorf("%s: Local %+v, want %+v", series, s.Local, want)
		}
		wantValue(t, s, "myprefix.http_local_rate_limit.rate_limited", 7)
	}
}

func TestPrometheusGlobalAndUpstream(t *testing.T) {
	istio := "outbound|8080||svc.ns.svc.cluster.local"
	in := `# TYPE envoy_cluster_ratelimit_over_limit counter
envoy_cluster_ratelimit_over_limit{envoy_cluster_name="` + istio + `"} 5
# TYPE envoy_cluster_ratelimit_ok counter
envoy_cluster_ratelimit_ok{envoy_cluster_name="` + istio + `"} 10
# TYPE envoy_cluster_ratelimit_failure_mode_allowed counter
envoy_cluster_ratelimit_failure_mode_allowed{envoy_cluster_name="` + istio + `"} 1
# TYPE envoy_cluster_ratelimit_edge_over_limit counter
envoy_cluster_ratelimit_edge_over_limit{envoy_cluster_name="backend"} 3
# TYPE envoy_cluster_upstream_rq counter
envoy_cluster_upstream_rq{envoy_response_code="200",envoy_cluster_name="` + istio + `"} 10
envoy_cluster_upstream_rq{envoy_response_code="429",envoy_cluster_name="` + istio + `"} 5
# TYPE envoy_cluster_upstream_rq_xx counter
envoy_cluster_upstream_rq_xx{envoy_response_code_class="4",envoy_cluster_name="` + istio + `"} 5
# TYPE envoy_cluster_upstream_rq_completed counter
envoy_cluster_upstream_rq_completed{envoy_cluster_name="` + istio + `"} 15
# TYPE envoy_cluster_internal_upstream_rq counter
envoy_cluster_internal_upstream_rq{envoy_response_code="503",envoy_cluster_name="rate_limit_cluster"} 16
# TYPE envoy_http_local_rate_limit_enforced counter
envoy_http_local_rate_limit_enforced{envoy_local_http_ratelimit_prefix="ingress"} 4
# TYPE envoy_cluster_membership_total gauge
envoy_cluster_membership_total{envoy_cluster_name="backend"} 1
# TYPE envoy_cluster_upstream_cx_active gauge
envoy_cluster_upstream_cx_active{envoy_cluster_name="backend"} 2
# TYPE envoy_server_uptime gauge
envoy_server_uptime{} 42
# TYPE envoy_control_plane_identifier gauge
envoy_control_plane_identifier{text_value="cp-1"} 0
# TYPE envoy_cluster_upstream_rq_time histogram
envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name="backend",le="0.5"} 1
envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name="backend",le="1"} 3
envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name="backend",le="+Inf"} 4
envoy_cluster_upstream_rq_time_sum{envoy_cluster_name="backend"} 7.5
envoy_cluster_upstream_rq_time_count{envoy_cluster_name="backend"} 4
`
	s := mustParse(t, []byte(in), "prom.txt", "")
	if s.Format != envoyrec.FormatPrometheus {
		t.Fatalf("format %q", s.Format)
	}
	wantGlobal := []envoyrec.GlobalRateLimit{
		{Cluster: "backend", StatPrefix: "edge", OverLimit: 3},
		{Cluster: istio, OK: 10, OverLimit: 5, FailureModeAllowed: 1},
	}
	if !reflect.DeepEqual(s.Global, wantGlobal) {
		t.Errorf("Global %+v, want %+v", s.Global, wantGlobal)
	}
	wantUp := []envoyrec.ClusterCodes{
		{Cluster: istio, Codes: map[string]uint64{"200": 10, "429": 5, "4xx": 5, "completed": 15}},
		{Cluster: "rate_limit_cluster", Codes: map[string]uint64{"503": 16}, Internal: map[string]uint64{"503": 16}},
	}
	if !reflect.DeepEqual(s.Upstream, wantUp) {
		t.Errorf("Upstream %+v, want %+v", s.Upstream, wantUp)
	}
	if !reflect.DeepEqual(s.Local, []envoyrec.LocalRateLimit{{Prefix: "ingress", Enforced: 4}}) {
		t.Errorf("Local %+v", s.Local)
	}
	wantValue(t, s, "cluster."+istio+".upstream_rq_429", 5)
	wantValue(t, s, "envoy_server_uptime", 42)
	wantValue(t, s, "cluster.backend.membership_total", 1)
	wantValue(t, s, `envoy_cluster_upstream_cx_active{envoy_cluster_name="backend"}`, 2)
	if s.TextReadouts["envoy_control_plane_identifier"] != "cp-1" {
		t.Errorf("text readouts %v", s.TextReadouts)
	}
	h, ok := s.Histograms[`envoy_cluster_upstream_rq_time{envoy_cluster_name="backend"}`]
	if !ok || *h.Count != 4 || *h.Sum != 7.5 || len(h.Buckets) != 2 || h.Buckets[1].Cumulative != 3 || h.Buckets[1].Interval != nil {
		t.Errorf("histogram %+v", h)
	}
	if len(s.Values) != 13 {
		t.Errorf("%d values: %v", len(s.Values), s.Values)
	}
}

func TestPrometheusErrors(t *testing.T) {
	_, err := Parse(strings.NewReader("# TYPE a counter\na 1\na{x=\"1\" 2\n"), "p.txt", envoyrec.FormatPrometheus)
	var le *envoyrec.LineError
	if !errors.As(err, &le) || le.Line != 3 || le.Source != "p.txt" {
		t.Errorf("syntax error %v, want p.txt line 3", err)
	}
	_, err = Parse(strings.NewReader("# TYPE a gauge\na 1.5\n"), "p.txt", envoyrec.FormatPrometheus)
	if err == nil || !strings.Contains(err.Error(), "p.txt") {
		t.Errorf("fractional gauge error %v", err)
	}
	_, err = Parse(strings.NewReader("a 1\n"), "x", envoyrec.Format("xml"))
	if err == nil {
		t.Error("unknown format accepted")
	}
}

func TestSnapshotJSONRoundTrip(t *testing.T) {
	s := mustParse(t, fixture(t, "gh_envoy_admin_rst_stats_detailed_histogram_text.txt"), "d", envoyrec.FormatText)
	s.Proxy, s.Label = "edge", "after"
	s2 := mustParse(t, fixture(t, "gh_envoy_issue6974_stats_text_rls_cluster_excerpt_2019.txt"), "r", envoyrec.FormatText)
	s.Values, s.Upstream = s2.Values, s2.Upstream
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back envoyrec.Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.TextReadouts = map[string]string{}
	if !reflect.DeepEqual(&back, s) {
		t.Errorf("round trip differs:\n%+v\n%+v", back, *s)
	}
	if !strings.Contains(string(b), `"schema":"rlbench.envoy-stats/v1"`) || !strings.Contains(string(b), `"upstream":[{"cluster":"rate_limit_cluster"`) {
		t.Errorf("json %s", b)
	}
	var nilSnap *envoyrec.Snapshot
	if _, ok := nilSnap.Value("x"); ok {
		t.Error("nil snapshot has a value")
	}
}

// TestUptimeEveryRendering: server.uptime reads the same from text, JSON
// and Prometheus; a snapshot without it has none.
func TestUptimeEveryRendering(t *testing.T) {
	for _, c := range []struct {
		body string
		f    envoyrec.Format
	}{
		{"server.uptime: 42\ncluster.rls.ratelimit.ok: 3\n", envoyrec.FormatText},
		{`{"stats":[{"name":"server.uptime","value":42},{"name":"cluster.rls.ratelimit.ok","value":3}]}`, envoyrec.FormatJSON},
		{"# TYPE envoy_server_uptime gauge\nenvoy_server_uptime{} 42\n# TYPE envoy_cluster_ratelimit_ok counter\nenvoy_cluster_ratelimit_ok{envoy_cluster_name=\"rls\"} 3\n", envoyrec.FormatPrometheus},
	} {
		s := mustParse(t, []byte(c.body), string(c.f), c.f)
		if up, ok := s.Uptime(); !ok || up != 42 {
			t.Errorf("%s: Uptime() = %d, %v; want 42, true", c.f, up, ok)
		}
	}
	s := mustParse(t, []byte("cluster.rls.ratelimit.ok: 3\n"), "text", envoyrec.FormatText)
	if up, ok := s.Uptime(); ok {
		t.Errorf("no server.uptime: Uptime() = %d, true", up)
	}
}
