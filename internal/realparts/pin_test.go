package realparts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInstallScriptPinsTheSameRLS: scripts/install-real-parts.sh builds
// the envoyproxy/ratelimit version RLSModuleVersion names, so CI's RLS is
// the one the tests expect.
func TestInstallScriptPinsTheSameRLS(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "scripts", "install-real-parts.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RLS_VERSION="([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("install-real-parts.sh sets no RLS_VERSION")
	}
	if !strings.HasSuffix(RLSModuleVersion, "@"+string(m[1])) {
		t.Fatalf("install-real-parts.sh pins %s, RLSModuleVersion is %s", m[1], RLSModuleVersion)
	}
}
