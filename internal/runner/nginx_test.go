package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/model"
)

func TestNginxPlanValidation(t *testing.T) {
	for _, c := range []struct{ lab, bad string }{
		{`{nginx: {rate: 10r/s, burst: 5}}`, ""},
		{`{nginx: {instances: 2, zones: [{rate: 10r/s, burst: 5, nodelay: true}, {name: g, key: $host, rate: 2r/s}]}}`, ""},
		{`{backend: {endpoints: 3, faults: {error_status: 500}}, nginx: {proxy_next_upstream: [error, timeout, http_500], proxy_next_upstream_tries: 3, max_fails: 0}}`, ""},
		{`{proxies: 1, nginx: {rate: 10r/s}}`, "lab.nginx replaces the lab proxies"},
		{`{local: {max_tokens: 1, fill_interval: 1s}, nginx: {rate: 10r/s}}`, "lab.nginx replaces the lab proxies"},
		{`{nginx: {rate: 10r/s, zones: [{rate: 1r/s}]}}`, "not both"},
		{`{nginx: {burst: 5}}`, "need rate"},
		{`{nginx: {rate: ten}}`, `nginx rate "ten"`},
		// The rendered config's problems name the plan's keys.
		{`{nginx: {rate: 10r/s, nodelay: true, delay: 2}}`, "lab.nginx: nodelay and delay are exclusive"},
		{`{nginx: {rate: 10r/s, burst: -3}}`, "lab.nginx.burst -3: must not be negative"},
		{`{nginx: {zones: [{rate: 1r/s}, {rate: 2r/s, delay: -1}]}}`, "lab.nginx.zones[1].delay -1: must not be negative"},
		{`{nginx: {zones: [{rate: 1r/s, burst: 2, nodelay: true, delay: 1}]}}`, "lab.nginx.zones[0]: nodelay and delay are exclusive"},
		{`{nginx: {zones: [{name: "a b", rate: 1r/s}]}}`, `lab.nginx.zones[0].name "a b"`},
		{`{nginx: {rate: 10r/s, key: "$a;b"}}`, `lab.nginx.key "$a;b"`},
		{`{nginx: {proxy_next_upstream: [sometimes]}}`, `lab.nginx.proxy_next_upstream[0] "sometimes"`},
		{`{nginx: {limit_req_status: 200}}`, "lab.nginx.limit_req_status 200: want 400..599"},
		{`{nginx: {worker_processes: -1}}`, "lab.nginx.worker_processes -1"},
		{`{nginx: {worker_priority: 21}}`, "lab.nginx.worker_priority 21: want -20..20"},
		{`{nginx: {error_log_level: loud}}`, `lab.nginx.error_log_level "loud"`},
		{`{nginx: {rate: 1r/s, limit_req_log_level: info, error_log_level: notice}}`, ""},
		{`{nginx: {upstream_keepalive: -2}}`, "lab.nginx.upstream_keepalive -2: want 0..1024 (worker_connections)"},
		{`{nginx: {upstream_keepalive: 2147483648}}`, "lab.nginx.upstream_keepalive 2147483648: want 0..1024"},
		{`{nginx: {rate: 1r/s, worker_priority: -10, upstream_keepalive: 8}}`, ""},
		{`{nginx: {max_fails: -1}}`, "lab.nginx.max_fails -1"},
		{`{nginx: {fail_timeout: 1us}}`, "lab.nginx.fail_timeout 1µs: want a positive whole number of milliseconds"},
		{`{nginx: {proxy_read_timeout: 1us}}`, "lab.nginx.proxy_read_timeout 1µs"},
		{`{nginx: {instances: 30}}`, "instances 30"},
		{`{backend: {endpoints: 99}, nginx: {}}`, "endpoints"},
	} {
		plan := "name: p\nscenarios:\n - name: s\n   lab: " + c.lab + "\n   attack: {ids: 1}\n"
		_, err := ParsePlan("p.yaml", []byte(plan))
		if (err == nil) != (c.bad == "") || err != nil && (!strings.Contains(err.Error(), c.bad) || strings.Contains(err.Error(), "NginxConfig")) {
			t.Errorf("%s: %v, want %q (in the plan's keys)", c.lab, err, c.bad)
		}
	}
	for _, c := range []struct{ expect, bad string }{
		{`{backend_peak: {window: 10ms, max: 20}}`, ""},
		{`{backend_peak: [{window: 10ms, model: true}, {window: 1s, min: 1, max: 5, tolerance: 20ms}]}`, ""},
		{`{backend_peak: {window: 10ms}}`, "expect.backend_peak[0]: give max, min or model"},
		{`{backend_peak: [{window: 10ms, max: 1}, {window: 0s, max: 1}]}`, "expect.backend_peak[1]: window 0s"},
		{`{backend_peak: {window: ten, max: 1}}`, "ten"},
		{`{backend_peak: {window: 10ms, max: 1, maximum: 2}}`, "maximum"},
		{`{amplification: {max: 4}}`, ""},
		{`{amplification: {}}`, "expect.amplification: give min or max"},
		{`{amplification: {min: 4, max: 3}}`, "min 4 > max 3"},
		{`{limit_req_status: {PASSED: 5, DELAYED: "6..7", none: 0}}`, ""},
		{`{limit_req_status: {passed: 5}}`, "expect.limit_req_status.passed: want one of PASSED"},
	} {
		plan := "name: p\nscenarios:\n - name: s\n   lab: {nginx: {rate: 10r/s}}\n   attack: {ids: 1}\n   expect: " + c.expect + "\n"
		_, err := ParsePlan("p.yaml", []byte(plan))
		if (err == nil) != (c.bad == "") || err != nil && !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%s: %v, want %q", c.expect, err, c.bad)
		}
	}
	plan := "name: p\nscenarios:\n - name: s\n   lab: {nginx: {rate: 1r/s}}\n   steps:\n    - fault: {action: stop, target: rls}\n    - attack: {ids: 1}\n"
	if _, err := ParsePlan("p.yaml", []byte(plan)); err == nil || !strings.Contains(err.Error(), "has no rls") {
		t.Errorf("rls fault with nginx: %v", err)
	}
}

