package analyze

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rlbench/rlbench/evidence"
)

// ShardsReport describes the shards of a merged run (evidence/merge.Merge,
// issue 15): how far apart they started, and how well their clocks are
// known against the backend's, which widens every limiter's timing
// uncertainty.
type ShardsReport struct {
	// Count is the shards' N; Hosts how many host names they ran on.
	Count int `json:"count"`
	Hosts int `json:"hosts"`
	// StartSpreadNs is the latest shard start minus the earliest, each by
	// its own clock, ns; MaxLateNs the largest lateness against --start-at.
	StartSpreadNs int64 `json:"start_spread_ns"`
	MaxLateNs     int64 `json:"max_late_ns"`
	// OffsetBoundNs is the largest |clock offset| between a shard's host
	// and a receipt source that the (send, receive, end) bounds allow
	// (evidence.ClockOffset, intersected over the shards of one host):
	// every limiter's intervals are widened by it on both sides, on top of
	// its clock_skew_ns.
	OffsetBoundNs int64 `json:"offset_bound_ns"`
	// Unbounded names the hosts whose clock no request bounds (no request
	// of theirs got a response from the backend and a receipt); with more
	// than one host the limiters are then not checked.
	Unbounded []string `json:"unbounded"`
	// Shards are the shards in index order.
	Shards []ShardReport `json:"shards"`
}

// ShardReport is one shard of a merged run.
type ShardReport struct {
	Index    int    `json:"index"`
	Dir      string `json:"dir"`
	Host     string `json:"host"`
	Requests int    `json:"requests"`
	// StartNs is its start by its own clock, unix ns; LateNs how late it
	// started against --start-at (0 without).
	StartNs int64 `json:"start_ns"`
	LateNs  int64 `json:"late_ns"`
	// Offsets bound its clock against each receipt source.
	Offsets []evidence.ClockOffset `json:"offsets"`
}

// shardsOf reports the shards of a merge and returns the widening, ns, and
// why the limiters cannot be checked ("" when they can).
func shardsOf(m *evidence.MergeRecord) (*ShardsReport, int64, string) {
	rep := &ShardsReport{Count: m.Count, StartSpreadNs: m.StartSpreadNs, MaxLateNs: m.MaxLateNs, Shards: []ShardReport{}}
	hosts := map[string]bool{}
	for _, s := range m.Shards {
		rep.Shards = append(rep.Shards, ShardReport{Index: s.Index, Dir: s.Dir, Host: s.Host, Requests: s.Requests, StartNs: s.StartNs,
			LateNs: s.LateNs, Offsets: s.Offsets})
		hosts[s.Host] = true
	}
	rep.Hosts = len(hosts)
	// Shards of one host share its clock: their bounds intersect.
	rep.OffsetBoundNs, rep.Unbounded = m.ClockBound()
	why := ""
	if len(rep.Unbounded) > 0 && len(hosts) > 1 {
		why = fmt.Sprintf("the clock of shard host(s) %s is not bounded against the backend's (none of their requests got a backend response and a receipt), and the shards ran on %d hosts",
			strings.Join(rep.Unbounded, ", "), len(hosts))
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

// writeShardsTable renders the shards of merged scenarios.
func writeShardsTable(w io.Writer, rep *Report) error {
	var rows [][]any
	for _, s := range rep.Scenarios {
		sh := s.Shards
		if sh == nil {
			continue
		}
		for _, x := range sh.Shards {
			offs := make([]string, 0, len(x.Offsets))
			for _, o := range x.Offsets {
				offs = append(offs, offsetString(o))
			}
			rows = append(rows, []any{s.Name, fmt.Sprintf("%d/%d", x.Index, sh.Count), x.Host, x.Requests,
				time.Unix(0, x.StartNs).UTC().Format("15:04:05.000000"), time.Duration(x.LateNs).String(), strings.Join(offs, "; ")})
		}
		rows = append(rows, []any{s.Name, "all", strconv.Itoa(sh.Hosts) + " host(s)", "", "spread " + time.Duration(sh.StartSpreadNs).String(),
			"max " + time.Duration(sh.MaxLateNs).String(), "widening ±" + time.Duration(sh.OffsetBoundNs).String()})
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nShards:")
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("Scenario", "Shard", "Host", "Requests", "Start (UTC)", "Late", "Clock offset vs backend")
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// offsetString is "replica: -1.2ms..+0.3ms (n pairs)".
func offsetString(o evidence.ClockOffset) string {
	if !o.Bounded {
		return o.Replica + ": unbounded"
	}
	sign := func(ns int64) string {
		if ns >= 0 {
			return "+" + time.Duration(ns).String()
		}
		return time.Duration(ns).String()
	}
	return fmt.Sprintf("%s: %s..%s (%d)", o.Replica, sign(o.MinNs), sign(o.MaxNs), o.Pairs)
}
