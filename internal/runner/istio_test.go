package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"go.yaml.in/yaml/v3"
)

// The example replays the incident: the inline inputs are the files beside
// it, the verdict is PASS, and the proxy's stats show the chain: 3
// ejections past the cap and panic routing on the incident's Envoy, 2
// ejections and an overflow on today's, none after the fix.
func TestIstioIncidentExample(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "istio", "plan.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenarios []struct {
			Lab struct {
				Istio struct {
					DR string `yaml:"destination_rule"`
					EF string `yaml:"envoy_filter"`
				} `yaml:"istio"`
			} `yaml:"lab"`
		} `yaml:"scenarios"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(path), name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	wantDR := []string{file("destinationrule-before.yaml"), file("destinationrule-before.yaml"), file("destinationrule-after.yaml")}
	for i, s := range doc.Scenarios {
		if s.Lab.Istio.DR != wantDR[i] || s.Lab.Istio.EF != file("envoyfilter-hcm-fragment.yaml") {
			t.Fatalf("scenario %d: the inline Istio inputs differ from the files beside the plan", i)
		}
	}
	p, err := LoadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if msd := p.Scenarios[0].Lab.Proxy.MaxStreamDuration; msd.String() != "3s" {
		t.Fatalf("max_stream_duration from the EnvoyFilter = %v", msd)
	}
	if c := p.Scenarios[0].Lab.Cluster; *c.HealthyPanicThreshold != 50 || c.MaxRequestsPerConnection != 100 || !c.OutlierDetection.Pre128MaxEjectionPercent {
		t.Fatalf("cluster %+v: the plan's panic threshold must win over Istio's 0", c)
	}
	t.Setenv("RLBENCH_HOME", t.TempDir())
	runDir, err := Run(context.Background(), p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(context.Background(), runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != evidence.Pass {
		for _, s := range rep.Scenarios {
			t.Logf("%s: %s %q", s.Name, s.Status, s.Reasons)
		}
		t.Fatalf("report status %s", rep.Status)
	}
	want := []map[string]string{
		{"ejections_active": "3", "ejections_overflow": "0", "lb_healthy_panic": ">0"},
		{"ejections_active": "2", "ejections_overflow": ">0", "lb_healthy_panic": "0"},
		{"ejections_active": "0", "ejections_overflow": "0", "lb_healthy_panic": "0", "ejections_detected_consecutive_5xx": "0"},
	}
	dirs, _ := filepath.Glob(filepath.Join(runDir, "0*"))
	if len(dirs) != 3 {
		t.Fatalf("scenario dirs %v", dirs)
	}
	for i, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "1", "stats", "proxy-a.after.txt"))
		if err != nil {
			t.Fatal(err)
		}
		stats := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ": "); ok {
				stats[strings.TrimPrefix(strings.TrimPrefix(k, "cluster.backend."), "outlier_detection.")] = v
			}
		}
		for k, v := range want[i] {
			got := stats[k]
			if (v == ">0" && (got == "" || got == "0")) || (v != ">0" && got != v) {
				t.Errorf("%s: %s = %q, want %s", filepath.Base(d), k, got, v)
			}
		}
	}
}

func TestIstioPlanErrors(t *testing.T) {
	for _, tc := range []struct{ name, istio, want string }{
		{"empty", "istio: {}", "needs destination_rule or envoy_filter"},
		{"bad field", "istio:\n        destination_rule: |\n          apiVersion: networking.istio.io/v1\n          kind: DestinationRule\n          spec: {host: x, trafficPolicy: {outlierDetection: {consecutive5xx: 3}}}\n", "consecutive5xx"},
		{"nginx too", "istio: {envoy_filter: 'name: x'}\n      nginx: {rate: 1r/s}", "lab.istio configures the lab proxies, which lab.nginx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := "name: x\nscenarios:\n  - name: s\n    lab:\n      " + tc.istio + "\n    attack: {ids: 1}\n"
			_, err := ParsePlan("p.yaml", []byte(plan))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "p.yaml: line ") {
				t.Fatalf("err = %v, want a line and %q", err, tc.want)
			}
		})
	}
}

// lab.nginx, lab.gateway and lab.haproxy each replace the lab proxies: a
// lab with two of them is refused at its line (the run would have started
// one and silently dropped the other).
func TestOneReplacingSection(t *testing.T) {
	for _, lab := range []string{
		"gateway: {key: route, xrate: {rate: 10, burst: 10}}\n      haproxy: {limit: 3, period: 1s}",
		"nginx: {rate: 1r/s}\n      haproxy: {limit: 3, period: 1s}",
		"nginx: {rate: 1r/s}\n      gateway: {key: route, xrate: {rate: 10, burst: 10}}",
	} {
		plan := "name: x\nscenarios:\n  - name: s\n    lab:\n      " + lab + "\n    attack: {ids: 1}\n"
		_, err := ParsePlan("p.yaml", []byte(plan))
		if err == nil || !strings.Contains(err.Error(), "each replace the lab proxies") || !strings.Contains(err.Error(), "p.yaml: line ") {
			t.Errorf("%s: err = %v", lab, err)
		}
	}
}

// lab.haproxy's period and expire must fit HAProxy's timers (at most
// 2147483647 ms; the default expire is twice the period): refused at the
// plan's line, not by haproxy -c at run time.
func TestHAProxyTimersFit(t *testing.T) {
	for _, h := range []string{"{limit: 5, period: 8760h}", "{limit: 5, period: 1s, expire: 720h}"} {
		plan := "name: x\nscenarios:\n  - name: s\n    lab:\n      haproxy: " + h + "\n    attack: {ids: 1}\n"
		_, err := ParsePlan("p.yaml", []byte(plan))
		if err == nil || !strings.Contains(err.Error(), "2147483647 ms") || !strings.Contains(err.Error(), "p.yaml: line 5") {
			t.Errorf("%s: err = %v", h, err)
		}
	}
}
