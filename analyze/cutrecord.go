package analyze

import (
	"strings"

	"github.com/rlbench/rlbench/evidence"
)

// clientRecordCut reports whether requests.jsonl may lack requests that
// were sent: attack.json is absent or does not decode (the attack was
// killed before writing it), says the attack did not complete or was
// interrupted, or counts more sent than recorded, the merge of a shard set
// lacks a shard (MergeRecord.Missing: a sender killed before it wrote its
// attack.json, whose requests are not merged), or requests.jsonl itself
// is a Problem (a truncated last line, a seal never closed or recording a
// write error). Each of these already makes the scenario incomplete
// (completeness): the verdict is NOT_RUN, and a receipt whose ID the cut
// record lacks may be one of a request sent past the cut.
func clientRecordCut(ev *evidence.ScenarioEvidence) bool {
	a := ev.Attack
	if a == nil || !a.Complete || a.Interrupted || ev.Requests.Len() < a.Sent {
		return true
	}
	if m := ev.Merge; m != nil && len(m.Missing) > 0 {
		return true
	}
	for _, p := range ev.Problems {
		if p.File == evidence.RequestsFile {
			return true
		}
	}
	return false
}

// plannedIDs returns a membership test for the attack's planned ID set as
// far as the evidence shows it, or nil when it does not. rlbench generates
// IDs as "<prefix>-<k>" (a bare <k> without a prefix), k = 1..n zero-padded
// to the digits of n (attack.IDs; the runner's prefix is
// "<run>-s<i>r<repeat>-<step>", a flow's adds "-<flow>"), so the recorded
// requests name their families (prefix and width). When every recorded ID
// is of such a family, the plan's IDs are those of the families with k at
// most n, n bounded by the IDs attack.json plans (Config.IDs over its
// phases; for the phases of a sharded attack, its AttackShard.TotalIDs
// once, which counts the IDs of a shard that wrote no attack.json too: a
// sender killed) and by the width. IDs from a file (attack --ids-file), or no
// recorded request at all, leave the set unknown (nil): then no receipt
// can be shown to lie outside it.
func plannedIDs(ev *evidence.ScenarioEvidence) func(id string) bool {
	reqs := &ev.Requests
	if reqs.Len() == 0 {
		return nil
	}
	widths := map[string]int{} // family head ("<prefix>-" or "") -> width
	for i := range reqs.Len() {
		head, digits, ok := splitGeneratedID(reqs.IDs.ID(i))
		if !ok {
			return nil
		}
		if w, seen := widths[head]; seen && w != len(digits) {
			return nil // one prefix, two widths: not attack.IDs
		}
		widths[head] = len(digits)
	}
	planned := 0
	if a := ev.Attack; a != nil {
		sharded := map[string]bool{} // the digests of sharded attacks counted
		for _, ph := range a.Phases {
			if sh := ph.Shard; sh != nil && sh.TotalIDs > 0 {
				// A shard plans a share; the attack plans TotalIDs, the
				// shards that wrote no attack.json included.
				if !sharded[sh.Digest] {
					sharded[sh.Digest] = true
					planned += sh.TotalIDs
				}
				continue
			}
			planned += max(ph.Config.IDs, 0)
		}
	}
	return func(id string) bool {
		head, digits, ok := splitGeneratedID(id)
		if !ok || widths[head] != len(digits) {
			return false
		}
		k := 0
		for _, c := range digits {
			k = k*10 + int(c-'0')
		}
		return k >= 1 && (planned == 0 || k <= planned)
	}
}

// splitGeneratedID splits id into the head and the zero-padded number of
// an attack.IDs ID: "r-007" is ("r-", "007"), "42" is ("", "42"). ok is
// false for any other shape (and for more than 8 digits: attack.MaxIDs is
// 10,000,000).
func splitGeneratedID(id string) (head, digits string, ok bool) {
	i := strings.LastIndexByte(id, '-')
	head, digits = id[:i+1], id[i+1:]
	if i == 0 || len(digits) == 0 || len(digits) > 8 {
		return "", "", false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return "", "", false
		}
	}
	return head, digits, true
}
