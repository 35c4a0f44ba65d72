package proxy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestAdminEndpoints(t *testing.T) {
	be := startBackend(t)
	p := startProxy(t, Config{Name: "proxy-a", Upstream: be.URL(), Local: &LocalRateLimit{MaxTokens: 1, FillInterval: 3600e9, FilterEnabled: pct(100), FilterEnforced: pct(100)}})
	do(t, "GET", p.URL()+"/a", nil)
	do(t, "GET", p.URL()+"/a", nil)

	must(t, get(t, p.AdminURL()+"/ready") == "LIVE\n", "/ready")
	r := do(t, "GET", p.AdminURL()+"/reset_counters", nil)
	must(t, r.code == 400, "GET /reset_counters: %d", r.code)
	must(t, textCounter(textStats(t, p), "http_local_rate_limiter.http_local_rate_limit.enabled") == 2, "counter before reset")
	r = do(t, "POST", p.AdminURL()+"/reset_counters", nil)
	must(t, r.code == 200, "POST /reset_counters: %d", r.code)
	text := textStats(t, p)
	must(t, textCounter(text, "http_local_rate_limiter.http_local_rate_limit.enabled") == 0, "counter after reset")
	must(t, textCounter(text, "server.live") == 1 && textCounter(text, "server.concurrency") == 1, "gauges survive reset: %v", text)

	// Text: readouts first, then names sorted; every line parses.
	body := get(t, p.AdminURL()+"/stats")
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	must(t, strings.HasPrefix(lines[0], `server.version_text: "`), "first line %q", lines[0])
	for i := 2; i < len(lines); i++ {
		must(t, lines[i-1] < lines[i], "unsorted %q >= %q", lines[i-1], lines[i])
	}
	// ?filter is a partial RE2 match; a bad regex is 400.
	f := get(t, p.AdminURL()+"/stats?filter=%5Ecluster%5C.backend%5C.upstream_rq_2")
	must(t, f == "cluster.backend.upstream_rq_200: 0\ncluster.backend.upstream_rq_2xx: 0\n", "filtered %q", f)
	must(t, do(t, "GET", p.AdminURL()+"/stats?filter=(", nil).code == 400, "bad filter accepted")
	must(t, do(t, "GET", p.AdminURL()+"/stats?format=xml", nil).code == 400, "bad format accepted")

	// /server_info has the fixture's top-level keys and an Envoy-shaped version.
	var ours, ref map[string]any
	if err := json.Unmarshal([]byte(get(t, p.AdminURL()+"/server_info")), &ours); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fixture(t, "gh_envoy_admin_rst_server_info_example.json"), &ref); err != nil {
		t.Fatal(err)
	}
	for k := range ref {
		_, ok := ours[k]
		must(t, ok, "/server_info lacks %q", k)
	}
	v, _ := ours["version"].(string)
	must(t, regexp.MustCompile(`^[0-9a-f]{40}/\d+\.\d+\.\d+[^/]*/(Clean|Modified)/(RELEASE|DEBUG)/BoringSSL$`).MatchString(v) && strings.Contains(v, "rlbench-lab"), "version %q", v)
	must(t, strings.Split(v, "/")[1] == "1.40.0-rlbench-lab", "version field %q", v)
	must(t, ours["state"] == "LIVE", "state %v", ours["state"])
	clo, _ := ours["command_line_options"].(map[string]any)
	must(t, clo["concurrency"] == float64(1), "concurrency %v", clo["concurrency"])
}

// The fixture shows text readouts as `name: "value"`; ours must match the
// same parse rule as every fixture line.
func TestTextFormatMatchesFixture(t *testing.T) {
	for _, l := range strings.Split(strings.TrimSpace(string(fixture(t, "gh_envoy_issue27878_stats_text_readouts_excerpt_2023.txt"))), "\n") {
		m := textLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("fixture line %q does not parse with the test's rule", l)
		}
	}
	var snap snapshot
	snap.texts = []textValue{{"http.http.rds.public-gateway-route.version_text", "9f0aeb96-b3c2-4126-a299-dbf66b644028"}, {"runtime.version_text", ""}}
	snap.stats = []statValue{{name: "cluster.rate-limiter.default.total_match_count", value: 619}}
	var b strings.Builder
	if err := snap.writeText(&b); err != nil {
		t.Fatal(err)
	}
	want := "http.http.rds.public-gateway-route.version_text: \"9f0aeb96-b3c2-4126-a299-dbf66b644028\"\nruntime.version_text: \"\"\ncluster.rate-limiter.default.total_match_count: 619\n"
	fx := string(fixture(t, "gh_envoy_issue27878_stats_text_readouts_excerpt_2023.txt"))
	for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
		must(t, strings.Contains(fx, l+"\n"), "rendered line %q is not in the fixture", l)
	}
	must(t, b.String() == want, "rendered %q", b.String())
}

