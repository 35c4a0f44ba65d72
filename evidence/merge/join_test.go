package merge

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// spilling makes the join sort chunks of n records and merge fan runs at
// once for the rest of the test (many run files, merged in several passes).
func spilling(t *testing.T, n, fan int) {
	t.Helper()
	r, b, f := spillRecords, spillBytes, fanIn
	spillRecords, spillBytes, fanIn = n, 64, fan
	t.Cleanup(func() { spillRecords, spillBytes, fanIn = r, b, f })
}

// collidingHashes makes every receipt line hash alike for the rest of the
// test: only the byte comparison tells receipts apart.
func collidingHashes(t *testing.T) {
	t.Helper()
	h := lineHash
	lineHash = func([]byte) uint64 { return 42 }
	t.Cleanup(func() { lineHash = h })
}

// joinFixture writes three shards whose IDs overlap (8 IDs sent twice,
// one of them three times) and receipts from two replicas, some identical
// (the same file pulled twice), some differing only in recv_ns or replica,
// and some without ID. It returns the root holding them.
func joinFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	var ids [3][]string
	var send [3][]int64
	for k := range 3 {
		for i := range 6 {
			ids[k] = append(ids[k], fmt.Sprintf("id-%d", k*6+i))
			send[k] = append(send[k], int64(10_000*(i+1)))
		}
	}
	// Shard 1 sends 4 of shard 0's IDs again, shard 2 another 4 of shard 0's
	// and one of shard 1's; id-0 is sent by all three.
	for i := range 4 {
		ids[1] = append(ids[1], ids[0][i])
		send[1] = append(send[1], int64(100_000+i))
		ids[2] = append(ids[2], ids[0][(i+2)%6])
		send[2] = append(send[2], int64(200_000+i))
	}
	ids[2] = append(ids[2], ids[0][0], ids[1][1])
	send[2] = append(send[2], 300_000, 300_001)
	for k := range 3 {
		fakeShard(t, filepath.Join(root, fmt.Sprintf("s%d", k)), k, 3, 18, "sha256:a", fmt.Sprintf("h%d", k), ids[k], send[k])
	}
	var recs []evidence.Receipt
	for k := range 3 {
		for i, id := range ids[k][:6] {
			recs = append(recs, receipt(id, send[k][i]+50+int64(k), "r1"))
			if i%2 == 0 {
				recs = append(recs, receipt(id, send[k][i]+70, "r2"))
				recs = append(recs, receipt(id, send[k][i]+60, "r2")) // a retry's earlier clock reading: the earliest counts
			}
		}
	}
	noID := evidence.Receipt{RecvNs: 5, Method: "GET", Path: "/health", Remote: "127.0.0.1:3", Replica: "r1"}
	noID2 := noID
	noID2.RecvNs = 6
	recs = append(recs, noID, noID2)
	if err := evidence.WriteLines(evidence.Dir(filepath.Join(root, "be")).Receipts(), recs); err != nil {
		t.Fatal(err)
	}
	// The same receipts pulled again, and one more of r1 and one without ID.
	again := append(append([]evidence.Receipt{}, recs...), receipt("id-3", 99_999, "r1"), noID)
	if err := evidence.WriteLines(evidence.Dir(filepath.Join(root, "pulled")).CollectedReceipts("x"), again); err != nil {
		t.Fatal(err)
	}
	return root
}

