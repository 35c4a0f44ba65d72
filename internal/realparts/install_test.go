package realparts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/userdirs"
)

// scriptCopy copies scripts/install-real-parts.sh into a fresh directory laid out as a checkout and returns the
// checkout's root.
func scriptCopy(t *testing.T) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "scripts", "install-real-parts.sh"))
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "scripts", "install-real-parts.sh"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return repo
}

// runInstall runs the copied install script with fake redis-server, nginx and go (the go "builds" a shell script
// into $GOBIN and records its arguments), so nothing is downloaded or installed system-wide.
func runInstall(t *testing.T, repo string, env ...string) (stderr string, goCalls string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	fakes := t.TempDir()
	calls := filepath.Join(fakes, "go-calls")
	fakeBin(t, fakes, "redis-server", "")
	fakeBin(t, fakes, "nginx", "")
	fakeBin(t, fakes, "prometheus", "")
	fakeBin(t, fakes, "jq", "")
	fakeBin(t, fakes, "haproxy", "")
	goScript := "#!/bin/sh\necho \"$@\" >>" + calls + "\nprintf '#!/bin/sh\\n' >\"$GOBIN/service_cmd\" && chmod 755 \"$GOBIN/service_cmd\"\n"
	if err := os.WriteFile(filepath.Join(fakes, "go"), []byte(goScript), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(repo, "scripts", "install-real-parts.sh"))
	cmd.Env = append(os.Environ(), "RLBENCH_REDIS_BIN="+filepath.Join(fakes, "redis-server"),
		"RLBENCH_NGINX_BIN="+filepath.Join(fakes, "nginx"), "RLBENCH_PROMETHEUS_BIN="+filepath.Join(fakes, "prometheus"),
		"RLBENCH_JQ_BIN="+filepath.Join(fakes, "jq"), "RLBENCH_HAPROXY_BIN="+filepath.Join(fakes, "haproxy"),
		"GO="+filepath.Join(fakes, "go"))
	cmd.Env = append(cmd.Env, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("install-real-parts.sh: %v\n%s%s", err, out.String(), errb.String())
	}
	b, _ := os.ReadFile(calls)
	return errb.String(), string(b)
}

// The install script builds service_cmd into the user's directory of installed parts (userdirs.Bin), where FindRLS
// finds it from any directory, says how long the build takes, and keeps <repo>/.bin/service_cmd as a link; a second
// run builds nothing.
func TestInstallScriptInstallsIntoUserBin(t *testing.T) {
	repo := scriptCopy(t)
	home := t.TempDir()
	stderr, calls := runInstall(t, repo, userdirs.EnvHome+"="+home)
	bin := filepath.Join(home, userdirs.BinDir)
	if !strings.Contains(calls, "install -v "+RLSModuleVersion) {
		t.Errorf("go was called with %q, want install -v %s", calls, RLSModuleVersion)
	}
	for _, s := range []string{"building envoyproxy/ratelimit: about 3–17 min on 2 cores the first time; go: downloading lines follow",
		"into " + bin, "built service_cmd in ", "prometheus present: ", "jq present: "} {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr does not say %q:\n%s", s, stderr)
		}
	}
	if target, err := os.Readlink(filepath.Join(repo, ".bin", "service_cmd")); err != nil || target != filepath.Join(bin, "service_cmd") {
		t.Errorf("<repo>/.bin/service_cmd -> %q, %v; want a link to %s", target, err, bin)
	}

	stderr, calls2 := runInstall(t, repo, userdirs.EnvHome+"="+home)
	if calls2 != "" || !strings.Contains(stderr, "skipping build") {
		t.Errorf("second run: go called %q; stderr:\n%s", calls2, stderr)
	}

	isolate(t)
	t.Setenv(userdirs.EnvHome, home)
	if got, err := FindRLS(); err != nil || got != filepath.Join(bin, "service_cmd") {
		t.Fatalf("FindRLS after the install = %q, %v", got, err)
	}
}

// A service_cmd an earlier install left in <repo>/.bin is copied into the user's directory, not rebuilt.
func TestInstallScriptAdoptsRepoBin(t *testing.T) {
	repo := scriptCopy(t)
	fakeBin(t, filepath.Join(repo, ".bin"), RLSBinName, RLSModuleVersion)
	home := t.TempDir()
	stderr, calls := runInstall(t, repo, userdirs.EnvHome+"="+home)
	if calls != "" {
		t.Errorf("go was called: %q", calls)
	}
	if !strings.Contains(stderr, "copying it to") {
		t.Errorf("stderr:\n%s", stderr)
	}
	isolate(t)
	t.Setenv(userdirs.EnvHome, home)
	if got, err := FindRLS(); err != nil || got != filepath.Join(home, userdirs.BinDir, "service_cmd") {
		t.Fatalf("FindRLS after the install = %q, %v", got, err)
	}
}