// TestNginxPlanConfigAndModel: the plan's settings become the rendered
// config's directives and the model's zones.
func TestNginxPlanConfigAndModel(t *testing.T) {
	zero := 0
	np := &NginxPlan{Rate: "100r/s", Burst: 200, Delay: 50, LimitReqStatus: 429, ProxyNextUpstream: []string{"error", "http_500"},
		ProxyNextUpstreamTries: 3, MaxFails: &zero}
	cfg, err := np.config([]string{"127.0.0.1:7001", "127.0.0.1:7002"})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := realparts.RenderNginxConf(cfg, realparts.NginxLayout{Prefix: "/tmp/x", Port: 8001, StatusPort: 8002})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"limit_req_zone $binary_remote_addr zone=rl:1m rate=100r/s;", "limit_req zone=rl burst=200 delay=50;",
		"limit_req_status 429;", "proxy_next_upstream error http_500;", "proxy_next_upstream_tries 3;",
		"server 127.0.0.1:7001 max_fails=0;", "server 127.0.0.1:7002 max_fails=0;"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	s, err := np.modelSpec()
	if err != nil || s == nil || len(s.Zones) != 1 || s.Zones[0] != (model.NginxZone{Name: "rl", Rate: "100r/s", Burst: 200, Delay: 50}) {
		t.Errorf("model %+v %v", s, err)
	}
	if s, _ := (&NginxPlan{Rate: "1r/s", Key: "$http_x_user"}).modelSpec(); s != nil {
		t.Error("a per-request key has a per-instance model")
	}
	if s, _ := (&NginxPlan{}).modelSpec(); s != nil {
		t.Error("no zone, but a model")
	}
}

