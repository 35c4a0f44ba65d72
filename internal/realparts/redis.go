package realparts

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Options configures StartRedis.
type Options struct {
	// Bin is the redis-server binary; empty means FindRedis().
	Bin string
	// Dir is the working directory: Redis's --dir and the log file redis.log live there. Empty means a new
	// temporary directory, removed by Close.
	Dir string
	// StartTimeout bounds one start (spawn until PING answers); zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// StopGrace is the wait between SIGTERM and SIGKILL in Stop; zero means DefaultStopGrace.
	StopGrace time.Duration
}

// Redis is one redis-server started by StartRedis: bound to 127.0.0.1 only, without persistence
// (--save "" --appendonly no), so a restart loses every counter (redis.io "Redis persistence": with
// neither RDB nor AOF nothing survives a restart). Methods are safe for concurrent use.
type Redis struct {
	bin     string
	dir     string
	ownDir  bool
	logPath string
	port    int
	start   time.Duration
	grace   time.Duration
	st      procState
}

// maxPortAttempts bounds how many fresh ports a start tries when the chosen one turns out to be taken.
const maxPortAttempts = 5

// errPortTaken marks a start that failed because another process holds a chosen port; the caller may retry.
var errPortTaken = errors.New("port taken by another process")

// StartRedis starts a private redis-server on a free 127.0.0.1 port and returns once it answers PING and the
// port's only listener is the started PID (VerifyListener). A port lost to another process is retried with a new
// one, up to 5 times. Errors include the tail of the Redis log. The caller must call Stop or Close.
func StartRedis(ctx context.Context, opts Options) (*Redis, error) {
	bin := opts.Bin
	if bin == "" {
		var err error
		if bin, err = FindRedis(); err != nil {
			return nil, err
		}
	}
	// Redis runs in its directory and is also told --dir: a relative path
	// would be resolved twice, so make it absolute.
	if opts.Dir != "" {
		abs, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, err
		}
		opts.Dir = abs
	}
	r := &Redis{bin: bin, dir: opts.Dir, start: opts.StartTimeout, grace: opts.StopGrace}
	if r.start <= 0 {
		r.start = DefaultStartTimeout
	}
	if r.grace <= 0 {
		r.grace = DefaultStopGrace
	}
	if r.dir == "" {
		d, err := os.MkdirTemp("", "rlbench-redis-")
		if err != nil {
			return nil, fmt.Errorf("realparts: redis dir: %w", err)
		}
		r.dir, r.ownDir = d, true
	} else if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, fmt.Errorf("realparts: redis dir: %w", err)
	}
	r.logPath = filepath.Join(r.dir, "redis.log")
	var lastErr error
	for attempt := 0; attempt < maxPortAttempts; attempt++ {
		ports, err := FreePorts(1)
		if err != nil {
			lastErr = err
			break
		}
		r.port = ports[0]
		err = r.startOnce(ctx)
		if err == nil {
			return r, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	if r.ownDir {
		_ = os.RemoveAll(r.dir)
	}
	return nil, lastErr
}

// startOnce spawns redis-server on r.port and waits for readiness; on failure the process is stopped.
func (r *Redis) startOnce(ctx context.Context) error {
	var logOff int64
	if st, err := os.Stat(r.logPath); err == nil {
		logOff = st.Size()
	}
	args := []string{
		"--port", strconv.Itoa(r.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--save", "",
		"--appendonly", "no",
		"--dir", r.dir,
		"--daemonize", "no",
		"--logfile", "", // stdout, which goes to redis.log
	}
	p, err := startProc(r.bin, args, nil, r.dir, r.logPath)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.start)
	defer cancel()
	if err := r.waitReady(ctx, p); err != nil {
		_ = p.stop(context.Background(), r.grace)
		tail := logTail(r.logPath, 4096)
		if full := logTailFrom(r.logPath, logOff); strings.Contains(full, "Address already in use") {
			err = fmt.Errorf("%w (%w)", err, errPortTaken)
		}
		return fmt.Errorf("realparts: redis-server on 127.0.0.1:%d: %w\n--- %s (tail) ---\n%s", r.port, err, r.logPath, tail)
	}
	r.st.set(p)
	return nil
}

func (r *Redis) waitReady(ctx context.Context, p *proc) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if p.exited() {
			return fmt.Errorf("pid %d exited during start: %v", p.pid(), p.err)
		}
		o, err := PortOwnership(p.pid(), r.port)
		if err == nil && o.Foreign > 0 {
			return fmt.Errorf("%d other listener(s) on the port: %w", o.Foreign, errPortTaken)
		}
		if err == nil && o.Owned > 0 && pingRedis(ctx, r.Addr()) == nil {
			return VerifyListener(p.pid(), r.port)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// pingRedis sends an inline PING and expects +PONG.
func pingRedis(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// Addr is "127.0.0.1:<port>", the value for the RLS's REDIS_URL. It stays the same across Restart.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// Port is the TCP port Redis listens on.
func (r *Redis) Port() int { return r.port }

// PID is the process ID of the running redis-server, or 0 when it is stopped (or has exited).
func (r *Redis) PID() int {
	p := r.st.get()
	if p == nil || p.exited() {
		return 0
	}
	return p.pid()
}

// Dir is the working directory (Redis --dir) holding redis.log.
func (r *Redis) Dir() string { return r.dir }

// LogPath is the file Redis logs to (appended across restarts).
func (r *Redis) LogPath() string { return r.logPath }

// Stop ends the redis-server it started: SIGTERM, SIGKILL after StopGrace, then waits until it is reaped (bounded
// by ctx plus 2 s). Stopping an already stopped Redis is a no-op. Counters are lost (no persistence).
func (r *Redis) Stop(ctx context.Context) error {
	p := r.st.get()
	if p == nil {
		return nil
	}
	if err := p.stop(ctx, r.grace); err != nil {
		return err
	}
	r.st.set(nil)
	return nil
}

// Restart stops Redis if it runs and starts it again on the same port, with empty data. It fails (with the log
// tail) if the port was taken meanwhile; it never moves to another port.
func (r *Redis) Restart(ctx context.Context) error {
	if err := r.Stop(ctx); err != nil {
		return err
	}
	return r.startOnce(ctx)
}

// Close stops Redis and removes its directory if StartRedis created it.
func (r *Redis) Close(ctx context.Context) error {
	err := r.Stop(ctx)
	if r.ownDir && err == nil {
		err = os.RemoveAll(r.dir)
	}
	return err
}

// logTailFrom returns the file's content from offset on (at most 64 KiB), or "" when unreadable.
func logTailFrom(path string, off int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, _ := f.ReadAt(buf, off)
	return string(buf[:n])
}
