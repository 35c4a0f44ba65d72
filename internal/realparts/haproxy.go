package realparts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/evidence/safefile"
)

// EnvHAProxyBin overrides where FindHAProxy looks.
const EnvHAProxyBin = "RLBENCH_HAPROXY_BIN"

// HAProxyBinName is the binary's file name.
const HAProxyBinName = "haproxy"

// HAProxyMinVersion is the oldest HAProxy StartHAProxy runs: its config needs "log stdout" (1.9), the deny rule's
// "hdr" (2.2, https://docs.haproxy.org/2.2/configuration.html#4.2-http-request%20deny) and date(0,us) (2.2).
// Debian 12's haproxy (2.6.12) has them.
const HAProxyMinVersion = "2.2.0"

// FindHAProxy returns the path of the haproxy binary: $RLBENCH_HAPROXY_BIN if set (it must be an executable
// file), else haproxy on PATH, else /usr/sbin/haproxy (Debian's haproxy) or /usr/local/sbin/haproxy. Absent: an
// error wrapping ErrNotInstalled that names haproxy, the places searched and the install command.
func FindHAProxy() (string, error) {
	if p := os.Getenv(EnvHAProxyBin); p != "" {
		return checkExec(p, EnvHAProxyBin)
	}
	if p, err := exec.LookPath(HAProxyBinName); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/haproxy", "/usr/local/sbin/haproxy", "/usr/bin/haproxy"} {
		if _, err := checkExec(p, HAProxyBinName); err == nil {
			return p, nil
		}
	}
	return "", notInstalledError(fmt.Sprintf("realparts: haproxy not found on PATH nor in /usr/sbin, /usr/local/sbin, /usr/bin; install it with %s (Debian package haproxy), or set %s",
		InstallHint(), EnvHAProxyBin))
}

var haproxyVersionRE = regexp.MustCompile(`(?:HAProxy|HA-Proxy) version (\d+)\.(\d+)(?:\.(\d+))?`)

// ParseHAProxyVersion parses the first line of `haproxy -v` ("HAProxy version 2.6.12-1+deb12u4 ...", older
// releases "HA-Proxy version ...") into major, minor and patch; output without it is an error quoting it.
func ParseHAProxyVersion(out []byte) (major, minor, patch int, err error) {
	m := haproxyVersionRE.FindSubmatch(out)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("realparts: haproxy -v: no \"HAProxy version X.Y.Z\" in %q", clipOut(out))
	}
	major, _ = strconv.Atoi(string(m[1]))
	minor, _ = strconv.Atoi(string(m[2]))
	if len(m[3]) > 0 {
		patch, _ = strconv.Atoi(string(m[3]))
	}
	return major, minor, patch, nil
}

// HAProxyOptions configures StartHAProxy.
type HAProxyOptions struct {
	// Bin is the haproxy binary; empty means FindHAProxy().
	Bin string
	// Dir holds haproxy.cfg, the log (haproxy.log, HAProxy's standard output) and stderr.log. Empty means a new
	// temporary directory, removed by Close.
	Dir string
	// Config is what HAProxy runs (RenderHAProxyConf).
	Config HAProxyConfig
	// StartTimeout bounds the start (0: DefaultStartTimeout); StopGrace each wait of Stop, after SIGUSR1 and
	// after SIGTERM (0: DefaultStopGrace).
	StartTimeout, StopGrace time.Duration
}

// HAProxy is one private HAProxy process started by StartHAProxy.
type HAProxy struct {
	bin, dir, version string
	lua               bool
	ownDir            bool
	port              int
	conf              []byte
	start, grace      time.Duration
	st                procState
}

// Paths under an HAProxy directory.
const (
	haproxyConfName   = "haproxy.cfg"
	haproxyLogName    = "haproxy.log"
	haproxyStderrName = "stderr.log"
	haproxyLuaName    = "rlbench-clock.lua"
)

