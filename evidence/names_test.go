package evidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// badNames are names that would leave (or escape) their directory, or
// break the <proxy>.<label> split: issue 10's `../../..`, absolute paths,
// NUL, separators, dots.
var badNames = []string{"", "..", ".", "../x", "../../..", "/etc/passwd", "/abs", "a/b", `a\b`, "a\x00b", "x\n", "be.fore", "a b", strings.Repeat("x", MaxNameBytes+1)}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"proxy-a", "edge_1", "before", "A9", strings.Repeat("x", MaxNameBytes)} {
		if err := CheckName("name", ok); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range badNames {
		err := CheckName("--proxy", bad)
		if err == nil || !strings.HasPrefix(err.Error(), "--proxy") {
			t.Errorf("CheckName(%q) = %v, want an error starting with the flag", bad, err)
		}
	}
}

// TestWritersRefuseBadNames: the evidence writers that build a path from a
// name refuse every bad name and write nothing, inside or outside d.
func TestWritersRefuseBadNames(t *testing.T) {
	root := t.TempDir()
	d := Dir(filepath.Join(root, "a", "b", "scenario"))
	for _, bad := range badNames {
		if err := WriteStats(d, bad, LabelBefore, "text", []byte("x 1\n"), map[string]string{}); err == nil {
			t.Errorf("WriteStats proxy %q: no error", bad)
		}
		if err := WriteStats(d, "proxy-a", bad, "text", []byte("x 1\n"), map[string]string{}); err == nil {
			t.Errorf("WriteStats label %q: no error", bad)
		}
		if err := WriteRLSMetrics(d, &RLSMetrics{Label: bad}, []byte("x 1\n")); err == nil {
			t.Errorf("WriteRLSMetrics label %q: no error", bad)
		}
		if f, err := CreateAccessLog(d, bad); err == nil {
			f.Close()
			t.Errorf("CreateAccessLog %q: no error", bad)
		}
	}
	var files []string
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Errorf("files written: %q", files)
	}
}

// TestLoadRefusesProxyPathsInScenario: proxies named in scenario.json are
// never used as paths: "../../outside" would read <outside>.before.json
// two levels above stats/; it is a Problem of the stats instead.
func TestLoadRefusesProxyPathsInScenario(t *testing.T) {
	root := t.TempDir()
	d := Dir(filepath.Join(root, "run", "s"))
	writeFile(t, filepath.Join(root, "run", "outside.before.json"), `{"schema":"`+envoyrec.SnapshotSchema+`"}`)
	writeFile(t, d.Scenario(), `{"schema":"`+ScenarioSchema+`","name":"s","proxies":["../../outside","proxy-a"],"expect":{}}`)
	writeFile(t, d.Requests(), "")
	s := LoadScenario(t.Context(), string(d), false)
	got := problemsOf(s, StatsDir)
	if len(got) != 1 || !strings.Contains(got[0], `"../../outside" must be a simple name`) {
		t.Errorf("stats problems %q", got)
	}
	for _, ps := range s.Stats {
		if ps.Proxy != "proxy-a" {
			t.Errorf("stats of %q loaded", ps.Proxy)
		}
	}
}

// TestNodeName (issue 24): the Kubernetes node (RLBENCH_NODE_NAME from the
// downward API) wins over Slurm's SLURMD_NODENAME; blank is unset.
func TestNodeName(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{NodeNameEnv: "node-1", SlurmNodeEnv: "s1"}, "node-1"},
		{map[string]string{NodeNameEnv: "  ", SlurmNodeEnv: " s1\n"}, "s1"},
		{map[string]string{}, ""},
	} {
		if got := NodeName(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: %q, want %q", c.env, got, c.want)
		}
	}
}
