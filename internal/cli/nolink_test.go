package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// Issue 27, "never write through a link": every command that writes a
// file into a directory it did not create (an evidence directory, an
// --out directory, a file the user named) refuses when the file is already
// a symbolic link or a FIFO: the error names the path and says to remove
// it, and the file the link points to is unchanged.

const linkOutside = "a file outside the evidence directory\n"

// plantLink puts, at p, a symbolic link to a new file outside (returned,
// for assertUnchangedOutside) or a FIFO ("" returned).
func plantLink(t *testing.T, kind, p string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if kind == "fifo" {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return ""
	}
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte(linkOutside), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	return outside
}

func assertUnchangedOutside(t *testing.T, outside string) {
	t.Helper()
	if outside == "" {
		return
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != linkOutside {
		t.Errorf("%s = %q, %v: written through the link", outside, b, err)
	}
}

// copyDemo copies analyze/testdata/v1-release/demo (a run directory of one
// PASS scenario) into a new directory and returns it.
func copyDemo(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "analyze", "testdata", "v1-release", "demo")
	dst := filepath.Join(t.TempDir(), "demo")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestAnalyzeStatusNeverFollowsLink is the reproduction: a
// status.txt planted in an evidence directory (run and scenario directory
// both, and a --status-file path) as a link to a file outside, or as a
// FIFO. analyze wrote through the link (and blocked on the FIFO); now it
// renders the report, does not write, and exits 1 (an I/O error) naming
// the path, instead of the verdict's PASS.
func TestAnalyzeStatusNeverFollowsLink(t *testing.T) {
	for _, where := range []string{"run", "scenario", "status-file"} {
		for _, kind := range []string{"symlink", "fifo"} {
			t.Run(where+"/"+kind, func(t *testing.T) {
				run := copyDemo(t)
				dir := run
				if where == "scenario" {
					dir = filepath.Join(run, "01-two-local-buckets", "1")
				}
				status := evidence.Dir(dir).Status()
				args := []string{"analyze", dir}
				if where == "status-file" {
					status = filepath.Join(t.TempDir(), "status.txt")
					args = append(args, "--status-file", status)
				}
				outside := plantLink(t, kind, status)
				code, stdout, stderr := runCLI(t, args...)
				if code != ExitError || !strings.Contains(stderr, "status.txt not written: "+status+": refusing to write") ||
					!strings.Contains(stderr, "remove "+status) {
					t.Errorf("exit %d, stderr %q; want %d naming %s", code, stderr, ExitError, status)
				}
				if !strings.Contains(stdout, "PASS") {
					t.Errorf("the report was not rendered: %q", stdout)
				}
				assertUnchangedOutside(t, outside)
			})
		}
	}
	// A status.txt that is a regular file is still replaced, exit 0.
	run := copyDemo(t)
	if code, _, stderr := runCLI(t, "analyze", run); code != ExitOK {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "analyze", run); code != ExitOK {
		t.Fatalf("second analyze: exit %d, %s", code, stderr)
	}
	if b, err := os.ReadFile(evidence.Dir(run).Status()); err != nil || !strings.Contains(string(b), "PASS") {
		t.Errorf("status.txt %q, %v", b, err)
	}
}

// TestAttackRequestsNeverFollowLink is the second reproduction:
// `attack --out DIR --overwrite` with DIR/requests.jsonl a link to a file
// outside (or a FIFO) exits 1 naming it, before anything is sent.
func TestAttackRequestsNeverFollowLink(t *testing.T) {
	for _, kind := range []string{"symlink", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			hits := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
			defer srv.Close()
			out := t.TempDir()
			p := filepath.Join(out, evidence.RequestsFile)
			outside := plantLink(t, kind, p)
			code, _, stderr := runCLI(t, "attack", "--target", "a="+srv.URL, "--ids", "5", "--out", out, "--overwrite", "--quiet")
			if code != ExitError || !strings.Contains(stderr, p+": refusing to write") {
				t.Errorf("exit %d, stderr %q; want %d naming %s", code, stderr, ExitError, p)
			}
			srv.Close() // waits for handlers: hits is settled
			if hits != 0 {
				t.Errorf("%d requests sent", hits)
			}
			assertUnchangedOutside(t, outside)
		})
	}
}

