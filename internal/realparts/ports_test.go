package realparts

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv selects a helper mode when the test binary re-executes itself as a child process.
const helperEnv = "RLBENCH_REALPARTS_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "idle": // hold no socket, wait to be killed
		fmt.Println("ready")
		select {}
	case "ignore-term": // ignore SIGTERM so only SIGKILL ends it
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		select {}
	case "reuseport": // listen on $PORT with SO_REUSEPORT, as envoyproxy/ratelimit does
		port := os.Getenv("PORT")
		l, err := reusePortListen("127.0.0.1:" + port)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		defer l.Close()
		fmt.Println("ready")
		select {}
	}
	os.Exit(3)
}

func reusePortListen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}

// startHelper re-executes the test binary in the given mode and waits for its "ready" line. The child is stopped
// by its PID in t.Cleanup.
func startHelper(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{helperEnv + "=" + mode}, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = procAttr(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper %s: got %q, %v", mode, line, err)
	}
	return cmd
}

func listenLocal(t *testing.T) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Addr().(*net.TCPAddr).Port
}

func TestPortOwnershipSelf(t *testing.T) {
	_, port := listenLocal(t)
	o, err := PortOwnership(os.Getpid(), port)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owned != 1 || o.Foreign != 0 {
		t.Fatalf("own listener on %d: got %+v, want Owned 1 Foreign 0", port, o)
	}
	if err := VerifyListener(os.Getpid(), port); err != nil {
		t.Fatalf("VerifyListener(self): %v", err)
	}
}

func TestPortOwnershipOtherPID(t *testing.T) {
	_, port := listenLocal(t)
	child := startHelper(t, "idle")
	o, err := PortOwnership(child.Process.Pid, port)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owned != 0 || o.Foreign != 1 {
		t.Fatalf("listener of pid %d seen from pid %d: got %+v, want Owned 0 Foreign 1", os.Getpid(), child.Process.Pid, o)
	}
	if err := VerifyListener(child.Process.Pid, port); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("VerifyListener(child): got %v, want ErrNotOwned", err)
	}
}

func TestPortOwnershipNotListening(t *testing.T) {
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	o, err := PortOwnership(os.Getpid(), ports[0])
	if err != nil {
		t.Fatal(err)
	}
	if o.Owned != 0 || o.Foreign != 0 {
		t.Fatalf("closed port %d: got %+v", ports[0], o)
	}
	if err := VerifyListener(os.Getpid(), ports[0]); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("VerifyListener on closed port: got %v, want ErrNotOwned", err)
	}
}

// The silent SO_REUSEPORT clash of envoyproxy/ratelimit: two processes listen on one port without an error.
func TestPortOwnershipReusePortClash(t *testing.T) {
	l, err := reusePortListen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	child := startHelper(t, "reuseport", "PORT="+strconv.Itoa(port))
	o, err := PortOwnership(os.Getpid(), port)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owned != 1 || o.Foreign != 1 {
		t.Fatalf("shared port %d from self: got %+v, want Owned 1 Foreign 1", port, o)
	}
	o, err = PortOwnership(child.Process.Pid, port)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owned != 1 || o.Foreign != 1 {
		t.Fatalf("shared port %d from child: got %+v, want Owned 1 Foreign 1", port, o)
	}
	if err := VerifyListener(os.Getpid(), port); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("VerifyListener on shared port: got %v, want ErrNotOwned", err)
	}
}

func TestPortOwnershipNoSuchPID(t *testing.T) {
	child := startHelper(t, "idle")
	pid := child.Process.Pid
	_ = child.Process.Kill()
	_ = child.Wait()
	if _, err := PortOwnership(pid, 80); err == nil {
		t.Fatalf("PortOwnership of reaped pid %d: no error", pid)
	}
}

// The ss fallback parser agrees with the /proc reading on live `ss -Hltnp` output.
func TestParseSSLive(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss not installed")
	}
	_, port := listenLocal(t)
	out, err := exec.Command("ss", "-Hltnp").Output()
	if err != nil {
		t.Skipf("ss -Hltnp: %v", err)
	}
	o, err := parseSS("ss", out, os.Getpid(), port)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owned != 1 || o.Foreign != 0 {
		t.Fatalf("ss view of own port %d: got %+v\n%s", port, o, out)
	}
	o, err = parseSS("ss", out, os.Getpid()+1_000_000, port)
	if err != nil {
		t.Fatal(err)
	}
	if o.Owned != 0 || o.Foreign != 1 {
		t.Fatalf("ss view of port %d for another pid: got %+v", port, o)
	}
}

