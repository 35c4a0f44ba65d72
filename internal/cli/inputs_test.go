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