// TestOutputsNeverFollowLink: the other writers of the CLI, each with its
// file planted as a link (to a file outside) and as a FIFO: report's files,
// collect's evidence and lab's receipts exit 1 naming the file; output file flags that are
// checked before anything runs (backend --receipts, collect statsd --out)
// refuse a link as a usage error (exit 2).
func TestOutputsNeverFollowLink(t *testing.T) {
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
	ev := filepath.Join("..", "..", "analyze", "testdata", "v1-release", "demo")
	cases := []struct {
		name string
		file func(dir string) string // the planted path, in a new directory dir
		args func(dir string) []string
		code int
	}{
		{"report --html", func(d string) string { return filepath.Join(d, "r.html") },
			func(d string) []string { return []string{"report", ev, "--html", filepath.Join(d, "r.html")} }, ExitError},
		{"report --prometheus", func(d string) string { return filepath.Join(d, "r.prom") },
			func(d string) []string { return []string{"report", ev, "--prometheus", filepath.Join(d, "r.prom")} }, ExitError},
		{"collect envoy", func(d string) string { return evidence.Dir(d).StatsSnapshot("proxy-a", "before", ".json") },
			func(d string) []string {
				return []string{"collect", "envoy", "--admin", envoyAdmin.URL, "--proxy", "proxy-a", "--label", "before", "--out", d}
			}, ExitError},
		{"collect prometheus", func(d string) string { return evidence.Dir(d).RLSMetrics("after", ".json") },
			func(d string) []string {
				return []string{"collect", "prometheus", "--url", rlsMetrics.URL + "/metrics", "--label", "after", "--out", d}
			}, ExitError},
		{"collect nginx-status", func(d string) string {
			return evidence.Dir(d).Path(evidence.NginxPath("edge", evidence.NginxStubStatusJSON("before")))
		}, func(d string) []string {
			return []string{"collect", "nginx-status", "--url", stub.URL, "--proxy", "edge", "--label", "before", "--out", d}
		}, ExitError},
		{"collect rls-log", func(d string) string { return evidence.Dir(d).RLSLog() },
			func(d string) []string { return []string{"collect", "rls-log", "--out", d, "-"} }, ExitError},
		{"collect nginx-access-log", func(d string) string {
			return evidence.Dir(d).Path(evidence.NginxPath("edge", evidence.NginxAccessLogFile))
		},
			func(d string) []string {
				return []string{"collect", "nginx-access-log", "--out", d, "--proxy", "edge", "-"}
			}, ExitError},
		{"collect statsd --out", func(d string) string { return filepath.Join(d, "s.jsonl") },
			func(d string) []string {
				return []string{"collect", "statsd", "--listen", "127.0.0.1:0", "--duration", "1ms", "--out", filepath.Join(d, "s.jsonl")}
			}, ExitUsage},
		{"lab --receipts", func(d string) string { return filepath.Join(d, "r.jsonl") },
			func(d string) []string { return []string{"lab", "--receipts", filepath.Join(d, "r.jsonl")} }, ExitError},
		{"backend --receipts", func(d string) string { return filepath.Join(d, "r.jsonl") },
			func(d string) []string {
				return []string{"backend", "--listen", "127.0.0.1:0", "--receipts", filepath.Join(d, "r.jsonl")}
			}, ExitUsage},
	}
	for _, c := range cases {
		for _, kind := range []string{"symlink", "fifo"} {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				dir := t.TempDir()
				p := c.file(dir)
				outside := plantLink(t, kind, p)
				code, _, stderr := runCLI(t, c.args(dir)...)
				want := c.code
				if code != want || !strings.Contains(stderr, p+": ") {
					t.Errorf("exit %d, stderr %q; want %d naming %s", code, stderr, want, p)
				}
				if kind == "symlink" && !strings.Contains(stderr, "refusing to write: it is a symbolic link to "+outside) {
					t.Errorf("stderr %q does not say %s is a link to %s", stderr, p, outside)
				}
				assertUnchangedOutside(t, outside)
			})
		}
	}
}
