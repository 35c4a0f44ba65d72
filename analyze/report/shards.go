package report

import "github.com/rlbench/rlbench/evidence"

// ShardsReport describes the shards of a merged run (evidence/merge.Merge,
// issue 15): how far apart they started, and how well their clocks are
// known against the backend's, which widens every limiter's timing
// uncertainty.
type ShardsReport struct {
	// Count is the shards' N; Hosts how many host names they ran on.
	Count int `json:"count"`
	Hosts int `json:"hosts"`
	// Clocks is how many clocks they read (evidence.MergeShard.ClockName:
	// pods of one Kubernetes node, tasks of one Slurm node share one; issue
	// 24). Absent (0) in reports before it, where it was Hosts.
	Clocks int `json:"clocks,omitempty"`
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
	// Unbounded names the clocks (node, else host names) that no request
	// bounds (no request of theirs got a response from the backend and a
	// receipt); with more than one clock the limiters are then not checked.
	Unbounded []string `json:"unbounded"`
	// Shards are the shards in index order.
	Shards []ShardReport `json:"shards"`
}

// ShardReport is one shard of a merged run.
type ShardReport struct {
	Index int    `json:"index"`
	Dir   string `json:"dir"`
	Host  string `json:"host"`
	// Node is the machine whose clock it read when not Host's
	// (evidence.MergeShard.Node).
	Node     string `json:"node,omitempty"`
	Requests int    `json:"requests"`
	// StartNs is its start by its own clock, unix ns; LateNs how late it
	// started against --start-at (0 without).
	StartNs int64 `json:"start_ns"`
	LateNs  int64 `json:"late_ns"`
	// Offsets bound its clock against each receipt source.
	Offsets []evidence.ClockOffset `json:"offsets"`
}
