package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lint"
)

// TestInputCapsAtTheCommandLine: the reproductions end with the
// cap's message naming the file: a manifest.json of 10,001 scenario_dirs
// (analyze and report: exit 1, nothing rendered), a scenario.json of
// 10,001 proxies (analyze: NOT_RUN, exit 4), a bootstrap of 10,001
// listeners (lint: one error, exit 3).
func TestInputCapsAtTheCommandLine(t *testing.T) {
	run := t.TempDir()
	dirs := make([]string, evidence.MaxRunScenarios+1)
	for i := range dirs {
		dirs[i] = fmt.Sprintf("01-x/%d", i+1)
	}
	if err := evidence.WriteJSONFile(evidence.Dir(run).Manifest(), evidence.Manifest{Schema: evidence.ManifestSchema, ScenarioDirs: dirs}); err != nil {
		t.Fatal(err)
	}
	wantErr := evidence.Dir(run).Manifest() + ": scenario_dirs: more than 10000 scenario directories (10001), the most one run has"
	for _, args := range [][]string{{"analyze", run}, {"report", run, "--format", "json"}} {
		code, out, errOut := runCLI(t, args...)
		if code != ExitError || out != "" || !strings.Contains(errOut, wantErr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, wantErr)
		}
	}

	sc := evidence.Dir(t.TempDir())
	names := make([]string, evidence.MaxScenarioProxies+1)
	for i := range names {
		names[i] = fmt.Sprintf("%q", fmt.Sprintf("p%d", i))
	}
	if err := os.WriteFile(sc.Scenario(), []byte("{\"schema\": \"rlbench.scenario/v1\", \"name\": \"x\",\n\"proxies\": ["+strings.Join(names, ",")+"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "analyze", "--wide", "--status-file", "-", string(sc))
	if want := sc.Scenario() + ": line 2: proxies: more than 10000 proxies, the most one scenario has"; code != ExitNotRun || !strings.Contains(out, want) {
		t.Errorf("analyze of %d proxies: exit %d, want 4 and %q in:\n%s", len(names), code, want, out)
	}

	var y strings.Builder
	y.WriteString("static_resources:\n  listeners:\n")
	for i := range lint.MaxListeners + 1 {
		fmt.Fprintf(&y, "  - {name: l%d}\n", i)
	}
	file := filepath.Join(t.TempDir(), "envoy.yaml")
	if err := os.WriteFile(file, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "lint", file)
	if want := file + ":2: error E_DECODE\n    at static_resources.listeners\n    more than 10000 listeners (10001)"; code != ExitFail || !strings.Contains(out, want) {
		t.Errorf("lint of 10,001 listeners: exit %d, want 3 and %q in:\n%s", code, want, out)
	}
}
