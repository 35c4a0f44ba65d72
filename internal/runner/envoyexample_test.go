package runner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/testfix"
)

func TestEnvoyExamplePlanParses(t *testing.T) {
	p, err := runner.LoadPlan(filepath.Join(testfix.RepoRoot(t), "examples", "envoy", "rlbench", "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Scenarios {
		names = append(names, s.Name)
		if s.External == nil || len(s.External.Proxies) != 2 || !strings.Contains(s.External.Setup, "envoyctl.sh") ||
			!strings.Contains(s.External.Teardown, "envoyctl.sh\" teardown") || s.External.ReceiptsURL != "http://127.0.0.1:8080/_rlbench/receipts" {
			t.Errorf("%s: external %+v", s.Name, s.External)
			continue
		}
		for _, px := range s.External.Proxies {
			if !strings.HasPrefix(px.AccessLog, "${RLBENCH_ENVOY_WORK}/envoy-") {
				t.Errorf("%s: %s access_log %q", s.Name, px.Name, px.AccessLog)
			}
		}
	}
	want := []string{"two local buckets", "shared RLS", "RLS stopped, deny", "RLS stopped, allow", "RLS restarted"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("scenarios %q", names)
	}
}

// run.sh without a usable ENVOY_BIN still writes an evidence directory, in
// which every scenario is NOT_RUN with the reason, and exits 4 (NOT_RUN).
func TestEnvoyExampleRunShWithoutEnvoy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rlbench and runs examples/envoy/run.sh")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not found")
	}
	root := testfix.RepoRoot(t)
	tmp := t.TempDir()
	rlbench := filepath.Join(tmp, "rlbench")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goBin, "build", "-o", rlbench, "./cmd/rlbench")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for name, tc := range map[string]struct {
		envoy  string // "" = unset
		reason string
	}{
		"unset":          {"", "ENVOY_BIN is not set: no Envoy binary"},
		"not executable": {filepath.Join(tmp, "no-such-envoy"), "ENVOY_BIN=" + filepath.Join(tmp, "no-such-envoy") + " is not an executable file: no Envoy binary"},
	} {
		t.Run(name, func(t *testing.T) {
			evRoot := filepath.Join(tmp, "evidence-"+strings.ReplaceAll(name, " ", "-"))
			cmd := exec.CommandContext(ctx, bash, filepath.Join(root, "examples", "envoy", "run.sh"), "--root", evRoot, "-q", "--format", "json")
			cmd.Dir = tmp // run.sh finds the repository itself
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "ENVOY_BIN=") && !strings.HasPrefix(kv, "RLBENCH_") {
					env = append(env, kv)
				}
			}
			env = append(env, "RLBENCH_BIN="+rlbench)
			if tc.envoy != "" {
				env = append(env, "ENVOY_BIN="+tc.envoy)
			}
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 4 {
				t.Fatalf("run.sh: %v (want exit 4)\nstderr: %s", err, stderr.String())
			}
			runs, _ := filepath.Glob(filepath.Join(evRoot, "2*"))
			if len(runs) != 1 {
				t.Fatalf("run directories %v", runs)
			}
			rep, err := analyze.Analyze(context.Background(), runs[0], analyze.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status != evidence.NotRun || len(rep.Scenarios) != 5 {
				t.Fatalf("report status %s, %d scenarios", rep.Status, len(rep.Scenarios))
			}
			for _, s := range rep.Scenarios {
				if s.Status != evidence.NotRun || len(s.Reasons) == 0 || !strings.HasSuffix(s.Reasons[len(s.Reasons)-1], "envoyctl: "+tc.reason) {
					t.Errorf("%s: %s %q", s.Name, s.Status, s.Reasons)
				}
			}
			status, err := os.ReadFile(evidence.Dir(runs[0]).Status())
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(status)), "\n")
			if len(lines) != 5 {
				t.Fatalf("status.txt:\n%s", status)
			}
			for _, l := range lines {
				if !strings.Contains(l, " NOT_RUN ") || !strings.HasSuffix(l, tc.reason) {
					t.Errorf("status.txt line %q", l)
				}
			}
			if !strings.Contains(stdout.String(), `"status": "NOT_RUN"`) && !strings.Contains(stdout.String(), `"status":"NOT_RUN"`) {
				t.Errorf("stdout is not the JSON report: %.300s", stdout.String())
			}
		})
	}
}
