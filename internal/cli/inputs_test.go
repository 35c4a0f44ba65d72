package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNonRegularInputIsUsageError (tester report 1, item 14): a FIFO or a
// device given where a file is read is a usage error (exit 2, README "Exit
// codes"), not a runtime error, and nothing blocks on the FIFO.
func TestNonRegularInputIsUsageError(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "plan.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, args := range [][]string{
		{"run", "--root", filepath.Join(dir, "ev"), "-q", fifo},
		{"lint", "/dev/null"},
		{"lint", fifo},
		{"simulate", fifo},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != ExitUsage || !strings.Contains(stderr, "not a regular file") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming a non-regular file", args, code, stderr, ExitUsage)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ev")); !os.IsNotExist(err) {
		t.Errorf("run with a FIFO plan created its root: %v", err)
	}
}

// TestBackendReceiptsPathChecked (tester report 1, item 12): `rlbench
// backend --receipts PATH` refuses (exit 2) a PATH whose directory does
// not exist, creating nothing, and a PATH that is a FIFO or a device
// (receipts written into a pipe are no evidence); an invalid --listen
// port is exit 2 as well.
func TestBackendReceiptsPathChecked(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexistent")
	fifo := filepath.Join(dir, "r.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--receipts", filepath.Join(missing, "x.jsonl")}, "directory " + missing + " does not exist"},
		{[]string{"--receipts", fifo}, fifo + ": not a regular file but a named pipe (FIFO)"},
		{[]string{"--receipts", "/dev/null"}, "/dev/null: not a regular file but a character device"},
		{[]string{"--receipts", dir}, dir + ": not a regular file but a directory"},
		{[]string{"--receipts", filepath.Join(fifo, "x.jsonl")}, "is not a directory but a named pipe"},
		{[]string{"--listen", "0.0.0.0:99999", "--receipts", filepath.Join(dir, "ok.jsonl")}, `port "99999" is not a port number`},
	} {
		code, _, stderr := runCLI(t, append([]string{"backend", "--listen", "127.0.0.1:0"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("%s was created: %v", missing, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ok.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the receipts of a refused backend were created: %v", err)
	}
}

// TestReportFilesOnly (tester report 1, item 15): `report --html FILE`
// and `--prometheus FILE` write the files and say so on stderr, without
// the table on stdout (unless --format asks for it), and keep the
// verdict's exit code; an error names FILE, not the temporary file.
func TestReportFilesOnly(t *testing.T) {
	ev := filepath.Join("..", "..", "analyze", "testdata", "v1-release", "demo")
	dir := t.TempDir()
	html, prom := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.prom")
	code, stdout, stderr := runCLI(t, "report", ev, "--html", html, "--prometheus", prom)
	if code != ExitOK || stdout != "" || !strings.Contains(stderr, "report: wrote "+html+"\n") ||
		!strings.Contains(stderr, "report: wrote "+prom+"\n") || !strings.Contains(stderr, "report: verdict PASS") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, p := range []string{html, prom} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	code, stdout, _ = runCLI(t, "report", ev, "--prometheus", prom, "--format", "markdown")
	if code != ExitOK || !strings.Contains(stdout, "PASS") {
		t.Errorf("--format markdown: exit %d, stdout %q", code, stdout)
	}
	missing := filepath.Join(dir, "missing", "x.html")
	code, _, stderr = runCLI(t, "report", ev, "--html", missing)
	if code != ExitUsage || !strings.Contains(stderr, "rlbench: "+missing+": no such file or directory") || strings.Contains(stderr, ".tmp") {
		t.Errorf("missing dir: exit %d, stderr %q", code, stderr)
	}
}
