package merge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence"
)

// lineHashSeed seeds lineHash; a variable so that tests force collisions
// through lineHash itself.
var lineHashSeed = maphash.MakeSeed()

// lineHash hashes an encoded receipt line. Equal hashes only make two
// receipts candidates for identity: their lines are then compared byte by
// byte, so a collision never drops a distinct receipt. A variable so that
// tests force collisions.
var lineHash = func(b []byte) uint64 { return maphash.Bytes(lineHashSeed, b) }

// join holds a merge's requests and receipts between reading them and
// resolving duplicates and clock offsets: the merged files written as read
// (requests.jsonl and receipts.jsonl; lines to drop are removed after the
// join), one compact record per line in the sorter, and what reading
// found, to report in the order the inputs were read.
type join struct {
	rec     *evidence.MergeRecord
	out     evidence.Dir
	spill   string
	sort    *sorter
	problem func(string, ...any)

	shards []shardRead
	nreq   uint64 // requests written

	// Receipts: sources by order of appearance, files in reading order,
	// per (source, file) the receipts read, and the problems of reading.
	names    []string
	nameIdx  map[string]int32
	files    []string
	perFile  map[[2]int32]*fileCount
	nrc      uint64 // receipts written
	rcBytes  int64  // bytes of receipts.jsonl written
	rcProbs  []string
	dropReq  bitset  // lines of requests.jsonl to drop (IDs sent again)
	dropRc   bitset  // lines of receipts.jsonl to drop (identical receipts)
	overlaps int     // requests whose ID an earlier one sent
	top      []dupID // the first 5 of them in reading order
}

// shardRead is what reading one shard's requests found; its problems are
// reported after the join in the order reading met them.
type shardRead struct {
	seal    string
	lineErr *evidence.LineError
	read    int // requests decoded (including IDs sent before)
	dropped int // of those, IDs an earlier request sent
}

// dupID is a request whose ID an earlier request sent.
type dupID struct {
	seq   uint64
	id    string
	first int32 // the shard of the earlier request
	shard int32
}

// fileCount counts one source's receipts in one file.
type fileCount struct{ read, dropped int }

// readRequests writes every shard's requests to the output, shard by shard,
// and records each for the join; the shard records go to rec.Shards.
func (j *join) readRequests(ctx context.Context, shards []shardPart) error {
	rec := j.rec
	w, err := evidence.Create(j.out.Requests())
	if err != nil {
		return err
	}
	var start, end int64
	for si, s := range shards {
		ph := &s.att.Phases[0]
		ms := evidence.MergeShard{Index: s.sh.Index, Dir: s.dir, Host: ph.Host, Node: ph.Node, IDs: s.sh.IDs, StartNs: ph.StartNs, Clock: ph.Clock, Offsets: []evidence.ClockOffset{}}
		if ph.StartAt != nil {
			ms.StartAtNs, ms.LateNs = ph.StartAt.AtNs, ph.StartAt.LateNs
			rec.MaxLateNs = max(rec.MaxLateNs, ph.StartAt.LateNs)
		}
		if si == 0 || ph.StartNs < start {
			start = ph.StartNs
		}
		end = max(end, ph.StartNs)
		path := evidence.Dir(s.dir).Requests()
		sr := shardRead{seal: evidence.SealProblem(path)}
		err := evidence.ReadFile(path, func(_ int, q *evidence.Request) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			fb := int32(0)
			if q.Code != 0 && q.Classify().FromBackend() {
				fb = 1
			}
			r := spillRec{hasID: true, kind: kindRequest, seq: j.nreq, a: q.SentNs, b: q.EndNs(), c: int32(si), d: fb}
			if err := j.sort.add(r, q.ID); err != nil {
				return err
			}
			j.nreq++
			sr.read++
			return w.Write(q)
		})
		if le := (*evidence.LineError)(nil); errors.As(err, &le) {
			// A malformed or truncated input line: the lines before it are
			// merged, and the run is NOT_RUN naming it (never lost silently).
			sr.lineErr = le
		} else if err != nil {
			_ = w.Close()
			return fmt.Errorf("merge: %w", err)
		}
		j.shards = append(j.shards, sr)
		rec.Shards = append(rec.Shards, ms)
	}
	rec.StartSpreadNs = end - start
	return w.Close()
}

