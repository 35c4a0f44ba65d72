package evidence_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// TestWritersNeverEnterLinkedDir (issue 27, "never write through a link",
// directories): every writer of package evidence that writes below a
// scenario directory, given one where the subdirectory it writes into
// (stats/, rls/, accesslog/, nginx/, nginx/<proxy>/, receipts/) is a
// symbolic link to a directory outside, refuses with a *safefile.RefusedError
// naming that subdirectory, and the directory outside stays empty. Before,
// os.MkdirAll followed the link and the files were written outside.
func TestWritersNeverEnterLinkedDir(t *testing.T) {
	const proxy, label = "edge", evidence.LabelBefore
	writers := []struct {
		name  string
		dirs  []string // the subdirectories planted, one at a time, relative to d
		write func(d evidence.Dir) error
	}{
		{"WriteStats", []string{evidence.StatsDir}, func(d evidence.Dir) error {
			return evidence.WriteStats(d, proxy, label, "text", []byte("a.b: 1\n"), map[string]int{"a": 1})
		}},
		{"WriteRLSMetrics", []string{evidence.RLSDir}, func(d evidence.Dir) error {
			return evidence.WriteRLSMetrics(d, &evidence.RLSMetrics{Schema: evidence.RLSMetricsSchema, Label: label}, []byte("x 1\n"))
		}},
		{"CreateAccessLog", []string{evidence.AccessLogDir}, func(d evidence.Dir) error {
			f, err := evidence.CreateAccessLog(d, proxy)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"WriteNginxAccessLog", []string{"nginx", evidence.NginxPath(proxy, "")}, func(d evidence.Dir) error {
			_, err := evidence.WriteNginxAccessLog(d, proxy, "access.log", strings.NewReader(""))
			return err
		}},
		{"WriteNginxErrorLog", []string{"nginx", evidence.NginxPath(proxy, "")}, func(d evidence.Dir) error {
			_, err := evidence.WriteNginxErrorLog(d, proxy, "error.log", strings.NewReader(""))
			return err
		}},
		{"WriteNginxStubStatus", []string{"nginx", evidence.NginxPath(proxy, "")}, func(d evidence.Dir) error {
			return evidence.WriteNginxStubStatus(d, proxy, label, []byte("Active connections: 1\n"), &nginxrec.StubStatus{})
		}},
		{"WriteNginxConf", []string{"nginx", evidence.NginxPath(proxy, "")}, func(d evidence.Dir) error {
			return evidence.WriteNginxConf(d, proxy, []byte("daemon off;\n"))
		}},
		{"MkdirFor receipts/", []string{evidence.ReceiptsDir}, func(d evidence.Dir) error {
			return d.MkdirFor(d.CollectedReceipts("backend-1"))
		}},
		{"MkdirFor rls/redis/", []string{evidence.RLSDir, evidence.RedisDir}, func(d evidence.Dir) error {
			return d.MkdirFor(filepath.Join(d.Redis(), "redis.log"))
		}},
	}
	for _, w := range writers {
		for _, rel := range w.dirs {
			t.Run(w.name+"/"+rel, func(t *testing.T) {
				d := evidence.Dir(t.TempDir())
				planted := d.Path(rel)
				if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
					t.Fatal(err)
				}
				outside := t.TempDir()
				if err := os.Symlink(outside, planted); err != nil {
					t.Fatal(err)
				}
				err := w.write(d)
				var re *safefile.RefusedError
				if !errors.As(err, &re) || !re.Dir || !strings.Contains(err.Error(), planted+": refusing to write below it: it is a symbolic link to "+outside) {
					t.Fatalf("err = %v; want a *safefile.RefusedError naming %s", err, planted)
				}
				if es, err := os.ReadDir(outside); err != nil || len(es) > 0 {
					t.Errorf("%s holds %v (%v): written through the link", outside, es, err)
				}
			})
		}
	}
	// The directory the writer was given may itself be a link (the user
	// named it): followed, and the files are written in its target.
	target := t.TempDir()
	d := evidence.Dir(filepath.Join(t.TempDir(), "out"))
	if err := os.Symlink(target, string(d)); err != nil {
		t.Fatal(err)
	}
	if err := evidence.WriteStats(d, proxy, label, "text", []byte("a.b: 1\n"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(target, evidence.StatsDir, proxy+"."+label+".txt")); err != nil {
		t.Errorf("through the user's own link: %v", err)
	}
}
