package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// podShards writes n shards of one attack, shard k on host pod-k and on
// node nodes[k] ("" for a shard without a node: records before issue 24),
// each with two requests sent at 10000 and 20000 (100 ns latency), and one
// backend's receipts: shard k's requests arrive delay[k] ns after they
// were sent, on a backend clock theta[k] ns ahead of shard k's clock. It
// returns the root holding the shard directories and the backend's.
func podShards(t *testing.T, nodes []string, theta, delay []int64) string {
	t.Helper()
	root := t.TempDir()
	n := len(nodes)
	var recs []evidence.Receipt
	for k := range n {
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", k))
		ids := []string{fmt.Sprintf("i%d", k), fmt.Sprintf("i%d", k+n)}
		send := []int64{10_000, 20_000}
		fakeShard(t, dir, k, n, 2*n, "sha256:a", fmt.Sprintf("pod-%d", k), ids, send)
		if nodes[k] != "" {
			b, err := os.ReadFile(evidence.Dir(dir).Attack())
			if err != nil {
				t.Fatal(err)
			}
			a, err := evidence.DecodeAttack(b)
			if err != nil {
				t.Fatal(err)
			}
			a.Phases[0].Node = nodes[k]
			if err := evidence.WriteJSONFile(evidence.Dir(dir).Attack(), evidence.NewAttack(&a.Phases[0])); err != nil {
				t.Fatal(err)
			}
		}
		for i, id := range ids {
			recs = append(recs, receipt(id, send[i]+theta[k]+delay[k], "backend-0"))
		}
	}
	if err := evidence.WriteLines(evidence.Dir(filepath.Join(root, "backend")).Receipts(), recs); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestMergeClocksPerNode (issue 24): four pods on one node read one clock,
// so merge intersects their offset bounds: each pod alone bounds θ within
// 100 ns (its requests' latency) at a different place, together within
// the 20 ns they share; the run's clock bound is the intersection's, not
// the widest pod's. Without nodes (older records) every pod is its own
// host's clock, as before.
func TestMergeClocksPerNode(t *testing.T) {
	const theta = 5000
	delay := []int64{10, 30, 60, 90} // pod k bounds θ within [θ+delay-100, θ+delay]
	thetas := []int64{theta, theta, theta, theta}

	rec, out := mergeOf(t, podShards(t, []string{"node-a", "node-a", "node-a", "node-a"}, thetas, delay))
	if len(rec.Problems) != 0 {
		t.Fatalf("problems: %v", rec.Problems)
	}
	want := []evidence.MergeClock{{Name: "node-a", Shards: []int{0, 1, 2, 3},
		Offsets: []evidence.ClockOffset{{Replica: "backend-0", Pairs: 8, Bounded: true, MinNs: theta - 10, MaxNs: theta + 10}}}}
	if !reflect.DeepEqual(rec.Clocks, want) {
		t.Fatalf("clocks %+v, want %+v", rec.Clocks, want)
	}
	if b, unb := rec.ClockBound(); b != theta+10 || len(unb) != 0 {
		t.Fatalf("one node: bound %d, unbounded %v; want %d", b, unb, theta+10)
	}
	for k, s := range rec.Shards {
		if s.Host != fmt.Sprintf("pod-%d", k) || s.Node != "node-a" || s.ClockName() != "node-a" {
			t.Fatalf("shard %d: host %q node %q", k, s.Host, s.Node)
		}
	}
	// merge.json holds the clocks, and Load reads them back.
	s := evidence.LoadScenario(context.Background(), out, false)
	if s.Merge == nil || !reflect.DeepEqual(s.Merge.Clocks, want) || len(s.Problems) != 0 {
		t.Fatalf("loaded merge: %+v, problems %v", s.Merge, s.Problems)
	}

	// The same shards without nodes: four hosts, four clocks, each its own
	// bound: the widest (pod 3's θ+90) is the run's.
	rec, _ = mergeOf(t, podShards(t, []string{"", "", "", ""}, thetas, delay))
	if len(rec.Clocks) != 4 || rec.Clocks[3].Name != "pod-3" || len(rec.Problems) != 0 {
		t.Fatalf("no nodes: clocks %+v, problems %v", rec.Clocks, rec.Problems)
	}
	if b, _ := rec.ClockBound(); b != theta+90 {
		t.Fatalf("no nodes: bound %d, want %d", b, theta+90)
	}

	// Two nodes with different clocks: two clocks, each the intersection
	// of its own pods.
	rec, _ = mergeOf(t, podShards(t, []string{"node-a", "node-a", "node-b", "node-b"}, []int64{theta, theta, -3000, -3000}, delay))
	if len(rec.Problems) != 0 || len(rec.Clocks) != 2 {
		t.Fatalf("two nodes: clocks %+v, problems %v", rec.Clocks, rec.Problems)
	}
	a, b := rec.Clocks[0], rec.Clocks[1]
	if a.Name != "node-a" || !reflect.DeepEqual(a.Shards, []int{0, 1}) || a.Offsets[0].MinNs != theta-70 || a.Offsets[0].MaxNs != theta+10 ||
		b.Name != "node-b" || !reflect.DeepEqual(b.Shards, []int{2, 3}) || b.Offsets[0].MinNs != -3000-10 || b.Offsets[0].MaxNs != -3000+60 {
		t.Fatalf("two nodes: %+v", rec.Clocks)
	}
	if bound, _ := rec.ClockBound(); bound != theta+10 {
		t.Fatalf("two nodes: bound %d, want %d", bound, theta+10)
	}

	// Pods that claim one node but whose bounds exclude each other (their
	// clocks differ by 3 ms) cannot share a clock: a Problem names it.
	rec, _ = mergeOf(t, podShards(t, []string{"node-a", "node-a", "node-a", "node-a"}, []int64{theta, theta, -3000, -3000}, delay))
	if !hasProblem(rec, "clock node-a (shards [0 1 2 3])") {
		t.Fatalf("contradicting clocks: problems %v", rec.Problems)
	}
}
