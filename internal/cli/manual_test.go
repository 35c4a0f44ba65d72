package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, &IOStreams{In: bytes.NewReader(nil), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// TestManualFlowMatchesDemo runs the README's by-hand sequence — a lab, then
// separate collect / attack / collect / analyze commands — and expects the
// demo's figures: 10 admitted of 20, 10 local 429s, 10 receipts, +5.
func TestManualFlowMatchesDemo(t *testing.T) {
	dir := t.TempDir()
	receipts, err := os.Create(evidence.Dir(dir).Receipts())
	if err != nil {
		t.Fatal(err)
	}
	defer receipts.Close()
	// The lab `rlbench lab --proxies 2 --local-max-tokens 5 --local-tokens-per-fill 5 --local-fill-interval 1h` starts.
	lo := parseLab(t, "--proxies", "2", "--local-max-tokens", "5", "--local-tokens-per-fill", "5", "--local-fill-interval", "1h").labOptions()
	lo.Backend.Receipts = receipts
	l, err := lab.Start(context.Background(), lo)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			l.Close()
		}
	}()
	a := l.Addresses()
	for _, p := range a.Proxies {
		if code, _, stderr := runCLI(t, "collect", "envoy", "--admin", p.Admin, "--proxy", p.Name, "--label", "before", "--out", dir); code != 0 {
			t.Fatalf("collect before %s: %d %s", p.Name, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, "attack", "--target", "proxy-a="+a.Proxies[0].URL, "--target", "proxy-b="+a.Proxies[1].URL,
		"--ids", "20", "--split", "even", "--path", "/inventory", "--out", dir)
	if code != 0 {
		t.Fatalf("attack: %d %s", code, stderr)
	}
	for _, p := range a.Proxies {
		if code, _, stderr := runCLI(t, "collect", "envoy", "--admin", p.Admin, "--proxy", p.Name, "--label", "after", "--out", dir); code != 0 {
			t.Fatalf("collect after %s: %d %s", p.Name, code, stderr)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	code, out, stderr := runCLI(t, "analyze", "--format", "json", "--expect-admitted", "10", "--intended-limit", "5", dir)
	if code != ExitOK {
		t.Fatalf("analyze exit %d: %s\n%s", code, stderr, out)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	s := rep.Scenarios[0]
	if s.Totals.Sent != 20 || s.Totals.N[evidence.ClassAdmitted] != 10 || s.Totals.N[evidence.ClassLocal429] != 10 || s.Receipts.Total != 10 ||
		s.OverAdmission.Min != 5 || s.OverAdmission.Max != 5 {
		t.Fatalf("totals %+v receipts %d over %+v", s.Totals, s.Receipts.Total, s.OverAdmission)
	}
	// The stats deltas were compared with the clients, per proxy.
	if len(s.Stats) != 2 || s.Stats[0].Deltas["http_local_rate_limit.enforced"] != 5 {
		t.Fatalf("stats %+v", s.Stats)
	}
	// A wrong expectation on the same evidence exits 3.
	if code, _, _ := runCLI(t, "analyze", "--expect-admitted", "5", dir); code != ExitFail {
		t.Fatalf("analyze with a wrong expectation exited %d, want %d", code, ExitFail)
	}
}

// TestExitCodes pins the documented exit-code contract for misuse.
func TestExitCodes(t *testing.T) {
	empty := t.TempDir()
	emptyFile := filepath.Join(t.TempDir(), "envoy.yaml")
	if err := os.WriteFile(emptyFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A FIFO nobody writes to: opening it for reading must not block.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"nosuch"}, ExitUsage},
		{[]string{"collect"}, ExitUsage},
		{[]string{"collect", "nosuch"}, ExitUsage},
		{[]string{"analyze"}, ExitUsage},
		{[]string{"attack", "--ids", "-3", "--target", "a=http://127.0.0.1:1", "--out", empty}, ExitUsage},
		{[]string{"lab", "--rls", "grpc://127.0.0.1:1"}, ExitUsage},
		{[]string{"lab", "--listen-base", "65300"}, ExitUsage},
		{[]string{"analyze", empty}, ExitNotRun},
		{[]string{"analyze", filepath.Join(empty, "nope")}, ExitUsage},
		{[]string{"--version"}, ExitOK},
		{[]string{"lint", emptyFile}, ExitFail},
		// A FIFO or a device as an input file is a usage error (tester report 1, item 14).
		{[]string{"lint", fifo}, ExitUsage},
		{[]string{"collect", "rls-log", fifo}, ExitUsage},
		{[]string{"run", fifo}, ExitUsage},
		{[]string{"lint", "/dev/null"}, ExitUsage},
		{[]string{"backend", "--listen", "0.0.0.0:99999"}, ExitUsage},
	} {
		if code, _, stderr := runCLI(t, c.args...); code != c.want {
			t.Errorf("rlbench %v: exit %d, want %d (%s)", c.args, code, c.want, stderr)
		}
	}
}

// TestAttackInputFiles: --body-file and --ids-file that do not exist or are
// not regular files (a device that never ends: /dev/zero was read until the
// kernel killed the process; a directory) are usage errors naming the
// flag, before anything is sent.
func TestAttackInputFiles(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--ids", "3", "--body-file", "/dev/zero"},
		{"--ids", "3", "--body-file", filepath.Join(dir, "missing")},
		{"--ids", "3", "--body-file", dir},
		{"--ids-file", "/dev/zero"},
		{"--ids-file", filepath.Join(dir, "missing")},
	} {
		out := filepath.Join(dir, "ev")
		all := append([]string{"attack", "--target", "b=http://127.0.0.1:1", "--out", out}, args...)
		code, _, errOut := runCLI(t, all...)
		flag := args[len(args)-2]
		if code != ExitUsage || !strings.Contains(errOut, flag+" "+args[len(args)-1]) {
			t.Errorf("%v: exit %d, stderr %q; want a usage error naming %s", args, code, errOut, flag)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: %s was created (err %v)", args, out, err)
		}
	}
}