func TestParseProcNetTCPErrors(t *testing.T) {
	hdr := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	good := "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000 100 0 0 10 0\n"
	inos, err := parseProcNetTCP("tcp", []byte(hdr+good), 0x1F90)
	if err != nil || len(inos) != 1 || inos[0] != 4242 {
		t.Fatalf("good row: %v %v", inos, err)
	}
	_, err = parseProcNetTCP("/proc/1/net/tcp", []byte(hdr+good+"   1: 0100007F:ZZZZ 00000000:0000 0A 0 0 0 0 0 1\n"), 80)
	if err == nil || !strings.Contains(err.Error(), "/proc/1/net/tcp:3") {
		t.Fatalf("bad port: got %v, want error naming /proc/1/net/tcp:3", err)
	}
	_, err = parseProcNetTCP("x", []byte(hdr+"   1: short\n"), 80)
	if err == nil || !strings.Contains(err.Error(), "x:2") {
		t.Fatalf("short row: got %v, want error naming x:2", err)
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ps, err := FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: bad or duplicate %d", ps, p)
		}
		seen[p] = true
	}
}

// stop escalates to SIGKILL when SIGTERM is ignored, within the grace plus a bounded moment.
func TestProcStopEscalates(t *testing.T) {
	dir := t.TempDir()
	p, err := startProc(os.Args[0], []string{"-test.run=^$"}, []string{helperEnv + "=ignore-term"}, dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	waitFileHas(t, filepath.Join(dir, "log"), "ready")
	start := time.Now()
	if err := p.stop(context.Background(), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	if el < 300*time.Millisecond || el > 5*time.Second {
		t.Fatalf("stop took %v, want >= grace 300ms and bounded", el)
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("exit status %v, want killed by SIGKILL", p.cmd.ProcessState)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", p.pid())); err == nil {
		t.Fatalf("pid %d still present after stop", p.pid())
	}
}

func TestProcStopTerm(t *testing.T) {
	dir := t.TempDir()
	p, err := startProc(os.Args[0], []string{"-test.run=^$"}, []string{helperEnv + "=idle"}, dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	waitFileHas(t, filepath.Join(dir, "log"), "ready")
	if err := p.stop(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("exit status %v, want ended by SIGTERM", p.cmd.ProcessState)
	}
}

// waitFileHas polls (bounded to 10 s) until the file contains s.
func waitFileHas(t *testing.T, path, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), s) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never contained %q", path, s)
}

func TestFindOverrides(t *testing.T) {
	t.Setenv(EnvRLSBin, filepath.Join(t.TempDir(), "absent"))
	if _, err := FindRLS(); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "install-real-parts.sh") {
		t.Fatalf("FindRLS with absent override: %v", err)
	}
	t.Setenv(EnvRedisBin, t.TempDir()) // a directory is not an executable
	if _, err := FindRedis(); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("FindRedis with a directory: %v", err)
	}
	t.Setenv(EnvRedisBin, os.Args[0])
	if p, err := FindRedis(); err != nil || p != os.Args[0] {
		t.Fatalf("FindRedis override: %q %v", p, err)
	}
}

func TestFindRLSStamp(t *testing.T) {
	t.Setenv(EnvRLSBin, "")
	t.Setenv("RLBENCH_HOME", t.TempDir()) // no user bin: the checkout's .bin is next
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("RepoRoot %s has no go.mod", root)
	}
	p, err := FindRLS()
	if errors.Is(err, ErrNotInstalled) {
		t.Skipf("service_cmd not installed: %v", err)
	}
	if err != nil || p != filepath.Join(root, ".bin", "service_cmd") {
		t.Fatalf("FindRLS: %q %v", p, err)
	}
}

func TestStartRLSBadOptions(t *testing.T) {
	ctx := context.Background()
	cfg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg, "c.yaml"), []byte("domain: d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    RLSOptions
		want string
	}{
		{"no redis", RLSOptions{Bin: "/bin/true", ConfigDir: cfg}, "RedisAddr"},
		{"format", RLSOptions{Bin: "/bin/true", ConfigDir: cfg, RedisAddr: "127.0.0.1:1", LogFormat: "xml"}, "LogFormat"},
		{"two sinks", RLSOptions{Bin: "/bin/true", ConfigDir: cfg, RedisAddr: "127.0.0.1:1", Prometheus: true, StatsdAddr: "127.0.0.1:9"}, "exclusive"},
		{"reserved env", RLSOptions{Bin: "/bin/true", ConfigDir: cfg, RedisAddr: "127.0.0.1:1", ExtraEnv: []string{"GRPC_PORT=1"}}, "ExtraEnv[0]"},
		{"bad env", RLSOptions{Bin: "/bin/true", ConfigDir: cfg, RedisAddr: "127.0.0.1:1", ExtraEnv: []string{"X"}}, "KEY=value"},
		{"empty config dir", RLSOptions{Bin: "/bin/true", ConfigDir: t.TempDir(), RedisAddr: "127.0.0.1:1"}, "no *.yaml"},
	}
	for _, c := range cases {
		if _, err := StartRLS(ctx, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want error containing %q", c.name, err, c.want)
		}
	}
}
