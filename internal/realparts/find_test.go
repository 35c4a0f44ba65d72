package realparts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/userdirs"
)

// isolate gives FindRLS and FindRedis an empty world: no override, an empty $RLBENCH_HOME, an empty PATH, and a
// working directory outside any checkout. It returns $RLBENCH_HOME and the working directory.
func isolate(t *testing.T) (home, wd string) {
	t.Helper()
	home, wd = t.TempDir(), t.TempDir()
	t.Setenv(EnvRLSBin, "")
	t.Setenv(EnvRedisBin, "")
	t.Setenv(userdirs.EnvHome, home)
	t.Setenv("PATH", t.TempDir())
	t.Chdir(wd)
	return home, wd
}

// fakeBin writes an executable shell script at dir/name and, when stamp is not empty, the stamp file beside it.
func fakeBin(t *testing.T, dir, name, stamp string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if stamp != "" {
		if err := os.WriteFile(p+stampSuffix, []byte(stamp+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// The parts installed into the user's directory are found from any working directory: no go.mod needed (issue
// 25: every real-RLS scenario was NOT_RUN, "no go.mod above the working directory", outside the repository).
func TestFindRLSInUserBinFromAnyDirectory(t *testing.T) {
	home, _ := isolate(t)
	want := fakeBin(t, filepath.Join(home, userdirs.BinDir), RLSBinName, RLSModuleVersion)
	redis := fakeBin(t, filepath.Join(home, userdirs.BinDir), RedisBinName, "")
	if got, err := FindRLS(); err != nil || got != want {
		t.Fatalf("FindRLS = %q, %v; want %q", got, err, want)
	}
	if got, err := FindRedis(); err != nil || got != redis {
		t.Fatalf("FindRedis = %q, %v; want %q", got, err, redis)
	}
}

// Without $RLBENCH_HOME the user bin is the user cache directory's rlbench/bin.
func TestFindRLSInUserCacheDir(t *testing.T) {
	isolate(t)
	cache := t.TempDir()
	t.Setenv(userdirs.EnvHome, "")
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir())
	bin, err := userdirs.Bin()
	if err != nil {
		t.Fatal(err)
	}
	want := fakeBin(t, bin, RLSBinName, RLSModuleVersion)
	if got, err := FindRLS(); err != nil || got != want {
		t.Fatalf("FindRLS = %q, %v; want %q", got, err, want)
	}
}

// A checkout's .bin is found from any directory below it, but only a checkout of rlbench (its go.mod declares the
// module), and the user bin comes first.
func TestFindRLSInCheckout(t *testing.T) {
	home, wd := isolate(t)
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(wd, "go.mod"), "// a comment\nmodule github.com/rlbench/rlbench\n\ngo 1.26\n")
	want := fakeBin(t, filepath.Join(wd, ".bin"), RLSBinName, RLSModuleVersion)
	sub := filepath.Join(wd, "examples", "real-rls")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	if got, err := FindRLS(); err != nil || got != want {
		t.Fatalf("FindRLS below the checkout = %q, %v; want %q", got, err, want)
	}
	if h := InstallHint(); h != "`bash "+filepath.Join(wd, "scripts", "install-real-parts.sh")+"`" {
		t.Errorf("InstallHint in a checkout = %q", h)
	}
	user := fakeBin(t, filepath.Join(home, userdirs.BinDir), RLSBinName, RLSModuleVersion)
	if got, err := FindRLS(); err != nil || got != user {
		t.Fatalf("FindRLS with both = %q, %v; want the user bin %q", got, err, user)
	}

	other := t.TempDir()
	write(filepath.Join(other, "go.mod"), "module example.com/other\n")
	fakeBin(t, filepath.Join(other, ".bin"), RLSBinName, RLSModuleVersion)
	t.Setenv(userdirs.EnvHome, t.TempDir())
	t.Chdir(other)
	if got, err := FindRLS(); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("FindRLS in another module's checkout = %q, %v; want ErrNotInstalled", got, err)
	}
}

// PATH comes last; a candidate of another version is skipped, and named when nothing fits.
func TestFindRLSOnPathAndVersions(t *testing.T) {
	home, _ := isolate(t)
	stale := fakeBin(t, filepath.Join(home, userdirs.BinDir), RLSBinName, "github.com/envoyproxy/ratelimit/src/service_cmd@v0.0.0-old")
	pathDir := t.TempDir()
	t.Setenv("PATH", pathDir)
	want := fakeBin(t, pathDir, RLSBinName, RLSModuleVersion)
	if got, err := FindRLS(); err != nil || got != want {
		t.Fatalf("FindRLS = %q, %v; want PATH's %q past the stale %q", got, err, want, stale)
	}
	// Without a stamp the Go build info decides: this test binary is not envoyproxy/ratelimit.
	if err := os.Remove(want + stampSuffix); err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = FindRLS()
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("FindRLS with no good candidate: %v", err)
	}
	for _, s := range []string{"v0.0.0-old", "build info says", stale, RLSModuleVersion, "install-real-parts.sh"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

// Nothing installed: the error names the binary, where it looked, the install command and the override.
func TestFindNotInstalledSaysHow(t *testing.T) {
	home, _ := isolate(t)
	_, err := FindRLS()
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("FindRLS: %v", err)
	}
	for _, s := range []string{"service_cmd", filepath.Join(home, userdirs.BinDir), "PATH", "install-real-parts.sh", EnvRLSBin} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("FindRLS error %q does not say %q", err, s)
		}
	}
	if strings.Contains(err.Error(), "go.mod") {
		t.Errorf("FindRLS error %q still talks of go.mod", err)
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return // Debian's redis-server is found
	}
	if _, err := FindRedis(); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "redis-server") || !strings.Contains(err.Error(), EnvRedisBin) {
		t.Fatalf("FindRedis: %v", err)
	}
}
