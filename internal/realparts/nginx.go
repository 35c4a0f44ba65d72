package realparts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	collectnginx "github.com/rlbench/rlbench/collect/nginx"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// EnvNginxBin overrides where FindNginx looks.
const EnvNginxBin = "RLBENCH_NGINX_BIN"

// NginxMinVersion is the oldest nginx StartNginx runs: -e (1.19.5) keeps the startup error log out of the
// compiled-in /var/log/nginx, and the access log needs $limit_req_status (1.17.6); both dates from
// https://nginx.org/en/CHANGES. Debian 12's nginx-light (1.22.1) has both.
const NginxMinVersion = "1.19.5"

// FindNginx returns the path of the nginx binary: $RLBENCH_NGINX_BIN if set (it must be an executable file), else
// nginx on PATH, else /usr/sbin/nginx (Debian's nginx / nginx-light) or /usr/local/sbin/nginx. Absent: an error
// wrapping ErrNotInstalled.
func FindNginx() (string, error) {
	if p := os.Getenv(EnvNginxBin); p != "" {
		return checkExec(p, EnvNginxBin)
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
		if _, err := checkExec(p, "nginx"); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("realparts: nginx not found on PATH nor in /usr/sbin: %w", ErrNotInstalled)
}

// NginxBuild is what `nginx -V` says about a binary.
type NginxBuild struct {
	// Version is the version number, e.g. "1.22.1".
	Version string
	// Major, Minor and Patch are its parts.
	Major, Minor, Patch int
	// ConfigureArgs are the "configure arguments:" words, e.g. "--with-http_stub_status_module".
	ConfigureArgs []string
}

var nginxVersionRE = regexp.MustCompile(`nginx version: [^/\s]+/(\d+)\.(\d+)\.(\d+)`)

// ParseNginxV parses the output of `nginx -V` (it prints to stderr): the "nginx version: nginx/X.Y.Z" line and
// the "configure arguments:" line. Output without a version line is an error.
func ParseNginxV(out []byte) (NginxBuild, error) {
	var b NginxBuild
	m := nginxVersionRE.FindSubmatch(out)
	if m == nil {
		return b, fmt.Errorf("realparts: nginx -V: no \"nginx version: nginx/X.Y.Z\" line in %q", clipOut(out))
	}
	b.Major, _ = strconv.Atoi(string(m[1]))
	b.Minor, _ = strconv.Atoi(string(m[2]))
	b.Patch, _ = strconv.Atoi(string(m[3]))
	b.Version = fmt.Sprintf("%d.%d.%d", b.Major, b.Minor, b.Patch)
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "configure arguments:"); ok {
			b.ConfigureArgs = strings.Fields(rest)
		}
	}
	return b, nil
}

// AtLeast reports whether the build's version is at least v ("X.Y.Z").
func (b NginxBuild) AtLeast(v string) bool {
	var x, y, z int
	if _, err := fmt.Sscanf(v, "%d.%d.%d", &x, &y, &z); err != nil {
		return false
	}
	switch {
	case b.Major != x:
		return b.Major > x
	case b.Minor != y:
		return b.Minor > y
	}
	return b.Patch >= z
}

// Has reports whether configure was given --with-<module> (modules that are off by default, such as
// http_stub_status_module).
func (b NginxBuild) Has(module string) bool { return b.hasArg("--with-" + module) }

// Without reports whether configure was given --without-<module> (modules that are on by default, such as
// http_limit_req_module or http_uwsgi_module).
func (b NginxBuild) Without(module string) bool { return b.hasArg("--without-" + module) }

func (b NginxBuild) hasArg(a string) bool {
	for _, x := range b.ConfigureArgs {
		if x == a || strings.HasPrefix(x, a+"=") {
			return true
		}
	}
	return false
}

