package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/testfix"
)

// TestPlansAreCodeDocumented (issue 10: "plans can run arbitrary shell
// (exec, setup/teardown, tools:); tools: is not documented as such"): a
// tools: entry is run by sh -c (shell arithmetic is evaluated), and the
// README says, for every plan field that runs shell, that plans are code
// to be reviewed as scripts.
func TestPlansAreCodeDocumented(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte("tools: {shell: 'echo $((6*7))'}\nscenarios:\n - {name: a, lab: {proxies: 1}, attack: {ids: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Run(t.Context(), p, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, evidence.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m evidence.Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Tools["shell"] != "42" {
		t.Fatalf("tools ran %q (%v): want the shell's 42", m.Tools["shell"], err)
	}
	readme, err := os.ReadFile(filepath.Join(testfix.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, para, ok := strings.Cut(string(readme), "**Plans are code.**")
	para, _, _ = strings.Cut(para, "\n\n")
	if !ok {
		t.Fatal(`README.md has no "**Plans are code.**" paragraph`)
	}
	for _, want := range []string{"`exec`", "`external.setup`", "`external.teardown`", "`tools:`", "`sh -c`", "review"} {
		if !strings.Contains(para, want) {
			t.Errorf("the README's plans-are-code paragraph does not mention %s:\n%s", want, para)
		}
	}
}
