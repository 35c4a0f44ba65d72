package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCollectEnvoyEmptyBody: an admin /stats that answers 200 with an empty
// body was saved as a snapshot of zeros; it is an error (exit 1) naming the
// URL, and no parsed snapshot is written for analyze to compare.
func TestCollectEnvoyEmptyBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	out := t.TempDir()
	code, _, stderr := runCLI(t, "collect", "envoy", "--admin", srv.URL, "--proxy", "proxy-a", "--label", "before", "--out", out)
	if code != ExitError || !strings.Contains(stderr, srv.URL+"/stats: no stats") {
		t.Fatalf("exit %d, stderr %q: want 1 and a no-stats error naming the URL", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "stats", "proxy-a.before.json")); !os.IsNotExist(err) {
		t.Errorf("a snapshot was written: %v", err)
	}
}