func TestPrometheusNamesFollowEnvoyExtractors(t *testing.T) {
	// PR #21912 changelog: envoy_myprefix_http_local_rate_limit_rate_limited{} ->
	// envoy_http_local_rate_limit_rate_limited{envoy_local_http_ratelimit_prefix="myprefix"}.
	fx := string(fixture(t, "gh_envoy_pr21912_changelog_prometheus_rename_2022.txt"))
	want := `envoy_http_local_rate_limit_rate_limited{envoy_local_http_ratelimit_prefix="myprefix"}`
	if !strings.Contains(fx, want) {
		t.Fatalf("fixture lacks %s", want)
	}
	cases := map[string]string{
		"myprefix.http_local_rate_limit.rate_limited": want,
		"cluster.backend.upstream_rq_200":             `envoy_cluster_upstream_rq{envoy_response_code="200",envoy_cluster_name="backend"}`,
		"cluster.backend.upstream_rq_4xx":             `envoy_cluster_upstream_rq_xx{envoy_response_code_class="4",envoy_cluster_name="backend"}`,
		"cluster.backend.internal.upstream_rq_429":    `envoy_cluster_internal_upstream_rq{envoy_response_code="429",envoy_cluster_name="backend"}`,
		"cluster.backend.upstream_rq_completed":       `envoy_cluster_upstream_rq_completed{envoy_cluster_name="backend"}`,
		"cluster.backend.ratelimit.over_limit":        `envoy_cluster_ratelimit_over_limit{envoy_cluster_name="backend"}`,
		"http.ingress_http.downstream_rq_total":       `envoy_http_downstream_rq_total{envoy_http_conn_manager_prefix="ingress_http"}`,
		"server.live":                                 `envoy_server_live{}`,
	}
	for in, want := range cases {
		name, labels := promName(in)
		var parts []string
		for _, l := range labels {
			parts = append(parts, l.name+`="`+l.value+`"`)
		}
		got := name + "{" + strings.Join(parts, ",") + "}"
		must(t, got == want, "%s -> %s, want %s", in, got, want)
	}
}

func TestUpstreamConnectFailure(t *testing.T) {
	dead := deadAddr(t)
	var alog syncBuf
	p := startProxy(t, Config{Upstream: "http://" + dead, AccessLog: &alog})
	r := do(t, "GET", p.URL()+"/x", map[string]string{"X-Rlbench-Id": "uf"})
	must(t, r.code == 503 && strings.HasPrefix(r.body, "upstream connect error or disconnect/reset before headers"), "UF reply %d %q", r.code, r.body)
	text := textStats(t, p)
	must(t, textCounter(text, "cluster.backend.upstream_rq_503") == 1 && textCounter(text, "cluster.backend.upstream_cx_connect_fail") == 1, "UF stats %v", text)
	var e AccessLogEntry
	must(t, p.FlushAccessLog() == nil, "flush")
	if err := json.Unmarshal(alog.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	must(t, e.ResponseFlags == "UF" && e.ResponseCode == 503 && e.RlbenchID == "uf" && e.UpstreamHost == dead, "UF log %+v", e)
}

// The local 429 matches the captured Envoy Gateway reply headers.
func TestLocalReplyMatchesCapturedHeaders(t *testing.T) {
	fx := string(fixture(t, "gh_envoygateway_issue5693_429_headers_2025.txt"))
	be := startBackend(t)
	p := startProxy(t, Config{Upstream: be.URL(), Local: &LocalRateLimit{MaxTokens: 1, FillInterval: 3600e9, FilterEnabled: pct(100), FilterEnforced: pct(100)}})
	do(t, "GET", p.URL()+"/", nil)
	r := do(t, "GET", p.URL()+"/", nil)
	must(t, strings.Contains(fx, "HTTP/2 429"), "fixture")
	must(t, r.code == 429, "code %d", r.code)
	for _, l := range strings.Split(fx, "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok || k == "date" {
			continue
		}
		must(t, r.header.Get(k) == v, "header %s = %q, fixture %q", k, r.header.Get(k), v)
	}
}
