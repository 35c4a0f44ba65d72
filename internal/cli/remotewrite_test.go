package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/prompb"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/export/remotewrite"
	"github.com/rlbench/rlbench/internal/metricnames"
)

// rwReceiver is a remote write endpoint that decodes and keeps every
// series it receives; status, when not 0, is its answer instead.
type rwReceiver struct {
	mu     sync.Mutex
	series []prompb.TimeSeries
	status int
}

func newRWReceiver(t *testing.T, status int) (*rwReceiver, string) {
	rc := &rwReceiver{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rc.status != 0 {
			http.Error(w, "no", rc.status)
			return
		}
		b, _ := io.ReadAll(r.Body)
		wr, err := remotewrite.Decode(b)
		if err != nil {
			t.Errorf("body: %v", err)
			http.Error(w, err.Error(), 400)
			return
		}
		rc.mu.Lock()
		rc.series = append(rc.series, wr.Timeseries...)
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL + "/api/v1/write"
}

// last is the last value received of the series name with labels kv.
func (rc *rwReceiver) last(name string, kv ...string) (float64, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	v, ok := 0.0, false
next:
	for _, ts := range rc.series {
		l := map[string]string{}
		for _, x := range ts.Labels {
			l[x.Name] = x.Value
		}
		if l["__name__"] != name {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if l[kv[i]] != kv[i+1] {
				continue next
			}
		}
		v, ok = ts.Samples[len(ts.Samples)-1].Value, true
	}
	return v, ok
}

const rwPlan = `name: rw
scenarios:
  - name: two buckets
    lab: {proxies: 2, local: {max_tokens: 2, tokens_per_fill: 2, fill_interval: 1h}}
    attack: {ids: 8}
    expect: {admitted: "4"}
`

// TestRunRemoteWrite: `run --remote-write` pushes the live request
// counters and, after the analysis, the verdict series equal to status.txt,
// every series with run_id = the run directory's name.
func TestRunRemoteWrite(t *testing.T) {
	rc, u := newRWReceiver(t, 0)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(rwPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "runs")
	code, _, errOut := runCLI(t, "run", "--root", root, "--remote-write", u, "--remote-write-interval", "50ms", plan)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(evidence.Dir(runDir).Status())
	if err != nil {
		t.Fatal(err)
	}
	id := filepath.Base(runDir)
	lines := strings.Split(strings.TrimSpace(string(status)), "\n")
	if len(lines) != 1 {
		t.Fatalf("status.txt %q", status)
	}
	sl, err := evidence.ParseStatusLine(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := rc.last(report.MetricScenarioStatus, metricnames.LabelRunID, id, metricnames.LabelScenario, sl.Scenario, metricnames.LabelStatus, sl.Status); !ok || v != 1 {
		t.Errorf("%s{run_id=%s,scenario=%q,status=%s} = %v %v; status.txt %q", report.MetricScenarioStatus, id, sl.Scenario, sl.Status, v, ok, status)
	}
	if v, ok := rc.last(report.MetricStatus, metricnames.LabelRunID, id, metricnames.LabelStatus, sl.Status); !ok || v != 1 {
		t.Errorf("%s{status=%s} = %v %v", report.MetricStatus, sl.Status, v, ok)
	}
	if v, ok := rc.last(metricnames.RequestsTotal, metricnames.LabelRunID, id, metricnames.LabelScenario, "two buckets", metricnames.LabelClass, "admitted"); !ok || v < 1 {
		t.Errorf("admitted counter %v %v", v, ok)
	}
	var admitted, rejected float64
	for _, tg := range []string{"proxy-a", "proxy-b"} {
		a, _ := rc.last(metricnames.RequestsTotal, metricnames.LabelRunID, id, metricnames.LabelTarget, tg, metricnames.LabelClass, "admitted")
		r, _ := rc.last(metricnames.RequestsTotal, metricnames.LabelRunID, id, metricnames.LabelTarget, tg, metricnames.LabelClass, "local_429")
		admitted, rejected = admitted+a, rejected+r
	}
	if admitted != 4 || rejected != 4 {
		t.Errorf("admitted %v local_429 %v over both targets, want 4 and 4", admitted, rejected)
	}
	if !strings.Contains(errOut, "remote write: ") || strings.Contains(errOut, "warning") {
		t.Errorf("stderr: %s", errOut)
	}
}

// TestRemoteWriteFailureNotFatal: a receiver that refuses every push
// changes neither the run nor its exit code; stderr says what failed, the
// URL redacted.
func TestRemoteWriteFailureNotFatal(t *testing.T) {
	_, u := newRWReceiver(t, 503)
	u = strings.Replace(u, "http://", "http://user:secret@", 1)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(rwPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "run", "-q", "--root", filepath.Join(dir, "runs"), "--remote-write", u, plan)
	if code != ExitOK || !strings.Contains(out, "PASS") {
		t.Fatalf("exit %d with a failing receiver: %s %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "remote write: warning: 0 pushes") || !strings.Contains(errOut, "HTTP 503") || strings.Contains(errOut, "secret") {
		t.Errorf("stderr: %s", errOut)
	}
}

// TestAttackRemoteWrite: `attack --remote-write` labels its series with
// the --out directory's name and scenario "attack"; with --events FILE at
// once, the stream's last progress counts what was pushed.
func TestAttackRemoteWrite(t *testing.T) {
	rc, u := newRWReceiver(t, 0)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer target.Close()
	out := filepath.Join(t.TempDir(), "ev1")
	evFile := filepath.Join(t.TempDir(), "events.jsonl")
	code, _, errOut := runCLI(t, "attack", "-q", "--target", "t="+target.URL, "--ids", "5", "--out", out, "--remote-write", u, "--events", evFile)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if v, ok := rc.last(metricnames.RequestsTotal, metricnames.LabelRunID, "ev1", metricnames.LabelScenario, "attack", metricnames.LabelTarget, "t", metricnames.LabelClass, "admitted"); !ok || v != 5 {
		t.Errorf("admitted %v %v", v, ok)
	}
	data, err := os.ReadFile(evFile)
	if err != nil {
		t.Fatal(err)
	}
	var last *events.Progress
	for _, e := range readEvents(t, data) {
		if e.Progress != nil && e.Progress.Done {
			last = e.Progress
		}
	}
	if last == nil || len(last.Targets) != 1 || last.Targets[0].Classes["admitted"] != 5 {
		t.Errorf("last progress event %+v, want 5 admitted as pushed", last)
	}
}

// TestRemoteWriteUsage: a bad URL or an interval without a URL is a usage
// error before anything runs.
func TestRemoteWriteUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ev")
	for _, args := range [][]string{
		{"attack", "--target", "http://127.0.0.1:1", "--ids", "1", "--out", out, "--remote-write", "ftp://user:secret@x/y"},
		{"attack", "--target", "http://127.0.0.1:1", "--ids", "1", "--out", out, "--remote-write-interval", "1s"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != ExitUsage || strings.Contains(errOut, "secret") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: --out created before the usage error", args)
		}
	}
}

// TestRunEventsAndRemoteWrite: `run --events - --remote-write URL` writes
// the event stream to standard output (valid, run_id the run directory's
// name) and pushes the same run: the verdict event and the pushed verdict
// series agree, and each target's counts in the attack's last progress
// event equal the pushed request counters (both read one Progress).
func TestRunEventsAndRemoteWrite(t *testing.T) {
	rc, u := newRWReceiver(t, 0)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(rwPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "runs")
	code, out, errOut := runCLI(t, "run", "--root", root, "--events", "-", "--remote-write", u, "--remote-write-interval", "50ms", plan)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(root, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	id := filepath.Base(runDir)
	var verdicts []events.Verdict
	var last *events.Progress
	for _, e := range readEvents(t, []byte(out)) {
		if e.RunID != id {
			t.Errorf("event %s: run_id %q, want %q", e.Type, e.RunID, id)
		}
		switch {
		case e.Verdict != nil:
			verdicts = append(verdicts, *e.Verdict)
		case e.Progress != nil && e.Progress.Done:
			last = e.Progress
		}
	}
	if len(verdicts) != 1 || last == nil || len(last.Targets) != 2 {
		t.Fatalf("verdicts %+v, last progress %+v", verdicts, last)
	}
	v := verdicts[0]
	if got, ok := rc.last(report.MetricScenarioStatus, metricnames.LabelRunID, id, metricnames.LabelScenario, v.Scenario, metricnames.LabelStatus, v.Status); !ok || got != 1 {
		t.Errorf("verdict event %s, pushed %s{status=%s} = %v %v", v.Status, report.MetricScenarioStatus, v.Status, got, ok)
	}
	for _, tp := range last.Targets {
		for _, class := range []string{"admitted", "local_429"} {
			got, _ := rc.last(metricnames.RequestsTotal, metricnames.LabelRunID, id, metricnames.LabelTarget, tp.Target, metricnames.LabelClass, class)
			if int(got) != tp.Classes[class] || tp.Classes[class] == 0 {
				t.Errorf("%s %s: progress event %d, pushed %v", tp.Target, class, tp.Classes[class], got)
			}
		}
	}
	if strings.Contains(errOut, "remote write: warning") {
		t.Errorf("stderr: %s", errOut)
	}
}
