// Package realparts installs nothing but finds, starts, verifies and stops the real parts rlbench measures against:
// a private redis-server and the pinned envoyproxy/ratelimit service (RLS, binary service_cmd), both on 127.0.0.1
// only, on ports that are checked to belong to the started process. Binaries come from scripts/install-real-parts.sh.
//
// The package never prints and never exits. Every process it starts is stopped by its own PID (SIGTERM, then
// SIGKILL after a bounded grace), and is also killed by the kernel if the starting process dies (Pdeathsig). It
// never signals a process it did not start.
package realparts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RLSModuleVersion is the pinned envoyproxy/ratelimit build: main-branch commit 3fb702589d36 of 2026-01-22, the
// version rlbench's integration tests pin and assert the behaviour of. The module has no tags,
// so @latest drifts and must not be used.
const RLSModuleVersion = "github.com/envoyproxy/ratelimit/src/service_cmd@v1.4.1-0.20260122083618-3fb702589d36"

// Environment variables that override where the binaries are found.
const (
	EnvRLSBin   = "RLBENCH_RLS_BIN"
	EnvRedisBin = "RLBENCH_REDIS_BIN"
)

// ErrNotInstalled is wrapped by FindRLS and FindRedis when a binary is absent.
var ErrNotInstalled = errors.New("not installed: run scripts/install-real-parts.sh")

// RepoRoot walks up from the working directory to the first directory holding a go.mod and returns it.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("realparts: %w", err)
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("realparts: no go.mod above the working directory")
		}
		dir = parent
	}
}

// FindRLS returns the path of envoyproxy/ratelimit's service_cmd: $RLBENCH_RLS_BIN if set (taken as is, it must
// be an executable file), else <repo>/.bin/service_cmd, which must come with the stamp file
// <repo>/.bin/service_cmd.version holding RLSModuleVersion (written by scripts/install-real-parts.sh). A missing
// binary or a stamp for another version gives an error wrapping ErrNotInstalled.
func FindRLS() (string, error) {
	if p := os.Getenv(EnvRLSBin); p != "" {
		return checkExec(p, EnvRLSBin)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%w (%w)", err, ErrNotInstalled)
	}
	bin := filepath.Join(root, ".bin", "service_cmd")
	if _, err := checkExec(bin, "service_cmd"); err != nil {
		return "", err
	}
	stamp := bin + ".version"
	b, err := os.ReadFile(stamp)
	if err != nil {
		return "", fmt.Errorf("realparts: %s: %v: %w", stamp, err, ErrNotInstalled)
	}
	if got := strings.TrimSpace(string(b)); got != RLSModuleVersion {
		return "", fmt.Errorf("realparts: %s records %q, want %q: %w", stamp, got, RLSModuleVersion, ErrNotInstalled)
	}
	return bin, nil
}

// FindRedis returns the path of redis-server: $RLBENCH_REDIS_BIN if set, else redis-server on PATH, else
// /usr/bin/redis-server or /usr/sbin/redis-server (Debian's package). Absent: an error wrapping ErrNotInstalled.
func FindRedis() (string, error) {
	if p := os.Getenv(EnvRedisBin); p != "" {
		return checkExec(p, EnvRedisBin)
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if _, err := checkExec(p, "redis-server"); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("realparts: redis-server not found on PATH: %w", ErrNotInstalled)
}

func checkExec(p, what string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("realparts: %s %s: %v: %w", what, p, err, ErrNotInstalled)
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("realparts: %s %s is not an executable file: %w", what, p, ErrNotInstalled)
	}
	return p, nil
}
