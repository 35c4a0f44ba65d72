package cli

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/internal/senders"
	"github.com/rlbench/rlbench/internal/testfix"
)

// TestAttackSenders: `rlbench attack --senders 4` against a lab whose
// bucket holds 30 of 40 IDs: four sender processes, each a shard of the
// attack in --out/sender-K; analyze of the directory (the shards, the
// backend's sealed receipts, scenario.json) merges them into one run that
// passes with the unsharded figures, every ID sent once by one sender.
// Each sender's arrivals (report.SenderArrivals) are its own requests'
// figures: its lines, its first and last send, and the first and last of
// the receipts of its IDs, computed here again from the sender's
// requests.jsonl and the backend's receipts. A sender that crashed (its
// directory holds requests but no attack.json, as one killed before it
// could write it) makes the run NOT_RUN, not PASS.
func TestAttackSenders(t *testing.T) {
	bin := rlbenchBinary(t)
	job := t.TempDir()
	writeFile(t, filepath.Join(job, "scenario", evidence.ScenarioFile), shardScenario)
	backendDir := filepath.Join(job, "backend")
	l := startShardLab(t, evidence.Dir(backendDir).Receipts())
	url := l.Addresses().Proxies[0].URL
	out, err := exec.Command(bin, "attack", "--target", "proxy-a="+url, "--ids", strconv.Itoa(shardIDs), "--senders", strconv.Itoa(shardCount),
		"--out", job).CombinedOutput()
	if err != nil {
		t.Fatalf("attack --senders: %v\n%s", err, out)
	}
	if err := l.Close(); err != nil { // seals backend/receipts.jsonl
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "attack: 4 senders: 40 of 40 IDs sent, send window") {
		t.Errorf("summary:\n%s", out)
	}
	// Each ID once, in the shard whose index is its position mod 4.
	shardOf := map[string]int{}
	sentNs := map[string]int64{}
	for k := range shardCount {
		d := senders.SenderDir(job, k)
		if err := evidence.ReadFile(evidence.Dir(d).Requests(), func(_ int, q *evidence.Request) error {
			if _, dup := shardOf[q.ID]; dup {
				t.Errorf("%s sent by senders %d and %d", q.ID, shardOf[q.ID], k)
			}
			shardOf[q.ID], sentNs[q.ID] = k, q.SentNs
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(shardOf) != shardIDs {
		t.Fatalf("%d IDs sent, want %d", len(shardOf), shardIDs)
	}
	recv := make([][]int64, shardCount)
	if err := evidence.ReadFile(evidence.Dir(backendDir).Receipts(), func(_ int, rc *evidence.Receipt) error {
		if rc.ID == nil {
			t.Fatal("a receipt without ID")
		}
		k, ok := shardOf[*rc.ID]
		if !ok {
			t.Fatalf("receipt of %s, never sent", *rc.ID)
		}
		recv[k] = append(recv[k], rc.RecvNs)
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	code, rep := analyzeJSON(t, job)
	s := rep.Scenarios[0]
	if code != ExitOK || s.Status != evidence.Pass || s.Totals.Passed != shardTokens || s.Receipts.Total != shardTokens {
		t.Fatalf("exit %d, %s, passed %d, receipts %d: %v", code, s.Status, s.Totals.Passed, s.Receipts.Total, s.Reasons)
	}
	if s.Arrivals == nil || len(s.Arrivals.Senders) != shardCount {
		t.Fatalf("arrivals %+v", s.Arrivals)
	}
	total := 0
	for k, sa := range s.Arrivals.Senders {
		var first, last int64
		for id, sk := range shardOf {
			if sk != k {
				continue
			}
			if first == 0 || sentNs[id] < first {
				first = sentNs[id]
			}
			last = max(last, sentNs[id])
		}
		var rfirst, rlast int64
		for _, ns := range recv[k] {
			if rfirst == 0 || ns < rfirst {
				rfirst = ns
			}
			rlast = max(rlast, ns)
		}
		if sa.Shard != k || sa.Requests != shardIDs/shardCount || sa.FirstSendNs != first || sa.LastSendNs != last || sa.SendWidthNs != last-first {
			t.Errorf("sender %d: %+v; want first send %d, last %d", k, sa, first, last)
		}
		if sa.Receipts.Count != len(recv[k]) || sa.Receipts.FirstNs != rfirst || sa.Receipts.LastNs != rlast || sa.LandedWidthNs != rlast-rfirst {
			t.Errorf("sender %d: receipts %d first %d last %d landed %d; want %d, %d, %d", k, sa.Receipts.Count, sa.Receipts.FirstNs,
				sa.Receipts.LastNs, sa.LandedWidthNs, len(recv[k]), rfirst, rlast)
		}
		total += sa.Receipts.Count
	}
	if total != s.Arrivals.Receipts.Count {
		t.Errorf("the senders' receipts add up to %d, all receipts %d", total, s.Arrivals.Receipts.Count)
	}

	// Sender 2 crashed: its requests are on file, its attack.json is not.
	if err := os.Remove(evidence.Dir(senders.SenderDir(job, 2)).Attack()); err != nil {
		t.Fatal(err)
	}
	code, rep = analyzeJSON(t, job)
	if s := rep.Scenarios[0]; code != ExitNotRun || s.Status != evidence.NotRun || !strings.Contains(strings.Join(s.Reasons, "\n"), "2/4") {
		t.Fatalf("without sender 2's attack.json: exit %d, %s: %v", code, s.Status, s.Reasons)
	}
}

// TestAttackSendersUsage: --senders with a shard of its own, or with
// --events, out of 0..64, above the IDs or with a --start-at that has
// passed is a usage error (exit 2) before anything runs, and so is an
// --out that holds an earlier run's sender directory.
func TestAttackSendersUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(senders.SenderDir(filepath.Join(dir, "old"), 1), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--senders", "2", "--shard", "0/2", "--out", filepath.Join(dir, "a")}, "give --senders or --shard, not both"},
		{[]string{"--senders", "2", "--events", "-", "--out", filepath.Join(dir, "b")}, "--events and --remote-write are not supported"},
		{[]string{"--senders", "-1", "--out", filepath.Join(dir, "c")}, "--senders must be 0..64"},
		{[]string{"--senders", "65", "--out", filepath.Join(dir, "c")}, "--senders must be 0..64"},
		{[]string{"--senders", "5", "--out", filepath.Join(dir, "c")}, "more senders than the 4 IDs"},
		{[]string{"--senders", "2", "--start-at", "2020-01-01T00:00:00Z", "--out", filepath.Join(dir, "c")}, "--start-at 2020-01-01T00:00:00Z has passed"},
		{[]string{"--senders", "2", "--out", filepath.Join(dir, "old")}, "already holds " + senders.SenderDir(filepath.Join(dir, "old"), 1)},
		// What each sender would refuse is named by the parent, before any starts.
		{[]string{"--senders", "2", "--pipeline", "1025", "--out", filepath.Join(dir, "d")}, "pipeline 1025: want 0 .. 1024"},
		{[]string{"--senders", "2", "--pipeline", "2", "--rate", "10/1s", "--out", filepath.Join(dir, "d")}, "pipeline 2: not with a rate"},
		{[]string{"--senders", "2", "--timeout", "-1s", "--out", filepath.Join(dir, "d")}, "negative timeout -1s"},
	} {
		args := append([]string{"attack", "--target", "http://127.0.0.1:1", "--ids", "4"}, c.args...)
		code, _, stderr := runCLI(t, args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
}

// TestMicroburstSendersPlan runs examples/bursts/microburst-senders.yaml
// (attack.senders: 4) in process; the sender processes are this test
// binary as rlbench (TestMain). Both scenarios PASS; in each, the four
// senders' arrivals cover the 2000 requests, 500 each, and their receipts
// are the scenario's receipts, each sender's landed width its last receipt
// minus its first, within the overall receipts. Then the same plan with a
// sender that crashes (a wrapper that exits 1 for shard 1/4 and runs the
// built rlbench for the others): every scenario is NOT_RUN naming it.
func TestMicroburstSendersPlan(t *testing.T) {
	plan := filepath.Join(testfix.RepoRoot(t), "examples", "bursts", "microburst-senders.yaml")
	rep := runPlanReport(t, plan, 2)
	for i, s := range rep.Scenarios {
		// The second asks that the 2000 land within 10 ms (landed_within):
		// PASS where they did, else NOT_RUN for that reason alone, with
		// the width the proxy's access log measured; never FAIL.
		status := s.Status
		if c := landedCheck(s); i == 1 && (c == nil || c.Status == report.CheckUnknown && (status != evidence.NotRun || len(s.Reasons) != 1 ||
			!strings.HasPrefix(s.Reasons[0], "inconclusive: burst landed within 10ms") || !strings.Contains(c.Got, "2000 requests landed over") ||
			!strings.Contains(c.Got, "in the access log of proxy-a"))) {
			t.Fatalf("%s: %s, landed check %+v: %v", s.Name, status, c, s.Reasons)
		} else if i == 1 && c.Status == report.CheckUnknown {
			status = evidence.Pass // only the landing was inconclusive; the rest is checked below
		}
		if status != evidence.Pass || s.Totals.Sent != 2000 || s.Receipts.Duplicates != 0 {
			t.Fatalf("%s: %s, sent %d, duplicate receipts %d: %v", s.Name, s.Status, s.Totals.Sent, s.Receipts.Duplicates, s.Reasons)
		}
		a := s.Arrivals
		if a == nil || len(a.Senders) != 4 {
			t.Fatalf("%s: arrivals %+v", s.Name, a)
		}
		got := 0
		for k, sa := range a.Senders {
			if sa.Shard != k || sa.Requests != 500 || sa.Phase != "attack" || sa.SendWidthNs != sa.LastSendNs-sa.FirstSendNs || sa.FirstSendNs <= 0 {
				t.Errorf("%s: sender %d: %+v", s.Name, k, sa)
			}
			st := sa.Receipts
			if st.Count > 1 && (sa.LandedWidthNs != st.LastNs-st.FirstNs || st.FirstNs < a.Receipts.FirstNs || st.LastNs > a.Receipts.LastNs) {
				t.Errorf("%s: sender %d: landed %d, receipts %d..%d, all %d..%d", s.Name, k, sa.LandedWidthNs, st.FirstNs, st.LastNs,
					a.Receipts.FirstNs, a.Receipts.LastNs)
			}
			got += st.Count
		}
		// Where the proxy's access log times the requests (the second
		// scenario), each sender's landing at the limiter counts its 500
		// and is no wider than the burst's.
		if c := landedCheck(s); i == 1 {
			whole := landedWidth(t, c.Got)
			for k, sa := range a.Senders {
				if sa.AtLimiter != 500 || sa.LimiterWidthNs <= 0 || time.Duration(sa.LimiterWidthNs).Round(time.Microsecond) > whole { // the check prints µs
					t.Errorf("%s: sender %d at the limiter: %d over %v; want 500 within the burst's %v", s.Name, k, sa.AtLimiter, time.Duration(sa.LimiterWidthNs), whole)
				}
			}
		}
		// The harness's burst spread is the senders' window: their bursts together.
		var first, last int64
		for _, sa := range a.Senders {
			if first == 0 || sa.FirstSendNs < first {
				first = sa.FirstSendNs
			}
			last = max(last, sa.LastSendNs)
		}
		if s.Harness == nil || s.Harness.BurstSpreadNs != last-first {
			t.Errorf("%s: harness %+v; want the senders' send window %d", s.Name, s.Harness, last-first)
		}
		if got != a.Receipts.Count || got != s.Receipts.Total {
			t.Errorf("%s: the senders' receipts add up to %d; all %d, scenario %d", s.Name, got, a.Receipts.Count, s.Receipts.Total)
		}
	}

	// A sender that crashes.
	bin := rlbenchBinary(t)
	wrap := filepath.Join(t.TempDir(), "rlbench")
	writeFile(t, wrap, "#!/bin/sh\ncase \" $* \" in *\" --shard 1/4 \"*) echo 'sender crashed' >&2; exit 1 ;; esac\nexec "+bin+" \"$@\"\n")
	if err := os.Chmod(wrap, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := runner.ParsePlan(plan, readFile(t, plan))
	if err != nil {
		t.Fatal(err)
	}
	runDir, err := runner.Run(t.Context(), p, runner.Options{Root: t.TempDir(), Exe: wrap})
	if err != nil {
		t.Fatal(err)
	}
	code, rep := analyzeJSON(t, runDir)
	if code != ExitNotRun {
		t.Errorf("with a crashed sender: exit %d", code)
	}
	for _, s := range rep.Scenarios {
		if why := strings.Join(s.Reasons, "\n"); s.Status != evidence.NotRun || !strings.Contains(why, "sender 1/4") || !strings.Contains(why, "sender crashed") {
			t.Errorf("%s: %s: %v", s.Name, s.Status, s.Reasons)
		}
	}
}

// runPlanReport runs plan with `rlbench run` (exit 0 or 4) into a new root
// and returns analyze's JSON report of its one run directory (exit 0 or 4),
// which must have scenarios scenarios.
func runPlanReport(t *testing.T, plan string, scenarios int) *report.Report {
	t.Helper()
	root := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", plan, "--root", root)
	if code != ExitOK && code != ExitNotRun {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(root, "2*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v", runs)
	}
	code, rep := analyzeJSON(t, runs[0])
	if code != ExitOK && code != ExitNotRun || len(rep.Scenarios) != scenarios {
		t.Fatalf("analyze: exit %d, %d scenarios, want %d", code, len(rep.Scenarios), scenarios)
	}
	return rep
}

// landedCheck is a scenario's expect.landed_within check, nil without one.
func landedCheck(s report.ScenarioReport) *report.Check {
	for i := range s.Checks {
		if strings.HasPrefix(s.Checks[i].Name, "burst landed within") {
			return &s.Checks[i]
		}
	}
	return nil
}

// TestAttackSendersInterrupted: SIGINT to `rlbench attack --senders 2`
// while every request waits on a server that never answers stops the
// senders (the parent passes the interrupt on); the run exits
// ExitInterrupted, not as a failure, and each sender's lines are kept.
func TestAttackSendersInterrupted(t *testing.T) {
	bin := rlbenchBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const ids = 10
	read := make(chan struct{}, ids)
	var conns sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err == nil {
					read <- struct{}{}
				}
				<-stop // never answers
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(stop)
		conns.Wait()
	})
	out := filepath.Join(t.TempDir(), "ev")
	cmd := exec.Command(bin, "attack", "--target", "s=http://"+ln.Addr().String(), "--ids", strconv.Itoa(ids), "--senders", "2",
		"--timeout", "1m", "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for range ids { // every request is on the server: the attack is in flight
		<-read
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted || strings.Contains(stderr.String(), "senders failed") {
		t.Fatalf("exit %v, want %d\n%s", err, ExitInterrupted, stderr.String())
	}
	lines := 0
	for k := range 2 {
		if err := evidence.ReadFile(evidence.Dir(senders.SenderDir(out, k)).Requests(), func(_ int, q *evidence.Request) error {
			lines++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if lines != ids {
		t.Errorf("%d lines kept, want %d", lines, ids)
	}
}

// landedWidth is the width in the got text of a landed_within check
// (analyze/landed.go: "N requests landed over WIDTH ...").
func landedWidth(t *testing.T, got string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`landed over (\S+) `).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no width in %q", got)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return d
}
