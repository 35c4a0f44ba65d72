package merge

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// Options configure Merge.
type Options struct {
	// Inputs are directories: shard directories (attack.json with a
	// shard), directories of receipts or stats, and their immediate
	// sub-directories that are such (a directory of shard directories,
	// which may hold receipts.jsonl itself). An input holding merge.json
	// (an earlier merge's output) is an error; below an input, a directory
	// holding merge.json, Out itself and the temporary
	// directory of a merge killed before it could remove it
	// (.<name>.merge-<digits>) are skipped.
	Inputs []string
	// Out is the scenario directory to write; it must not exist or be empty.
	Out string
	// Scenario, when set, is the scenario.json to use instead of the
	// inputs' (which must then have none, or the same).
	Scenario string
}

// mergeParts lists the input directories that hold evidence, expanding a
// directory of such directories one level.
func mergeParts(inputs []string, out string) ([]string, error) {
	outAbs, _ := filepath.Abs(out)
	skip := func(d string) bool {
		a, _ := filepath.Abs(d)
		if a == outAbs || isMergeTemp(filepath.Base(a)) {
			return true
		}
		_, err := os.Stat(evidence.Dir(d).Merge())
		return err == nil
	}
	var parts []string
	taken := map[string]bool{}
	add := func(p string) {
		if a, _ := filepath.Abs(p); !taken[a] { // an input given twice, or with its parent
			taken[a] = true
			parts = append(parts, p)
		}
	}
	for _, in := range inputs {
		st, err := os.Stat(in)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s: not a directory", in)
		}
		if a, _ := filepath.Abs(in); a == outAbs {
			continue
		}
		if _, err := os.Stat(evidence.Dir(in).Merge()); err == nil {
			return nil, fmt.Errorf("%s: the output of an earlier merge (it holds %s): give the directories it merged", in, evidence.MergeFile)
		}
		n := 0
		if isPart(in) {
			add(in)
			n++
		}
		entries, err := os.ReadDir(in)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			p := filepath.Join(in, e.Name())
			if e.IsDir() && !layoutDirs[e.Name()] && !skip(p) && isPart(p) {
				add(p)
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: no evidence in it or its sub-directories (attack.json, requests.jsonl, receipts, stats/)", in)
		}
	}
	return parts, nil
}

// mergeTempInfix names the temporary directory that Merge writes into
// beside Out: "."+base(Out)+mergeTempInfix+random digits (os.MkdirTemp).
const mergeTempInfix = ".merge-"

// isMergeTemp reports whether name is such a temporary directory: one left
// by a merge killed before it could remove it (SIGKILL, out of memory)
// holds a partial requests.jsonl and run files, never an input.
func isMergeTemp(name string) bool {
	i := strings.LastIndex(name, mergeTempInfix)
	if !strings.HasPrefix(name, ".") || i < 1 {
		return false
	}
	digits := name[i+len(mergeTempInfix):]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return digits != ""
}

// layoutDirs are the directories of a scenario directory's layout: never
// inputs of their own.
var layoutDirs = map[string]bool{evidence.StatsDir: true, evidence.AccessLogDir: true, evidence.RLSDir: true, evidence.NginxDir: true, evidence.HAProxyDir: true, evidence.ReceiptsDir: true}

// partEntries are the names whose presence makes a directory a merge input.
var partEntries = []string{evidence.AttackFile, evidence.RequestsFile, evidence.ReceiptsFile, evidence.ReceiptsDir, evidence.StatsDir, evidence.ScenarioFile, evidence.AccessLogDir, evidence.RLSDir,
	evidence.NginxDir, evidence.HAProxyDir, evidence.FaultsFile, evidence.NotRunFile}

func isPart(d string) bool {
	for _, n := range partEntries {
		if _, err := os.Lstat(filepath.Join(d, n)); err == nil {
			return true
		}
	}
	return false
}

