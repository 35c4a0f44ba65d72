package attack

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/evidence"
)

// Shard selects one of Count deterministic slices of an attack (issue 15):
// shard Index (0-based) of every flow takes the IDs whose position k in the
// unsharded flow has k mod Count == Index. Targets are assigned over the
// unsharded flow first (so an ID goes to the same target in every
// sharding), and a paced flow keeps the unsharded schedule: the shard's ID
// at position k is due at hit k of the flow's Rate from the common start.
// Count shards started at one instant (Options.StartAt) therefore send
// exactly the unsharded attack between them, each ID once, on its
// schedule. The zero Shard is no sharding.
type Shard struct {
	Index, Count int
}

// ParseShard parses "K/N" (0 <= K < N), the syntax of `rlbench attack
// --shard`; errors quote the input.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	ki, err1 := strconv.Atoi(strings.TrimSpace(k))
	ni, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want K/N, such as 0/4 (the first of 4 shards)", s)
	}
	sh := Shard{Index: ki, Count: ni}
	if err := sh.check(); err != nil || ni == 0 {
		if err == nil {
			err = fmt.Errorf("want at least 1 shard")
		}
		return Shard{}, fmt.Errorf("shard %q: %v", s, err)
	}
	return sh, nil
}

// String writes s as ParseShard reads it ("" for no sharding).
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Share is how many of a flow's n IDs shard s takes: the positions k < n
// with k mod Count == Index (all n for no sharding).
func (s Shard) Share(n int) int {
	if s.Count == 0 {
		return max(n, 0)
	}
	if s.Index >= n {
		return 0
	}
	return (n - s.Index + s.Count - 1) / s.Count
}

func (s Shard) check() error {
	if s.Count == 0 && s.Index == 0 {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard index %d of %d: want 0 <= index < count", s.Index, s.Count)
	}
	return nil
}

// applyShard keeps the shard's IDs of the flow, with their assignment and
// schedule positions.
func (fp *flowPrep) applyShard(s Shard) {
	n := len(fp.ids)
	keep := s.Share(n)
	ids := make([]string, 0, keep)
	assign := make([]int32, 0, keep)
	sched := make([]int64, 0, keep)
	for k := s.Index; k < n; k += s.Count {
		ids = append(ids, fp.ids[k])
		assign = append(assign, fp.assign[k])
		sched = append(sched, int64(k))
	}
	fp.ids, fp.assign, fp.sched = ids, assign, sched
}

// shardInfo records the shard's identity and the digests a merge checks
// (coverage: every shard of one attack has the same Count, Digest and flow
// digests, and the Index values 0..Count-1 once each).
func shardInfo(o Options, specs []flowSpec, flows []*flowPrep) *evidence.AttackShard {
	all := sha256.New()
	conf := sha256.New()
	info := &evidence.AttackShard{Index: o.Shard.Index, Count: o.Shard.Count}
	for fi := range specs {
		fs, fp := &specs[fi], flows[fi]
		ids := idSetDigest(fs.IDs)
		writeIDs(all, fs.IDs)
		cd := flowConfigDigest(o, fs, fp)
		conf.Write([]byte(cd))
		info.TotalIDs += len(fs.IDs)
		sent := o.Shard.Share(len(fs.IDs))
		info.IDs += sent
		info.Flows = append(info.Flows, evidence.AttackShardFlow{Flow: fs.Name, IDs: sent, TotalIDs: len(fs.IDs),
			IDSetDigest: ids, ConfigDigest: cd})
	}
	info.IDSetDigest = "sha256:" + hex.EncodeToString(all.Sum(nil))
	conf.Write([]byte(info.IDSetDigest))
	info.Digest = "sha256:" + hex.EncodeToString(conf.Sum(nil))
	return info
}

// idSetDigest is "sha256:<hex>" of the IDs in order, each followed by "\n".
func idSetDigest(ids []string) string {
	h := sha256.New()
	writeIDs(h, ids)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func writeIDs(h hash.Hash, ids []string) {
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
}

// flowConfigDigest is "sha256:<hex>" over everything that shapes a flow's
// requests and schedule, as length-prefixed fields: name, split, seed,
// rate, concurrency, keep-alive, the templates (target URL, method, path,
// sorted header names and values, body), the ID header and protocol.
func flowConfigDigest(o Options, fs *flowSpec, fp *flowPrep) string {
	h := sha256.New()
	field := func(s string) {
		var l [8]byte
		binary.BigEndian.PutUint64(l[:], uint64(len(s)))
		h.Write(l[:])
		h.Write([]byte(s))
	}
	field(fs.Name)
	field(fp.config.Split)
	field(strconv.FormatInt(fs.Seed, 10))
	field(FormatRate(fs.Rate))
	field(strconv.Itoa(fs.Concurrency))
	field(strconv.FormatBool(fp.keep))
	field(o.IDHeader)
	field(o.Protocol)
	for _, t := range fp.tmpls {
		field(o.Targets[t.target].URL)
		field(t.method)
		field(t.path)
		keys := make([]string, 0, len(t.header))
		for k := range t.header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			field(http.CanonicalHeaderKey(k))
			for _, v := range t.header[k] {
				field(v)
			}
		}
		field(string(t.body))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
