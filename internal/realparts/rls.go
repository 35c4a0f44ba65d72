package realparts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/safefile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// RLSOptions configures StartRLS.
type RLSOptions struct {
	// Bin is envoyproxy/ratelimit's service_cmd; empty means FindRLS().
	Bin string
	// ConfigDir holds the rate limit configuration files (*.yaml, *.yml; dot files skipped). They are copied to
	// <RuntimeRoot>/ratelimit/config/ at every start and restart.
	ConfigDir string
	// RedisAddr is host:port of the Redis backend (REDIS_URL, REDIS_SOCKET_TYPE=tcp, REDIS_TYPE=SINGLE). Required.
	RedisAddr string
	// LogFormat is LOG_FORMAT: "text" (default) or "json". In json mode the RLS still writes its first 3-4 lines as
	// text: they are logged before src/settings applies LOG_FORMAT (envoyproxy/ratelimit src/service_cmd/runner).
	LogFormat string
	// LogLevel is LOG_LEVEL; empty means "debug", the level at which decision lines are logged (the RLS default,
	// WARN, logs none).
	LogLevel string
	// Prometheus selects USE_PROMETHEUS=true with PROMETHEUS_ADDR on a free 127.0.0.1 port (MetricsURL).
	Prometheus bool
	// StatsdAddr, when set, selects USE_STATSD=true with STATSD_HOST/STATSD_PORT from it (TCP unless
	// STATSD_PROTOCOL=udp is added through ExtraEnv). Exclusive with Prometheus. With neither, USE_STATSD=false
	// and the RLS writes its stats through gostats' logging sink into the log.
	StatsdAddr string
	// LogPath receives the RLS's stdout and stderr (logrus writes to stderr), appended across restarts. Empty means
	// <WorkDir>/rls.log.
	LogPath string
	// ExtraEnv is appended last ("KEY=value", later wins), e.g. LIMIT_RESPONSE_HEADERS_ENABLED=true. Keys that
	// choose listeners (HOST, PORT, GRPC_HOST, GRPC_PORT, GRPC_UDS, DEBUG_HOST, DEBUG_PORT, PROMETHEUS_ADDR) are
	// rejected, since StartRLS owns and verifies them.
	ExtraEnv []string
	// WorkDir holds the runtime tree and, by default, the log. Empty means a new temporary directory, removed by
	// Close.
	WorkDir string
	// StartTimeout bounds one start (spawn until ready); zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// StopGrace is the wait between SIGTERM and SIGKILL in Stop; zero means DefaultStopGrace.
	StopGrace time.Duration
}

// RLS is one envoyproxy/ratelimit service_cmd started by StartRLS with a clean environment (nothing inherited),
// every listener on 127.0.0.1 and verified to belong to its PID. Methods are safe for concurrent use.
type RLS struct {
	opts        RLSOptions
	bin         string
	workDir     string
	ownDir      bool
	logPath     string
	runtimeRoot string
	httpPort    int
	grpcPort    int
	debugPort   int
	promPort    int // 0 without Prometheus
	start       time.Duration
	grace       time.Duration
	st          procState
}

// Runtime layout under <WorkDir>/runtime, as in the upstream docker-compose file.
const (
	rlsRuntimeSub = "ratelimit"
	rlsRuntimeApp = "config"
)

var reservedRLSEnv = map[string]bool{
	"HOST": true, "PORT": true, "GRPC_HOST": true, "GRPC_PORT": true, "GRPC_UDS": true,
	"DEBUG_HOST": true, "DEBUG_PORT": true, "PROMETHEUS_ADDR": true,
}

