package evidence_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// TestWritersNeverFollowLinks (issue 27, "never write through a link"):
// every writer of package evidence, given a scenario directory where its
// file is already a symbolic link to a file outside (or a FIFO), refuses
// with a *safefile.RefusedError naming the file, and the file outside is
// unchanged. Without safefile, os.Create and os.WriteFile wrote through the
// link (and blocked on the FIFO).
func TestWritersNeverFollowLinks(t *testing.T) {
	const proxy, label = "edge", evidence.LabelBefore
	writers := []struct {
		name  string
		file  func(d evidence.Dir) string // the path that is planted
		write func(d evidence.Dir) error
	}{
		{"WriteJSONFile scenario.json", evidence.Dir.Scenario, func(d evidence.Dir) error {
			return evidence.WriteJSONFile(d.Scenario(), evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "s"})
		}},
		{"WriteNotRun", evidence.Dir.NotRun, func(d evidence.Dir) error { return evidence.WriteNotRun(d, "reason") }},
		{"WriteStats raw", func(d evidence.Dir) string { return d.StatsSnapshot(proxy, label, ".txt") }, func(d evidence.Dir) error {
			return evidence.WriteStats(d, proxy, label, "text", []byte("a.b: 1\n"), nil)
		}},
		{"WriteStats parsed", func(d evidence.Dir) string { return d.StatsSnapshot(proxy, label, ".json") }, func(d evidence.Dir) error {
			return evidence.WriteStats(d, proxy, label, "text", nil, map[string]int{"a": 1})
		}},
		{"WriteRLSMetrics raw", func(d evidence.Dir) string { return d.RLSMetrics(label, ".prom") }, func(d evidence.Dir) error {
			return evidence.WriteRLSMetrics(d, &evidence.RLSMetrics{Schema: evidence.RLSMetricsSchema, Label: label}, []byte("x 1\n"))
		}},
		{"WriteRLSMetrics parsed", func(d evidence.Dir) string { return d.RLSMetrics(label, ".json") }, func(d evidence.Dir) error {
			return evidence.WriteRLSMetrics(d, &evidence.RLSMetrics{Schema: evidence.RLSMetricsSchema, Label: label}, nil)
		}},
		{"CreateAccessLog", func(d evidence.Dir) string { return d.AccessLog(proxy) }, func(d evidence.Dir) error {
			f, err := evidence.CreateAccessLog(d, proxy)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"Create requests.jsonl", evidence.Dir.Requests, func(d evidence.Dir) error { return createClose(evidence.Create, d.Requests()) }},
		{"Create seal", func(d evidence.Dir) string { return evidence.StatePath(d.Requests()) }, func(d evidence.Dir) error {
			return createClose(evidence.Create, d.Requests())
		}},
		{"CreateSync receipts.jsonl", evidence.Dir.Receipts, func(d evidence.Dir) error { return createClose(evidence.CreateSync, d.Receipts()) }},
		{"WriteLines", evidence.Dir.Faults, func(d evidence.Dir) error { return evidence.WriteLines(d.Faults(), []evidence.Fault{}) }},
		{"WriteNginxAccessLog raw", nginxFile(proxy, evidence.NginxAccessLogFile), func(d evidence.Dir) error {
			_, err := evidence.WriteNginxAccessLog(d, proxy, "access.log", strings.NewReader(""))
			return err
		}},
		{"WriteNginxAccessLog parsed", nginxFile(proxy, evidence.NginxAccessFile), func(d evidence.Dir) error {
			_, err := evidence.WriteNginxAccessLog(d, proxy, "access.log", strings.NewReader(""))
			return err
		}},
		{"WriteNginxErrorLog", nginxFile(proxy, evidence.NginxErrorLogFile), func(d evidence.Dir) error {
			_, err := evidence.WriteNginxErrorLog(d, proxy, "error.log", strings.NewReader(""))
			return err
		}},
		{"WriteNginxStubStatus raw", nginxFile(proxy, evidence.NginxStubStatusRaw(label)), func(d evidence.Dir) error {
			return evidence.WriteNginxStubStatus(d, proxy, label, []byte("Active connections: 1\n"), nil)
		}},
		{"WriteNginxStubStatus parsed", nginxFile(proxy, evidence.NginxStubStatusJSON(label)), func(d evidence.Dir) error {
			return evidence.WriteNginxStubStatus(d, proxy, label, nil, &nginxrec.StubStatus{})
		}},
		{"WriteNginxConf", nginxFile(proxy, evidence.NginxConfFile), func(d evidence.Dir) error {
			return evidence.WriteNginxConf(d, proxy, []byte("daemon off;\n"))
		}},
	}
	for _, w := range writers {
		for _, kind := range []string{"symlink", "fifo"} {
			t.Run(w.name+"/"+kind, func(t *testing.T) {
				d := evidence.Dir(t.TempDir())
				p := w.file(d)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				outside := plantAt(t, kind, p)
				err := w.write(d)
				var re *safefile.RefusedError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), p+": refusing to write") {
					t.Fatalf("err = %v; want a *safefile.RefusedError naming %s", err, p)
				}
				assertUnchanged(t, outside)
			})
		}
	}
}

func createClose(create func(string) (*evidence.Writer, error), path string) error {
	w, err := create(path)
	if err != nil {
		return err
	}
	return w.Close()
}

func nginxFile(proxy, name string) func(evidence.Dir) string {
	return func(d evidence.Dir) string { return d.Path(evidence.NginxPath(proxy, name)) }
}

const outsideContent = "a file outside the evidence directory\n"

// plantAt puts a symbolic link to a new file outside the directory (whose
// path it returns) or a FIFO ("" returned) at p.
func plantAt(t *testing.T, kind, p string) string {
	t.Helper()
	if kind == "fifo" {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return ""
	}
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte(outsideContent), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	return outside
}

func assertUnchanged(t *testing.T, outside string) {
	t.Helper()
	if outside == "" {
		return
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != outsideContent {
		t.Errorf("%s = %q, %v; written through the link", outside, b, err)
	}
}
