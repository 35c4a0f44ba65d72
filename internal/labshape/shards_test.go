package labshape

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/merge"
)

// TestWriteShardsMerges: the shard directories are those of one sharded
// attack, which merges without a problem into a run that loads whole, with
// the receipts in one directory or per shard.
func TestWriteShardsMerges(t *testing.T) {
	for _, perShard := range []bool{false, true} {
		root := t.TempDir()
		if err := WriteShards(filepath.Join(root, "ev"), ShardOptions{Shards: 3, IDs: 4, ReceiptsPerShard: perShard}); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(root, "merged")
		rec, err := merge.Merge(context.Background(), merge.Options{Inputs: []string{filepath.Join(root, "ev")}, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Problems) != 0 || len(rec.Shards) != 3 || rec.TotalIDs != 12 || rec.ReceiptsRead != 12 || len(rec.Replicas) != 1 {
			t.Fatalf("per shard %v: merge %+v", perShard, rec)
		}
		s := evidence.LoadScenario(context.Background(), out, false)
		if len(s.Problems) != 0 || s.Requests.Len() != 12 || s.Receipts.Len() != 12 || s.Scenario.Name != "lab-shaped-shards" {
			t.Fatalf("per shard %v: %d requests, %d receipts, problems %+v", perShard, s.Requests.Len(), s.Receipts.Len(), s.Problems)
		}
	}
	if err := WriteShards(t.TempDir(), ShardOptions{Shards: 0, IDs: 4}); err == nil {
		t.Fatal("0 shards written")
	}
}
