package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// fakeShard writes a shard directory: attack.json of shard k/n and one
// request per ID (code 200, sent at send[i], 100 ns latency).
func fakeShard(t *testing.T, dir string, k, n, total int, digest, host string, ids []string, send []int64) {
	t.Helper()
	sum := &evidence.AttackSummary{Schema: evidence.AttackSummarySchema, Complete: true, Sent: len(ids), Recorded: len(ids), StartNs: 1000 + int64(k), Host: host,
		Shard: &evidence.AttackShard{Index: k, Count: n, IDs: len(ids), TotalIDs: total, Digest: digest, IDSetDigest: digest}}
	if err := evidence.WriteJSONFile(evidence.Dir(dir).Attack(), evidence.NewAttack(sum)); err != nil {
		t.Fatal(err)
	}
	var reqs []evidence.Request
	for i, id := range ids {
		reqs = append(reqs, evidence.Request{ID: id, Target: "proxy-a", URL: "http://127.0.0.1:1", Method: "GET", SentNs: send[i], LatencyNs: 100, Code: 200})
	}
	if err := evidence.WriteLines(evidence.Dir(dir).Requests(), reqs); err != nil {
		t.Fatal(err)
	}
}

func receipt(id string, recv int64, replica string) evidence.Receipt {
	return evidence.Receipt{ID: &id, RecvNs: recv, Method: "GET", Path: "/", Remote: "127.0.0.1:2", Replica: replica}
}

