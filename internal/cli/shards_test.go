package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/schemas"
)

// The sharded burst: 40 IDs at one proxy whose Envoy local bucket holds 30
// (per hour): 30 admitted, each with its receipt, 10 local 429s.
const (
	shardIDs    = 40
	shardTokens = 30
	shardCount  = 4
)

var shardScenario = fmt.Sprintf(`{"schema": "rlbench.scenario/v1", "name": "sharded burst",
 "expect": {"label": "%[1]d admitted", "admitted": %[1]d, "classes": {"local_429": %[2]d}, "receipts_equal_admitted": true},
 "limiters": [{"name": "local proxy-a", "stage": "local", "targets": ["proxy-a"], "key": "target",
   "model": {"kind": "envoy_local", "envoy_version": "1.34", "max_tokens": %[1]d, "tokens_per_fill": %[1]d, "fill_interval": "1h0m0s",
             "filter_enabled_percent": 100, "filter_enforced_percent": 100, "exact_level": true}}]}
`, shardTokens, shardIDs-shardTokens)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// rlbenchBinary builds cmd/rlbench once per test binary.
func rlbenchBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlbench-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "rlbench")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/rlbench/rlbench/cmd/rlbench").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// startShardLab starts a lab of one proxy (bucket of shardTokens per hour)
// whose backend seals its receipts in receipts.
func startShardLab(t *testing.T, receipts string) *lab.Lab {
	t.Helper()
	lo := parseLab(t, "--proxies", "1", "--local-max-tokens", strconv.Itoa(shardTokens), "--local-tokens-per-fill", strconv.Itoa(shardTokens),
		"--local-fill-interval", "1h").labOptions()
	lo.Backend.ReceiptsFile = receipts
	lo.Backend.Replica = "lab-backend"
	l, err := lab.Start(context.Background(), lo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// analyzeJSON runs `rlbench analyze --format json dir` in process.
func analyzeJSON(t *testing.T, dir string) (int, *report.Report) {
	t.Helper()
	code, out, stderr := runCLI(t, "analyze", "--format", "json", "--status-file", "-", dir)
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("analyze %s: exit %d, %v\n%s\n%s", dir, code, err, out, stderr)
	}
	return code, &rep
}

func requestIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	if err := evidence.ReadFile(path, func(_ int, q *evidence.Request) error { ids[q.ID]++; return nil }); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestIndexedJobLocal plays a Kubernetes Indexed Job on one machine (issue
// 15): four `rlbench attack` processes with JOB_COMPLETION_INDEX 0..3 and
// one --start-at, against a lab; the backend's receipts pulled while it
// runs (`rlbench collect receipts`) and sealed in its file; merged and
// analysed. The merged run must give exactly the unsharded run's figures,
// each ID once, and a merge without shard 2 must be NOT_RUN naming it.
func TestIndexedJobLocal(t *testing.T) {
	bin := rlbenchBinary(t)
	root := t.TempDir()

	// The unsharded run, on a lab of its own.
	single := filepath.Join(root, "single")
	writeFile(t, evidence.Dir(single).Scenario(), shardScenario)
	l := startShardLab(t, evidence.Dir(single).Receipts())
	url := l.Addresses().Proxies[0].URL
	if out, err := exec.Command(bin, "attack", "--target", "proxy-a="+url, "--ids", strconv.Itoa(shardIDs), "--out", single, "-q").CombinedOutput(); err != nil {
		t.Fatalf("unsharded attack: %v\n%s", err, out)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	code, want := analyzeJSON(t, single)
	ws := want.Scenarios[0]
	if code != ExitOK || ws.Status != evidence.Pass || ws.Totals.Passed != shardTokens || ws.Receipts.Total != shardTokens {
		t.Fatalf("unsharded run: exit %d, %s, passed %d, receipts %d: %v", code, ws.Status, ws.Totals.Passed, ws.Receipts.Total, ws.Reasons)
	}

	// The Indexed Job: N pods, one start instant.
	job := filepath.Join(root, "job")
	writeFile(t, filepath.Join(job, "scenario", evidence.ScenarioFile), shardScenario)
	backendDir := filepath.Join(job, "backend")
	l = startShardLab(t, evidence.Dir(backendDir).Receipts())
	a := l.Addresses()
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for k := range shardCount {
		cmd := exec.Command(bin, "attack", "--target", "proxy-a="+a.Proxies[0].URL, "--ids", strconv.Itoa(shardIDs),
			"--shard-from-env", "JOB_COMPLETION_INDEX", "--shards", strconv.Itoa(shardCount), "--start-at", at,
			"--out", filepath.Join(job, fmt.Sprintf("shard-%d", k)), "-q")
		cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+strconv.Itoa(k))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, &out)
	}
	for k, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("shard %d: %v\n%s", k, err, outs[k])
		}
	}
	// Pull the receipts from the running backend, as the collection Job does.
	if out, err := exec.Command(bin, "collect", "receipts", "--url", a.Backend, "--out", filepath.Join(job, "collected")).CombinedOutput(); err != nil {
		t.Fatalf("collect receipts: %v\n%s", err, out)
	}
	if err := l.Close(); err != nil { // seals backend/receipts.jsonl
		t.Fatal(err)
	}

	merged := filepath.Join(root, "merged")
	if out, err := exec.Command(bin, "merge", job, "--out", merged).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	ids := requestIDs(t, evidence.Dir(merged).Requests())
	wantIDs := requestIDs(t, evidence.Dir(single).Requests())
	if len(ids) != shardIDs || len(wantIDs) != shardIDs {
		t.Fatalf("merged %d IDs, unsharded %d, want %d each", len(ids), len(wantIDs), shardIDs)
	}
	for id, n := range ids {
		if n != 1 || wantIDs[id] != 1 {
			t.Fatalf("ID %s: %d times in the merge, %d in the unsharded run; want once each", id, n, wantIDs[id])
		}
	}
	for _, dir := range []string{merged, job} { // rlbench merge's output, and analyze of the directory of shards
		code, got := analyzeJSON(t, dir)
		gs := got.Scenarios[0]
		if code != ExitOK || gs.Status != evidence.Pass {
			t.Fatalf("%s: exit %d, %s: %v", dir, code, gs.Status, gs.Reasons)
		}
		if gs.Totals != ws.Totals || gs.Receipts.Total != ws.Receipts.Total || gs.Receipts.AdmittedWithReceipt != ws.Receipts.AdmittedWithReceipt ||
			gs.Receipts.Duplicates != 0 {
			t.Fatalf("%s: totals %+v receipts %+v; unsharded %+v %+v", dir, gs.Totals, gs.Receipts, ws.Totals, ws.Receipts)
		}
		sh := gs.Shards
		if sh == nil || sh.Count != shardCount || len(sh.Shards) != shardCount || sh.Hosts != 1 {
			t.Fatalf("%s: shards %+v", dir, sh)
		}
		for k, s := range sh.Shards {
			if s.Index != k || s.Requests != shardIDs/shardCount || len(s.Offsets) != 1 || s.Offsets[0].Replica != "lab-backend" {
				t.Fatalf("%s: shard %d: %+v", dir, k, s)
			}
			// One host: the clocks are one, and the bound must hold 0.
			if o := s.Offsets[0]; o.Bounded && (o.MinNs > 0 || o.MaxNs < 0) {
				t.Fatalf("%s: shard %d: offset bound %+v excludes 0 on one clock", dir, k, o)
			}
		}
		if l := gs.Limiters[0]; l.Uncertainty.WidenNs != sh.OffsetBoundNs || sh.OffsetBoundNs <= 0 {
			t.Fatalf("%s: limiter widened by %d, offset bound %d", dir, l.Uncertainty.WidenNs, sh.OffsetBoundNs)
		}
	}
	// Every file of the job's directories and of the merge has its schema
	// (merge.json, receipts/<source>.jsonl, the seals...).
	for _, dir := range []string{job, merged} {
		if n, err := schemas.ValidateDir(dir); err != nil || n == 0 {
			t.Fatalf("%s: %d files valid: %v", dir, n, err)
		}
	}
	var rec evidence.MergeRecord
	b, err := os.ReadFile(evidence.Dir(merged).Merge())
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("merge.json: %v", err)
	}
	// The backend's sealed file and the pulled copy hold the same receipts:
	// each is taken once.
	if rec.ReceiptsRead != 2*shardTokens || rec.ReceiptsIdentical != shardTokens || len(rec.Problems) != 0 {
		t.Fatalf("merge.json: read %d, identical %d, problems %v", rec.ReceiptsRead, rec.ReceiptsIdentical, rec.Problems)
	}

	// A shard removed from the merge: NOT_RUN naming it.
	partial := filepath.Join(root, "partial")
	var args []string
	for _, d := range []string{"shard-0", "shard-1", "shard-3", "backend", "scenario"} {
		args = append(args, filepath.Join(job, d))
	}
	cmd := exec.Command(bin, append(append([]string{"merge"}, args...), "--out", partial)...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitNotRun || !strings.Contains(string(out), "shard 2/4 missing") {
		t.Fatalf("merge without shard 2: %v\n%s", err, out)
	}
	code, got := analyzeJSON(t, partial)
	if gs := got.Scenarios[0]; code != ExitNotRun || gs.Status != evidence.NotRun || !strings.Contains(strings.Join(gs.Reasons, "\n"), "shard 2/4 missing") {
		t.Fatalf("merge without shard 2: exit %d, %s: %v", code, gs.Status, gs.Reasons)
	}
}