// IsShardSet reports whether dir is not itself a scenario directory but
// holds, one level down, shard directories (attack.json with a shard) and
// no run manifest: the directory of shard directories that analyze merges
// (Merge) before judging it as one run.
func IsShardSet(dir string) bool {
	if evidence.IsScenarioDir(dir) {
		return false
	}
	if _, err := os.Stat(evidence.Dir(dir).Manifest()); err == nil {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := boundedio.ReadRegular(context.Background(), evidence.Dir(filepath.Join(dir, e.Name())).Attack(), evidence.MaxDocumentBytes)
		if err != nil {
			continue
		}
		// A shard with bad counts is still a shard: Merge reports it.
		if a, _ := evidence.DecodeAttack(b); a != nil && len(a.Phases) > 0 && a.Phases[0].Shard != nil {
			return true
		}
	}
	return false
}

// shardPart is one shard input.
type shardPart struct {
	dir string
	att *evidence.Attack
	sh  *evidence.AttackShard
}

// Merge joins shard directories, receipts and stats into one scenario
// directory (see "Merging shards" above) and returns its merge.json. An
// input that cannot be read (a malformed line: the error names the file
// and line), an Out that is not empty, or a write error is an error; the
// shards not covering the attack exactly once, and a shard whose
// attack.json does not decode (cut short: named with its line; the shard
// is not merged), are MergeRecord.Problems, written to merge.json with
// everything else.
func Merge(ctx context.Context, o Options) (*evidence.MergeRecord, error) {
	if o.Out == "" {
		return nil, errors.New("merge: no output directory")
	}
	if entries, err := os.ReadDir(o.Out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("merge: %s: not empty (merge writes a new scenario directory)", o.Out)
	}
	parts, err := mergeParts(o.Inputs, o.Out)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	// Everything is written into a temporary directory beside Out and
	// renamed into place at the end: a merge that fails leaves no
	// half-written scenario directory.
	// Out is taken absolute: "." would put the temporary directory inside
	// Out, where it cannot be renamed to. The working directory (or one
	// holding it) cannot be replaced under the shell that stands in it.
	final, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, err
	}
	if wd, err := os.Getwd(); err == nil && (wd == final || strings.HasPrefix(wd, final+string(filepath.Separator)) || final == filepath.Dir(final)) {
		return nil, fmt.Errorf("merge: %s: the working directory or one holding it (merge writes a new directory and renames it into place): give a new or empty directory elsewhere", o.Out)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), "."+filepath.Base(final)+mergeTempInfix)
	if err != nil {
		return nil, err
	}
	o.Out = tmp
	rec, err := merge(ctx, o, parts)
	if err == nil {
		_ = os.Remove(final) // an empty Out (checked above) gives way
		err = os.Rename(tmp, final)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return rec, nil
}