// InspectNginx runs `bin -V` and parses it.
func InspectNginx(ctx context.Context, bin string) (NginxBuild, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-V")
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return NginxBuild{}, fmt.Errorf("realparts: %s -V: %w: %s", bin, err, clipOut(out))
	}
	return ParseNginxV(out)
}

// check returns why the build cannot run rlbench's config, or nil.
func (b NginxBuild) check() error {
	if !b.AtLeast(NginxMinVersion) {
		return fmt.Errorf("realparts: nginx %s is older than %s (needs -e and $limit_req_status)", b.Version, NginxMinVersion)
	}
	for _, m := range []string{"http_limit_req_module", "http_proxy_module"} {
		if b.Without(m) {
			return fmt.Errorf("realparts: nginx %s was built --without-%s", b.Version, m)
		}
	}
	if !b.Has("http_stub_status_module") {
		return fmt.Errorf("realparts: nginx %s was built without --with-http_stub_status_module", b.Version)
	}
	return nil
}

// NginxOptions configures StartNginx.
type NginxOptions struct {
	// Bin is the nginx binary; empty means FindNginx().
	Bin string
	// Dir is the prefix (nginx -p): nginx.conf, nginx.pid, logs/ and tmp/ live there. Empty means a new temporary
	// directory, removed by Close.
	Dir string
	// Config is what nginx runs; see NginxConfig and RenderNginxConf.
	Config NginxConfig
	// User is the worker user (`user` directive) when the master runs as root; nginx ignores it otherwise, so it is
	// then not rendered. Empty means "root": the workers keep the master's user, so they can use the private temp
	// paths under a prefix that may sit in a 0700 test directory. A named user gets tmp/ chowned to it.
	User string
	// StartTimeout bounds one start (spawn until ready); zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGQUIT (graceful: in-flight and delayed requests finish) before
	// SIGTERM, and after SIGTERM before SIGKILL; zero means DefaultStopGrace.
	StopGrace time.Duration
}

// Nginx is one private nginx started by StartNginx: its own rendered config, prefix, pid file, error and access
// logs and temp paths, a master with its workers, listening on two 127.0.0.1 ports verified to belong to them.
// It never touches another nginx (the distro service uses /run/nginx.pid and /var/log/nginx; these are never
// read or written). Methods are safe for concurrent use.
type Nginx struct {
	bin     string
	build   NginxBuild
	prefix  string
	ownDir  bool
	layout  NginxLayout
	conf    []byte
	workers int
	start   time.Duration
	grace   time.Duration
	st      procState
	// kids are the workers found at start, killed by PID only if the master is gone and they are still the same
	// processes (same start time).
	kids []procIdentity
}

// procIdentity names one process: its PID and start time (field 22 of /proc/PID/stat), so a reused PID is
// never mistaken for it.
type procIdentity struct {
	pid   int
	start uint64
}