// receiptFiles are the receipts files of an input directory.
func receiptFiles(p string) []string {
	var out []string
	if _, err := os.Stat(evidence.Dir(p).Receipts()); err == nil {
		out = append(out, evidence.Dir(p).Receipts())
	}
	more, _ := evidence.Dir(p).Glob(evidence.ReceiptsDir + "/*.jsonl")
	sort.Strings(more)
	return append(out, more...)
}

// readReceipts writes the receipts of every input to the output as read
// and records each for the join.
func (j *join) readReceipts(ctx context.Context, parts []string) error {
	w, err := evidence.Create(j.out.Receipts())
	if err != nil {
		return err
	}
	j.nameIdx = map[string]int32{}
	j.perFile = map[[2]int32]*fileCount{}
	for _, p := range parts {
		for _, path := range receiptFiles(p) {
			if msg := evidence.SealProblem(path); msg != "" {
				j.rcProbs = append(j.rcProbs, "receipts: "+msg)
			}
			fi := int32(len(j.files))
			j.files = append(j.files, path)
			var cur *fileCount
			curName := int32(-1)
			err := evidence.ReadFile(path, func(_ int, rc *evidence.Receipt) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				j.rec.ReceiptsRead++
				b, err := json.Marshal(rc)
				if err != nil {
					return err
				}
				name := rc.Replica
				if name == "" {
					name = path
				}
				ni, ok := j.nameIdx[name]
				if !ok {
					ni = int32(len(j.names))
					j.nameIdx[name] = ni
					j.names = append(j.names, name)
				}
				if ni != curName {
					k := [2]int32{ni, fi}
					if cur = j.perFile[k]; cur == nil {
						cur = &fileCount{}
						j.perFile[k] = cur
					}
					curName = ni
				}
				cur.read++
				r := spillRec{kind: kindReceipt, seq: j.nrc, h: lineHash(b), a: rc.RecvNs, b: j.rcBytes, c: ni, d: fi, e: int32(len(b))}
				id := ""
				if rc.ID != nil {
					r.hasID, id = true, *rc.ID
				}
				if err := j.sort.add(r, id); err != nil {
					return err
				}
				j.nrc++
				j.rcBytes += int64(len(b)) + 1
				return w.WriteRaw(b)
			})
			if le := (*evidence.LineError)(nil); errors.As(err, &le) {
				j.rcProbs = append(j.rcProbs, fmt.Sprintf("receipts: %v", le)) // the lines before it are merged; NOT_RUN names it
			} else if err != nil {
				_ = w.Close()
				return fmt.Errorf("merge: %w", err)
			}
		}
	}
	return w.Close()
}

// group is the join's state for the records of one ID.
type group struct {
	key   []byte
	hasID bool
	// The first request with the ID (later ones are duplicates).
	req              bool
	shard            int32
	send, end        int64
	fromBackend      bool
	runH             uint64   // line hash of the current run of receipts
	run              [][]byte // the distinct lines of the run (nil: not read yet)
	runAt            [][2]int64
	earliest         []replicaRecv // per replica: the earliest receipt kept
	inRun, haveGroup bool
}

type replicaRecv struct {
	replica int32
	recv    int64
}