// StartRLS starts service_cmd and returns once (1) every listener (HTTP, gRPC, debug, and Prometheus when asked)
// is held by the started PID and by no other process — the RLS binds with SO_REUSEPORT, so a clash would
// otherwise be silent —, (2) GET /healthcheck answers 200 and (3) the gRPC health check for service "ratelimit"
// answers SERVING. Ports lost to another process are retried with fresh ones, up to 5 times. Failures return the
// tail of the RLS log. Bad options are errors naming the option. The caller must call Stop or Close.
func StartRLS(ctx context.Context, opts RLSOptions) (*RLS, error) {
	if opts.RedisAddr == "" {
		return nil, errors.New("realparts: RLSOptions.RedisAddr is required")
	}
	switch opts.LogFormat {
	case "":
		opts.LogFormat = "text"
	case "text", "json":
	default:
		return nil, fmt.Errorf("realparts: RLSOptions.LogFormat %q: want \"text\" or \"json\"", opts.LogFormat)
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "debug"
	}
	if opts.Prometheus && opts.StatsdAddr != "" {
		return nil, errors.New("realparts: RLSOptions: Prometheus and StatsdAddr are exclusive (the RLS allows one stats sink)")
	}
	if opts.StatsdAddr != "" {
		if _, _, err := net.SplitHostPort(opts.StatsdAddr); err != nil {
			return nil, fmt.Errorf("realparts: RLSOptions.StatsdAddr %q: %w", opts.StatsdAddr, err)
		}
	}
	for i, kv := range opts.ExtraEnv {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("realparts: RLSOptions.ExtraEnv[%d] %q: want KEY=value", i, kv)
		}
		if reservedRLSEnv[k] {
			return nil, fmt.Errorf("realparts: RLSOptions.ExtraEnv[%d]: %s is chosen by StartRLS", i, k)
		}
	}
	if _, err := configFiles(opts.ConfigDir); err != nil {
		return nil, err
	}
	bin := opts.Bin
	if bin == "" {
		var err error
		if bin, err = FindRLS(); err != nil {
			return nil, err
		}
	}
	// The process runs in its work dir: make every path absolute first.
	for _, p := range []*string{&opts.WorkDir, &opts.LogPath, &opts.ConfigDir} {
		if *p != "" {
			abs, err := filepath.Abs(*p)
			if err != nil {
				return nil, err
			}
			*p = abs
		}
	}
	s := &RLS{opts: opts, bin: bin, workDir: opts.WorkDir, start: opts.StartTimeout, grace: opts.StopGrace}
	if s.start <= 0 {
		s.start = DefaultStartTimeout
	}
	if s.grace <= 0 {
		s.grace = DefaultStopGrace
	}
	if s.workDir == "" {
		d, err := os.MkdirTemp("", "rlbench-rls-")
		if err != nil {
			return nil, fmt.Errorf("realparts: rls work dir: %w", err)
		}
		s.workDir, s.ownDir = d, true
	} else if err := os.MkdirAll(s.workDir, 0o755); err != nil {
		return nil, fmt.Errorf("realparts: rls work dir: %w", err)
	}
	s.runtimeRoot = filepath.Join(s.workDir, "runtime")
	s.logPath = opts.LogPath
	if s.logPath == "" {
		s.logPath = filepath.Join(s.workDir, path.Base(evidence.RLSLogFile))
	}
	var lastErr error
	for attempt := 0; attempt < maxPortAttempts; attempt++ {
		n := 3
		if opts.Prometheus {
			n = 4
		}
		ports, err := FreePorts(n)
		if err != nil {
			lastErr = err
			break
		}
		s.httpPort, s.grpcPort, s.debugPort = ports[0], ports[1], ports[2]
		if opts.Prometheus {
			s.promPort = ports[3]
		}
		err = s.startOnce(ctx)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	if s.ownDir {
		_ = os.RemoveAll(s.workDir)
	}
	return nil, lastErr
}