// StartNginx renders opts.Config for two free 127.0.0.1 ports, checks it with `nginx -t` (its output is in the
// error when it fails), starts `nginx -p PREFIX -c PREFIX/nginx.conf -e PREFIX/logs/error.log` (daemon off,
// master_process on) and returns once the master has its worker_processes workers, every listening socket on both
// ports is held by the master and its workers and by no other process (VerifyNginxListeners), and stub_status
// answers. Since nginx cannot bind port 0, ports are chosen like FreePorts and a port lost to another process
// (bind "Address already in use", or a foreign listener) is retried with fresh ones, up to 5 times. Readiness
// never sends a request to the proxied port, so its access log and the upstream see only the caller's traffic.
// The nginx binary must be NginxMinVersion or newer with stub_status. Failures return the tail of the error log.
// The caller must call Stop or Close.
func StartNginx(ctx context.Context, opts NginxOptions) (*Nginx, error) {
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("realparts: %w", err)
	}
	bin := opts.Bin
	if bin == "" {
		var err error
		if bin, err = FindNginx(); err != nil {
			return nil, err
		}
	}
	build, err := InspectNginx(ctx, bin)
	if err != nil {
		return nil, err
	}
	if err := build.check(); err != nil {
		return nil, err
	}
	n := &Nginx{bin: bin, build: build, start: opts.StartTimeout, grace: opts.StopGrace, workers: opts.Config.WorkerProcesses}
	if n.start <= 0 {
		n.start = DefaultStartTimeout
	}
	if n.grace <= 0 {
		n.grace = DefaultStopGrace
	}
	if n.workers == 0 {
		n.workers = 1
	}
	if opts.Dir == "" {
		d, err := os.MkdirTemp("", "rlbench-nginx-")
		if err != nil {
			return nil, fmt.Errorf("realparts: nginx prefix: %w", err)
		}
		n.prefix, n.ownDir = d, true
	} else {
		abs, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, err
		}
		n.prefix = abs
	}
	fail := func(err error) (*Nginx, error) {
		if n.ownDir {
			_ = os.RemoveAll(n.prefix)
		}
		return nil, err
	}
	if err := n.layDirs(opts.User); err != nil {
		return fail(err)
	}
	n.layout = NginxLayout{Prefix: n.prefix, Without: map[string]bool{}}
	if os.Geteuid() == 0 {
		n.layout.User = opts.User
		if n.layout.User == "" {
			n.layout.User = "root"
		}
	}
	for _, m := range []string{"http_fastcgi_module", "http_uwsgi_module", "http_scgi_module"} {
		if build.Without(m) {
			n.layout.Without[m] = true
		}
	}
	var lastErr error
	for attempt := 0; attempt < maxPortAttempts; attempt++ {
		ports, err := FreePorts(2)
		if err != nil {
			return fail(err)
		}
		err = n.tryPorts(ctx, opts.Config, ports[0], ports[1])
		if err == nil {
			return n, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	return fail(lastErr)
}

// tryPorts renders the config for the two ports, tests it and starts nginx on them; an error wraps errPortTaken
// when a port belonged to another process.
func (n *Nginx) tryPorts(ctx context.Context, cfg NginxConfig, port, statusPort int) error {
	n.layout.Port, n.layout.StatusPort = port, statusPort
	conf, err := RenderNginxConf(cfg, n.layout)
	if err != nil {
		return err
	}
	n.conf = conf
	if err := safefile.WriteFile(n.ConfPath(), conf, 0o644); err != nil {
		return fmt.Errorf("realparts: %w", err)
	}
	if err := n.test(ctx); err != nil {
		return err
	}
	return n.startOnce(ctx)
}

// layDirs creates the prefix's logs/ and tmp/<name>/ directories; tmp/ is chowned to a named worker user.
func (n *Nginx) layDirs(workerUser string) error {
	dirs := []string{filepath.Join(n.prefix, nginxLogsDir)}
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		dirs = append(dirs, filepath.Join(n.prefix, nginxTempDir, t))
	}
	for _, d := range dirs {
		// Below the prefix (the caller's directory) no link is followed.
		if err := safefile.MkdirAll(n.prefix, d); err != nil {
			return fmt.Errorf("realparts: nginx prefix: %w", err)
		}
	}
	if os.Geteuid() != 0 || workerUser == "" || workerUser == "root" {
		return nil
	}
	name, _, _ := strings.Cut(workerUser, " ")
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("realparts: NginxOptions.User %q: %w", workerUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(filepath.Join(n.prefix, nginxTempDir), func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, uid, gid)
	})
}

// args are the command line arguments that select the private prefix, config and startup error log.
func (n *Nginx) args(errLog string) []string {
	return []string{"-p", n.prefix + "/", "-c", n.ConfPath(), "-e", errLog}
}

// test runs `nginx -t` on the rendered config; a failure carries nginx's output.
func (n *Nginx) test(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.start)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.bin, append([]string{"-t", "-q"}, n.args("stderr")...)...)
	cmd.Env = []string{}
	cmd.Dir = n.prefix
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("realparts: nginx -t %s: %w\n%s", n.ConfPath(), err, bytes.TrimSpace(out))
	}
	return nil
}

