package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/internal/testfix"
)

// TestParseLabFile: a lab file is a plan scenario's lab: section, read with
// the same keys, defaults and checks; its errors name the file and line.
func TestParseLabFile(t *testing.T) {
	lp, err := ParseLabFile("lab.yaml", []byte(`local: {max_tokens: 5, tokens_per_fill: 5, fill_interval: 1h}
global:
  domain: inventory
  descriptors: [{generic_key: {descriptor_key: tenant, descriptor_value: lab}}]
rls:
  window_start: first-hit
  config: |
    domain: inventory
    descriptors:
      - {key: tenant, value: lab, rate_limit: {unit: hour, requests_per_unit: 5}}
backend: {endpoints: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := lp.LabOptions()
	if o.Proxies.Count != lab.DefaultProxies || lp.RLS.Kind != RLSLab || o.RLS.Lab == nil || o.RLS.Lab.WindowStart != "first-hit" || o.Backend.Endpoints != 2 {
		t.Fatalf("options %+v rls %+v", o, o.RLS.Lab)
	}
	if l := o.Proxies.Config.Local; l == nil || l.MaxTokens != 5 || l.FillInterval != proxy.Duration(time.Hour) || o.Proxies.Config.Global.Domain != "inventory" {
		t.Fatalf("filters %+v %+v", l, o.Proxies.Config.Global)
	}
	for name, c := range map[string]struct{ text, want string }{
		"unknown key":    {"proxies: 1\nlocl: {max_tokens: 1}\n", `lab.yaml: line 2: unknown field "locl"`},
		"bad duration":   {"proxies: 1\nlocal: {max_tokens: 1, fill_interval: soon}\n", `lab.yaml: line 2: local.fill_interval: time: invalid duration "soon"`},
		"type":           {"proxies: [1]\n", "lab.yaml: line 1: proxies: want"},
		"short fill":     {"local:\n  max_tokens: 1\n  fill_interval: 10ms\n", "lab.yaml: line 3: lab: local rate limit: fill_interval: 10ms is below Envoy's minimum 50ms"},
		"global, no rls": {"proxies: 1\nglobal: {domain: d, descriptors: [{generic_key: {descriptor_value: v}}]}\n", "lab.yaml: line 2: lab.global needs lab.rls"},
		"rls kind":       {"rls:\n  kind: redis\n  config: 'domain: d'\n", "lab.yaml: line 2: lab.rls.kind must be lab or real"},
		"negative":       {"proxies: -1\n", "lab.yaml: line 1: lab.proxies must be >= 1"},
		"empty":          {"", "lab.yaml: empty: a lab file holds"},
		"comments only":  {"# nothing\n", "lab.yaml: empty: a lab file holds"},
	} {
		if _, err := ParseLabFile("lab.yaml", []byte(c.text)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

var labLineRE = regexp.MustCompile(`^lab\.yaml: line (\d+): `)

// FuzzParseLabFile: whatever ParseLabFile accepts the lab accepts
// (lab.Options.Validate, with a real RLS's address stood in), and its JSON
// rendering, which is YAML too, parses back to the same section. Errors
// name the file, and a line of it when they name one.
func FuzzParseLabFile(f *testing.F) {
	b, err := os.ReadFile(filepath.Join(testfix.RepoRoot(f), "examples", "lab", "per-user.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("local: {max_tokens: 5, fill_interval: 1h}\nglobal: {domain: d, descriptors: [{generic_key: {descriptor_value: v}}]}\nrls: {config: 'domain: d'}\n"))
	f.Add([]byte("nginx: {rate: 10r/s, burst: 5, nodelay: true}\n"))
	f.Add([]byte("proxies: [1]\nlocal: {max_tokens: 1e30, fill_interval: soon}\n"))
	f.Add([]byte("x: &a [1, *a]\nlocal: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lp, err := ParseLabFile("lab.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "lab.yaml:") {
				t.Fatalf("error %q does not name the file", err)
			}
			if m := labLineRE.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[1])
				lines := strings.Count(strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n"), "\n") + 1
				if n < 1 || n > lines {
					t.Fatalf("error %q names line %d of a %d-line file", err, n, lines)
				}
			}
			return
		}
		o := lp.LabOptions()
		if lp.RLS != nil && lp.RLS.Kind == RLSReal {
			o.RLS.Address = realRLSStandIn
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("accepted a lab the lab refuses: %v", err)
		}
		b, err := json.Marshal(lp)
		if err != nil {
			t.Fatalf("lab does not marshal: %v", err)
		}
		again, err := ParseLabFile("again.yaml", b)
		if err != nil {
			t.Fatalf("rendering does not parse: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(again, lp) {
			t.Fatalf("re-parse differs:\n%+v\n%+v", lp, again)
		}
	})
}

// TestLabFileRouterAndCluster: the proxy: and cluster: sections decode into
// the lab proxy's own types (proxy.RetryPolicy, proxy.OutlierDetection,
// proxy.CircuitBreakers) with plan durations, and reach the proxy template
// as copies.
func TestLabFileRouterAndCluster(t *testing.T) {
	lp, err := ParseLabFile("lab.yaml", []byte(`proxy:
  timeout: 2s
  retry_policy: {retry_on: 5xx, num_retries: 2, per_try_timeout: 300ms, retriable_status_codes: [503], retry_back_off: {base_interval: 10ms, max_interval: 40ms}}
  include_request_attempt_count: true
cluster:
  circuit_breakers: {max_retries: 1}
  outlier_detection: {consecutive_5xx: 3, interval: 1s, base_ejection_time: 2s, max_ejection_time: 1m}
  connect_timeout: 250ms
`))
	if err != nil {
		t.Fatal(err)
	}
	c := lp.LabOptions().Proxies.Config
	r := c.Retry
	if r == nil || r.RetryOn != "5xx" || *r.NumRetries != 2 || r.PerTryTimeout != proxy.Duration(300*time.Millisecond) ||
		!reflect.DeepEqual(r.RetriableStatusCodes, []int{503}) || r.RetryBackOff == nil ||
		r.RetryBackOff.BaseInterval != proxy.Duration(10*time.Millisecond) || r.RetryBackOff.MaxInterval != proxy.Duration(40*time.Millisecond) {
		t.Fatalf("retry policy %+v", r)
	}
	if c.UpstreamTimeout != 2*time.Second || !c.IncludeAttemptCount || c.ConnectTimeout != 250*time.Millisecond || *c.CircuitBreakers.MaxRetries != 1 {
		t.Fatalf("router/cluster %+v", c)
	}
	od := c.OutlierDetection
	if od == nil || *od.Consecutive5xx != 3 || od.Interval != proxy.Duration(time.Second) || od.BaseEjectionTime != proxy.Duration(2*time.Second) || od.MaxEjectionTime != proxy.Duration(time.Minute) {
		t.Fatalf("outlier detection %+v", od)
	}
	if r == lp.Proxy.RetryPolicy || r.RetryBackOff == lp.Proxy.RetryPolicy.RetryBackOff || od == lp.Cluster.OutlierDetection {
		t.Error("the proxy template shares the plan's structs")
	}
	if _, err := ParseLabFile("lab.yaml", []byte("proxy:\n  retry_policy: {retry_on: 5xx, per_try_timeout: 300}\n")); err == nil || !strings.Contains(err.Error(), "per_try_timeout") {
		t.Errorf("a number as a duration: %v", err)
	}
}