// TestNginxNotInstalledIsNotRun: without nginx the scenario is NOT_RUN
// with the install hint, never PASS or FAIL; the lab was started and
// stopped cleanly around it.
func TestNginxNotInstalledIsNotRun(t *testing.T) {
	t.Setenv(realparts.EnvNginxBin, filepath.Join(t.TempDir(), "no-nginx"))
	p, err := ParsePlan("p.yaml", []byte("name: p\nscenarios:\n - name: leaky\n   lab: {nginx: {rate: 10r/s}}\n   attack: {ids: 3}\n   expect: {admitted: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	runDir, err := Run(context.Background(), p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "01-leaky", "1", evidence.NotRunFile))
	if err != nil || !strings.HasPrefix(string(b), NginxNotInstalledReason) {
		t.Fatalf("NOT_RUN %q %v", b, err)
	}
	rep, err := analyze.Analyze(context.Background(), runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != evidence.NotRun || !strings.HasPrefix(rep.Scenarios[0].Reasons[0], NginxNotInstalledReason) {
		t.Errorf("%s %v", rep.Status, rep.Scenarios[0].Reasons)
	}
}

// TestNginxRangeErrorNamesKeyLine: a lab.nginx value out of range is named
// at the line of its key (as a type error is), not at the line of nginx:,
// in a plan and in a lab file.
func TestNginxRangeErrorNamesKeyLine(t *testing.T) {
	for _, c := range []struct{ nginx, want string }{
		{"       rate: 1r/s\n       worker_priority: 50\n", "line 7: scenarios[0] (s): lab.nginx.worker_priority 50"},
		{"       rate: 1r/s\n       upstream_keepalive: -1\n", "line 7: scenarios[0] (s): lab.nginx.upstream_keepalive -1"},
		{"       rate: 1r/s\n       burst: 2\n       limit_req_status: 200\n", "line 8: scenarios[0] (s): lab.nginx.limit_req_status 200"},
		{"       rate: 1r/s\n       instances: 40\n", "line 7: scenarios[0] (s): lab.nginx.instances 40"},
		{"       rate: 1r/s\n       worker_processes: 100000\n", "line 7: scenarios[0] (s): lab.nginx.worker_processes 100000: want 0..1024"},
		{"       rate: ten\n", "line 6: scenarios[0] (s): lab.nginx: zone rl"},
		{"       zones:\n        - rate: 1r/s\n        - rate: 1r/s\n          burst: -1\n", "line 9: scenarios[0] (s): lab.nginx.zones[1].burst -1"},
		{"       proxy_next_upstream:\n        - error\n        - sometimes\n", "line 8: scenarios[0] (s): lab.nginx.proxy_next_upstream[1]"},
		// Two problems: the line of the first.
		{"       worker_processes: 2\n       worker_priority: 50\n       upstream_keepalive: -1\n", "line 7: scenarios[0] (s): lab.nginx.worker_priority 50"},
		// The type error, for comparison: the same line.
		{"       rate: 1r/s\n       worker_priority: x\n", "line 7: scenarios[0].lab.nginx.worker_priority"},
	} {
		plan := "name: p\nscenarios:\n - name: s\n   lab:\n     nginx:\n" + c.nginx + "   attack: {ids: 1}\n"
		_, err := ParsePlan("p.yaml", []byte(plan))
		if err == nil || !strings.Contains(err.Error(), "p.yaml: "+c.want) {
			t.Errorf("%q: %v, want %q", c.nginx, err, c.want)
		}
	}
	_, err := ParseLabFile("lab.yaml", []byte("nginx:\n  rate: 1r/s\n  worker_priority: 50\n"))
	if err == nil || !strings.Contains(err.Error(), "lab.yaml: line 3: lab.nginx.worker_priority 50") {
		t.Errorf("lab file: %v, want line 3", err)
	}
}