// resolve joins the sorted records: duplicate IDs and identical receipts
// are dropped from the written files, each shard's clock offset is bounded
// against each replica (see "Clock offsets" in the package doc), and the
// problems are reported in the order the inputs were read.
func (j *join) resolve(ctx context.Context, nShards int) error {
	rc, err := os.Open(j.out.Receipts())
	if err != nil {
		return err
	}
	defer rc.Close()
	// offs[s][r]: shard s against the replica of appearance r.
	offs := make([][]evidence.ClockOffset, nShards)
	for s := range offs {
		offs[s] = make([]evidence.ClockOffset, len(j.names))
	}
	var g group
	finish := func() {
		if !g.haveGroup || !g.req || !g.fromBackend || int(g.shard) >= nShards {
			return
		}
		for _, e := range g.earliest {
			o := &offs[g.shard][e.replica]
			lo, hi := e.recv-g.end, e.recv-g.send
			if !o.Bounded {
				o.Bounded, o.MinNs, o.MaxNs = true, lo, hi
			} else {
				o.MinNs, o.MaxNs = max(o.MinNs, lo), min(o.MaxNs, hi)
			}
			o.Pairs++
		}
	}
	line := func(at [2]int64) ([]byte, error) {
		b := make([]byte, at[1])
		if _, err := rc.ReadAt(b, at[0]); err != nil {
			return nil, fmt.Errorf("merge: re-reading %s: %w", j.out.Receipts(), err)
		}
		return b, nil
	}
	n := 0
	err = j.sort.each(func(r *spillRec) error {
		if n++; n%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !g.haveGroup || r.hasID != g.hasID || !bytes.Equal(r.id, g.key) {
			finish()
			g = group{key: append(g.key[:0], r.id...), hasID: r.hasID, haveGroup: true, run: g.run[:0], runAt: g.runAt[:0], earliest: g.earliest[:0]}
		}
		if r.kind == kindRequest {
			if !g.req {
				g.req, g.shard, g.send, g.end, g.fromBackend = true, r.c, r.a, r.b, r.d == 1
				return nil
			}
			j.dropReq.set(r.seq)
			j.shards[r.c].dropped++
			j.addDup(dupID{seq: r.seq, id: string(r.id), first: g.shard, shard: r.c})
			return nil
		}
		// A receipt: identical to one kept before it (same ID, same line
		// hash, then byte for byte) is dropped.
		at := [2]int64{r.b, int64(r.e)}
		if !g.inRun || r.h != g.runH {
			g.inRun, g.runH, g.run, g.runAt = true, r.h, append(g.run[:0], nil), append(g.runAt[:0], at)
		} else {
			b, err := line(at)
			if err != nil {
				return err
			}
			same := false
			for i := range g.run {
				if g.run[i] == nil {
					if g.run[i], err = line(g.runAt[i]); err != nil {
						return err
					}
				}
				if bytes.Equal(g.run[i], b) {
					same = true
					break
				}
			}
			if same {
				j.dropRc.set(r.seq)
				j.perFile[[2]int32{r.c, r.d}].dropped++
				j.rec.ReceiptsIdentical++
				return nil
			}
			g.run, g.runAt = append(g.run, b), append(g.runAt, at)
		}
		if !r.hasID {
			return nil
		}
		for i := range g.earliest {
			if e := &g.earliest[i]; e.replica == r.c {
				e.recv = min(e.recv, r.a)
				return nil
			}
		}
		g.earliest = append(g.earliest, replicaRecv{r.c, r.a})
		return nil
	})
	if err != nil {
		return err
	}
	finish()
	if err := j.drop(j.out.Requests(), j.dropReq); err != nil {
		return err
	}
	if err := j.drop(j.out.Receipts(), j.dropRc); err != nil {
		return err
	}
	j.report(offs)
	return nil
}

// addDup notes a request whose ID an earlier one sent, keeping the first
// 5 in reading order (those named in problems; the others are counted).
func (j *join) addDup(d dupID) {
	j.overlaps++
	i := sort.Search(len(j.top), func(i int) bool { return j.top[i].seq > d.seq })
	if i >= 5 {
		return
	}
	j.top = slices.Insert(j.top, i, d)
	if len(j.top) > 5 {
		j.top = j.top[:5]
	}
}