// mergedFiles reads merge.json, requests.jsonl and receipts.jsonl of a merge.
func mergedFiles(t *testing.T, out string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{evidence.MergeFile, evidence.RequestsFile, evidence.ReceiptsFile} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

// TestMergeJoin: IDs sent twice are named (the first 5 in reading order,
// then a count) and written once; identical receipts are written once,
// receipts that differ in any field all; the earliest receipt per ID and
// replica bounds the offsets. The same files and merge.json come out when
// the join spills to many runs, and when every receipt line hashes alike.
func TestMergeJoin(t *testing.T) {
	root := joinFixture(t)
	rec, out := mergeOf(t, root)
	ins := func(k int) string { return filepath.Join(root, fmt.Sprintf("s%d", k)) }
	wantNamed := []string{
		fmt.Sprintf(`ID "id-0" sent by shard 0/3 (%s) and shard 1/3 (%s)`, ins(0), ins(1)),
		fmt.Sprintf(`ID "id-1" sent by shard 0/3 (%s) and shard 1/3 (%s)`, ins(0), ins(1)),
		fmt.Sprintf(`ID "id-2" sent by shard 0/3 (%s) and shard 1/3 (%s)`, ins(0), ins(1)),
		fmt.Sprintf(`ID "id-3" sent by shard 0/3 (%s) and shard 1/3 (%s)`, ins(0), ins(1)),
		fmt.Sprintf(`ID "id-2" sent by shard 0/3 (%s) and shard 2/3 (%s)`, ins(0), ins(2)),
	}
	var named []string
	for _, p := range rec.Problems {
		if strings.HasPrefix(p, "ID ") {
			named = append(named, p)
		}
	}
	if !reflect.DeepEqual(named, wantNamed) || !hasProblem(rec, "10 IDs sent by more than one shard in all") {
		t.Fatalf("problems %q", rec.Problems)
	}
	// Each shard keeps its 6 own IDs once the repeats are dropped.
	for k, want := range []int{6, 6, 6} {
		if rec.Shards[k].Requests != want {
			t.Fatalf("shard %d: %d requests, want %d", k, rec.Shards[k].Requests, want)
		}
	}
	s := evidence.LoadScenario(context.Background(), out, false)
	if s.Requests.Len() != 18 {
		t.Fatalf("%d requests merged, want 18 (each ID once)", s.Requests.Len())
	}
	// 18 r1 + 18 r2 (9 IDs × 2) + 2 without ID, then all again + 2.
	if rec.ReceiptsRead != 2*38+2 || rec.ReceiptsIdentical != 39 || s.Receipts.Len() != 39 {
		t.Fatalf("receipts read %d, identical %d, merged %d", rec.ReceiptsRead, rec.ReceiptsIdentical, s.Receipts.Len())
	}
	if len(rec.Replicas) != 2 || rec.Replicas[0].Name != "r1" || rec.Replicas[0].Receipts != 21 || len(rec.Replicas[0].Files) != 2 ||
		rec.Replicas[1].Name != "r2" || rec.Replicas[1].Receipts != 18 || len(rec.Replicas[1].Files) != 1 {
		t.Fatalf("replicas %+v", rec.Replicas)
	}
	// Shard 0 against r1: 6 pairs, each received 50 ns after its send
	// (id-3's later receipt at 99,999 is not the earliest): [50-100, 50].
	// Against r2: 3 pairs, the earliest receipt 60 ns after the send.
	want0 := []evidence.ClockOffset{{Replica: "r1", Pairs: 6, Bounded: true, MinNs: -50, MaxNs: 50}, {Replica: "r2", Pairs: 3, Bounded: true, MinNs: -40, MaxNs: 60}}
	if !reflect.DeepEqual(rec.Shards[0].Offsets, want0) {
		t.Fatalf("shard 0 offsets %+v, want %+v", rec.Shards[0].Offsets, want0)
	}
	want := mergedFiles(t, out)

	t.Run("spilled", func(t *testing.T) {
		spilling(t, 3, 2)
		_, out := mergeOf(t, root)
		if got := mergedFiles(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("spilled merge differs:\n%s\nwant\n%s", got[evidence.MergeFile], want[evidence.MergeFile])
		}
		if entries, _ := os.ReadDir(out); len(entries) == 0 || hasSpill(entries) {
			t.Fatalf("output %v", entries)
		}
	})
	t.Run("colliding hashes", func(t *testing.T) {
		collidingHashes(t)
		_, out := mergeOf(t, root)
		if got := mergedFiles(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("merge with colliding hashes differs:\n%s\nwant\n%s", got[evidence.MergeFile], want[evidence.MergeFile])
		}
	})
	t.Run("both", func(t *testing.T) {
		collidingHashes(t)
		spilling(t, 2, 3)
		_, out := mergeOf(t, root)
		if got := mergedFiles(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("merge differs:\n%s\nwant\n%s", got[evidence.MergeFile], want[evidence.MergeFile])
		}
	})
}

func hasSpill(entries []os.DirEntry) bool {
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".spill") {
			return true
		}
	}
	return false
}

