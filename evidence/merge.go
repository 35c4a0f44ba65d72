package evidence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/boundedio"
)

// The records of merge.json. Package evidence/merge writes them; its
// documentation explains the merge ("Merging shards") and the bounds of
// ClockOffset ("Clock offsets").

// MergeSchema is MergeRecord.Schema.
const MergeSchema = "rlbench.merge/v1"

// MergeRecord is merge.json: what Merge joined and what it found.
type MergeRecord struct {
	// Schema is MergeSchema.
	Schema string `json:"schema"`
	// Inputs are the input directories used, as given (expanded).
	Inputs []string `json:"inputs"`
	// Count is the shards' N, Digest and TotalIDs the unsharded attack's
	// (AttackShard), taken from the shards that agree most.
	Count    int    `json:"count"`
	Digest   string `json:"digest"`
	TotalIDs int    `json:"total_ids"`
	// Shards are the shards merged, in index order.
	Shards []MergeShard `json:"shards"`
	// StartSpreadNs is the latest shard start minus the earliest
	// (AttackSummary.StartNs, each by its own host's clock), ns.
	StartSpreadNs int64 `json:"start_spread_ns"`
	// MaxLateNs is the largest AttackStartAt.LateNs of the shards, ns.
	MaxLateNs int64 `json:"max_late_ns"`
	// Replicas are the receipt sources, sorted by name.
	Replicas []MergeReplica `json:"replicas"`
	// ReceiptsRead counts the receipt lines read, ReceiptsIdentical those
	// dropped as identical to one already taken.
	ReceiptsRead      int `json:"receipts_read"`
	ReceiptsIdentical int `json:"receipts_identical"`
	// Files maps each file taken once (stats/..., faults.jsonl,
	// scenario.json) to the input it came from.
	Files map[string]string `json:"files"`
	// Clocks are the shards grouped by the clock they read (ClockName),
	// with each group's offset bounds intersected per receipt source
	// (ClockGroups; issue 24, absent in older records), sorted by name.
	Clocks []MergeClock `json:"clocks,omitempty"`
	// Problems say why the merge does not hold exactly the whole attack,
	// each naming the shard or file; any makes the scenario NOT_RUN.
	Problems []string `json:"problems"`
	// Missing are the indices (0..Count-1) of the shards no input holds
	// whole: absent, or killed before writing attack.json (a sender of
	// `rlbench attack --senders` SIGKILLed). Their requests are not in the
	// merged requests.jsonl, so a receipt of one of their IDs has its sent
	// status unknown, never "never sent". Absent when none.
	Missing []int `json:"missing,omitempty"`
}

// MergeShard is one shard of a merge.
type MergeShard struct {
	// Index is K, Dir the input directory.
	Index int    `json:"index"`
	Dir   string `json:"dir"`
	// Host is the shard's host name (AttackSummary.Host), Node the
	// machine whose clock it read when that is another (AttackSummary.Node,
	// issue 24; empty in older records): see ClockName.
	Host string `json:"host,omitempty"`
	Node string `json:"node,omitempty"`
	// IDs is how many IDs the shard was to send, Requests the lines merged.
	IDs      int `json:"ids"`
	Requests int `json:"requests"`
	// StartNs is the shard's start (AttackSummary.StartNs, its clock).
	StartNs int64 `json:"start_ns"`
	// StartAtNs and LateNs are its --start-at and how late it started
	// (AttackStartAt); 0 without --start-at.
	StartAtNs int64 `json:"start_at_ns,omitempty"`
	LateNs    int64 `json:"late_ns,omitempty"`
	// Clock is the shard's clock reading (AttackSummary.Clock).
	Clock *AttackClock `json:"clock,omitempty"`
	// Offsets bound its clock against each receipt source.
	Offsets []ClockOffset `json:"offsets"`
}

// ClockOffset bounds θ, a receipt source's clock minus a shard's, from the
// shard's (send, receive, end) triples (see "Clock offsets" in package
// evidence/merge): MinNs ≤ θ ≤ MaxNs. Pairs is how many requests gave them; with none, nothing is
// known (Bounded false, MinNs and MaxNs 0).
type ClockOffset struct {
	Replica string `json:"replica"`
	Pairs   int    `json:"pairs"`
	Bounded bool   `json:"bounded"`
	MinNs   int64  `json:"min_ns"`
	MaxNs   int64  `json:"max_ns"`
}

// AbsNs is the largest |θ| the bound allows (MaxInt64 when unbounded).
func (o ClockOffset) AbsNs() int64 {
	if !o.Bounded {
		return math.MaxInt64
	}
	return max(abs64(o.MinNs), abs64(o.MaxNs))
}

