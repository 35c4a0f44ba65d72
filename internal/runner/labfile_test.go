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
		"short fill":     {"local:\n  max_tokens: 1\n  fill_interval: 10ms\n", "lab.yaml: lab: local rate limit: fill_interval 10ms is below Envoy's minimum 50ms"},
		"global, no rls": {"proxies: 1\nglobal: {domain: d, descriptors: [{generic_key: {descriptor_value: v}}]}\n", "lab.yaml: line 2: lab.global needs lab.rls"},
		"rls kind":       {"rls:\n  kind: redis\n  config: 'domain: d'\n", "lab.yaml: line 2: lab.rls.kind must be lab or real"},
		"negative":       {"proxies: -1\n", "lab.yaml: line 1: lab.proxies must be >= 1"},
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