// startOnce starts the master and waits for readiness; on failure the processes are stopped.
func (n *Nginx) startOnce(ctx context.Context) error {
	var logOff int64
	if st, err := os.Stat(n.ErrorLogPath()); err == nil {
		logOff = st.Size()
	}
	// The master gets SIGTERM (fast shutdown, which also stops its workers) if the starting process dies: SIGKILL
	// would leave the workers running on the ports.
	p, err := startProcDeathSig(n.bin, n.args(n.ErrorLogPath()), []string{}, n.prefix,
		filepath.Join(n.prefix, nginxLogsDir, "stderr.log"), syscall.SIGTERM)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, n.start)
	defer cancel()
	kids, err := n.waitReady(rctx, p)
	if err != nil {
		n.st.mu.Lock()
		n.kids = kids
		n.st.mu.Unlock()
		_ = n.stopProc(context.Background(), p)
		if strings.Contains(logTailFrom(n.ErrorLogPath(), logOff), "Address already in use") {
			err = fmt.Errorf("%w (%w)", err, errPortTaken)
		}
		return fmt.Errorf("realparts: nginx (ports %d, %d, prefix %s): %w\n--- %s (tail) ---\n%s",
			n.layout.Port, n.layout.StatusPort, n.prefix, err, n.ErrorLogPath(), logTail(n.ErrorLogPath(), 4096))
	}
	n.st.mu.Lock()
	n.st.p, n.kids = p, kids
	n.st.mu.Unlock()
	return nil
}

func (n *Nginx) waitReady(ctx context.Context, p *proc) ([]procIdentity, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var kids []procIdentity
	for {
		if p.exited() {
			return kids, fmt.Errorf("master pid %d exited during start: %v", p.pid(), p.err)
		}
		why := func() error {
			var err error
			if kids, err = nginxWorkers(p.pid()); err != nil {
				return err
			}
			if len(kids) != n.workers {
				return fmt.Errorf("%d of %d workers", len(kids), n.workers)
			}
			pids := identityPIDs(p.pid(), kids)
			for _, port := range []int{n.layout.Port, n.layout.StatusPort} {
				o, err := groupOwnership(pids, port)
				if err != nil {
					return err
				}
				if o.Foreign > 0 {
					return fmt.Errorf("port %d: %d listener(s) of other processes: %w", port, o.Foreign, errPortTaken)
				}
				if o.Owned == 0 {
					return fmt.Errorf("port %d not listening yet", port)
				}
			}
			if _, _, err := collectnginx.FetchStubStatus(ctx, hc, n.StatusURL()); err != nil {
				return err
			}
			// Re-check after the status request, which a stranger on the port could have answered.
			return n.verify(p.pid(), kids)
		}()
		if why == nil {
			return kids, nil
		}
		if errors.Is(why, errPortTaken) {
			return kids, why
		}
		select {
		case <-ctx.Done():
			return kids, fmt.Errorf("not ready (%v): %w", why, ctx.Err())
		case <-tick.C:
		}
	}
}

func (n *Nginx) verify(master int, kids []procIdentity) error {
	pids := identityPIDs(master, kids)
	for _, port := range []int{n.layout.Port, n.layout.StatusPort} {
		if err := VerifyNginxListeners(pids, port); err != nil {
			return fmt.Errorf("%w (%w)", err, errPortTaken)
		}
	}
	return nil
}

func identityPIDs(master int, kids []procIdentity) []int {
	pids := []int{master}
	for _, k := range kids {
		pids = append(pids, k.pid)
	}
	return pids
}