// configFiles lists the *.yaml and *.yml files (no dot files) directly in dir; none is an error naming dir.
func configFiles(dir string) ([]string, error) {
	if dir == "" {
		return nil, errors.New("realparts: RLSOptions.ConfigDir is required")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("realparts: RLSOptions.ConfigDir: %w", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("realparts: RLSOptions.ConfigDir %s: no *.yaml or *.yml file", dir)
	}
	sort.Strings(out)
	return out, nil
}

// layRuntime (re)creates <runtimeRoot>/ratelimit/config/ holding copies of the config files.
func (s *RLS) layRuntime() error {
	files, err := configFiles(s.opts.ConfigDir)
	if err != nil {
		return err
	}
	cfgDir := filepath.Join(s.runtimeRoot, rlsRuntimeSub, rlsRuntimeApp)
	// Below the work directory (the caller's) no link is followed: not by
	// the removal, not by the creation.
	if err := safefile.CheckDir(s.workDir, filepath.Dir(cfgDir)); err != nil {
		return fmt.Errorf("realparts: %w", err)
	}
	if err := os.RemoveAll(cfgDir); err != nil {
		return fmt.Errorf("realparts: %w", err)
	}
	if err := safefile.MkdirAll(s.workDir, cfgDir); err != nil {
		return fmt.Errorf("realparts: %w", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("realparts: %w", err)
		}
		if err := safefile.WriteFile(filepath.Join(cfgDir, filepath.Base(f)), b, 0o644); err != nil {
			return fmt.Errorf("realparts: %w", err)
		}
	}
	return nil
}

// Env returns the complete environment the RLS runs with (nothing else is inherited), in order; ExtraEnv last.
func (s *RLS) Env() []string {
	o := s.opts
	env := []string{
		"RUNTIME_ROOT=" + s.runtimeRoot,
		"RUNTIME_SUBDIRECTORY=" + rlsRuntimeSub,
		"RUNTIME_APPDIRECTORY=" + rlsRuntimeApp,
		"RUNTIME_WATCH_ROOT=false",
		"RUNTIME_IGNOREDOTFILES=true",
		"HOST=127.0.0.1", "PORT=" + strconv.Itoa(s.httpPort),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT=" + strconv.Itoa(s.grpcPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT=" + strconv.Itoa(s.debugPort),
		"BACKEND_TYPE=redis", "REDIS_SOCKET_TYPE=tcp", "REDIS_TYPE=SINGLE", "REDIS_URL=" + o.RedisAddr,
		"LOG_LEVEL=" + o.LogLevel, "LOG_FORMAT=" + o.LogFormat,
		"STATS_FLUSH_INTERVAL=1s",
	}
	switch {
	case o.Prometheus:
		env = append(env, "USE_STATSD=false", "USE_PROMETHEUS=true",
			"PROMETHEUS_ADDR="+net.JoinHostPort("127.0.0.1", strconv.Itoa(s.promPort)))
	case o.StatsdAddr != "":
		h, p, _ := net.SplitHostPort(o.StatsdAddr)
		env = append(env, "USE_STATSD=true", "USE_PROMETHEUS=false", "STATSD_HOST="+h, "STATSD_PORT="+p)
	default:
		env = append(env, "USE_STATSD=false", "USE_PROMETHEUS=false")
	}
	return append(env, o.ExtraEnv...)
}

func (s *RLS) ports() []int {
	ps := []int{s.httpPort, s.grpcPort, s.debugPort}
	if s.promPort != 0 {
		ps = append(ps, s.promPort)
	}
	return ps
}

// startOnce lays out the runtime, spawns service_cmd on the chosen ports and waits for readiness.
func (s *RLS) startOnce(ctx context.Context) error {
	if err := s.layRuntime(); err != nil {
		return err
	}
	var logOff int64
	if st, err := os.Stat(s.logPath); err == nil {
		logOff = st.Size()
	}
	p, err := startProc(s.bin, nil, s.Env(), s.workDir, s.logPath)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.start)
	defer cancel()
	if err := s.waitReady(ctx, p); err != nil {
		_ = p.stop(context.Background(), s.grace)
		if strings.Contains(strings.ToLower(logTailFrom(s.logPath, logOff)), "address already in use") {
			err = fmt.Errorf("%w (%w)", err, errPortTaken)
		}
		return fmt.Errorf("realparts: RLS (http %d, grpc %d, debug %d, prometheus %d): %w\n--- %s (tail) ---\n%s",
			s.httpPort, s.grpcPort, s.debugPort, s.promPort, err, s.logPath, logTail(s.logPath, 4096))
	}
	s.st.set(p)
	return nil
}

