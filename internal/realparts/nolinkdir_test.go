package realparts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/safefile"
)

// TestDirsNeverEnterLinks (issue 27, "never write through a link",
// directories): the directories the real parts lay below the directory
// they are given (nginx's logs/ and tmp/ under its prefix; the RLS's
// runtime/ratelimit/config/ under its work directory, which is removed and
// recreated at every start) are refused when one is a symbolic link to a
// directory outside, naming it, and the outside stays empty (the RLS's
// removal did not empty it either).
func TestDirsNeverEnterLinks(t *testing.T) {
	cfg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg, "rl.yaml"), []byte("domain: rl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		rel  string // planted, relative to the base
		lay  func(base string) error
	}{
		{"nginx logs", nginxLogsDir, func(b string) error { return (&Nginx{prefix: b}).layDirs("") }},
		{"nginx tmp", nginxTempDir, func(b string) error { return (&Nginx{prefix: b}).layDirs("") }},
		{"nginx tmp/proxy", filepath.Join(nginxTempDir, "proxy"), func(b string) error { return (&Nginx{prefix: b}).layDirs("") }},
		{"rls runtime", "runtime", func(b string) error {
			return (&RLS{opts: RLSOptions{ConfigDir: cfg}, workDir: b, runtimeRoot: filepath.Join(b, "runtime")}).layRuntime()
		}},
		{"rls runtime/ratelimit", filepath.Join("runtime", rlsRuntimeSub), func(b string) error {
			return (&RLS{opts: RLSOptions{ConfigDir: cfg}, workDir: b, runtimeRoot: filepath.Join(b, "runtime")}).layRuntime()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			planted := filepath.Join(base, c.rel)
			if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
				t.Fatal(err)
			}
			outside := t.TempDir()
			// A file where the removal of runtime/ratelimit/config would reach
			// through the link.
			keep := filepath.Join(outside, rlsRuntimeSub, rlsRuntimeApp, "keep")
			if strings.HasPrefix(c.name, "rls runtime/") {
				keep = filepath.Join(outside, rlsRuntimeApp, "keep")
			}
			if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, planted); err != nil {
				t.Fatal(err)
			}
			err := c.lay(base)
			var re *safefile.RefusedError
			if !errors.As(err, &re) || !re.Dir || re.Path != planted {
				t.Fatalf("err = %v; want a *safefile.RefusedError naming %s", err, planted)
			}
			if _, err := os.Stat(keep); err != nil {
				t.Errorf("%s removed through the link: %v", keep, err)
			}
			n := 0
			_ = filepath.WalkDir(outside, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					n++
				}
				return nil
			})
			if n != 1 {
				t.Errorf("%s holds %d files, want only %s: written through the link", outside, n, keep)
			}
		})
	}
}