// groupOwnership is PortOwnership for a group of processes that share listening sockets (an nginx master and
// the workers that inherited them): Owned counts the LISTEN sockets on port held by any of pids, Foreign the
// others. The listening sockets are read from the first PID's network namespace.
func groupOwnership(pids []int, port int) (Ownership, error) {
	o := Ownership{Port: port}
	if len(pids) == 0 || port <= 0 || port > 65535 {
		return o, fmt.Errorf("realparts: groupOwnership(%v, %d): bad argument", pids, port)
	}
	o.PID = pids[0]
	inodes, err := listenInodes(filepath.Join("/proc", strconv.Itoa(pids[0])), port)
	if err != nil {
		return o, err
	}
	held := map[uint64]bool{}
	for _, pid := range pids {
		h, err := socketInodes(filepath.Join("/proc", strconv.Itoa(pid)))
		if err != nil {
			return o, err
		}
		for ino := range h {
			held[ino] = true
		}
	}
	for _, ino := range inodes {
		if held[ino] {
			o.Owned++
		} else {
			o.Foreign++
		}
	}
	return o, nil
}

// VerifyNginxListeners returns nil when the processes pids (an nginx master first, then its workers) hold at least
// one listening socket on port and no other process listens on it; otherwise an error wrapping ErrNotOwned with
// both counts, or the error reading /proc.
func VerifyNginxListeners(pids []int, port int) error {
	o, err := groupOwnership(pids, port)
	if err != nil {
		return err
	}
	return o.verify(fmt.Sprintf("nginx pids %v", pids))
}

// nginxWorkers lists the children of master named "nginx" (nginx retitles its workers "nginx: worker process";
// /proc/PID/stat keeps the executable's name), read from /proc/*/stat.
func nginxWorkers(master int) ([]procIdentity, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("realparts: %w", err)
	}
	var out []procIdentity
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == master {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != master || st.comm != "nginx" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !bytes.HasPrefix(cmdline, []byte("nginx: worker process")) {
			continue // e.g. the cache manager, or a worker not yet retitled
		}
		out = append(out, procIdentity{pid: pid, start: st.start})
	}
	return out, nil
}

type procStat struct {
	comm  string
	ppid  int
	start uint64
}

// readStat reads the command name, parent PID and start time of /proc/PID/stat ("pid (comm) state ppid ...",
// starttime is field 22; comm may contain spaces and parentheses, so the fields after the last ')' are used).
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("realparts: /proc stat: no (comm)")
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return procStat{}, errors.New("realparts: /proc stat: too few fields")
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, errors.New("realparts: /proc stat: bad ppid or starttime")
	}
	return procStat{comm: string(b[open+1 : end]), ppid: ppid, start: start}, nil
}

// alive reports whether the process is still the one identified (same PID and start time).
func (id procIdentity) alive() bool {
	st, err := readStat(id.pid)
	return err == nil && st.start == id.start
}

// stopProc ends the master p: SIGQUIT (graceful shutdown: workers finish their requests, delayed ones included),
// after grace SIGTERM (fast shutdown), after grace again SIGKILL; then any worker found at start that is still the
// same process (it would be orphaned by a killed master) gets SIGKILL too. Only these PIDs are signalled.
func (n *Nginx) stopProc(ctx context.Context, p *proc) error {
	var errs []error
	for _, sig := range []syscall.Signal{syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGKILL} {
		if p.exited() {
			break
		}
		if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("realparts: %v to nginx master %d: %w", sig, p.pid(), err))
			continue
		}
		if sig == syscall.SIGKILL {
			// SIGKILL cannot be ignored: wait (bounded) until the master
			// is reaped, even when ctx is over (an interrupt sends the
			// three signals at once), before calling it still running.
			t := time.NewTimer(2 * time.Second)
			select {
			case <-p.done:
			case <-t.C:
			}
			t.Stop()
			break
		}
		t := time.NewTimer(n.grace)
		select {
		case <-p.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if !p.exited() {
		errs = append(errs, fmt.Errorf("realparts: nginx master %d still running after SIGKILL", p.pid()))
	}
	n.st.mu.Lock()
	kids := n.kids
	n.st.mu.Unlock()
	for _, k := range kids {
		if k.alive() {
			_ = syscall.Kill(k.pid, syscall.SIGKILL)
		}
	}
	return errors.Join(errs...)
}

