// Package realparts installs nothing but finds, starts, verifies and stops the real parts rlbench measures against:
// a private redis-server and the pinned envoyproxy/ratelimit service (RLS, binary service_cmd), both on 127.0.0.1
// only, on ports that are checked to belong to the started process. Binaries come from scripts/install-real-parts.sh
// (FindRLS, FindRedis say where they are looked for).
//
// The package never prints and never exits. Every process it starts is stopped by its own PID (SIGTERM, then
// SIGKILL after a bounded grace), and is also killed by the kernel if the starting process dies (Pdeathsig). It
// never signals a process it did not start.
package realparts

import (
	debugbuildinfo "debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/evidence/buildinfo"
	"github.com/rlbench/rlbench/internal/userdirs"
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

// RLSBinName and RedisBinName are the binaries' file names in the directories FindRLS and FindRedis search.
const (
	RLSBinName   = "service_cmd"
	RedisBinName = "redis-server"
)

// stampSuffix names the stamp file scripts/install-real-parts.sh writes beside service_cmd: it holds
// RLSModuleVersion.
const stampSuffix = ".version"

// RepoRoot walks up from the working directory to the first directory holding a go.mod and returns it.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("realparts: %w", err)
	}
	if root := goModAbove(dir, ""); root != "" {
		return root, nil
	}
	return "", errors.New("realparts: no go.mod above the working directory")
}