// merge is Merge writing into o.Out, a new empty directory.
func merge(ctx context.Context, o Options, parts []string) (*evidence.MergeRecord, error) {
	rec := &evidence.MergeRecord{Schema: evidence.MergeSchema, Inputs: parts, Shards: []evidence.MergeShard{}, Replicas: []evidence.MergeReplica{},
		Files: map[string]string{}, Problems: []string{}}
	problem := func(format string, a ...any) { rec.Problems = append(rec.Problems, fmt.Sprintf(format, a...)) }
	out := evidence.Dir(o.Out)
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}

	shards, err := readShards(ctx, parts, problem)
	if err != nil {
		return nil, err
	}
	shards = coverage(rec, shards, problem)

	// Files taken once.
	once := &onceCopier{out: o.Out, from: rec.Files, problem: problem}
	if o.Scenario != "" {
		if err := once.copyFile(o.Scenario, "", evidence.ScenarioFile); err != nil {
			return nil, err
		}
	}
	for _, p := range parts {
		for _, name := range []string{evidence.ScenarioFile, evidence.FaultsFile, evidence.FaultsFile + evidence.StateSuffix} {
			if err := once.copyFile(filepath.Join(p, name), p, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		for _, sub := range []string{evidence.StatsDir, evidence.AccessLogDir, evidence.RLSDir, evidence.NginxDir, evidence.HAProxyDir} {
			if err := once.copyTree(p, sub); err != nil {
				return nil, err
			}
		}
	}

	// Requests, shard by shard, then receipts; the join by ID (duplicate
	// IDs, identical receipts, clock offsets) sorts them beside the output.
	spill, err := os.MkdirTemp(o.Out, ".spill-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(spill)
	j := &join{rec: rec, out: out, spill: spill, sort: newSorter(spill), problem: problem}
	if err := j.readRequests(ctx, shards); err != nil {
		return nil, err
	}
	if err := j.readReceipts(ctx, parts); err != nil {
		return nil, err
	}
	if err := j.resolve(ctx, len(shards)); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(spill); err != nil {
		return nil, err
	}
	var phases []*evidence.AttackSummary
	for _, s := range shards {
		for i := range s.att.Phases {
			phases = append(phases, &s.att.Phases[i])
		}
	}
	if len(phases) > 0 {
		if err := evidence.WriteJSONFile(out.Attack(), evidence.NewAttack(phases...)); err != nil {
			return nil, err
		}
	}
	return rec, evidence.WriteJSONFile(out.Merge(), rec)
}

// readShards reads the attack.json of every input that has one.
func readShards(ctx context.Context, parts []string, problem func(string, ...any)) ([]shardPart, error) {
	var out []shardPart
	for _, p := range parts {
		d := evidence.Dir(p)
		if b, err := boundedio.ReadRegular(ctx, d.NotRun(), evidence.MaxDocumentBytes); err == nil {
			problem("%s: NOT_RUN: %s", p, strings.TrimSpace(string(b)))
			continue
		}
		b, err := boundedio.ReadRegular(ctx, d.Attack(), evidence.MaxDocumentBytes)
		if errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(d.Requests()); err == nil {
				problem("%s: %s without %s: the shard's attack did not finish (its sender was killed or crashed): its requests are not merged, the sent status of its IDs is unknown",
					p, evidence.RequestsFile, evidence.AttackFile)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		a, err := evidence.DecodeAttack(b)
		if ce := (*evidence.CountError)(nil); errors.As(err, &ce) {
			problem("%s: %v", d.Attack(), err)
			continue
		}
		if err != nil {
			// Cut short (the shard's attack killed while writing it) or
			// malformed: the shard is not merged, as one without it.
			problem("%s: %v: the shard's attack summary does not decode", d.Attack(), evidence.JSONError(b, err))
			continue
		}
		if len(a.Phases) != 1 || a.Phases[0].Shard == nil {
			problem("%s: not a shard (want the attack.json of `rlbench attack --shard K/N`, one attack with its shard)", d.Attack())
			continue
		}
		out = append(out, shardPart{dir: p, att: a, sh: a.Phases[0].Shard})
	}
	return out, nil
}

// coverage checks that the shards are those of one attack, indices
// 0..N-1 once each, and returns them in index order (a duplicate index:
// the first input only).
func coverage(rec *evidence.MergeRecord, shards []shardPart, problem func(string, ...any)) []shardPart {
	if len(shards) == 0 {
		problem("no shard among the inputs (attack.json of `rlbench attack --shard K/N`)")
		return nil
	}
	// The attack the most shards agree on.
	votes := map[string]int{}
	for _, s := range shards {
		votes[fmt.Sprintf("%d %s", s.sh.Count, s.sh.Digest)]++
	}
	best, bestN := "", 0
	for k, n := range votes {
		if n > bestN || n == bestN && k < best {
			best, bestN = k, n
		}
	}
	var ref *evidence.AttackShard
	for _, s := range shards {
		if fmt.Sprintf("%d %s", s.sh.Count, s.sh.Digest) == best {
			ref = s.sh
			break
		}
	}
	rec.Count, rec.Digest, rec.TotalIDs = ref.Count, ref.Digest, ref.TotalIDs
	byIndex := make([]*shardPart, ref.Count)
	for i := range shards {
		s := &shards[i]
		name := fmt.Sprintf("shard %d/%d (%s)", s.sh.Index, s.sh.Count, s.dir)
		switch {
		case s.sh.Count != ref.Count || s.sh.Digest != ref.Digest:
			problem("%s: of another attack (count %d, digest %s) than the others (count %d, digest %s)", name, s.sh.Count, s.sh.Digest,
				ref.Count, ref.Digest)
		case s.sh.Index < 0 || s.sh.Index >= ref.Count:
			problem("%s: index out of 0..%d", name, ref.Count-1)
		case byIndex[s.sh.Index] != nil:
			problem("shard %d/%d twice: %s and %s (only the first is merged)", s.sh.Index, ref.Count, byIndex[s.sh.Index].dir, s.dir)
		default:
			byIndex[s.sh.Index] = s
		}
	}
	var out []shardPart
	ids := 0
	for k, s := range byIndex {
		if s == nil {
			problem("shard %d/%d missing: no input holds it", k, ref.Count)
			rec.Missing = append(rec.Missing, k)
			continue
		}
		out = append(out, *s)
		ids += s.sh.IDs
	}
	if len(out) == ref.Count && ids != ref.TotalIDs {
		problem("the %d shards have %d IDs between them, the attack %d", ref.Count, ids, ref.TotalIDs)
	}
	return out
}

// onceCopier copies files that a merge takes once: the same relative path
// from two inputs must have the same content.
type onceCopier struct {
	out     string
	from    map[string]string
	sums    map[string][32]byte
	problem func(string, ...any)
}

// copyFile copies src (from input dir) to rel under the output.
func (c *onceCopier) copyFile(src, dir, rel string) error {
	if c.sums == nil {
		c.sums = map[string][32]byte{}
	}
	f, err := boundedio.OpenRegular(context.Background(), src, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	rel = filepath.ToSlash(rel)
	if prev, ok := c.sums[rel]; ok {
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		if sum != prev {
			c.problem("%s: in %s and in %s with different contents (taken once, from %s)", rel, c.from[rel], src, c.from[rel])
		}
		return nil
	}
	dst := filepath.Join(c.out, filepath.FromSlash(rel))
	if err := evidence.Dir(c.out).MkdirFor(dst); err != nil {
		return err
	}
	o, err := safefile.Create(dst, 0o666)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.MultiWriter(o, h), f)
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	c.sums[rel] = sum
	if dir == "" {
		dir = src
	}
	c.from[rel] = dir
	return nil
}

// copyTree copies every regular file under <dir>/<sub>.
func (c *onceCopier) copyTree(dir, sub string) error {
	root := filepath.Join(dir, sub)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return c.copyFile(p, dir, rel)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// LoadShardSet merges the shard directories under dir (IsShardSet) into a
// temporary directory, loads it (Load) and removes it: the bundle is the
// merged run, one scenario, with dir as its directory (file names in
// Problems read "<dir>[merged]/..."). The error is Merge's or Load's.
func LoadShardSet(ctx context.Context, dir string) (*evidence.Bundle, error) {
	tmp, err := os.MkdirTemp("", "rlbench-merge-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "merged")
	if _, err := Merge(ctx, Options{Inputs: []string{dir}, Out: out}); err != nil {
		return nil, err
	}
	b, err := evidence.Load(ctx, out)
	if err != nil {
		return nil, err
	}
	shown := strings.TrimSuffix(dir, string(filepath.Separator)) + "[merged]"
	b.Dir, b.Root = dir, dir
	for _, s := range b.Scenarios {
		s.Dir, s.Path = shown, shown
		for i := range s.Problems {
			s.Problems[i].Msg = strings.ReplaceAll(s.Problems[i].Msg, out, shown)
		}
	}
	return b, nil
}