// TestMergeCollisionKeepsDistinctReceipts: receipts whose lines hash alike
// but differ (a forced collision) are all kept, in reading order; only the
// byte-identical one is dropped.
func TestMergeCollisionKeepsDistinctReceipts(t *testing.T) {
	collidingHashes(t)
	root := t.TempDir()
	fakeShard(t, filepath.Join(root, "s0"), 0, 1, 1, "sha256:a", "h", []string{"a"}, []int64{1000})
	recs := []evidence.Receipt{receipt("a", 1030, "r"), receipt("a", 1020, "r"), receipt("a", 1030, "r"), receipt("a", 1030, "q")}
	if err := evidence.WriteLines(evidence.Dir(filepath.Join(root, "be")).Receipts(), recs); err != nil {
		t.Fatal(err)
	}
	rec, out := mergeOf(t, root)
	if rec.ReceiptsRead != 4 || rec.ReceiptsIdentical != 1 || len(rec.Problems) != 0 {
		t.Fatalf("merge %+v", rec)
	}
	var got []string
	if err := evidence.ReadFile(evidence.Dir(out).Receipts(), func(_ int, r *evidence.Receipt) error {
		got = append(got, fmt.Sprintf("%d %s", r.RecvNs, r.Replica))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"1030 r", "1020 r", "1030 q"}) {
		t.Fatalf("merged receipts %q", got)
	}
	// r's earliest receipt (1020) bounds the offset: [1020-1100, 1020-1000].
	if o := rec.Shards[0].Offsets; len(o) != 2 || o[1] != (evidence.ClockOffset{Replica: "r", Pairs: 1, Bounded: true, MinNs: -80, MaxNs: 20}) {
		t.Fatalf("offsets %+v", o)
	}
}

// TestSorterOrder: records come out in compareRec order whether they fit in
// memory or spill to runs merged in several passes.
func TestSorterOrder(t *testing.T) {
	var want []string
	add := func(s *sorter) {
		for i := range 50 {
			id := fmt.Sprintf("id-%02d", (i*37)%23)
			if err := s.add(spillRec{hasID: i%7 != 0, kind: uint8(i % 2), seq: uint64(i), h: uint64(i % 3), a: int64(i)}, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	collect := func(s *sorter) []string {
		var got []string
		var prev *spillRec
		if err := s.each(func(r *spillRec) error {
			c := *r
			c.id = bytes.Clone(r.id)
			if prev != nil && compareRec(prev, &c) >= 0 {
				t.Fatalf("out of order: %+v then %+v", *prev, c)
			}
			prev = &c
			got = append(got, fmt.Sprintf("%v %s %d %d %d %d", c.hasID, c.id, c.kind, c.h, c.seq, c.a))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	mem := newSorter(t.TempDir())
	add(mem)
	want = collect(mem)
	if len(want) != 50 {
		t.Fatalf("%d records", len(want))
	}
	spilling(t, 4, 3)
	dir := t.TempDir()
	sp := newSorter(dir)
	add(sp)
	if len(sp.runs) < 10 {
		t.Fatalf("%d runs, want many", len(sp.runs))
	}
	if got := collect(sp); !reflect.DeepEqual(got, want) {
		t.Fatalf("spilled order\n%q\nwant\n%q", got, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("runs left: %v", entries)
	}
}

// TestMergeDropsAroundLongLines: the rewrite that drops identical receipts
// keeps a line longer than its read buffer whole.
func TestMergeDropsAroundLongLines(t *testing.T) {
	root := t.TempDir()
	fakeShard(t, filepath.Join(root, "s0"), 0, 1, 2, "sha256:a", "h", []string{"a", "b"}, []int64{1000, 2000})
	long := receipt("a", 1050, "r")
	long.Headers = map[string]string{"x-long": strings.Repeat("x", 3<<20)}
	recs := []evidence.Receipt{long, receipt("b", 2050, "r"), long, receipt("b", 2050, "r"), receipt("b", 2040, "r")}
	if err := evidence.WriteLines(evidence.Dir(filepath.Join(root, "be")).Receipts(), recs); err != nil {
		t.Fatal(err)
	}
	rec, out := mergeOf(t, root)
	if rec.ReceiptsRead != 5 || rec.ReceiptsIdentical != 2 || len(rec.Problems) != 0 {
		t.Fatalf("merge %+v", rec)
	}
	var got []string
	if err := evidence.ReadFile(evidence.Dir(out).Receipts(), func(_ int, r *evidence.Receipt) error {
		got = append(got, fmt.Sprintf("%s %d %d", *r.ID, r.RecvNs, len(r.Headers["x-long"])))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprintf("a 1050 %d", 3<<20), "b 2050 0", "b 2040 0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("merged receipts %q, want %q", got, want)
	}
	if msg := evidence.SealProblem(evidence.Dir(out).Receipts()); msg != "" {
		t.Fatalf("rewritten receipts: %s", msg)
	}
}
