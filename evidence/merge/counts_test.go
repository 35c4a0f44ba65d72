package merge

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestMergeShardWithBadCounts (issue 27): a shard whose attack.json has a
// negative count is incomplete evidence, named by file and field: the
// merge reports it as a problem (the shard is then missing) instead of
// trusting its counts; a shard count of -1 made the merge allocate a
// negative slice. merge.json with a negative count is a problem of
// merge.json when loaded.
func TestMergeShardWithBadCounts(t *testing.T) {
	root := t.TempDir()
	d := func(name string) string { return filepath.Join(root, name) }
	fakeShard(t, d("s0"), 0, 2, 4, "sha256:a", "h0", []string{"i0", "i2"}, []int64{10, 20})
	fakeShard(t, d("s1"), 1, 2, 4, "sha256:a", "h1", []string{"i1", "i3"}, []int64{10, 20})
	fakeShard(t, d("neg"), 1, -1, 4, "sha256:a", "h1", []string{"i1", "i3"}, []int64{10, 20})

	rec, _ := mergeOf(t, d("s0"), d("neg"))
	if !hasProblem(rec, filepath.Join(d("neg"), evidence.AttackFile)+": line 52: bad counts (incomplete evidence): phases[0].shard.count = -1") ||
		!hasProblem(rec, "shard 1/2 missing") {
		t.Fatalf("problems %q", rec.Problems)
	}

	_, out := mergeOf(t, d("s0"), d("s1"))
	s := evidence.LoadScenario(context.Background(), out, false)
	if len(s.Problems) != 0 {
		t.Fatalf("a good merge: %+v", s.Problems)
	}
	rec.Schema = evidence.MergeSchema
	rec.ReceiptsRead, rec.ReceiptsIdentical = 2, 3
	rec.Problems = nil
	if err := evidence.WriteJSONFile(evidence.Dir(out).Merge(), rec); err != nil {
		t.Fatal(err)
	}
	s = evidence.LoadScenario(context.Background(), out, false)
	if len(s.Problems) != 1 || s.Problems[0].File != evidence.MergeFile ||
		!strings.Contains(s.Problems[0].Msg, "receipts_identical = 3 exceeds receipts_read = 2") {
		t.Fatalf("problems %+v", s.Problems)
	}
}
