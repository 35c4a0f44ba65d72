package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/userdirs"
)

// Outside any checkout with nothing installed, a real-RLS scenario is NOT_RUN with a reason that names the missing
// binary and the install command, not "no go.mod above the working directory" (issue 25).
func TestRealNotInstalledReasonNamesBinaryAndInstall(t *testing.T) {
	t.Setenv(realparts.EnvRLSBin, "")
	t.Setenv(userdirs.EnvHome, t.TempDir())
	t.Setenv("PATH", t.TempDir())
	t.Chdir(t.TempDir())
	plan, err := ParsePlan("real.yaml", []byte(realPlanYAML))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runDir, err := Run(ctx, plan, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "01-shared-real-rls", "1", "NOT_RUN"))
	if err != nil {
		t.Fatal(err)
	}
	reason := string(b)
	for _, s := range []string{NotInstalledReason + ": ", "service_cmd", "install-real-parts.sh", realparts.EnvRLSBin} {
		if !strings.Contains(reason, s) {
			t.Errorf("NOT_RUN reason %q does not say %q", reason, s)
		}
	}
	if strings.Contains(reason, "go.mod") {
		t.Errorf("NOT_RUN reason %q still talks of go.mod", reason)
	}
}
