package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
)

// runDirName matches a run directory's name: <UTC yyyymmddThhmmssZ>-<n> (RunStampLayout, NewRunDir).
var runDirName = regexp.MustCompile(`^([0-9]{8}T[0-9]{6}Z)-[0-9]+$`)

// RunKind says what made a run directory.
type RunKind string

const (
	// KindRun is a directory of `rlbench run` or `rlbench demo`: it holds manifest.json.
	KindRun RunKind = "run"
	// KindLab is a directory of `rlbench lab` without --receipts: it holds the sealed receipts.jsonl (its
	// receipts.jsonl.state.json sidecar, evidence.FileState).
	KindLab RunKind = "lab"
)

// RunInfo is one run directory under a root (ListRuns).
type RunInfo struct {
	// Name is the directory's name, <UTC yyyymmddThhmmssZ>-<n>.
	Name string
	// Path is root/Name.
	Path string
	// Time is the time in the name (UTC, to the second).
	Time time.Time
	// Kind is what made it.
	Kind RunKind
	// Plan is the plan's name from manifest.json ("" for a lab directory, or when the manifest does not decode).
	Plan string
	// Verdict is the run's worst status in status.txt: FAIL over NOT_RUN over PASS; "" when there is no
	// status.txt (not analysed yet, still running, or a lab directory) or it does not parse.
	Verdict string
	// Bytes is the size of the regular files in it (symbolic links are not followed).
	Bytes int64
	// Latest is true for the directory <root>/latest points at.
	Latest bool
}

// ListRuns returns the run directories directly under root, oldest first: the entries whose name is
// <UTC yyyymmddThhmmssZ>-<n>, that are directories themselves (not symbolic links) and that hold rlbench's
// manifest.json (KindRun) or, for a lab directory, the sealed receipts.jsonl's sidecar (KindLab). Anything else
// under root is not a run directory and is neither listed nor ever pruned. A root that does not exist has no runs.
func ListRuns(ctx context.Context, root string) ([]RunInfo, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	latest := latestTarget(root)
	var out []RunInfo
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m := runDirName.FindStringSubmatch(e.Name())
		if m == nil || e.Type()&fs.ModeSymlink != 0 || !e.IsDir() {
			continue
		}
		ts, err := time.Parse(RunStampLayout, m[1])
		if err != nil {
			continue
		}
		ri := RunInfo{Name: e.Name(), Path: filepath.Join(root, e.Name()), Time: ts, Latest: e.Name() == latest}
		d := evidence.Dir(ri.Path)
		switch {
		case isRegular(d.Manifest()):
			ri.Kind = KindRun
			if raw, err := boundedio.ReadRegular(ctx, d.Manifest(), evidence.MaxDocumentBytes); err == nil {
				var man evidence.Manifest
				if json.Unmarshal(raw, &man) == nil {
					ri.Plan = man.Plan
				}
			}
		case isLabDir(d):
			ri.Kind = KindLab
		default:
			continue
		}
		ri.Verdict = runVerdict(d.Status())
		ri.Bytes = dirBytes(ri.Path)
		out = append(out, ri)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// isRegular reports whether path is a regular file (not following a final symbolic link).
func isRegular(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// isLabDir reports whether d holds a receipts.jsonl sealed by rlbench (its sidecar decodes as an
// evidence.FileState).
func isLabDir(d evidence.Dir) bool {
	if !isRegular(evidence.StatePath(d.Receipts())) {
		return false
	}
	_, err := evidence.ReadFileState(d.Receipts())
	return err == nil
}

// latestTarget is the name of the directory <root>/latest links to (NewRunDir's runs and Run link it by name),
// or "".
func latestTarget(root string) string {
	t, err := os.Readlink(evidence.Dir(root).Latest())
	if err != nil {
		return ""
	}
	if filepath.IsAbs(t) {
		rel, err := filepath.Rel(root, t)
		if err != nil {
			return ""
		}
		t = rel
	}
	t = filepath.Clean(t)
	if filepath.Base(t) != t {
		return "" // a link into a subdirectory or out of the root names no run directory of root
	}
	return t
}

// runVerdict is the worst status of status.txt, or "".
func runVerdict(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	lines, err := evidence.ReadStatus(f, path)
	if err != nil || len(lines) == 0 {
		return ""
	}
	rank := map[string]int{evidence.Pass: 1, evidence.NotRun: 2, evidence.Fail: 3}
	worst := ""
	for _, l := range lines {
		if rank[l.Status] > rank[worst] {
			worst = l.Status
		}
	}
	return worst
}

// dirBytes is the size of the regular files under dir; WalkDir does not follow symbolic links.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// PruneOptions say which run directories PruneRuns removes. At least one of Keep and OlderThan must be set; with
// both, a run is removed only when both select it.
type PruneOptions struct {
	// Keep >= 0 keeps the Keep newest run directories; -1: no such rule.
	Keep int
	// OlderThan > 0 removes only run directories whose name's time is more than OlderThan before Now; 0: no such
	// rule.
	OlderThan time.Duration
	// Now is the clock for OlderThan; time.Now when zero.
	Now time.Time
	// DryRun selects without removing.
	DryRun bool
}

// PruneRuns removes the run directories of root (ListRuns: only directories that look like rlbench's, never
// through a symbolic link) that opts selects, except the one <root>/latest points at, and returns them, oldest
// first. It stops at the first directory it cannot remove and returns those removed so far with the error.
func PruneRuns(ctx context.Context, root string, opts PruneOptions) ([]RunInfo, error) {
	if opts.Keep < 0 && opts.OlderThan <= 0 {
		return nil, errors.New("prune: give a number of runs to keep or an age")
	}
	runs, err := ListRuns(ctx, root)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	var removed []RunInfo
	for i, r := range runs {
		if r.Latest {
			continue
		}
		if opts.Keep >= 0 && i >= len(runs)-opts.Keep {
			continue
		}
		if opts.OlderThan > 0 && !r.Time.Before(now.Add(-opts.OlderThan)) {
			continue
		}
		if !opts.DryRun {
			if err := ctx.Err(); err != nil {
				return removed, err
			}
			// Check again just before removing: still a directory of its own, not a link put there meanwhile.
			if fi, err := os.Lstat(r.Path); err != nil || !fi.IsDir() {
				continue
			}
			if err := os.RemoveAll(r.Path); err != nil {
				return removed, fmt.Errorf("prune %s: %w", r.Path, err)
			}
		}
		removed = append(removed, r)
	}
	return removed, nil
}
