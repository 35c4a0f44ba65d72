package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// Two pods of one Kubernetes node (issue 24): two host names, one clock.
// No request bounds that clock against the backend's, but all requests
// carry the one clock, so the windows of a limit per window can be told,
// as for shards of one host (previous release: the check unknown, "no
// window can be told: the clocks of shard hosts pod-0, pod-1 ..." — the
// pods counted as two clocks). Without the node (older records) the pods
// are two clocks and the check stays unknown.
func TestIssue24PodsOfOneNodeOneClock(t *testing.T) {
	for _, node := range []string{"", "node-a"} {
		e := bare(t)
		// one admission per 10 ms window, each well inside its window
		e.scenario.IntendedLimit = &evidence.IntendedLimit{Requests: 1, Per: model.Duration(10 * time.Millisecond)}
		for k := range 4 {
			sent := t0 + int64(10*k+2)*ms
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(fmt.Sprintf("id-%d", k)), RecvNs: sent + ms/2})
			e.requests = append(e.requests, evidence.Request{ID: fmt.Sprintf("id-%d", k), Target: "proxy-a", Method: "GET",
				Phase: fmt.Sprintf("shard-%d", k%2), SentNs: sent, LatencyNs: ms, Code: 200, BytesIn: 10})
		}
		e.attack["sent"] = len(e.requests)
		dir := e.write()
		m := evidence.MergeRecord{Schema: evidence.MergeSchema, Count: 2, Inputs: []string{}, Replicas: []evidence.MergeReplica{},
			Files: map[string]string{}, Problems: []string{}, Shards: []evidence.MergeShard{
				{Index: 0, Host: "pod-0", Node: node, IDs: 2, Requests: 2, Offsets: []evidence.ClockOffset{{Replica: "r"}}},
				{Index: 1, Host: "pod-1", Node: node, IDs: 2, Requests: 2, Offsets: []evidence.ClockOffset{{Replica: "r"}}},
			}}
		must(t, evidence.WriteJSONFile(evidence.Dir(dir).Merge(), &m))
		s := judged(t, dir, "24-pods-one-node-"+node)
		var got *string
		for i, c := range s.Checks {
			if c.Name == "admitted within intended limit" {
				got = &s.Checks[i].Status
				if node == "" && (c.Status != report.CheckUnknown || !strings.Contains(c.Got, "no window can be told")) {
					t.Fatalf("two clocks: %+v", c)
				}
				if node != "" && c.Status != report.CheckPass {
					t.Fatalf("one node: %+v", c)
				}
			}
		}
		if got == nil || s.Shards == nil || (node != "" && s.Shards.Clocks != 1) {
			t.Fatalf("node %q: checks %+v, shards %+v", node, s.Checks, s.Shards)
		}
	}
}
