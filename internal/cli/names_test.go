package cli

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestNamesThatBecomePathsAreRefused (issue 10, "path traversal"): every
// flag whose value becomes part of a path in an evidence directory is
// checked with evidence.CheckName before anything runs: `../x`, absolute
// paths, NUL, separators and dots are usage errors (exit 2) at every entry
// point. (Plan names: internal/runner TestPlanNamesThatBecomePaths.)
func TestNamesThatBecomePathsAreRefused(t *testing.T) {
	bad := []string{"../x", "../../..", "/etc/x", "a\x00b", "a/b", `a\b`, "be.fore", ".."}
	never := func(string) error { t.Fatal("ran with a bad name"); return nil }
	entry := map[string]func(name string) (*cobra.Command, []string){
		"collect envoy --proxy": func(n string) (*cobra.Command, []string) {
			return NewCollectEnvoyCmd(tio, func(*CollectEnvoyOptions) error { return never(n) }),
				[]string{"--admin", "http://127.0.0.1:1", "--proxy", n, "--label", "before", "--out", "ev"}
		},
		"collect envoy --label": func(n string) (*cobra.Command, []string) {
			return NewCollectEnvoyCmd(tio, func(*CollectEnvoyOptions) error { return never(n) }),
				[]string{"--admin", "http://127.0.0.1:1", "--proxy", "a", "--label", n, "--out", "ev"}
		},
		"collect prometheus --label": func(n string) (*cobra.Command, []string) {
			return NewCollectPrometheusCmd(tio, func(*CollectPrometheusOptions) error { return never(n) }),
				[]string{"--url", "http://127.0.0.1:1/metrics", "--label", n, "--out", "ev"}
		},
		"collect nginx-access-log --proxy": func(n string) (*cobra.Command, []string) {
			return NewCollectNginxAccessLogCmd(tio, func(*CollectNginxAccessLogOptions) error { return never(n) }),
				[]string{"--proxy", n, "--out", "ev", "a.log"}
		},
		"collect nginx-status --proxy": func(n string) (*cobra.Command, []string) {
			return NewCollectNginxStatusCmd(tio, func(*CollectNginxStatusOptions) error { return never(n) }),
				[]string{"--url", "http://127.0.0.1:1/s", "--proxy", n, "--label", "before", "--out", "ev"}
		},
		"collect nginx-status --label": func(n string) (*cobra.Command, []string) {
			return NewCollectNginxStatusCmd(tio, func(*CollectNginxStatusOptions) error { return never(n) }),
				[]string{"--url", "http://127.0.0.1:1/s", "--proxy", "edge", "--label", n, "--out", "ev"}
		},
		"attack --target NAME": func(n string) (*cobra.Command, []string) {
			return NewAttackCmd(tio, func(*AttackOptions) error { return never(n) }),
				[]string{"--target", n + "=http://127.0.0.1:1", "--ids", "1", "--out", "ev"}
		},
	}
	for what, mk := range entry {
		for _, n := range bad {
			cmd, args := mk(n)
			err := execute(cmd, args)
			var ue *UsageError
			if err == nil || !errors.As(err, &ue) || exitCode(err, io.Discard) != ExitUsage || !strings.Contains(err.Error(), "simple name") {
				t.Errorf("%s %q: err %v, want a usage error (exit 2) saying it must be a simple name", what, n, err)
			}
		}
	}
}