// TestMergeAndCollectReceiptsUsage: misuse is exit 2 before anything runs.
func TestMergeAndCollectReceiptsUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", dir}, "--out is required"},
		{[]string{"merge", "--out", dir}, "merge needs one or more shard directories"},
		{[]string{"collect", "receipts", "--out", dir}, "--url (at least one)"},
		{[]string{"collect", "receipts", "--url", "ftp://x", "--out", dir}, "want http://HOST:PORT"},
		{[]string{"collect", "receipts", "--url", "http://u:pw@127.0.0.1:1", "--url", "http://127.0.0.1:1/", "--out", dir}, "the same backend"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, ":pw@") {
			t.Errorf("%v: exit %d, stderr %q; want %d with %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
	// An unreachable backend: exit 1 naming it, and the file's seal says why.
	code, _, stderr := runCLI(t, "collect", "receipts", "--url", "http://127.0.0.1:1", "--out", dir)
	if code != ExitError || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("unreachable: exit %d, %q", code, stderr)
	}
	st, err := evidence.ReadFileState(evidence.Dir(dir).CollectedReceipts("127_0_0_1_1"))
	if err != nil || st.State != evidence.StateClosed || st.Error == "" {
		t.Fatalf("seal of a failed pull: %+v, %v", st, err)
	}
}
