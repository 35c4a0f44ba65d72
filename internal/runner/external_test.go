package runner_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/runner"
)

// fakeEnvoy is an external "proxy" on 127.0.0.1 that answers 200 and
// appends one JSON access log line per request to a file before answering,
// as Envoy's file access logger would (without its buffering). It also plays
// the backend's receipts endpoint.
func fakeEnvoy(t *testing.T, logPath string) *httptest.Server {
	var mu sync.Mutex
	var receipts [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_rlbench/receipts" { // what the rlbench backend behind Envoy would have received
			mu.Lock()
			defer mu.Unlock()
			for _, b := range receipts {
				_, _ = w.Write(append(b, '\n'))
			}
			return
		}
		id := r.Header.Get("X-Rlbench-Id")
		rc, _ := json.Marshal(evidence.Receipt{ID: &id, RecvNs: time.Now().UnixNano(), Method: r.Method, Path: r.URL.Path})
		line, _ := json.Marshal(map[string]any{"response_code": 200, "response_flags": "-", "response_code_details": "via_upstream",
			"path": r.URL.Path, "rlbench_id": r.Header.Get("X-Rlbench-Id")})
		mu.Lock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.Write(append(line, '\n'))
			f.Close()
		}
		receipts = append(receipts, rc)
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// The runner copies exactly the access log lines appended between the
// scenario's first and last step (not those from before, nor the setup's),
// and a log truncated during the scenario makes its evidence incomplete.
func TestExternalAccessLogCopiedPerScenario(t *testing.T) {
	work := t.TempDir()
	logPath := filepath.Join(work, "envoy-a.access.log")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(logPath, []byte(`{"response_code":200,"rlbench_id":"old-1"}`+"\n"+`{"response_code":200,"rlbench_id":"old-2"}`+"\n"), 0o644))
	srv := fakeEnvoy(t, logPath)
	t.Setenv("RLBENCH_TEST_ACCESS_LOG", logPath)
	plan := fmt.Sprintf(`name: external-access-log
scenarios:
  - name: copied
    external:
      setup: printf '{"response_code":200,"rlbench_id":"setup-line"}\n' >> "$RLBENCH_TEST_ACCESS_LOG"
      receipts_url: %[1]s/_rlbench/receipts
      proxies: [{name: proxy-a, url: %[1]q, access_log: "${RLBENCH_TEST_ACCESS_LOG}"}]
    attack: {ids: 6, path: /inventory}
    expect: {admitted: 6, stats_agree: false}
  - name: rotated
    external:
      receipts_url: %[1]s/_rlbench/receipts
      proxies: [{name: proxy-a, url: %[1]q, access_log: "${RLBENCH_TEST_ACCESS_LOG}"}]
    steps:
      - fault: {action: exec, target: log, command: ': > "$RLBENCH_TEST_ACCESS_LOG"'}
      - attack: {ids: 2, path: /inventory}
    expect: {admitted: 2, stats_agree: false}
`, srv.URL)
	p, err := runner.ParsePlan("plan.yaml", []byte(plan))
	must(err)
	runDir, err := runner.Run(context.Background(), p, runner.Options{Root: t.TempDir()})
	must(err)

	sc1 := filepath.Join(runDir, "01-copied", "1")
	lines := readJSONLines(t, evidence.Dir(sc1).AccessLog("proxy-a"))
	var logged, sent []string
	for _, l := range lines {
		logged = append(logged, l["rlbench_id"].(string))
	}
	must(evidence.ReadFile(filepath.Join(sc1, evidence.RequestsFile), func(_ int, r *evidence.Request) error {
		sent = append(sent, r.ID)
		return nil
	}))
	sort.Strings(logged)
	sort.Strings(sent)
	if len(sent) != 6 || !reflect.DeepEqual(logged, sent) {
		t.Fatalf("copied ids %v, sent %v", logged, sent)
	}
	// An external scenario measures its host too (harness.json).
	if s := evidence.LoadScenario(context.Background(), sc1, true); s.Harness == nil || s.Attack == nil ||
		s.Harness.StartNs > s.Attack.StartNs || s.Harness.EndNs < s.Attack.EndNs {
		t.Errorf("copied: harness %+v, attack %+v, problems %v", s.Harness, s.Attack, s.Problems)
	}

	rep, err := analyze.Analyze(context.Background(), runDir, analyze.Options{})
	must(err)
	if len(rep.Scenarios) != 2 {
		t.Fatalf("%d scenarios", len(rep.Scenarios))
	}
	s1, s2 := rep.Scenarios[0], rep.Scenarios[1]
	if s1.Status != evidence.Pass || !reflect.DeepEqual(s1.ProducerCounts, map[string]int{"backend": 6}) {
		t.Errorf("copied: status %s producers %v reasons %v", s1.Status, s1.ProducerCounts, s1.Reasons)
	}
	if s2.Status != evidence.NotRun || !strings.Contains(strings.Join(s2.Reasons, "\n"), "access log of proxy-a ("+logPath+"): file shrank") {
		t.Errorf("rotated: status %s reasons %v", s2.Status, s2.Reasons)
	}
}

