package lint

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/internal/testfix"
)

const hcm = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"

func examplesDir(t testing.TB) string {
	return filepath.Join(testfix.RepoRoot(t), "examples", "envoy")
}

func exampleRLS(t testing.TB) []*rlsconfig.Config {
	t.Helper()
	cfgs, err := rlsconfig.LoadDir(filepath.Join(examplesDir(t), "ratelimit", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 1 || cfgs[0].Domain != "inventory" {
		t.Fatalf("example RLS configs: %+v", cfgs)
	}
	return cfgs
}

type cp struct{ Code, Path string }

func codesPaths(r *Report) []cp {
	out := make([]cp, 0, len(r.Findings))
	for _, f := range r.Findings {
		out = append(out, cp{f.Code, f.Path})
	}
	return out
}

func lintFiles(t *testing.T, opts Options, paths ...string) *Report {
	t.Helper()
	rep, err := LintFiles(context.Background(), paths, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func lintString(t *testing.T, name, yaml string, opts Options) *Report {
	t.Helper()
	rep, err := Lint(context.Background(), []Source{{Name: name, R: strings.NewReader(yaml)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func dump(r *Report) string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}

// lineOf returns the 1-based line of the first line of file containing s.
func lineOf(t *testing.T, file, s string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in %s", s, file)
	return 0
}

func TestExamplesLintClean(t *testing.T) {
	dir := examplesDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := []string{"global-a.yaml", "global-b.yaml", "global-open-a.yaml", "global-open-b.yaml", "local-a.yaml", "local-b.yaml"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("example files %v, want %v", names, want)
	}
	rep := lintFiles(t, Options{RLSConfigs: exampleRLS(t)}, files...)
	if rep.Errors() != 0 {
		t.Fatalf("examples have %d errors:%s", rep.Errors(), dump(rep))
	}
	// The only expected findings: the fail-open variants say so.
	var got []string
	for _, f := range rep.Findings {
		got = append(got, filepath.Base(f.File)+" "+f.Code+" "+f.Path)
	}
	wantF := []string{
		"global-open-a.yaml W_FAIL_OPEN " + hcm + ".http_filters[0]",
		"global-open-b.yaml W_FAIL_OPEN " + hcm + ".http_filters[0]",
	}
	if !reflect.DeepEqual(got, wantF) {
		t.Fatalf("findings:%s\nwant %v", dump(rep), wantF)
	}
	if l := lineOf(t, files[2], "- name: envoy.filters.http.ratelimit"); rep.Findings[0].Line != l {
		t.Errorf("fail-open line %d, want %d", rep.Findings[0].Line, l)
	}
	// Each file alone is clean too (no cross-file reliance), and the RLS rule
	// is reached from one global file.
	for _, f := range files {
		r := lintFiles(t, Options{RLSConfigs: exampleRLS(t)}, f)
		if r.Errors() != 0 {
			t.Errorf("%s: %d errors:%s", f, r.Errors(), dump(r))
		}
		for _, x := range r.Findings {
			if x.Code == CodeRuleUnreachable && strings.HasPrefix(filepath.Base(f), "global") {
				t.Errorf("%s: rule reported unreachable: %s", f, x)
			}
		}
	}
}

// TestExampleContents pins the experiment parameters the brief fixes, read
// back through the decoder rather than by text search.
func TestExampleContents(t *testing.T) {
	dir := examplesDir(t)
	for _, name := range []string{"local-a.yaml", "local-b.yaml", "global-a.yaml", "global-b.yaml", "global-open-a.yaml", "global-open-b.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		l := &linter{}
		f := &fileState{name: name, lines: newLineIndex(), failureModeAllow: map[string]bool{}, droppedParents: map[string]bool{}}
		bs := l.decodeFile(f, data)
		if bs == nil || len(l.findings) != 0 {
			t.Fatalf("%s: decode findings %v", name, l.findings)
		}
		listen, admin := uint32(10000), uint32(9901)
		if strings.HasSuffix(name, "-b.yaml") {
			listen, admin = 10001, 9902
		}
		if got := bs.GetAdmin().GetAddress().GetSocketAddress(); got.GetAddress() != "127.0.0.1" || got.GetPortValue() != admin {
			t.Errorf("%s: admin %v", name, got)
		}
		if got := bs.GetStaticResources().GetListeners()[0].GetAddress().GetSocketAddress(); got.GetAddress() != "127.0.0.1" || got.GetPortValue() != listen {
			t.Errorf("%s: listener %v", name, got)
		}
		be := bs.GetStaticResources().GetClusters()[0]
		sa := be.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		if be.GetName() != "backend" || sa.GetAddress() != "127.0.0.1" || sa.GetPortValue() != 8080 {
			t.Errorf("%s: backend %v %v", name, be.GetName(), sa)
		}
		text := string(data)
		for _, op := range []string{"%START_TIME%", "%REQ(:METHOD)%", "%RESPONSE_CODE%", "%RESPONSE_FLAGS%", "%RESPONSE_CODE_DETAILS%", "%UPSTREAM_HOST%", "%DURATION%", `rlbench_id: "%REQ(X-RLBENCH-ID)%"`} {
			if !strings.Contains(text, op) {
				t.Errorf("%s: access log lacks %s", name, op)
			}
		}
	}
}

// TestBrokenVariants: each planted defect yields exactly one finding.
func TestBrokenVariants(t *testing.T) {
	cases := []struct {
		file string
		rls  string // RLS config dir, "" = the examples'
		want []cp
		// lineHas is a substring of the line the single finding must point at.
		lineHas string
		msgHas  []string
	}{
		{"broken-failure-mode-allow.yaml", "", []cp{{CodeFailureModeAllow, hcm + ".http_filters[0].typed_config.failure_mode_allow"}},
			"failure_mode_allow: true", []string{"failure_mode_deny", "opposite sense", "ext_authz"}},
		{"broken-local-no-filter-enabled.yaml", "", []cp{{CodeLocalNotEnabled, hcm + ".http_filters[0]"}},
			"- name: envoy.filters.http.local_ratelimit", []string{"0%", "no-op"}},
		{"broken-local-fill-interval.yaml", "", []cp{{CodeLocalBucket, hcm + ".http_filters[0].typed_config.token_bucket.fill_interval"}},
			"fill_interval: 0.01s", []string{"10ms is below Envoy's minimum 50ms", "fill timer must be >= 50ms"}},
		{"broken-descriptor-value.yaml", "", []cp{{CodeDescriptorUnmatched, hcm + ".route_config.virtual_hosts[0].routes[0].route.rate_limits[0]"}},
			"- actions:", []string{`(tenant="labs")`, `did you mean tenant="lab" (descriptors[0], line 6)`, "1 character differs"}},
		{"broken-domain.yaml", "", []cp{{CodeDomainUnknown, hcm + ".http_filters[0]"}},
			"- name: envoy.filters.http.ratelimit", []string{`"inventroy"`, `Did you mean "inventory"`}},
		{"broken-rls-cluster-http1.yaml", "", []cp{{CodeRLSClusterNotHTTP2, "static_resources.clusters[1]"}},
			"- name: ratelimit", []string{`"ratelimit"`, "HTTP/1.1"}},
		{"broken-unknown-field.yaml", "", []cp{{CodeDecode, "static_resources.clusters[0].connect_timout"}},
			"connect_timout", []string{`unknown field "connect_timout"`, `did you mean "connect_timeout"`}},
		// The same one-character difference planted on the RLS side instead.
		{filepath.Join("..", "..", "..", "examples", "envoy", "global-a.yaml"), "testdata/rls-lab-space",
			[]cp{{CodeDescriptorUnmatched, hcm + ".route_config.virtual_hosts[0].routes[0].route.rate_limits[0]"}},
			"- actions:", []string{`did you mean tenant="lab "`}},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			cfgs := exampleRLS(t)
			if tc.rls != "" {
				var err error
				if cfgs, err = rlsconfig.LoadDir(tc.rls); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join("testdata", tc.file)
			rep := lintFiles(t, Options{RLSConfigs: cfgs}, path)
			if got := codesPaths(rep); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("findings:%s\nwant %v", dump(rep), tc.want)
			}
			f := rep.Findings[0]
			if f.File != path {
				t.Errorf("file %q, want %q", f.File, path)
			}
			if want := lineOf(t, path, tc.lineHas); f.Line != want {
				t.Errorf("line %d, want %d (%q)", f.Line, want, tc.lineHas)
			}
			for _, s := range tc.msgHas {
				if !strings.Contains(f.Message, s) {
					t.Errorf("message %q lacks %q", f.Message, s)
				}
			}
			if rep.Errors() != 1 {
				t.Errorf("Errors() = %d", rep.Errors())
			}
		})
	}
}

// mutate returns the text of an example with old replaced by new (exactly once).
func mutate(t *testing.T, example, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir(t), example))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if strings.Count(s, old) != 1 {
		t.Fatalf("%q occurs %d times in %s", old, strings.Count(s, old), example)
	}
	return strings.Replace(s, old, new, 1)
}

func TestFindingsByMutation(t *testing.T) {
	const rlF = hcm + ".http_filters[0]"
	const route = hcm + ".route_config.virtual_hosts[0].routes[0].route"
	cases := []struct {
		name, example, old, new string
		want                    []cp
	}{
		{"shadow local", "local-a.yaml", "              filter_enforced:\n                default_value: {numerator: 100, denominator: HUNDRED}\n", "",
			[]cp{{CodeLocalShadow, rlF}}},
		{"partly enforced", "local-a.yaml", "filter_enforced:\n                default_value: {numerator: 100", "filter_enforced:\n                default_value: {numerator: 50",
			[]cp{{CodeLocalShadow, rlF + ".typed_config.filter_enforced"}}},
		{"enabled 0%", "local-a.yaml", "filter_enabled:\n                default_value: {numerator: 100", "filter_enabled:\n                default_value: {numerator: 0",
			[]cp{{CodeLocalNotEnabled, rlF + ".typed_config.filter_enabled"}}},
		{"validation: zero tokens per fill", "local-a.yaml", "tokens_per_fill: 5", "tokens_per_fill: 0",
			[]cp{{CodeValidate, rlF + ".typed_config.token_bucket.tokens_per_fill"}}},
		{"validation: empty domain", "global-a.yaml", "domain: inventory", `domain: ""`,
			[]cp{{CodeDomainUnused, "domain"}, {CodeValidate, rlF + ".typed_config.domain"}}},
		{"no timeout", "global-a.yaml", "              timeout: 0.1s\n", "",
			[]cp{{CodeRLSTimeoutDefault, rlF}}},
		{"rls cluster missing", "global-a.yaml", "envoy_grpc:\n                    cluster_name: ratelimit", "envoy_grpc:\n                    cluster_name: ratelimiter",
			[]cp{{CodeRLSClusterMissing, rlF}}},
		{"transport AUTO", "global-a.yaml", "transport_api_version: V3", "transport_api_version: AUTO",
			[]cp{{CodeRLSTransport, rlF + ".typed_config.rate_limit_service"}}},
		{"no rate_limit_service", "global-a.yaml", "              rate_limit_service:\n                transport_api_version: V3\n                grpc_service:\n                  envoy_grpc:\n                    cluster_name: ratelimit\n", "",
			[]cp{{CodeValidate, rlF + ".typed_config.rate_limit_service"}}},
		{"stage mismatch", "global-a.yaml", "stage: 0", "stage: 1",
			[]cp{{CodeRuleUnreachable, "descriptors[0]"}, {CodeNoDescriptors, rlF}}},
		{"request header descriptor", "global-a.yaml", "- generic_key:\n                        descriptor_key: tenant\n                        descriptor_value: lab",
			"- request_headers:\n                        header_name: x-tenant\n                        descriptor_key: tenant",
			[]cp{{CodeClientHeader, route + ".rate_limits[0].actions[0]"}}},
		{"remote_address behind xff", "global-a.yaml", "use_remote_address: true", "use_remote_address: false",
			nil},
		{"wrong scalar type", "local-a.yaml", "port_value: 8080", "port_value: eighty",
			[]cp{{CodeDecode, "static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value"}}},
		{"bad duration", "local-a.yaml", "fill_interval: 3600s", "fill_interval: 1h",
			[]cp{{CodeDecode, rlF + ".typed_config.token_bucket.fill_interval"}}},
		{"oneof twice", "local-a.yaml", "                  cluster: backend\n", "                  cluster: backend\n                  cluster_header: x-cluster\n",
			[]cp{{CodeDecode, route + ".cluster_header"}}},
		{"unknown typed_config type", "local-a.yaml", "envoy.extensions.filters.http.router.v3.Router", "envoy.extensions.filters.http.nosuch.v3.Nosuch",
			[]cp{{CodeUncheckedType, hcm + ".http_filters[1].typed_config.@type"}}},
		{"yaml syntax", "local-a.yaml", "  clusters:\n", "  clusters:\n   - : [\n",
			[]cp{{CodeDecode, ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := lintString(t, "mut.yaml", mutate(t, tc.example, tc.old, tc.new), Options{RLSConfigs: exampleRLS(t)})
			got := codesPaths(rep)
			if tc.want == nil {
				tc.want = []cp{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("findings:%s\nwant %v", dump(rep), tc.want)
			}
		})
	}
}

func TestRemoteAddressXFF(t *testing.T) {
	y := mutate(t, "global-a.yaml", "- generic_key:\n                        descriptor_key: tenant\n                        descriptor_value: lab", "- remote_address: {}")
	rls := []*rlsconfig.Config{mustParse(t, "rl.yaml", "domain: inventory\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 2}\n")}
	rep := lintString(t, "ra.yaml", y, Options{RLSConfigs: rls})
	if len(rep.Findings) != 0 {
		t.Fatalf("use_remote_address: true + remote_address should be clean:%s", dump(rep))
	}
	y = strings.Replace(y, "use_remote_address: true", "use_remote_address: false", 1)
	rep = lintString(t, "ra.yaml", y, Options{RLSConfigs: rls})
	want := []cp{{CodeRemoteAddressXFF, hcm + ".route_config.virtual_hosts[0].routes[0].route.rate_limits[0].actions[0]"}}
	if got := codesPaths(rep); !reflect.DeepEqual(got, want) {
		t.Fatalf("findings:%s\nwant %v", dump(rep), want)
	}
}

func mustParse(t *testing.T, name, y string) *rlsconfig.Config {
	t.Helper()
	c, err := rlsconfig.Parse(name, []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAgainstCapturedRLSConfig cross-checks routes against the RLS config
// used for the captured fixtures (domain rlbench): two rules are produced,
// the shadow and unlimited ones are not.
func TestAgainstCapturedRLSConfig(t *testing.T) {
	p := testfix.Fixture(t, "rls", "rls_local_config.yaml")
	cfg, err := rlsconfig.ParseFile(p)
	if err != nil {
		t.Fatal(err)
	}
	y := mutate(t, "global-a.yaml", "domain: inventory", "domain: rlbench")
	y = strings.Replace(y, `                  rate_limits:
                  - actions:
                    - generic_key:
                        descriptor_key: tenant
                        descriptor_value: lab
`, `                  rate_limits:
                  - actions:
                    - generic_key: {descriptor_value: fixed}
                  - actions:
                    - remote_address: {}
                  - actions:
                    - generic_key: {descriptor_value: fixed}
                    - remote_address: {}
`, 1)
	rep := lintString(t, "captured.yaml", y, Options{RLSConfigs: []*rlsconfig.Config{cfg}})
	route := hcm + ".route_config.virtual_hosts[0].routes[0].route"
	want := []cp{
		{CodeDescriptorUnmatched, route + ".rate_limits[2]"},
		{CodeRuleUnreachable, "descriptors[2]"},
		{CodeRuleUnreachable, "descriptors[3]"},
	}
	if got := codesPaths(rep); !reflect.DeepEqual(got, want) {
		t.Fatalf("findings:%s\nwant %v", dump(rep), want)
	}
	if !strings.Contains(rep.Findings[0].Message, "deeper than the rule") {
		t.Errorf("unmatched message: %s", rep.Findings[0].Message)
	}
	for _, f := range rep.Findings[1:] {
		if f.File != p || f.Line != lineOf(t, p, "key: "+map[string]string{"descriptors[2]": "shadow", "descriptors[3]": "free"}[f.Path]) {
			t.Errorf("rule finding location %s:%d", f.File, f.Line)
		}
	}
	if !strings.Contains(rep.Findings[1].Message, "rlbench.shadow_x") || !strings.Contains(rep.Findings[2].Message, "unlimited") {
		t.Errorf("rule messages: %s | %s", rep.Findings[1].Message, rep.Findings[2].Message)
	}
}

func TestDomainUnusedInfo(t *testing.T) {
	// Only local limits linted: no ratelimit filter, so no domain is "unused".
	rep := lintFiles(t, Options{RLSConfigs: exampleRLS(t)}, filepath.Join(examplesDir(t), "local-a.yaml"))
	if len(rep.Findings) != 0 {
		t.Fatalf("findings:%s", dump(rep))
	}
	// A filter with an unrelated domain: the error names no suggestion and
	// the RLS domain is reported unused.
	rep = lintString(t, "catalog.yaml", mutate(t, "global-a.yaml", "domain: inventory", "domain: catalog"), Options{RLSConfigs: exampleRLS(t)})
	want := []cp{{CodeDomainUnused, "domain"}, {CodeDomainUnknown, hcm + ".http_filters[0]"}}
	if got := codesPaths(rep); !reflect.DeepEqual(got, want) || rep.Findings[0].Level != LevelInfo {
		t.Fatalf("findings:%s\nwant %v", dump(rep), want)
	}
	if strings.Contains(rep.Findings[1].Message, "Did you mean") {
		t.Errorf("unexpected suggestion: %s", rep.Findings[1].Message)
	}
	// Without RLS configs there is no cross-check at all.
	rep = lintFiles(t, Options{}, filepath.Join(testdataDir(), "broken-domain.yaml"))
	if len(rep.Findings) != 0 {
		t.Fatalf("no RLS configs, findings:%s", dump(rep))
	}
}

func testdataDir() string { return "testdata" }

func TestFindingJSON(t *testing.T) {
	b, err := json.Marshal(Finding{Code: CodeDecode, Level: LevelError, File: "f.yaml", Line: 3, Path: "a.b[1]", Message: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"code":"E_DECODE","level":"error","file":"f.yaml","line":3,"path":"a.b[1]","message":"m"}`; got != want {
		t.Fatalf("json %s, want %s", got, want)
	}
}

func TestSortAndCounts(t *testing.T) {
	paths := []string{"a.x[10]", "a.x[2].b", "a.x[2]", "", "a.w"}
	sort.Slice(paths, func(i, j int) bool { return comparePaths(paths[i], paths[j]) < 0 })
	if want := []string{"", "a.w", "a.x[2]", "a.x[2].b", "a.x[10]"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("sorted %v, want %v", paths, want)
	}
	files := []string{
		filepath.Join("testdata", "broken-unknown-field.yaml"),
		filepath.Join("testdata", "broken-domain.yaml"),
		filepath.Join(examplesDir(t), "global-open-b.yaml"),
	}
	rep := lintFiles(t, Options{RLSConfigs: exampleRLS(t)}, files...)
	if !reflect.DeepEqual(rep.Files, files) {
		t.Errorf("Files %v", rep.Files)
	}
	if rep.Errors() != 2 || rep.Warnings() != 1 || rep.Count(LevelInfo) != 0 {
		t.Fatalf("errors %d warnings %d:%s", rep.Errors(), rep.Warnings(), dump(rep))
	}
	for i := 1; i < len(rep.Findings); i++ {
		a, b := rep.Findings[i-1], rep.Findings[i]
		if a.File > b.File || (a.File == b.File && comparePaths(a.Path, b.Path) > 0) {
			t.Errorf("not sorted: %s before %s", a, b)
		}
	}
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReadErrorAndContext(t *testing.T) {
	_, err := Lint(context.Background(), []Source{{Name: "x.yaml", R: failReader{}}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "x.yaml") || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err %v", err)
	}
	if _, err := LintFiles(context.Background(), []string{"testdata/does-not-exist.yaml"}, Options{}); err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Fatalf("missing file err %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Lint(ctx, []Source{{Name: "y", R: strings.NewReader("{}")}}, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx err %v", err)
	}
}

// TestPerRouteLocal: the HCM-level filter is a placeholder (stat_prefix only);
// the per-route config carries the bucket but lacks filter_enabled.
func TestPerRouteLocal(t *testing.T) {
	y := mutate(t, "local-a.yaml", `              token_bucket:
                max_tokens: 5
                tokens_per_fill: 5
                fill_interval: 3600s
              # Without filter_enabled the filter is a no-op (Envoy defaults it to 0%).
              filter_enabled:
                default_value: {numerator: 100, denominator: HUNDRED}
              # Without filter_enforced over-limit requests are only counted (shadow mode).
              filter_enforced:
                default_value: {numerator: 100, denominator: HUNDRED}
`, "")
	y = strings.Replace(y, "                route:\n                  cluster: backend\n", `                route:
                  cluster: backend
                typed_per_filter_config:
                  envoy.filters.http.local_ratelimit:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
                    stat_prefix: per_route
                    token_bucket: {max_tokens: 2, tokens_per_fill: 2, fill_interval: 60s}
`, 1)
	rep := lintString(t, "perroute.yaml", y, Options{})
	p := hcm + `.route_config.virtual_hosts[0].routes[0].typed_per_filter_config["envoy.filters.http.local_ratelimit"]`
	want := []cp{{CodeLocalNotEnabled, p}}
	if got := codesPaths(rep); !reflect.DeepEqual(got, want) {
		t.Fatalf("findings:%s\nwant %v", dump(rep), want)
	}
	if want := lineOf(t, t2(t, y), "                  envoy.filters.http.local_ratelimit:"); rep.Findings[0].Line != want {
		t.Errorf("line %d, want %d", rep.Findings[0].Line, want)
	}
	// Without the per-route config the placeholder limits nothing.
	y2 := mutate(t, "local-a.yaml", "                max_tokens: 5\n                tokens_per_fill: 5\n                fill_interval: 3600s\n", "")
	y2 = strings.Replace(y2, "              token_bucket:\n", "", 1)
	rep = lintString(t, "nobucket.yaml", y2, Options{})
	if got, want := codesPaths(rep), []cp{{CodeLocalNoBucket, hcm + ".http_filters[0]"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("findings:%s\nwant %v", dump(rep), want)
	}
}

// t2 writes y to a temp file so lineOf can search it.
func t2(t *testing.T, y string) string {
	p := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestJSONNames: protojson also accepts lowerCamel names; paths still use
// proto names and lines are still found.
func TestJSONNames(t *testing.T) {
	y := mutate(t, "local-a.yaml", "filter_enforced:\n                default_value: {numerator: 100", "filterEnforced:\n                defaultValue: {numerator: 40")
	rep := lintString(t, "camel.yaml", y, Options{})
	want := []cp{{CodeLocalShadow, hcm + ".http_filters[0].typed_config.filter_enforced"}}
	if got := codesPaths(rep); !reflect.DeepEqual(got, want) {
		t.Fatalf("findings:%s\nwant %v", dump(rep), want)
	}
	if l := lineOf(t, t2(t, y), "filterEnforced:"); rep.Findings[0].Line != l || !strings.Contains(rep.Findings[0].Message, "40%") {
		t.Errorf("finding %s, want line %d and 40%%", rep.Findings[0], l)
	}
}
