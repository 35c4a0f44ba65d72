package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestOutputsNeverEnterLinkedDir (issue 27, "never write through a link",
// directories): each collect command given an --out directory where the
// subdirectory it writes into (stats/, rls/, nginx/, nginx/<proxy>/,
// receipts/) is a symbolic link to a directory outside exits 1 naming that
// subdirectory, and the directory outside stays empty. Before, the files
// were written in the link's target. --out itself may be a link (the user
// named it): it is followed.
func TestOutputsNeverEnterLinkedDir(t *testing.T) {
	envoyAdmin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("cluster.backend.upstream_rq_total: 3\n"))
	}))
	defer envoyAdmin.Close()
	rlsMetrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("# TYPE ratelimit_service_rate_limit_total_hits counter\nratelimit_service_rate_limit_total_hits{domain=\"rl\",key1=\"foo\"} 100\n"))
	}))
	defer rlsMetrics.Close()
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("Active connections: 1 \nserver accepts handled requests\n 24 24 22 \nReading: 0 Writing: 1 Waiting: 0 \n"))
	}))
	defer stub.Close()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	edge := evidence.NginxPath("edge", "")
	cases := []struct {
		name string
		dirs []string // planted one at a time, relative to --out
		args func(out string) []string
	}{
		{"collect envoy", []string{evidence.StatsDir}, func(d string) []string {
			return []string{"collect", "envoy", "--admin", envoyAdmin.URL, "--proxy", "proxy-a", "--label", "before", "--out", d}
		}},
		{"collect prometheus", []string{evidence.RLSDir}, func(d string) []string {
			return []string{"collect", "prometheus", "--url", rlsMetrics.URL + "/metrics", "--label", "after", "--out", d}
		}},
		{"collect nginx-status", []string{"nginx", edge}, func(d string) []string {
			return []string{"collect", "nginx-status", "--url", stub.URL, "--proxy", "edge", "--label", "before", "--out", d}
		}},
		{"collect rls-log", []string{evidence.RLSDir}, func(d string) []string {
			return []string{"collect", "rls-log", "--out", d, "-"}
		}},
		{"collect nginx-access-log", []string{"nginx", edge}, func(d string) []string {
			return []string{"collect", "nginx-access-log", "--out", d, "--proxy", "edge", "-"}
		}},
		{"collect receipts", []string{evidence.ReceiptsDir}, func(d string) []string {
			return []string{"collect", "receipts", "--url", backend.URL, "--out", d}
		}},
	}
	for _, c := range cases {
		for _, rel := range c.dirs {
			t.Run(c.name+"/"+rel, func(t *testing.T) {
				out := t.TempDir()
				planted := evidence.Dir(out).Path(rel)
				if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
					t.Fatal(err)
				}
				outside := t.TempDir()
				if err := os.Symlink(outside, planted); err != nil {
					t.Fatal(err)
				}
				code, _, stderr := runCLI(t, c.args(out)...)
				if code != ExitError || !strings.Contains(stderr, planted+": refusing to write below it: it is a symbolic link to "+outside) ||
					!strings.Contains(stderr, "remove "+planted) {
					t.Errorf("exit %d, stderr %q; want %d naming %s", code, stderr, ExitError, planted)
				}
				if es, err := os.ReadDir(outside); err != nil || len(es) > 0 {
					t.Errorf("%s holds %v (%v): written through the link", outside, es, err)
				}
			})
		}
	}
	// --out a link the user made: followed.
	target := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink(target, out); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, cases[0].args(out)...); code != ExitOK {
		t.Fatalf("collect envoy --out a link: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(evidence.Dir(target).StatsSnapshot("proxy-a", "before", ".json")); err != nil {
		t.Errorf("not written through the user's --out link: %v", err)
	}
}