// report fills the record's shards, replicas and offsets, and reports the
// problems in the order the inputs were read, as found.
func (j *join) report(offs [][]evidence.ClockOffset) {
	rec, problem := j.rec, j.problem
	for si := range j.shards {
		sr, ms := &j.shards[si], &rec.Shards[si]
		if sr.seal != "" {
			problem("shard %d/%d: %s", ms.Index, rec.Count, sr.seal)
		}
		for _, d := range j.top {
			if int(d.shard) != si {
				continue
			}
			o := rec.Shards[d.first]
			problem("ID %q sent by shard %d/%d (%s) and shard %d/%d (%s)", d.id, o.Index, rec.Count, o.Dir, ms.Index, rec.Count, ms.Dir)
		}
		if sr.lineErr != nil {
			problem("shard %d/%d: %v", ms.Index, rec.Count, sr.lineErr)
		}
		ms.Requests = sr.read - sr.dropped
		if ms.Requests != ms.IDs {
			problem("shard %d/%d (%s): %d requests in %s of its %d IDs", ms.Index, rec.Count, ms.Dir, ms.Requests, evidence.RequestsFile, ms.IDs)
		}
	}
	if j.overlaps > 5 {
		problem("%d IDs sent by more than one shard in all", j.overlaps)
	}
	for _, p := range j.rcProbs {
		problem("%s", p)
	}
	// Replicas with a receipt kept, by name; their files in reading order.
	var order []int32
	for ni := range j.names {
		order = append(order, int32(ni))
	}
	sort.Slice(order, func(a, b int) bool { return j.names[order[a]] < j.names[order[b]] })
	var kept []int32
	for _, ni := range order {
		rp := evidence.MergeReplica{Name: j.names[ni], Files: []string{}}
		for fi, path := range j.files {
			if c := j.perFile[[2]int32{ni, int32(fi)}]; c != nil && c.read > c.dropped {
				rp.Files = append(rp.Files, path)
				rp.Receipts += c.read - c.dropped
			}
		}
		if rp.Receipts > 0 {
			rec.Replicas = append(rec.Replicas, rp)
			kept = append(kept, ni)
		}
	}
	for s := range rec.Shards {
		if s >= len(offs) {
			continue
		}
		so := make([]evidence.ClockOffset, len(kept))
		for r, ni := range kept {
			so[r] = offs[s][ni]
			so[r].Replica = j.names[ni]
		}
		rec.Shards[s].Offsets = so
		for _, o := range so {
			if o.Bounded && o.MinNs > o.MaxNs {
				problem("shard %d/%d: its requests and %s's receipts admit no clock offset (%d > %d ns): a clock stepped during the attack, or receipts of another run",
					rec.Shards[s].Index, rec.Count, o.Replica, o.MinNs, o.MaxNs)
			}
		}
	}
	rec.Clocks = rec.ClockGroups()
	for _, c := range rec.Clocks {
		if len(c.Shards) < 2 {
			continue // a lone shard's empty bound is reported above
		}
		for _, o := range c.Offsets {
			if o.MinNs > o.MaxNs {
				problem("clock %s (shards %v): their requests and %s's receipts admit no common clock offset (%d > %d ns): the shards do not share a clock, or a clock stepped during the attack",
					c.Name, c.Shards, o.Replica, o.MinNs, o.MaxNs)
			}
		}
	}
}

// drop rewrites the JSON-lines file at path (written by this merge) without
// the lines in skip (0-based), if any.
func (j *join) drop(path string, skip bitset) error {
	some := false
	for _, w := range skip {
		some = some || w != 0
	}
	if !some {
		return nil
	}
	old := filepath.Join(j.spill, filepath.Base(path))
	if err := os.Rename(path, old); err != nil {
		return err
	}
	f, err := os.Open(old)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := evidence.Create(path)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	var long []byte
	for n := uint64(0); ; {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a line longer than the buffer
			long = append(long, b...)
			continue
		}
		if err == io.EOF && len(b) == 0 && len(long) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			_ = w.Close()
			return err
		}
		if long != nil {
			b = append(long, b...)
			long = nil
		}
		if !skip.has(n) {
			if err := w.WriteRaw(bytes.TrimSuffix(b, []byte{'\n'})); err != nil {
				_ = w.Close()
				return err
			}
		}
		n++
		if err == io.EOF {
			break
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.Remove(old)
}
