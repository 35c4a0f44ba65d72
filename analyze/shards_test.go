package analyze

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestShardsOf: shards of one host share its clock (their bounds
// intersect); the widening is the largest |offset| a bound allows; a host
// without any bound makes the limiters unjudgeable once the shards ran on
// several hosts.
func TestShardsOf(t *testing.T) {
	off := func(lo, hi int64) []evidence.ClockOffset {
		return []evidence.ClockOffset{{Replica: "r", Pairs: 1, Bounded: true, MinNs: lo, MaxNs: hi}}
	}
	m := &evidence.MergeRecord{Count: 3, StartSpreadNs: 7, Shards: []evidence.MergeShard{
		{Index: 0, Host: "a", Offsets: off(-100, 900)},
		{Index: 1, Host: "a", Offsets: off(-400, 300)}, // host a: [-100, 300]
		{Index: 2, Host: "b", Offsets: off(1000, 1200)},
	}}
	rep, widen, why := shardsOf(m)
	if widen != 1200 || why != "" || rep.Hosts != 2 || rep.StartSpreadNs != 7 || len(rep.Unbounded) != 0 {
		t.Fatalf("widen %d, why %q, %+v", widen, why, rep)
	}
	m.Shards[2].Offsets = []evidence.ClockOffset{{Replica: "r"}}
	rep, widen, why = shardsOf(m)
	if widen != 300 || !strings.Contains(why, "shard node(s) b") || len(rep.Unbounded) != 1 {
		t.Fatalf("unbounded host b: widen %d, why %q, %+v", widen, why, rep)
	}
	// On one host an unbounded shard shares the others' clock.
	m.Shards[2].Host = "a"
	if _, widen, why = shardsOf(m); widen != 300 || why != "" {
		t.Fatalf("one host: widen %d, why %q", widen, why)
	}
}

// TestShardsOfNodes (issue 24): pods are hosts of their own but read their
// node's clock: four pods on one node are one clock whose bounds
// intersect, so a pod without a bound of its own shares the others' and
// the widening is the intersection's.
func TestShardsOfNodes(t *testing.T) {
	off := func(lo, hi int64) []evidence.ClockOffset {
		return []evidence.ClockOffset{{Replica: "r", Pairs: 1, Bounded: true, MinNs: lo, MaxNs: hi}}
	}
	m := &evidence.MergeRecord{Count: 4, Shards: []evidence.MergeShard{
		{Index: 0, Host: "pod-0", Node: "n", Offsets: off(-1000, 900)},
		{Index: 1, Host: "pod-1", Node: "n", Offsets: off(-400, 1300)},
		{Index: 2, Host: "pod-2", Node: "n", Offsets: off(-1500, 300)},
		{Index: 3, Host: "pod-3", Node: "n", Offsets: []evidence.ClockOffset{{Replica: "r"}}},
	}}
	rep, widen, why := shardsOf(m)
	if widen != 400 || why != "" || rep.Hosts != 4 || rep.Clocks != 1 || len(rep.Unbounded) != 0 || rep.Shards[3].Node != "n" {
		t.Fatalf("one node: widen %d, why %q, %+v", widen, why, rep)
	}
	// The same pods without nodes (older records): four clocks, pod-3's
	// unbounded, the limiters not checked.
	for i := range m.Shards {
		m.Shards[i].Node = ""
	}
	rep, widen, why = shardsOf(m)
	if widen != 1500 || !strings.Contains(why, "shard node(s) pod-3") || rep.Clocks != 4 {
		t.Fatalf("no nodes: widen %d, why %q, %+v", widen, why, rep)
	}
}