// StartHAProxy renders opts.Config for a free loopback port, checks it with `haproxy -c` (its error names the
// rendered file), starts `haproxy -db -f haproxy.cfg` in the foreground with an empty environment (its standard
// output, the request log, to LogPath; its standard error to StderrPath) and waits until the process, and no
// other, listens on the port (VerifyListener); a port another process took in between is retried on another.
// It never sends a request (the stick table would count it). The process is stopped by its PID (Stop), and gets
// SIGKILL if the starting process dies.
func StartHAProxy(ctx context.Context, opts HAProxyOptions) (*HAProxy, error) {
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("realparts: %w", err)
	}
	bin := opts.Bin
	if bin == "" {
		var err error
		if bin, err = FindHAProxy(); err != nil {
			return nil, err
		}
	}
	h := &HAProxy{bin: bin, dir: opts.Dir, start: opts.StartTimeout, grace: opts.StopGrace}
	if h.start <= 0 {
		h.start = DefaultStartTimeout
	}
	if h.grace <= 0 {
		h.grace = DefaultStopGrace
	}
	if err := h.inspect(ctx); err != nil {
		return nil, err
	}
	if h.dir == "" {
		d, err := os.MkdirTemp("", "rlbench-haproxy-")
		if err != nil {
			return nil, fmt.Errorf("realparts: %w", err)
		}
		h.dir, h.ownDir = d, true
	} else if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return nil, fmt.Errorf("realparts: %w", err)
	}
	fail := func(err error) (*HAProxy, error) {
		if h.ownDir {
			_ = os.RemoveAll(h.dir)
		}
		return nil, err
	}
	cfg := opts.Config
	if h.lua {
		cfg.ClockLua = filepath.Join(h.dir, haproxyLuaName)
		if err := safefile.WriteFile(cfg.ClockLua, []byte(HAProxyClockLua), 0o644); err != nil {
			return fail(fmt.Errorf("realparts: %w", err))
		}
	}
	var lastErr error
	for attempt := 0; attempt < maxPortAttempts; attempt++ {
		ports, err := FreePorts(1)
		if err != nil {
			return fail(err)
		}
		if lastErr = h.tryPort(ctx, cfg, ports[0]); lastErr == nil {
			return h, nil
		}
		if !errors.Is(lastErr, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	return fail(lastErr)
}

// inspect runs `haproxy -vv` and refuses a release older than HAProxyMinVersion; a build with Lua ("Built with
// Lua version") gets the clock fetch (HAProxyConfig.ClockLua).
func (h *HAProxy) inspect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, "-vv")
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("realparts: %s -v: %w: %s", h.bin, err, clipOut(out))
	}
	maj, mnr, pat, err := ParseHAProxyVersion(out)
	if err != nil {
		return err
	}
	h.version = fmt.Sprintf("%d.%d.%d", maj, mnr, pat)
	h.lua = bytes.Contains(out, []byte("Built with Lua version"))
	if maj < 2 || maj == 2 && mnr < 2 {
		return fmt.Errorf("realparts: haproxy %s (%s) is older than %s (needs log stdout, deny ... hdr and date(0,us))", h.version, h.bin, HAProxyMinVersion)
	}
	return nil
}

// tryPort renders and checks the config for port and starts HAProxy on it.
func (h *HAProxy) tryPort(ctx context.Context, cfg HAProxyConfig, port int) error {
	conf, err := RenderHAProxyConf(cfg, port)
	if err != nil {
		return fmt.Errorf("realparts: %w", err)
	}
	h.conf, h.port = conf, port
	if err := safefile.WriteFile(h.ConfPath(), conf, 0o644); err != nil {
		return fmt.Errorf("realparts: %w", err)
	}
	if err := h.check(ctx); err != nil {
		return err
	}
	return h.startOnce(ctx)
}

// check runs `haproxy -c -f haproxy.cfg`; a failure carries HAProxy's output and names the rendered file.
func (h *HAProxy) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.start)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, "-c", "-f", h.ConfPath())
	cmd.Env = []string{}
	cmd.Dir = h.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("realparts: haproxy -c -f %s: %w\n%s", h.ConfPath(), err, bytes.TrimSpace(out))
	}
	return nil
}

// startOnce starts the process and waits until it listens on the port; on failure it is stopped.
func (h *HAProxy) startOnce(ctx context.Context) error {
	p, err := startProcSplit(h.bin, []string{"-db", "-f", h.ConfPath()}, h.dir, h.LogPath(), h.StderrPath())
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, h.start)
	defer cancel()
	if err := h.waitReady(rctx, p); err != nil {
		_ = p.stop(context.Background(), h.grace)
		return fmt.Errorf("realparts: haproxy (port %d, %s): %w\n--- %s (tail) ---\n%s", h.port, h.ConfPath(), err, h.StderrPath(),
			logTail(h.StderrPath(), 4096))
	}
	h.st.set(p)
	return nil
}

