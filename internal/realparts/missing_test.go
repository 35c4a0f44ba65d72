package realparts

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingDetail: the Find functions' not-installed errors lose their advice (said once by the NOT_RUN reason)
// and keep what was looked at; another error is its message.
func TestMissingDetail(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-haproxy")
	t.Setenv(EnvHAProxyBin, missing)
	_, err := FindHAProxy()
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("FindHAProxy with %s=%s: %v, want ErrNotInstalled", EnvHAProxyBin, missing, err)
	}
	d := MissingDetail(err)
	if !strings.HasPrefix(d, EnvHAProxyBin) || !strings.Contains(d, missing) || strings.Contains(d, "install") || strings.Contains(d, "realparts:") {
		t.Errorf("MissingDetail(%q) = %q: want the variable and the path, no advice, no package prefix", err, d)
	}

	other := errors.New("realparts: haproxy -v: exit status 1")
	if d := MissingDetail(other); d != "haproxy -v: exit status 1" {
		t.Errorf("MissingDetail(%q) = %q", other, d)
	}

	// FindRedis's and FindRLS's error when no candidate fits (a redis-server in /usr/bin cannot be hidden here).
	nf := notFound(RedisBinName, EnvRedisBin, []string{"/x/redis-server: not executable"}, "PATH")
	if d := MissingDetail(nf); !strings.HasPrefix(d, "redis-server not found in ") || !strings.Contains(d, "/x/redis-server: not executable") ||
		strings.Contains(d, "install it") || strings.Contains(d, EnvRedisBin) {
		t.Errorf("MissingDetail(%q) = %q: want where it was looked for and why, no advice", nf, d)
	}
}