// goModAbove returns the first directory at or above dir holding a go.mod (declaring module when module is not
// empty), or "".
func goModAbove(dir, module string) string {
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && (module == "" || declaresModule(b, module)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// declaresModule reports whether the go.mod content declares module (its "module PATH" line).
func declaresModule(gomod []byte, module string) bool {
	for line := range strings.Lines(string(gomod)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == module
		}
	}
	return false
}

// checkouts returns the checkouts of rlbench (directories whose go.mod declares buildinfo.Module) above the running
// executable (a `go build -o rlbench` in a clone) and above the working directory, without duplicates.
func checkouts() []string {
	var starts, roots []string
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, s := range starts {
		if r := goModAbove(s, buildinfo.Module); r != "" && !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// searchDirs are the directories FindRLS and FindRedis look in after the override and before PATH: the user's
// installed parts (userdirs.Bin: $RLBENCH_HOME/bin, else the user cache directory's rlbench/bin), then .bin of
// each checkout of rlbench (checkouts).
func searchDirs() []string {
	var dirs []string
	if b, err := userdirs.Bin(); err == nil {
		dirs = append(dirs, b)
	}
	for _, r := range checkouts() {
		dirs = append(dirs, filepath.Join(r, ".bin"))
	}
	return dirs
}

// InstallHint says how to install the real parts: the install script of the checkout of rlbench found above the
// executable or the working directory ("`bash /path/to/scripts/install-real-parts.sh`"), else the script's path in
// a clone.
func InstallHint() string {
	if roots := checkouts(); len(roots) > 0 {
		return "`bash " + filepath.Join(roots[0], "scripts", "install-real-parts.sh") + "`"
	}
	return "`bash scripts/install-real-parts.sh` in a clone of https://" + buildinfo.Module
}

// FindRLS returns the path of envoyproxy/ratelimit's service_cmd, the first of:
//   - $RLBENCH_RLS_BIN if set (taken as is; it must be an executable file);
//   - service_cmd in the user's installed parts (userdirs.Bin: $RLBENCH_HOME/bin, else os.UserCacheDir()/rlbench/bin,
//     where scripts/install-real-parts.sh installs it);
//   - <checkout>/.bin/service_cmd of the checkout of rlbench above the executable, then above the working directory;
//   - service_cmd on PATH;
//
// each but the override being of the pinned version: the stamp file service_cmd.version beside it holds
// RLSModuleVersion (the install script writes it), or, without a stamp, the binary's Go build info
// (debug/buildinfo) says it was built from RLSModuleVersion. No such binary gives an error wrapping ErrNotInstalled
// that names service_cmd, the places searched, what was wrong with each candidate and the install command.
func FindRLS() (string, error) {
	if p := os.Getenv(EnvRLSBin); p != "" {
		return checkExec(p, EnvRLSBin)
	}
	var cands, problems []string
	for _, d := range searchDirs() {
		cands = append(cands, filepath.Join(d, RLSBinName))
	}
	if p, err := exec.LookPath(RLSBinName); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		cands = append(cands, p)
	}
	if c, ok := firstUsable(cands, &problems, checkRLSVersion); ok {
		return c, nil
	}
	_, version, _ := strings.Cut(RLSModuleVersion, "@")
	return "", notFound(RLSBinName+" (envoyproxy/ratelimit "+version+")", EnvRLSBin, problems, "PATH")
}

// checkRLSVersion checks that bin is the pinned service_cmd: its stamp file records RLSModuleVersion, or, with no
// stamp, its Go build info names RLSModuleVersion.
func checkRLSVersion(bin string) error {
	stamp := bin + stampSuffix
	b, err := os.ReadFile(stamp)
	switch {
	case err == nil:
		if got := strings.TrimSpace(string(b)); got != RLSModuleVersion {
			return fmt.Errorf("%s records %q, want %q", stamp, got, RLSModuleVersion)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: %v", stamp, err)
	}
	bi, err := debugbuildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("%s: no stamp %s and no Go build info (%v)", bin, stamp, err)
	}
	if got := bi.Path + "@" + bi.Main.Version; got != RLSModuleVersion {
		return fmt.Errorf("%s: no stamp %s and its build info says %s, want %s", bin, stamp, got, RLSModuleVersion)
	}
	return nil
}

// firstUsable returns the first of cands that exists, is an executable file
// and passes check (nil: no further check); what was wrong with each
// existing candidate before it is appended to problems.
func firstUsable(cands []string, problems *[]string, check func(string) error) (string, bool) {
	for _, c := range cands {
		if _, err := os.Stat(c); errors.Is(err, os.ErrNotExist) {
			continue
		}
		err := execFile(c)
		if err == nil && check != nil {
			err = check(c)
		}
		if err != nil {
			*problems = append(*problems, err.Error())
			continue
		}
		return c, true
	}
	return "", false
}

// notFound is FindRLS's and FindRedis's error when no candidate fits.
func notFound(what, env string, problems []string, also ...string) error {
	where := append(searchDirs(), also...)
	msg := fmt.Sprintf("realparts: %s not found in %s", what, strings.Join(where, ", "))
	if len(problems) > 0 {
		msg += " (" + strings.Join(problems, "; ") + ")"
	}
	return notInstalledError(fmt.Sprintf("%s; install it with %s, or set %s", msg, InstallHint(), env))
}

// MissingDetail is a Find function's ErrNotInstalled error told without its advice: without the "realparts: "
// prefix, the "; install it with ..." tail and ErrNotInstalled's own words, for a NOT_RUN reason that gives the
// advice once itself, e.g. "RLBENCH_HAPROXY_BIN stat /x/haproxy: no such file or directory" or "haproxy not found on
// PATH nor in /usr/sbin". Another error is returned as its message.
func MissingDetail(err error) string {
	msg := strings.TrimPrefix(err.Error(), "realparts: ")
	if !errors.Is(err, ErrNotInstalled) {
		return msg
	}
	if i := strings.Index(msg, "; install it with "); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSuffix(msg, ": "+ErrNotInstalled.Error())
}

// notInstalledError is an error that is ErrNotInstalled (errors.Is) and says itself how to install.
type notInstalledError string

func (e notInstalledError) Error() string { return string(e) }

func (e notInstalledError) Is(target error) bool { return target == ErrNotInstalled }

// FindRedis returns the path of redis-server, the first of: $RLBENCH_REDIS_BIN if set; redis-server in the user's
// installed parts (userdirs.Bin) and in the .bin of the checkout of rlbench above the executable or the working
// directory (as FindRLS); redis-server on PATH; /usr/bin, /usr/sbin or /usr/local/bin/redis-server (Debian's
// package). Absent: an error wrapping ErrNotInstalled that names redis-server, the places searched and the install
// command.
func FindRedis() (string, error) {
	if p := os.Getenv(EnvRedisBin); p != "" {
		return checkExec(p, EnvRedisBin)
	}
	var cands []string
	for _, d := range searchDirs() {
		cands = append(cands, filepath.Join(d, RedisBinName))
	}
	if p, err := exec.LookPath(RedisBinName); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server")
	var problems []string
	if c, ok := firstUsable(cands, &problems, nil); ok {
		return c, nil
	}
	return "", notFound(RedisBinName, EnvRedisBin, problems, "PATH", "/usr/bin", "/usr/sbin", "/usr/local/bin")
}

func checkExec(p, what string) (string, error) {
	if err := execFile(p); err != nil {
		return "", fmt.Errorf("realparts: %s %v: %w", what, err, ErrNotInstalled)
	}
	return p, nil
}

// execFile checks that p is an executable regular file (or a link to one); the error names p.
func execFile(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}
