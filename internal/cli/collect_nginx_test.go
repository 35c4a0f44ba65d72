package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/schemas"
)

func runCLIIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, &IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// validateLines checks every line of a JSON Lines file against schemas/<name> and returns the line count.
func validateLines(t *testing.T, path, name string) int {
	t.Helper()
	data := readFile(t, path)
	if err := schemas.ValidateLines(name, data); err != nil {
		t.Errorf("%s: %v", path, err)
	}
	return len(strings.Split(strings.TrimSpace(string(data)), "\n"))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCollectNginxAccessLog runs the command on the b-burst5-delay capture (20 concurrent requests at
// rate=10r/s burst=5: 1 PASSED, 5 DELAYED, 14 REJECTED; fixtures/nginx/README.md).
func TestCollectNginxAccessLog(t *testing.T) {
	access := testfix.Fixture(t, "nginx", "b-burst5-delay/access.log")
	errLog := testfix.Fixture(t, "nginx", "b-burst5-delay/error.log")
	dir := t.TempDir()
	code, out, stderr := runCLIIn(t, "", "collect", "nginx-access-log", "--error-log", errLog, "--out", dir, "--proxy", "edge", access)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"│ DELAYED          │ 200    │ 5        │", "│ PASSED           │ 200    │ 1        │",
		"│ REJECTED         │ 503    │ 14       │", "20 requests, 6 proxied, 0 retried by nginx; 6 upstream tries, 6 to servers",
		"error log limit_req lines: delay 5, reject 14", "upstream hits: 127.0.0.1:52641 6"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	base := filepath.Join(dir, evidence.NginxPath("edge", ""))
	if n := validateLines(t, filepath.Join(base, evidence.NginxAccessFile), schemas.NginxAccess); n != 20 {
		t.Errorf("%d access records, want 20", n)
	}
	if !bytes.Equal(readFile(t, filepath.Join(base, evidence.NginxAccessLogFile)), readFile(t, access)) ||
		!bytes.Equal(readFile(t, filepath.Join(base, evidence.NginxErrorLogFile)), readFile(t, errLog)) {
		t.Error("raw logs not copied verbatim")
	}
	var limits []nginxrec.ErrorEntry
	if err := evidence.ReadFile(filepath.Join(base, evidence.NginxLimitReqFile), func(_ int, e *nginxrec.ErrorEntry) error {
		limits = append(limits, *e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Both files and their seals (and nothing else of the layout) match their schemas.
	if n, err := schemas.ValidateDir(dir); err != nil || n != 4 {
		t.Errorf("nginx evidence: %d files valid, %v", n, err)
	}
	if len(limits) != 19 || limits[0].Limit == nil || limits[0].Limit.Action != nginxrec.LimitActionDelay || limits[0].Limit.ExcessMilli != 1000 {
		t.Errorf("limit_req.jsonl: %d lines, first %+v", len(limits), limits)
	}
	// The records read back equal a direct parse.
	var back []nginxrec.AccessRecord
	if err := evidence.ReadFile(filepath.Join(base, evidence.NginxAccessFile), func(_ int, a *nginxrec.AccessRecord) error {
		back = append(back, *a)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	direct, err := nginxrec.ParseAccessLog(bytes.NewReader(readFile(t, access)), access)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, direct) {
		t.Error("access.jsonl does not read back as parsed")
	}

	// JSON summary from standard input; the raw log is kept from stdin too.
	dir2 := t.TempDir()
	code, out, stderr = runCLIIn(t, string(readFile(t, access)), "collect", "nginx-access-log", "--format", "json", "--out", dir2, "-")
	if code != 0 {
		t.Fatalf("stdin: exit %d: %s", code, stderr)
	}
	var s NginxAccessLogSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.Source != "<stdin>" || s.Requests != 20 || s.ByLimitReqStatus["DELAYED"] != 5 || s.ByStatus[503] != 14 || s.LimitReqLines != nil {
		t.Errorf("summary %+v", s)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir2, evidence.NginxPath(defaultNginxProxy, evidence.NginxAccessLogFile))), readFile(t, access)) {
		t.Error("stdin not kept as access.log")
	}
}

func TestCollectNginxAccessLogErrors(t *testing.T) {
	code, _, stderr := runCLIIn(t, "{\"status\":200}\nnot json\n", "collect", "nginx-access-log", "-")
	if code == 0 || !strings.Contains(stderr, "<stdin>:2: not a JSON object") {
		t.Errorf("bad line: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat("nope.log"); err == nil {
		t.Fatal("nope.log exists")
	}
	code, _, stderr = runCLIIn(t, "", "collect", "nginx-access-log", "nope.log")
	if code != ExitUsage || !strings.Contains(stderr, "nope.log") { // a missing input is a usage error (issue 25)
		t.Errorf("missing file: exit %d, %s", code, stderr)
	}
}

func TestNewCollectNginxAccessLogCmd(t *testing.T) {
	testCmd(t, NewCollectNginxAccessLogCmd, []cmdCase[CollectNginxAccessLogOptions]{
		{name: "defaults", argv: argv("access.log"), want: &CollectNginxAccessLogOptions{IO: tio, File: "access.log", Proxy: "nginx", Format: "table"}},
		{name: "every flag", argv: argv("--error-log e.log --out ev --proxy edge --format json -"),
			want: &CollectNginxAccessLogOptions{IO: tio, File: "-", ErrorLog: "e.log", Out: "ev", Proxy: "edge", Format: "json"}},
		{name: "no file", argv: nil, err: "accepts 1 arg"},
		{name: "bad format", argv: argv("--format yaml a.log"), err: `--format must be table or json, not "yaml"`},
		{name: "path in proxy", argv: argv("--proxy a/b a.log"), err: "--proxy must be a simple name"},
	})
}

func TestNewCollectNginxStatusCmd(t *testing.T) {
	testCmd(t, NewCollectNginxStatusCmd, []cmdCase[CollectNginxStatusOptions]{
		{name: "defaults", argv: argv("--url http://127.0.0.1:8081/stub_status --label before --out ev"),
			want: &CollectNginxStatusOptions{IO: tio, URL: "http://127.0.0.1:8081/stub_status", Label: "before", Out: "ev", Proxy: "nginx", Timeout: 5 * time.Second}},
		{name: "every flag", argv: argv("--url http://x/s --label after --out ev --proxy edge --timeout 1s"),
			want: &CollectNginxStatusOptions{IO: tio, URL: "http://x/s", Label: "after", Out: "ev", Proxy: "edge", Timeout: time.Second}},
		{name: "missing label", argv: argv("--url http://x/s --out ev"), err: "--url, --label and --out are required"},
		{name: "path in label", argv: argv("--url http://x/s --label ../x --out ev"), err: "must be simple names"},
	})
}

func TestCollectNginxStatus(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stub_status" {
			http.NotFound(w, r)
			return
		}
		// Like nginx: the status request counts itself; 20 requests happen between the two snapshots.
		req := 1 + 21*n.Add(1) - 21
		fmt.Fprintf(w, "Active connections: 1 \nserver accepts handled requests\n %d %d %d \nReading: 0 Writing: 1 Waiting: 0 \n", req+2, req+2, req)
	}))
	defer srv.Close()
	dir := t.TempDir()
	url := srv.URL + "/stub_status"
	code, out, stderr := runCLIIn(t, "", "collect", "nginx-status", "--url", url, "--label", "before", "--out", dir)
	if code != 0 || strings.Contains(out, "delta") {
		t.Fatalf("before: exit %d %s %s", code, out, stderr)
	}
	code, out, stderr = runCLIIn(t, "", "collect", "nginx-status", "--url", url, "--label", "after", "--out", dir)
	if code != 0 {
		t.Fatalf("after: exit %d %s", code, stderr)
	}
	var res NginxStatusOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status.Requests != 22 || res.Delta == nil || res.Delta.Requests != 21 || res.Delta.Accepts != 21 {
		t.Errorf("after: %+v delta %+v", res, res.Delta)
	}
	base := filepath.Join(dir, evidence.NginxPath(defaultNginxProxy, ""))
	var parsed nginxrec.StubStatus
	if err := json.Unmarshal(readFile(t, filepath.Join(base, evidence.NginxStubStatusJSON("after"))), &parsed); err != nil || parsed != res.Status {
		t.Errorf("stub_status.after.json: %+v %v", parsed, err)
	}
	if !strings.HasPrefix(string(readFile(t, filepath.Join(base, evidence.NginxStubStatusRaw("before")))), "Active connections: 1 \n") {
		t.Error("raw before page not kept")
	}
	if n, err := schemas.ValidateDir(dir); err != nil || n != 2 {
		t.Errorf("stub_status evidence: %d files valid, %v", n, err)
	}
	code, _, stderr = runCLIIn(t, "", "collect", "nginx-status", "--url", srv.URL+"/nope", "--label", "x", "--out", dir)
	if code == 0 || !strings.Contains(stderr, "HTTP 404") {
		t.Errorf("404: exit %d %s", code, stderr)
	}
}