// ClockName is the name of the clock the shard read: its Node when
// set, else its Host (records before issue 24: one clock per host).
func (s MergeShard) ClockName() string {
	if s.Node != "" {
		return s.Node
	}
	return s.Host
}

// MergeClock is one clock of a merge: the shards that read it and, per
// receipt source, the intersection of their offset bounds. Shards on one
// clock have one offset θ against a replica, so every shard's bound holds
// θ and so does their intersection: MinNs is the largest of their MinNs,
// MaxNs the smallest of their MaxNs, Pairs the sum.
type MergeClock struct {
	// Name is MergeShard.ClockName.
	Name string `json:"name"`
	// Shards are the shards' indices (MergeShard.Index), ascending.
	Shards []int `json:"shards"`
	// Offsets are the intersected bounds against each receipt source
	// that bounds at least one of the shards, sorted by replica.
	Offsets []ClockOffset `json:"offsets"`
}

// ClockGroups groups the shards by ClockName and intersects their bounds
// per receipt source (MergeClock), sorted by name. A clock none of whose
// shards is bounded against any source has no Offsets.
func (m *MergeRecord) ClockGroups() []MergeClock {
	byName := map[string]*MergeClock{}
	bounds := map[string]map[string]ClockOffset{}
	var names []string
	for _, s := range m.Shards {
		n := s.ClockName()
		c := byName[n]
		if c == nil {
			c = &MergeClock{Name: n, Shards: []int{}, Offsets: []ClockOffset{}}
			byName[n], bounds[n] = c, map[string]ClockOffset{}
			names = append(names, n)
		}
		c.Shards = append(c.Shards, s.Index)
		for _, o := range s.Offsets {
			if !o.Bounded {
				continue
			}
			if b, ok := bounds[n][o.Replica]; ok {
				o.MinNs, o.MaxNs, o.Pairs = max(o.MinNs, b.MinNs), min(o.MaxNs, b.MaxNs), o.Pairs+b.Pairs
			}
			bounds[n][o.Replica] = o
		}
	}
	sort.Strings(names)
	out := make([]MergeClock, 0, len(names))
	for _, n := range names {
		c := byName[n]
		sort.Ints(c.Shards)
		reps := make([]string, 0, len(bounds[n]))
		for r := range bounds[n] {
			reps = append(reps, r)
		}
		sort.Strings(reps)
		for _, r := range reps {
			c.Offsets = append(c.Offsets, bounds[n][r])
		}
		out = append(out, *c)
	}
	return out
}

// ClockBound is the clock offset bound of a merged run: the largest |θ|
// that the clocks' intersected bounds allow (ClockGroups,
// ClockOffset.AbsNs): shards on one clock (ClockName: one node, or one
// host in records without nodes) share it; and the clocks that no offset
// bounds, sorted. 0 and none for a record without shards.
func (m *MergeRecord) ClockBound() (boundNs int64, unbounded []string) {
	unbounded = []string{}
	for _, c := range m.ClockGroups() {
		if len(c.Offsets) == 0 {
			unbounded = append(unbounded, c.Name)
		}
		for _, o := range c.Offsets {
			boundNs = max(boundNs, o.AbsNs())
		}
	}
	return boundNs, unbounded
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// MergeReplica is one receipt source of a merge.
type MergeReplica struct {
	// Name is Receipt.Replica, or for receipts that name none the input
	// file they came from.
	Name string `json:"name"`
	// Files are the input files its receipts came from.
	Files []string `json:"files"`
	// Receipts counts its receipts taken.
	Receipts int `json:"receipts"`
}

// readMerge reads merge.json into s (Load): its problems become Problems
// of MergeFile.
func readMerge(ctx context.Context, d Dir, s *ScenarioEvidence) {
	b, err := boundedio.ReadRegular(ctx, d.Merge(), MaxDocumentBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var m MergeRecord
	if err == nil {
		err = json.Unmarshal(b, &m)
		if err != nil {
			err = JSONError(b, err)
		} else if m.Schema != MergeSchema {
			err = fmt.Errorf("not a merge record (want schema %q)", MergeSchema)
		} else {
			err = m.checkCounts()
		}
	}
	if err != nil {
		s.Problems = append(s.Problems, Problem{File: MergeFile, Msg: fmt.Sprintf("%s: %v", d.Merge(), err)})
		return
	}
	s.Merge = &m
	for _, p := range m.Problems {
		s.Problems = append(s.Problems, Problem{File: MergeFile, Msg: fmt.Sprintf("%s: %s", d.Merge(), p)})
	}
}