// waitReady polls /proc until p holds the only listener on the port; a foreign listener is errPortTaken.
func (h *HAProxy) waitReady(ctx context.Context, p *proc) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if p.exited() {
			err := fmt.Errorf("pid %d exited during start: %v", p.pid(), p.err)
			if bytes.Contains([]byte(logTail(h.StderrPath(), 4096)), []byte("Address already in use")) {
				err = fmt.Errorf("%w (%w)", err, errPortTaken)
			}
			return err
		}
		o, err := PortOwnership(p.pid(), h.port)
		switch {
		case err != nil:
		case o.Foreign > 0:
			return fmt.Errorf("port %d: %d listener(s) of other processes: %w", h.port, o.Foreign, errPortTaken)
		case o.Owned > 0:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not listening on port %d: %w", h.port, ctx.Err())
		case <-tick.C:
		}
	}
}

// startProcSplit is startProc with standard output and standard error in files of their own (appended), the
// environment empty and SIGKILL on the starting process's death.
func startProcSplit(bin string, args []string, dir, outPath, errPath string) (*proc, error) {
	out, err := safefile.Append(outPath, 0o644)
	if err != nil {
		return nil, fmt.Errorf("realparts: log file: %w", err)
	}
	errf, err := safefile.Append(errPath, 0o644)
	if err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("realparts: log file: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, errf
	cmd.SysProcAttr = procAttr(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		_, _ = out.Close(), errf.Close()
		return nil, fmt.Errorf("realparts: start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: out}
	go func() {
		p.err = cmd.Wait()
		_, _ = out.Close(), errf.Close()
		close(p.done)
	}()
	return p, nil
}

// Clock reports whether the log records HAProxy's internal clock (now_ms: a build with Lua).
func (h *HAProxy) Clock() bool { return h.lua }

// Version is the version `haproxy -v` gave ("2.6.12").
func (h *HAProxy) Version() string { return h.version }

// Bin is the haproxy binary.
func (h *HAProxy) Bin() string { return h.bin }

// Port is the frontend's port on 127.0.0.1.
func (h *HAProxy) Port() int { return h.port }

// URL is "http://127.0.0.1:<Port>", the base URL clients send to.
func (h *HAProxy) URL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port))
}

// Dir is the directory of the config and logs.
func (h *HAProxy) Dir() string { return h.dir }

// ConfPath is DIR/haproxy.cfg, the rendered config; Conf returns its bytes.
func (h *HAProxy) ConfPath() string { return filepath.Join(h.dir, haproxyConfName) }

// Conf is the rendered configuration the running instance was started with.
func (h *HAProxy) Conf() []byte { return bytes.Clone(h.conf) }

// LogPath is DIR/haproxy.log: HAProxy's standard output, one JSON line per request (HAProxyLogFields), written
// when the request ends.
func (h *HAProxy) LogPath() string { return filepath.Join(h.dir, haproxyLogName) }

// StderrPath is DIR/stderr.log: HAProxy's warnings and alerts.
func (h *HAProxy) StderrPath() string { return filepath.Join(h.dir, haproxyStderrName) }

// PID is the process ID, or 0 when it is stopped (or has exited).
func (h *HAProxy) PID() int {
	p := h.st.get()
	if p == nil || p.exited() {
		return 0
	}
	return p.pid()
}

// Stop ends the HAProxy it started, by PID: SIGUSR1 first (HAProxy's soft stop: it stops listening and exits when
// its streams have ended, each logged as it ends, the last one of a client included), then, after the grace,
// SIGTERM (hard stop) and SIGKILL after the grace again. Stopping a stopped HAProxy is a no-op.
func (h *HAProxy) Stop(ctx context.Context) error {
	p := h.st.get()
	if p == nil {
		return nil
	}
	if !p.exited() {
		if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("realparts: SIGUSR1 haproxy %d: %w", p.pid(), err)
		}
		t := time.NewTimer(h.grace)
		select {
		case <-p.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if err := p.stop(ctx, h.grace); err != nil {
		return err
	}
	h.st.set(nil)
	return nil
}

// Close stops HAProxy and removes the directory if StartHAProxy created it.
func (h *HAProxy) Close(ctx context.Context) error {
	err := h.Stop(ctx)
	if h.ownDir && err == nil {
		err = os.RemoveAll(h.dir)
	}
	return err
}