func mergeOf(t *testing.T, inputs ...string) (*evidence.MergeRecord, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	rec, err := Merge(context.Background(), Options{Inputs: inputs, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return rec, out
}

func hasProblem(rec *evidence.MergeRecord, sub string) bool {
	for _, p := range rec.Problems {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

func TestMergeCoverage(t *testing.T) {
	root := t.TempDir()
	d := func(name string) string { return filepath.Join(root, name) }
	fakeShard(t, d("s0"), 0, 3, 6, "sha256:a", "h0", []string{"i0", "i3"}, []int64{10, 20})
	fakeShard(t, d("s1"), 1, 3, 6, "sha256:a", "h1", []string{"i1", "i4"}, []int64{10, 20})
	fakeShard(t, d("s2"), 2, 3, 6, "sha256:a", "h2", []string{"i2", "i5"}, []int64{10, 20})
	fakeShard(t, d("s1again"), 1, 3, 6, "sha256:a", "h1", []string{"i1", "i4"}, []int64{10, 20})
	fakeShard(t, d("other"), 0, 2, 6, "sha256:b", "h9", []string{"x0"}, []int64{10})
	fakeShard(t, d("overlap"), 2, 3, 6, "sha256:a", "h2", []string{"i2", "i0"}, []int64{10, 20})

	rec, out := mergeOf(t, d("s0"), d("s1"), d("s2"))
	if len(rec.Problems) != 0 || len(rec.Shards) != 3 || rec.Count != 3 || rec.StartSpreadNs != 2 {
		t.Fatalf("complete merge: %+v", rec)
	}
	s := evidence.LoadScenario(context.Background(), out, false)
	if s.Merge == nil || s.Requests.Len() != 6 || len(s.Problems) != 0 || s.Attack == nil || len(s.Attack.Phases) != 3 || s.Attack.Sent != 6 {
		t.Fatalf("merged load: merge %v, %d requests, problems %v", s.Merge != nil, s.Requests.Len(), s.Problems)
	}

	for _, c := range []struct {
		name   string
		inputs []string
		want   string
	}{
		{"missing", []string{d("s0"), d("s2")}, "shard 1/3 missing"},
		{"twice", []string{d("s0"), d("s1"), d("s1again"), d("s2")}, "shard 1/3 twice: " + d("s1") + " and " + d("s1again")},
		{"other attack", []string{d("s0"), d("s1"), d("s2"), d("other")}, "shard 0/2 (" + d("other") + "): of another attack"},
		{"overlap", []string{d("s0"), d("s1"), d("overlap")}, `ID "i0" sent by shard 0/3 (` + d("s0") + ") and shard 2/3 (" + d("overlap") + ")"},
	} {
		rec, out := mergeOf(t, c.inputs...)
		if !hasProblem(rec, c.want) {
			t.Errorf("%s: problems %q, want one with %q", c.name, rec.Problems, c.want)
			continue
		}
		// Load turns them into problems of merge.json: analyze's NOT_RUN.
		s := evidence.LoadScenario(context.Background(), out, false)
		found := false
		for _, p := range s.Problems {
			found = found || p.File == evidence.MergeFile && strings.Contains(p.Msg, c.want)
		}
		if !found {
			t.Errorf("%s: loaded problems %+v lack %q", c.name, s.Problems, c.want)
		}
	}
	// A directory of shard directories is a shard set, expanded one level.
	set := t.TempDir()
	for _, n := range []string{"s0", "s1", "s2"} {
		if err := os.Rename(d(n), filepath.Join(set, n)); err != nil {
			t.Fatal(err)
		}
	}
	// The set may hold the backend's receipts itself; a shard given twice
	// (on its own and in its set) is one input.
	if err := evidence.WriteLines(evidence.Dir(set).Receipts(), []evidence.Receipt{receipt("i0", 50, "r")}); err != nil {
		t.Fatal(err)
	}
	if !IsShardSet(set) || IsShardSet(filepath.Join(set, "s0")) {
		t.Fatal("IsShardSet")
	}
	if rec, _ := mergeOf(t, set, filepath.Join(set, "s0")); len(rec.Problems) != 0 || len(rec.Replicas) != 1 || len(rec.Inputs) != 4 {
		t.Fatalf("set with receipts: %+v", rec)
	}
	b, err := LoadShardSet(context.Background(), set)
	if err != nil || len(b.Scenarios) != 1 || b.Scenarios[0].Requests.Len() != 6 || b.Scenarios[0].Merge == nil {
		t.Fatalf("LoadShardSet: %v %+v", err, b)
	}
	// An output that is not empty is refused.
	if _, err := Merge(context.Background(), Options{Inputs: []string{set}, Out: set}); err == nil {
		t.Fatal("merge into a non-empty directory")
	}
}

// TestMergeClockOffset: θ (backend clock minus shard clock) lies in
// [max(recv-end), min(recv-send)]; identical receipts are taken once,
// receipts that differ (another replica) both.
func TestMergeClockOffset(t *testing.T) {
	root := t.TempDir()
	const theta = 500
	// Shard 0: sends at 1000 and 2000, each answered after 100 ns.
	fakeShard(t, filepath.Join(root, "s0"), 0, 1, 3, "sha256:a", "h0", []string{"a", "b", "c"}, []int64{1000, 2000, 3000})
	// Replica r1 received a 50 ns after its send, b 10 ns after; c never.
	recs := []evidence.Receipt{receipt("a", 1000+50+theta, "r1"), receipt("b", 2000+10+theta, "r1")}
	if err := evidence.WriteLines(evidence.Dir(filepath.Join(root, "be1")).Receipts(), recs); err != nil {
		t.Fatal(err)
	}
	// The same receipts pulled again (identical), and r2's receipt of a.
	if err := evidence.WriteLines(evidence.Dir(filepath.Join(root, "pulled")).CollectedReceipts("x"), append(recs, receipt("a", 1000+90+theta, "r2"))); err != nil {
		t.Fatal(err)
	}
	rec, out := mergeOf(t, root)
	if len(rec.Problems) != 0 || rec.ReceiptsRead != 5 || rec.ReceiptsIdentical != 2 || len(rec.Replicas) != 2 {
		t.Fatalf("merge: %+v", rec)
	}
	offs := rec.Shards[0].Offsets
	// a: [1550-1100, 1550-1000] = [450, 550]; b: [2510-2100, 2510-2000] = [410, 510].
	if len(offs) != 2 || offs[0] != (evidence.ClockOffset{Replica: "r1", Pairs: 2, Bounded: true, MinNs: 450, MaxNs: 510}) {
		t.Fatalf("offsets %+v", offs)
	}
	if o := offs[1]; o.Replica != "r2" || o.MinNs != 490 || o.MaxNs != 590 || o.AbsNs() != 590 {
		t.Fatalf("r2 offset %+v", o)
	}
	if !(offs[0].MinNs <= theta && theta <= offs[0].MaxNs) {
		t.Fatal("the bound excludes the true offset")
	}
	s := evidence.LoadScenario(context.Background(), out, false)
	if s.Receipts.Len() != 3 || len(s.Problems) != 0 {
		t.Fatalf("merged receipts %d, problems %v", s.Receipts.Len(), s.Problems)
	}
	// An open receipts file (its backend still runs) is a problem naming it.
	w, err := evidence.Create(evidence.Dir(filepath.Join(root, "be1")).Receipts())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rec, _ = mergeOf(t, root)
	if !hasProblem(rec, fmt.Sprintf("receipts: %s: never closed", evidence.Dir(filepath.Join(root, "be1")).Receipts())) {
		t.Fatalf("open receipts: %q", rec.Problems)
	}
}

// TestMergeSkewedHostLoads: a shard host whose clock runs 300 ms ahead of
// the backend's has receipts 300 ms before its sends. The merge measures
// the offset and the load takes it into the clock tolerance (it was a
// contradiction: receipt before send beyond 10 ms, the run NOT_RUN); the
// same receipts without merge.json still contradict the requests.
func TestMergeSkewedHostLoads(t *testing.T) {
	const skew = 300_000_000
	root := t.TempDir()
	send := []int64{1_000_000_000 + skew, 1_002_000_000 + skew}
	fakeShard(t, filepath.Join(root, "s0"), 0, 2, 3, "sha256:a", "near", []string{"a"}, []int64{1_001_000_000})
	fakeShard(t, filepath.Join(root, "s1"), 1, 2, 3, "sha256:a", "ahead", []string{"b", "c"}, send)
	recs := []evidence.Receipt{receipt("a", 1_001_000_050, "r"), receipt("b", send[0]-skew+50, "r"), receipt("c", send[1]-skew+20, "r")}
	if err := evidence.WriteLines(evidence.Dir(filepath.Join(root, "be")).Receipts(), recs); err != nil {
		t.Fatal(err)
	}
	rec, out := mergeOf(t, root)
	if len(rec.Problems) != 0 {
		t.Fatalf("merge problems %q", rec.Problems)
	}
	if b, unbounded := rec.ClockBound(); b < skew || b > skew+100 || len(unbounded) != 0 {
		t.Fatalf("clock bound %d, unbounded %v", b, unbounded)
	}
	s := evidence.LoadScenario(context.Background(), out, false)
	if len(s.Problems) != 0 || s.Receipts.Len() != 3 {
		t.Fatalf("merged load: problems %+v", s.Problems)
	}
	if err := os.Remove(evidence.Dir(out).Merge()); err != nil {
		t.Fatal(err)
	}
	s = evidence.LoadScenario(context.Background(), out, false)
	found := false
	for _, p := range s.Problems {
		found = found || p.File == evidence.ReceiptsFile && strings.Contains(p.Msg, "before its request was sent")
	}
	if !found {
		t.Fatalf("without merge.json: problems %+v", s.Problems)
	}
}

// TestMergeTakesStatsOnce: the same stats file from two inputs must be
// identical.
func TestMergeTakesStatsOnce(t *testing.T) {
	root := t.TempDir()
	fakeShard(t, filepath.Join(root, "s0"), 0, 1, 1, "sha256:a", "h", []string{"a"}, []int64{1})
	for i, body := range []string{"same", "same", "different"} {
		p := evidence.Dir(filepath.Join(root, fmt.Sprintf("c%d", i))).StatsSnapshot("proxy-a", "before", ".txt")
		if err := evidence.Mkdir(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec, out := mergeOf(t, filepath.Join(root, "s0"), filepath.Join(root, "c0"), filepath.Join(root, "c1"))
	if len(rec.Problems) != 0 || rec.Files["stats/proxy-a.before.txt"] != filepath.Join(root, "c0") {
		t.Fatalf("identical stats: %+v", rec)
	}
	if b, err := os.ReadFile(evidence.Dir(out).StatsSnapshot("proxy-a", "before", ".txt")); err != nil || string(b) != "same" {
		t.Fatalf("copied stats %q %v", b, err)
	}
	rec, _ = mergeOf(t, filepath.Join(root, "s0"), filepath.Join(root, "c0"), filepath.Join(root, "c2"))
	if !hasProblem(rec, "stats/proxy-a.before.txt: in "+filepath.Join(root, "c0")) {
		t.Fatalf("differing stats: %q", rec.Problems)
	}
}

// TestMergeMalformedInputs: a shard's requests.jsonl or a receipts file cut
// mid-line is merged up to that line and named as a problem (the merged
// run is NOT_RUN), not an error that leaves nothing to judge; the shard
// set loads as one scenario with the problem. A merge that fails writes
// nothing at Out.
func TestMergeMalformedInputs(t *testing.T) {
	root := t.TempDir()
	d := func(name string) string { return filepath.Join(root, name) }
	fakeShard(t, d("s0"), 0, 2, 4, "sha256:a", "h", []string{"i0", "i2"}, []int64{10, 20})
	fakeShard(t, d("s1"), 1, 2, 4, "sha256:a", "h", []string{"i1", "i3"}, []int64{10, 20})
	cut := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b[:len(b)-10], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cut(evidence.Dir(d("s1")).Requests())
	if err := evidence.WriteLines(evidence.Dir(d("s0")).Receipts(), []evidence.Receipt{receipt("i0", 30, "r"), receipt("i2", 40, "r")}); err != nil {
		t.Fatal(err)
	}
	cut(evidence.Dir(d("s0")).Receipts())
	rec, out := mergeOf(t, d("s0"), d("s1"))
	if !hasProblem(rec, evidence.RequestsFile+":2: truncated") || !hasProblem(rec, evidence.ReceiptsFile+":2: truncated") {
		t.Fatalf("problems %q", rec.Problems)
	}
	s := evidence.LoadScenario(context.Background(), out, false)
	if s.Requests.Len() != 3 || s.Receipts.RecvNs.Len() != 1 || len(s.Problems) == 0 {
		t.Fatalf("%d requests, %d receipts, problems %v", s.Requests.Len(), s.Receipts.RecvNs.Len(), s.Problems)
	}
	b, err := LoadShardSet(context.Background(), root)
	if err != nil {
		t.Fatalf("shard set with a truncated shard: %v", err)
	}
	if len(b.Scenarios) != 1 || len(b.Scenarios[0].Problems) == 0 {
		t.Fatalf("shard set: %+v", b.Scenarios)
	}

	// A shard's attack.json cut short (its attack killed while writing
	// it) is a problem naming the file and line, as a shard without one:
	// the merge is NOT_RUN, not a runtime error.
	if err := os.WriteFile(evidence.Dir(d("s1")).Attack(), []byte("{\n\"schema\": \"rlbench.attack/v2\",\n\"sent\": 2"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, _ = mergeOf(t, d("s0"), d("s1"))
	if !hasProblem(rec, evidence.Dir(d("s1")).Attack()+": line 3: ") || !hasProblem(rec, "shard 1/2 missing") {
		t.Fatalf("problems %q", rec.Problems)
	}

	// A failing merge (a --scenario file that cannot be read) leaves no Out.
	failed := filepath.Join(t.TempDir(), "run")
	if _, err := Merge(context.Background(), Options{Inputs: []string{d("s0"), d("s1")}, Out: failed, Scenario: filepath.Join(t.TempDir(), "absent.json")}); err == nil {
		t.Fatal("merge with an unreadable scenario.json succeeded")
	}
	entries, _ := os.ReadDir(filepath.Dir(failed))
	if len(entries) != 0 {
		t.Fatalf("a failed merge left %v", entries)
	}
}

// A merge killed before it could remove its temporary directory (SIGKILL)
// leaves .<out>.merge-<digits> beside Out, with a partial requests.jsonl:
// a later merge of the parent directory does not take it as an input.
func TestMergeSkipsLeftoverTempDir(t *testing.T) {
	root := t.TempDir()
	d := func(name string) string { return filepath.Join(root, name) }
	fakeShard(t, d("s0"), 0, 2, 4, "sha256:a", "h", []string{"i0", "i2"}, []int64{10, 20})
	fakeShard(t, d("s1"), 1, 2, 4, "sha256:a", "h", []string{"i1", "i3"}, []int64{10, 20})
	left := d(".run" + mergeTempInfix + "123456")
	if err := evidence.WriteLines(evidence.Dir(left).Requests(), []evidence.Request{{ID: "i0", SentNs: 10, LatencyNs: 100, Code: 200}}); err != nil {
		t.Fatal(err)
	}
	if err := evidence.WriteLines(evidence.Dir(left).Receipts(), []evidence.Receipt{receipt("i0", 30, "r")}); err != nil {
		t.Fatal(err)
	}
	rec, _ := mergeOf(t, root)
	if len(rec.Problems) != 0 || rec.ReceiptsRead != 0 || len(rec.Inputs) != 2 {
		t.Fatalf("inputs %q, %d receipts read, problems %q", rec.Inputs, rec.ReceiptsRead, rec.Problems)
	}
	for name, want := range map[string]bool{".run.merge-1": true, ".merge-1": false, "run.merge-1": false, ".run.merge-": false, ".run.merge-1x": false} {
		if got := isMergeTemp(name); got != want {
			t.Errorf("isMergeTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// Out given as "." (the working directory, empty): the merge is refused
// with a clear error, not renamed over the directory the shell stands in
// (or failing on a temporary directory created inside Out), and nothing
// is left in it.
func TestMergeOutWorkingDirectory(t *testing.T) {
	root := t.TempDir()
	fakeShard(t, filepath.Join(root, "s0"), 0, 1, 1, "sha256:a", "h", []string{"i0"}, []int64{10})
	wd := t.TempDir()
	t.Chdir(wd)
	_, err := Merge(context.Background(), Options{Inputs: []string{root}, Out: "."})
	if err == nil || !strings.Contains(err.Error(), "working directory") {
		t.Fatalf("merge into the working directory: %v", err)
	}
	if entries, err := os.ReadDir(wd); err != nil || len(entries) != 0 {
		t.Fatalf("working directory after the refused merge: %v, %v", entries, err)
	}
	// A relative Out beside it is fine.
	if _, err := Merge(context.Background(), Options{Inputs: []string{root}, Out: "run"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(evidence.Dir(filepath.Join(wd, "run")).Merge()); err != nil {
		t.Fatal(err)
	}
}

// An earlier merge's output given as an input is an error naming it (it
// was skipped, leaving "no shard among the inputs" unexplained); below an
// input it is skipped, as before.
func TestMergeEarlierOutputAsInput(t *testing.T) {
	root := t.TempDir()
	fakeShard(t, filepath.Join(root, "s0"), 0, 1, 1, "sha256:a", "h", []string{"i0"}, []int64{10})
	first := filepath.Join(root, "run")
	if _, err := Merge(context.Background(), Options{Inputs: []string{root}, Out: first}); err != nil {
		t.Fatal(err)
	}
	_, err := Merge(context.Background(), Options{Inputs: []string{first}, Out: filepath.Join(t.TempDir(), "again")})
	if err == nil || !strings.Contains(err.Error(), first+": the output of an earlier merge") {
		t.Fatalf("merge of a merge's output: %v", err)
	}
	rec, _ := mergeOf(t, root) // root holds run/ (merge.json): skipped
	if len(rec.Problems) != 0 || len(rec.Inputs) != 1 {
		t.Fatalf("inputs %q, problems %q", rec.Inputs, rec.Problems)
	}
}
