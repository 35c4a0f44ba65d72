package analyze

import (
	"fmt"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// shardsOf reports the shards of a merge and returns the widening, ns, and
// why the limiters cannot be checked ("" when they can).
func shardsOf(m *evidence.MergeRecord) (*report.ShardsReport, int64, string) {
	rep := &report.ShardsReport{Count: m.Count, StartSpreadNs: m.StartSpreadNs, MaxLateNs: m.MaxLateNs, Shards: []report.ShardReport{}}
	hosts, clocks := map[string]bool{}, map[string]bool{}
	for _, s := range m.Shards {
		rep.Shards = append(rep.Shards, report.ShardReport{Index: s.Index, Dir: s.Dir, Host: s.Host, Node: s.Node, Requests: s.Requests, StartNs: s.StartNs,
			LateNs: s.LateNs, Offsets: s.Offsets})
		hosts[s.Host] = true
		clocks[s.ClockName()] = true
	}
	rep.Hosts, rep.Clocks = len(hosts), len(clocks)
	// Shards on one clock (one node, or one host) share it: their bounds
	// intersect.
	rep.OffsetBoundNs, rep.Unbounded = m.ClockBound()
	why := ""
	if len(rep.Unbounded) > 0 && len(clocks) > 1 {
		why = fmt.Sprintf("the clock of shard node(s) %s is not bounded against the backend's (none of their requests got a backend response and a receipt), and the shards ran on %d clocks",
			strings.Join(rep.Unbounded, ", "), len(clocks))
	}
	return rep, rep.OffsetBoundNs, why
}

// applyShardClocks widens every limiter's timing uncertainty by the
// shards' clock offset bound (merged runs only), and the RLS join with it
// (joinWidenNs).
func applyShardClocks(in *Input) {
	m := in.Evidence.Merge
	if m == nil || len(m.Shards) == 0 || in.limiters == nil {
		return
	}
	rep, widen, why := shardsOf(m)
	in.Report.Shards = rep
	in.limiters.shardWidenNs = widen
	for _, r := range in.limiters.runs {
		if why != "" && r.err == "" {
			r.err = why
		}
		r.decl.ClockSkewNs += widen
	}
}

// joinWidenNs is how far, on each side, an RLS decision's time may lie
// from its request's [send, end] for the join (rlsJoin): the clock offset
// bound between the clients and the RLS that the model replay widens the
// RLS limiters' intervals by (the largest clock_skew_ns of the global
// limiters, which applyShardClocks raised by the shards' offset bound), or
// the shards' bound alone when no global limiter is declared. 0 for a run
// on one host without declared skew: the join is as before.
func (ls *limiterSet) joinWidenNs() int64 {
	w := ls.shardWidenNs
	for _, r := range ls.runs {
		if r.decl.Stage == evidence.StageGlobal {
			w = max(w, r.decl.ClockSkewNs)
		}
	}
	return w
}