// startBackend starts an rlbench backend (receipts in a temporary file),
// closed when the test ends.
func startBackend(t *testing.T) *backend.Backend {
	t.Helper()
	be, err := backend.Start(t.Context(), backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	return be
}

// runPlan parses and runs the plan text into a temporary root and returns
// the run directory.
func runPlan(t *testing.T, plan string) string {
	t.Helper()
	p, err := runner.ParsePlan("plan.yaml", []byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	runDir, err := runner.Run(t.Context(), p, runner.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return runDir
}

// TestExternalReceiptsJudgeEveryReceiptInTheWindow (issue 10, "external
// plans hide foreign receipts": the runner kept only receipts with its own
// ID prefix, so requests that reached the backend with no ID or someone
// else's ID were never judged and the run PASSed): every receipt the
// backend records during the scenario is evidence. A proxy that lets one
// request through without its ID and one with a foreign ID makes the
// scenario FAIL, naming both; receipts recorded before the scenario (an
// earlier run's, one without an ID) are outside its window and do not
// count, so the honest proxy's scenario PASSes.
func TestExternalReceiptsJudgeEveryReceiptInTheWindow(t *testing.T) {
	be := startBackend(t)
	send := func(id string) {
		req, _ := http.NewRequest(http.MethodGet, be.URL()+"/x", nil)
		if id != "" {
			req.Header.Set(evidence.IDHeader, id)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}
	send("earlier-run-1") // before the scenarios: not theirs
	send("")
	proxy := func(leaky bool) *httptest.Server {
		var once sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if leaky {
				once.Do(func() { send(""); send("someone-else-7") })
			}
			send(r.Header.Get(evidence.IDHeader))
			_, _ = w.Write([]byte("ok"))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	honest, leaky := proxy(false), proxy(true)
	plan := fmt.Sprintf(`name: external-receipts
scenarios:
  - name: honest
    external:
      receipts_url: %[1]s/_rlbench/receipts
      proxies: [{name: edge, url: %[2]q}]
    attack: {ids: 4}
    expect: {admitted: 4}
  - name: leaky
    external:
      receipts_url: %[1]s/_rlbench/receipts
      proxies: [{name: edge, url: %[3]q}]
    attack: {ids: 4}
    expect: {admitted: 4}
`, be.URL(), honest.URL, leaky.URL)
	runDir := runPlan(t, plan)
	count := func(dir string) (n int, ids []string) {
		if err := evidence.ReadFile(evidence.Dir(filepath.Join(runDir, dir)).Receipts(), func(_ int, rc *evidence.Receipt) error {
			n++
			if rc.ID != nil {
				ids = append(ids, *rc.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n, ids
	}
	if n, ids := count("01-honest/1"); n != 4 || len(ids) != 4 {
		t.Errorf("honest: %d receipts %q, want the 4 sent", n, ids)
	}
	if n, ids := count("02-leaky/1"); n != 6 || len(ids) != 5 || !slices.Contains(ids, "someone-else-7") || slices.Contains(ids, "earlier-run-1") {
		t.Errorf("leaky: %d receipts %q, want the 4 sent, one without id and someone-else-7", n, ids)
	}
	rep, err := analyze.Analyze(t.Context(), runDir, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Scenarios[0]; s.Status != evidence.Pass {
		t.Errorf("honest: %s %q", s.Status, s.Reasons)
	}
	s := rep.Scenarios[1]
	why := strings.Join(s.Reasons, "\n")
	if s.Status != evidence.Fail || !strings.Contains(why, "receipts without id (unidentified): want 0, got 1") ||
		!strings.Contains(why, "phantom receipts (never sent)") || !strings.Contains(why, "someone-else-7") {
		t.Errorf("leaky: %s\n%s", s.Status, why)
	}
}

// TestExternalUserinfoRedacted (issue 10, "a target URL with user:password@
// is written in clear to requests.jsonl and attack.json"): a plan may give
// URLs with a password; the requests carry it as basic auth, and no file of
// the run directory (requests.jsonl, attack.json, manifest.json,
// faults.jsonl, receipts) holds it.
func TestExternalUserinfoRedacted(t *testing.T) {
	be := startBackend(t)
	var mu sync.Mutex
	var auths []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		mu.Lock()
		auths = append(auths, user+":"+pass)
		mu.Unlock()
		req, _ := http.NewRequest(http.MethodGet, be.URL()+r.URL.Path, nil)
		req.Header.Set(evidence.IDHeader, r.Header.Get(evidence.IDHeader))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}))
	defer proxy.Close()
	withPass := func(u string) string { return strings.Replace(u, "http://", "http://ops:hunter2@", 1) }
	plan := fmt.Sprintf(`name: userinfo
tools: {curl: "echo fetched http://ops:hunter2@example.test/v"}
scenarios:
  - name: secret
    external:
      receipts_url: %[1]s/_rlbench/receipts
      proxies: [{name: edge, url: %[2]q}]
    steps:
      - fault: {action: exec, target: token, command: "echo http://ops:hunter2@example.test/x; exit 1"}
      - attack: {ids: 3}
    expect: {admitted: 3}
`, withPass(be.URL()), withPass(proxy.URL))
	runDir := runPlan(t, plan)
	mu.Lock()
	if len(auths) != 3 || auths[0] != "ops:hunter2" {
		t.Errorf("basic auth seen by the proxy: %q", auths)
	}
	mu.Unlock()
	seen := 0
	_ = filepath.Walk(runDir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		seen++
		if strings.Contains(string(b), "hunter2") {
			t.Errorf("%s holds the password:\n%s", path, b)
		}
		return nil
	})
	b, _ := os.ReadFile(evidence.Dir(filepath.Join(runDir, "01-secret", "1")).Requests())
	if seen < 5 || !strings.Contains(string(b), `"url":"http://ops:xxxxx@`) {
		t.Errorf("%d files; requests.jsonl:\n%s", seen, b)
	}
}