// PID is the master's process ID, or 0 when it is stopped (or has exited).
func (n *Nginx) PID() int {
	p := n.st.get()
	if p == nil || p.exited() {
		return 0
	}
	return p.pid()
}

// WorkerPIDs are the worker processes found at start.
func (n *Nginx) WorkerPIDs() []int {
	n.st.mu.Lock()
	defer n.st.mu.Unlock()
	out := make([]int, len(n.kids))
	for i, k := range n.kids {
		out[i] = k.pid
	}
	return out
}

// Build is what nginx -V said about the binary.
func (n *Nginx) Build() NginxBuild { return n.build }

// Bin is the nginx binary.
func (n *Nginx) Bin() string { return n.bin }

// Port is the proxied server's port on 127.0.0.1.
func (n *Nginx) Port() int { return n.layout.Port }

// Addr is "127.0.0.1:<Port>".
func (n *Nginx) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.layout.Port)) }

// URL is "http://127.0.0.1:<Port>", the base URL clients send to.
func (n *Nginx) URL() string { return "http://" + n.Addr() }

// StatusURL is the stub_status URL on the status server's own port.
func (n *Nginx) StatusURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.layout.StatusPort)) + NginxStubStatusPath
}

// Prefix is the private prefix directory.
func (n *Nginx) Prefix() string { return n.prefix }

// ConfPath is PREFIX/nginx.conf, the rendered config; Conf returns its bytes.
func (n *Nginx) ConfPath() string { return filepath.Join(n.prefix, nginxConfName) }

// Conf is the rendered nginx.conf the running instance was started with.
func (n *Nginx) Conf() []byte { return bytes.Clone(n.conf) }

// PidPath is PREFIX/nginx.pid, the pid file nginx writes (never /run/nginx.pid).
func (n *Nginx) PidPath() string { return filepath.Join(n.prefix, nginxPidName) }

// ErrorLogPath is PREFIX/logs/error.log (startup messages, limit_req and upstream lines).
func (n *Nginx) ErrorLogPath() string {
	return filepath.Join(n.prefix, nginxLogsDir, nginxErrorLogName)
}

// AccessLogPath is PREFIX/logs/access.log: one JSON line per request to the proxied server, written when the
// request ends (unbuffered).
func (n *Nginx) AccessLogPath() string {
	return filepath.Join(n.prefix, nginxLogsDir, nginxAccessLogName)
}

// StatusAccessLogPath is PREFIX/logs/status_access.log, the stub_status server's own access log.
func (n *Nginx) StatusAccessLogPath() string {
	return filepath.Join(n.prefix, nginxLogsDir, nginxStatusLogName)
}

// ReopenLogs sends SIGUSR1 to the master, which reopens every log file (after the caller moved them away).
func (n *Nginx) ReopenLogs() error {
	p := n.st.get()
	if p == nil || p.exited() {
		return errors.New("realparts: nginx is not running")
	}
	return p.cmd.Process.Signal(syscall.SIGUSR1)
}

// Stop ends the nginx it started, by PID: SIGQUIT, then SIGTERM and SIGKILL after StopGrace each, and SIGKILL to
// workers that outlived a killed master. Stopping a stopped Nginx is a no-op. The logs stay in the prefix.
func (n *Nginx) Stop(ctx context.Context) error {
	p := n.st.get()
	if p == nil {
		return nil
	}
	if err := n.stopProc(ctx, p); err != nil {
		return err
	}
	n.st.set(nil)
	return nil
}

// Close stops nginx and removes the prefix if StartNginx created it.
func (n *Nginx) Close(ctx context.Context) error {
	err := n.Stop(ctx)
	if n.ownDir && err == nil {
		err = os.RemoveAll(n.prefix)
	}
	return err
}

func clipOut(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
