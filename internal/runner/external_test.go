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
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
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
		rc, _ := json.Marshal(evidence.Receipt{ID: &id, Method: r.Method, Path: r.URL.Path})
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

	rep, err := analyze.Analyze(context.Background(), runDir, analyze.Options{})
	must(err)
	if len(rep.Scenarios) != 2 {
		t.Fatalf("%d scenarios", len(rep.Scenarios))
	}
	s1, s2 := rep.Scenarios[0], rep.Scenarios[1]
	if s1.Status != analyze.Pass || !reflect.DeepEqual(s1.ProducerCounts, map[string]int{"backend": 6}) {
		t.Errorf("copied: status %s producers %v reasons %v", s1.Status, s1.ProducerCounts, s1.Reasons)
	}
	if s2.Status != analyze.NotRun || !strings.Contains(strings.Join(s2.Reasons, "\n"), "access log of proxy-a ("+logPath+"): file shrank") {
		t.Errorf("rotated: status %s reasons %v", s2.Status, s2.Reasons)
	}
}
