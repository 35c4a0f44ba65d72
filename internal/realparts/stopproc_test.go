package realparts

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStopProcWaitsForSIGKILL (tester report 1, item 15): after Ctrl-C
// (ctx over) the three signals go at once; a master that ignores SIGQUIT
// and SIGTERM is gone after SIGKILL, and stopProc waits for it to be
// reaped instead of reporting "still running after SIGKILL".
func TestStopProcWaitsForSIGKILL(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A stand-in master: ignores QUIT and TERM, then says so through the FIFO.
	p, err := startProc("/bin/sh", []string{"-c", `trap "" QUIT TERM; echo ready > ready; while :; do sleep 1; done`}, nil, dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Skipf("sh: %v", err)
	}
	b, err := os.ReadFile(ready) // returns once the shell has written and closed it
	if err != nil || string(b) != "ready\n" {
		t.Fatalf("stand-in master: %q, %v", b, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // interrupted
	n := &Nginx{grace: time.Minute}
	if err := n.stopProc(ctx, p); err != nil {
		t.Fatalf("stopProc: %v", err)
	}
	if !p.exited() {
		t.Fatal("process not reaped")
	}
}
