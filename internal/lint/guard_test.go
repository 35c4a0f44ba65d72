package lint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/internal/testfix"
)

// TestAliasBombRefused: the 324-byte input with nested aliases grew
// to 24 GB in the line-index walker; it is now an E_DECODE finding naming a
// line of the bomb, reached in bounded memory.
func TestAliasBombRefused(t *testing.T) {
	doc := "node: {id: x}\nadmin:\n" + testfix.AliasBomb("  ", 8, 10)
	if len(doc) > 1024 {
		t.Fatalf("bomb is %d bytes", len(doc))
	}
	var rep *Report
	if alloc := testfix.Allocated(func() { rep = lintString(t, "bomb.yaml", doc, Options{}) }); alloc > 50<<20 {
		t.Errorf("linting a %d-byte alias bomb allocated %d bytes, want < 50 MiB", len(doc), alloc)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("findings:%s", dump(rep))
	}
	f := rep.Findings[0]
	if f.Code != CodeDecode || f.Level != LevelError || !strings.Contains(f.Message, "excessive aliasing") || f.Line < 3 || f.Line > 11 || f.File != "bomb.yaml" {
		t.Errorf("finding %s: want E_DECODE excessive aliasing at a line of the bomb", f)
	}
}

// TestRecursiveAliasRefused: yaml.v3 keeps &a [*a] as a cycle, which the
// line-index walker followed forever.
func TestRecursiveAliasRefused(t *testing.T) {
	rep := lintString(t, "cycle.yaml", "node: {id: x}\nadmin: &a\n  x: [*a]\n", Options{})
	if len(rep.Findings) != 1 || rep.Findings[0].Code != CodeDecode || !strings.Contains(rep.Findings[0].Message, "recursive alias") || rep.Findings[0].Line != 3 {
		t.Fatalf("findings:%s", dump(rep))
	}
}

// TestEmptyAndNotEnvoy: inputs with nothing to check were "0 errors".
func TestEmptyAndNotEnvoy(t *testing.T) {
	for _, c := range []struct{ name, doc, code string }{
		{"empty", "", CodeEmpty},
		{"comments", "# nothing here\n\n", CodeEmpty},
		{"document marker", "---\n", CodeEmpty},
		{"null", "null\n", CodeEmpty},
		{"empty mapping", "{}\n", CodeEmpty},
		{"node only", "node: {id: edge, cluster: edge}\n", CodeNoListeners},
		{"admin only", "admin:\n  address: {socket_address: {address: 127.0.0.1, port_value: 9901}}\n", CodeNoListeners},
		{"rls config given by mistake", "domain: inventory\ndescriptors:\n  - key: tenant\n", CodeDecode},
		{"a list", "- a\n- b\n", CodeDecode},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := lintString(t, "x.yaml", c.doc, Options{})
			if rep.Errors() == 0 {
				t.Fatalf("no error finding:%s", dump(rep))
			}
			found := false
			for _, f := range rep.Findings {
				found = found || f.Code == c.code && f.File == "x.yaml"
			}
			if !found {
				t.Errorf("want %s:%s", c.code, dump(rep))
			}
		})
	}
	// A bootstrap whose listeners come from LDS is not "no listener".
	rep := lintString(t, "lds.yaml", `node: {id: a, cluster: a}
dynamic_resources:
  lds_config: {ads: {}, resource_api_version: V3}
  ads_config:
    api_type: GRPC
    transport_api_version: V3
    grpc_services: [{envoy_grpc: {cluster_name: xds}}]
static_resources:
  clusters:
    - name: xds
      type: STATIC
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          explicit_http_config: {http2_protocol_options: {}}
      load_assignment:
        cluster_name: xds
        endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 18000}}}}]}]
`, Options{})
	for _, f := range rep.Findings {
		if f.Code == CodeNoListeners || f.Code == CodeEmpty {
			t.Errorf("LDS bootstrap: %s", f)
		}
	}
}

// TestInputLimits: lint inputs are bounded in size and must be regular files.
func TestInputLimits(t *testing.T) {
	big := strings.NewReader(strings.Repeat("# padding\n", 2<<20))
	_, err := Lint(context.Background(), []Source{{Name: "big.yaml", R: big}}, Options{})
	var se *boundedio.SizeError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "big.yaml") {
		t.Errorf("20 MB input: err = %v, want a SizeError naming it", err)
	}
	fifo := filepath.Join(t.TempDir(), "envoy.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	_, err = LintFiles(context.Background(), []string{fifo}, Options{})
	var nr *boundedio.NotRegularError
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), fifo) {
		t.Errorf("FIFO: err = %v, want NotRegularError naming it", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := LintFiles(context.Background(), []string{"/dev/zero"}, Options{}); !errors.As(err, &nr) {
			t.Errorf("/dev/zero: err = %v", err)
		}
	}
}

// BenchmarkLintAliasBomb: linting the sub-1-KiB bomb of TestAliasBombRefused
// (10^8 nodes expanded) costs about as much as a small bootstrap.
func BenchmarkLintAliasBomb(b *testing.B) {
	doc := "node: {id: x}\nadmin:\n" + testfix.AliasBomb("  ", 8, 10)
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Lint(context.Background(), []Source{{Name: "bomb.yaml", R: strings.NewReader(doc)}}, Options{})
		if err != nil || rep.Errors() != 1 {
			b.Fatal(err, rep)
		}
	}
}

// TestNodeBudget: a literal document (no alias) past the node budget is
// refused too, before the line index and the JSON conversion (which cost
// about 1 KB per node) see it.
func TestNodeBudget(t *testing.T) {
	doc := "node: {id: x}\nadmin:\n  k: [" + strings.Repeat("1,", 260_000) + "1]\n"
	var rep *Report
	if n := testfix.Allocated(func() { rep = lintString(t, "wide.yaml", doc, Options{}) }); n > 100<<20 {
		t.Errorf("refusing a 260,000-node document allocated %d MB", n>>20)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Code != CodeDecode || rep.Findings[0].Line != 3 || !strings.Contains(rep.Findings[0].Message, "the document has more than 250000 nodes") {
		t.Fatalf("findings:%s", dump(rep))
	}
}
