package realparts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/evidence/safefile"
)

// DefaultStopGrace is how long Stop waits after SIGTERM before it sends SIGKILL, when the options leave it zero.
// envoyproxy/ratelimit's GracefulStop waits for in-flight RPCs, and calls stuck on a dead Redis never finish
// (src/server/server_impl.go calls grpc.Server.GracefulStop), so the wait has to be bounded.
const DefaultStopGrace = 3 * time.Second

// DefaultStartTimeout bounds how long a start waits for readiness when the options leave it zero.
const DefaultStartTimeout = 15 * time.Second

// proc is one started child process whose output goes to a log file.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait returned
	err  error         // Wait's result, valid after done
	log  *os.File
}

// startProc starts bin with args and exactly env (nothing inherited), stdout and stderr appended to logPath.
// The child gets SIGKILL if the starting process dies (Pdeathsig), so a crashed test leaves nothing behind.
func startProc(bin string, args, env []string, dir, logPath string) (*proc, error) {
	return startProcDeathSig(bin, args, env, dir, logPath, syscall.SIGKILL)
}

// startProcDeathSig is startProc with the signal the child gets when the starting process dies.
func startProcDeathSig(bin string, args, env []string, dir, logPath string, deathSig syscall.Signal) (*proc, error) {
	f, err := safefile.Append(logPath, 0o644)
	if err != nil {
		return nil, fmt.Errorf("realparts: log file: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{}, env...) // non-nil: an empty environment, not the parent's
	cmd.Dir = dir
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = procAttr(deathSig)
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("realparts: start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: f}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended (and been reaped).
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILL, and waits until the process is reaped or ctx ends.
// It returns nil when the process is gone, whatever its exit status.
func (p *proc) stop(ctx context.Context, grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("realparts: SIGTERM pid %d: %w", p.pid(), err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("realparts: SIGKILL pid %d: %w", p.pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		// SIGKILL cannot be ignored; give the kernel a short, bounded moment even if ctx is over.
		select {
		case <-p.done:
			return nil
		case <-time.After(2 * time.Second):
			return fmt.Errorf("realparts: pid %d still running after SIGKILL: %w", p.pid(), ctx.Err())
		}
	}
}

// logTail returns at most the last n bytes of the file at path, for error messages.
func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(log %s unreadable: %v)", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(log %s unreadable: %v)", path, err)
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return fmt.Sprintf("(log %s unreadable: %v)", path, err)
	}
	return string(b)
}

// procState guards the current child of a restartable part.
type procState struct {
	mu sync.Mutex
	p  *proc
}

func (s *procState) get() *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

func (s *procState) set(p *proc) {
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
}
