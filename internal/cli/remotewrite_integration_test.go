//go:build integration && linux

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/examples/grafana"
	"github.com/rlbench/rlbench/internal/metricnames"
	"github.com/rlbench/rlbench/internal/realparts"
)

// findPrometheus finds Debian's prometheus (RLBENCH_PROMETHEUS_BIN, else
// on PATH, else /usr/bin/prometheus), skipping when absent unless
// RLBENCH_REQUIRE_REAL_PARTS=1 (then it fails).
func findPrometheus(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("RLBENCH_PROMETHEUS_BIN"); b != "" {
		return b
	}
	b, err := exec.LookPath("prometheus")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/prometheus"); serr == nil {
			return "/usr/bin/prometheus"
		}
		err = fmt.Errorf("prometheus not found (apt-get install prometheus; scripts/install-real-parts.sh installs it): %w", err)
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return b
}

// startPrometheus runs a private prometheus with the remote write receiver
// on a free loopback port, its own data directory and a configuration
// without scrape jobs; it is stopped by its PID when the test ends. It
// returns the base URL once /-/ready answers and the port's only listener
// is that process.
func startPrometheus(t *testing.T) string {
	t.Helper()
	bin := findPrometheus(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ports, err := realparts.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port), "--web.enable-remote-write-receiver")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a crashed test leaves nothing behind
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("prometheus exited before it was ready:\n%s", b)
		case <-ctx.Done():
			t.Fatalf("prometheus not ready on %s: %v", base, ctx.Err())
		case <-time.After(100 * time.Millisecond): // polling its readiness endpoint
		}
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
	}
	if err := realparts.VerifyListener(cmd.Process.Pid, port); err != nil {
		t.Fatalf("port %d: %v", port, err)
	}
	return base
}

// promQuery runs an instant query and returns its vector's samples as
// label sets with their values.
func promQuery(t *testing.T, base, q string) []promSample {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if body.Status != "success" || body.Data.ResultType != "vector" {
		t.Fatalf("%s: %s %s %s", q, body.Status, body.Error, body.Data.ResultType)
	}
	var out []promSample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: value %v", q, r.Value)
		}
		out = append(out, promSample{r.Metric, v})
	}
	return out
}

type promSample struct {
	labels map[string]string
	value  float64
}

// TestRemoteWriteToPrometheus: `rlbench run --remote-write` of a lab plan
// into Debian's prometheus (2.42, --web.enable-remote-write-receiver):
// every series of internal/metricnames and every series the Grafana
// dashboard (examples/grafana) selects has data for the run's run_id, with
// the labels metricnames lists for it, and the verdict series equal
// status.txt.
func TestRemoteWriteToPrometheus(t *testing.T) {
	base := startPrometheus(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	// A paced attack (pacing error), a timed backend fault (fault_active),
	// an intended limit per window (intended_limit, its window) and a
	// described local limiter (bound).
	if err := os.WriteFile(plan, []byte(`name: remote-write
scenarios:
  - name: one bucket of 5
    lab: {proxies: 1, local: {max_tokens: 5, tokens_per_fill: 5, fill_interval: 1h}}
    intended_limit: {requests: 5, per: 1h}
    steps:
      - fault: {action: set, target: backend, faults: {max_concurrent: 1000}, for: 1h}
      - attack: {ids: 30, rate: 30/1s}
    expect: {admitted: "5"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "runs")
	code, out, errOut := runCLI(t, "run", "--root", root, "--remote-write", base+"/api/v1/write", "--remote-write-interval", "200ms", plan)
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "remote write: warning") || !strings.Contains(errOut, "remote write: ") {
		t.Fatalf("the pushes did not all succeed:\n%s", errOut)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	id := filepath.Base(runDir)

	names := metricnames.SeriesNames()
	dash, err := grafana.Series()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range dash {
		if !names[n] {
			t.Errorf("the dashboard selects %s, which metricnames does not list", n)
		}
		names[n] = true
	}
	for name := range names {
		got := promQuery(t, base, fmt.Sprintf("%s{%s=%q}", name, metricnames.LabelRunID, id))
		if len(got) == 0 {
			t.Errorf("%s{run_id=%q}: no data in prometheus", name, id)
			continue
		}
		f, _ := metricnames.Lookup(name)
		want := slices.Sorted(slices.Values(f.SeriesLabels(name)))
		for _, s := range got {
			var have []string
			for l := range s.labels {
				if l != "__name__" {
					have = append(have, l)
				}
			}
			if slices.Sort(have); !slices.Equal(have, want) {
				t.Errorf("%s: labels %v, metricnames lists %v", name, have, want)
			}
		}
	}
	// The live counter ends at the evidence's counts.
	adm := promQuery(t, base, fmt.Sprintf("sum(%s{%s=%q,%s=\"admitted\"})", metricnames.RequestsTotal, metricnames.LabelRunID, id, metricnames.LabelClass))
	all := promQuery(t, base, fmt.Sprintf("sum(%s{%s=%q})", metricnames.RequestsTotal, metricnames.LabelRunID, id))
	if len(adm) != 1 || adm[0].value != 5 || len(all) != 1 || all[0].value != 30 {
		t.Errorf("requests_total: admitted %v of %v, want 5 of 30", adm, all)
	}

	// The verdict series equal status.txt, line by line.
	status, err := os.ReadFile(evidence.Dir(runDir).Status())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(status)), "\n")
	overall := evidence.Pass
	for _, l := range lines {
		sl, err := evidence.ParseStatusLine(l)
		if err != nil {
			t.Fatal(err)
		}
		got := promQuery(t, base, fmt.Sprintf("%s{%s=%q,%s=%q} == 1", report.MetricScenarioStatus, metricnames.LabelRunID, id, metricnames.LabelScenario, sl.Scenario))
		if len(got) != 1 || got[0].labels[metricnames.LabelStatus] != sl.Status {
			t.Errorf("scenario %q: status.txt says %s, prometheus %v", sl.Scenario, sl.Status, got)
		}
		if sl.Status != evidence.Pass {
			overall = sl.Status
		}
	}
	got := promQuery(t, base, fmt.Sprintf("%s{%s=%q} == 1", report.MetricStatus, metricnames.LabelRunID, id))
	if len(got) != 1 || got[0].labels[metricnames.LabelStatus] != overall || len(lines) != 1 {
		t.Errorf("run verdict in prometheus %v, status.txt %q", got, status)
	}
	if t.Failed() {
		t.Logf("run output:\n%s\n%s", out, errOut)
	}
}
