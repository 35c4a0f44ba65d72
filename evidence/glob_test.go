package evidence_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestGlobTakesTheDirectoryLiterally: a scenario directory whose name holds
// a pattern character ("run[1]", "a*b", "c[-3]") keeps its files: the
// trial found its access logs silently unread (a damaged log then PASSed),
// or "syntax error in pattern".
func TestGlobTakesTheDirectoryLiterally(t *testing.T) {
	for _, name := range []string{"plain", "run[1]", "a*b", "c[-3]", `q?\x`} {
		t.Run(name, func(t *testing.T) {
			d := evidence.Dir(filepath.Join(t.TempDir(), name))
			for _, f := range []string{"accesslog/a.log", "accesslog/b.log", "accesslog/notes.txt", "nginx/x/nginx.conf", "nginx/y/other"} {
				if err := os.MkdirAll(filepath.Dir(d.Path(f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(d.Path(f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := d.Glob(evidence.AccessLogDir + "/*.log")
			if want := []string{d.Path("accesslog/a.log"), d.Path("accesslog/b.log")}; err != nil || !slices.Equal(got, want) {
				t.Errorf("accesslog: %q %v, want %q", got, err, want)
			}
			got, err = d.Glob(evidence.NginxDir + "/*/" + evidence.NginxConfFile)
			if want := []string{d.Path("nginx/x/nginx.conf")}; err != nil || !slices.Equal(got, want) {
				t.Errorf("nginx: %q %v, want %q", got, err, want)
			}
			if got, err := d.Glob("absent/*.log"); err != nil || len(got) != 0 {
				t.Errorf("absent: %q %v", got, err)
			}
			if _, err := d.Glob("accesslog/[.log"); err != filepath.ErrBadPattern {
				t.Errorf("bad pattern: %v", err)
			}
		})
	}
}