func (s *RLS) waitReady(ctx context.Context, p *proc) error {
	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("grpc client: %w", err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var why error
	for {
		if p.exited() {
			return fmt.Errorf("pid %d exited during start: %v", p.pid(), p.err)
		}
		why = s.checkReady(ctx, p.pid(), hc, health)
		if why == nil {
			// Re-check ownership after the health checks, which could have been answered by a stranger.
			for _, port := range s.ports() {
				if err := VerifyListener(p.pid(), port); err != nil {
					return fmt.Errorf("%w (%w)", err, errPortTaken)
				}
			}
			return nil
		}
		if errors.Is(why, errPortTaken) {
			return why
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready (%v): %w", why, ctx.Err())
		case <-tick.C:
		}
	}
}

// checkReady returns nil when all ports are held by pid alone and both health checks pass.
func (s *RLS) checkReady(ctx context.Context, pid int, hc *http.Client, health healthpb.HealthClient) error {
	for _, port := range s.ports() {
		o, err := PortOwnership(pid, port)
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.HTTPAddr()+"/healthcheck", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("/healthcheck: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthcheck: HTTP %d", resp.StatusCode)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	hr, err := health.Check(cctx, &healthpb.HealthCheckRequest{Service: "ratelimit"})
	if err != nil {
		return fmt.Errorf("grpc health: %w", err)
	}
	if hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("grpc health: %v", hr.GetStatus())
	}
	return nil
}

// GRPCAddr is "127.0.0.1:<GRPC_PORT>", where envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit and the
// gRPC health service ("ratelimit") are served. Stable across Restart.
func (s *RLS) GRPCAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.grpcPort)) }

// HTTPAddr is "127.0.0.1:<PORT>", serving /healthcheck and /json. Stable across Restart.
func (s *RLS) HTTPAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.httpPort)) }

// DebugAddr is "127.0.0.1:<DEBUG_PORT>", serving /rlconfig, /stats (expvar only) and /debug/pprof.
func (s *RLS) DebugAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.debugPort)) }

// MetricsURL is "http://127.0.0.1:<port>/metrics" when Prometheus was asked for, else "". The RLS's Prometheus
// sink reports counters as totals since its own start (they reset on Restart) and its response_time_seconds
// histogram holds milliseconds (envoyproxy/ratelimit src/stats/prom, fixed upstream by envoyproxy/ratelimit#1104).
func (s *RLS) MetricsURL() string {
	if s.promPort == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.promPort)) + "/metrics"
}

// PID is the process ID of the running service_cmd, or 0 when stopped (or exited).
func (s *RLS) PID() int {
	p := s.st.get()
	if p == nil || p.exited() {
		return 0
	}
	return p.pid()
}

// LogPath is the file receiving the RLS log (stderr and stdout, appended across restarts).
func (s *RLS) LogPath() string { return s.logPath }

// RuntimeRoot is RUNTIME_ROOT; the configs are in RuntimeRoot()/ratelimit/config.
func (s *RLS) RuntimeRoot() string { return s.runtimeRoot }

// Stop ends the service_cmd it started: SIGTERM, then SIGKILL after StopGrace — needed because the RLS's
// gRPC GracefulStop (google.golang.org/grpc Server.GracefulStop) waits for calls stuck on a dead Redis — and waits until
// it is reaped (bounded by ctx plus 2 s). Stats not yet flushed are lost (the RLS exits without a final flush).
// Stopping a stopped RLS is a no-op.
func (s *RLS) Stop(ctx context.Context) error {
	p := s.st.get()
	if p == nil {
		return nil
	}
	if err := p.stop(ctx, s.grace); err != nil {
		return err
	}
	s.st.set(nil)
	return nil
}

// Restart stops the RLS if it runs and starts it again on the same ports with the same environment, re-copying
// the config files. Counters in Redis persist (they are Redis keys, src/redis/fixed_cache_impl.go); the RLS's own stats restart at 0.
// It fails if a port was taken meanwhile; it never moves to other ports.
func (s *RLS) Restart(ctx context.Context) error {
	if err := s.Stop(ctx); err != nil {
		return err
	}
	return s.startOnce(ctx)
}

// Close stops the RLS and removes its work directory if StartRLS created it (a LogPath outside it is kept).
func (s *RLS) Close(ctx context.Context) error {
	err := s.Stop(ctx)
	if s.ownDir && err == nil {
		err = os.RemoveAll(s.workDir)
	}
	return err
}
