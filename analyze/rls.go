package analyze

import (
	"fmt"
	"sort"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// rlsCheck summarises the rate limit service's decisions of the scenario
// (rls/decisions.jsonl) per counter window (cache key): how many were OK
// against the window's limit. envoyproxy/ratelimit answers OVER_LIMIT iff the
// counter after increment exceeds the limit, so a window's OK count above its
// limit means the RLS itself over-admitted. The limit is the largest one the
// window's decisions applied (a configuration reload may raise it
// mid-window); the OKs of a shadow_mode rule over its limit are shadow,
// not admissions. Nil without decisions.
//
// A start or restart of the rls or redis target (faults.jsonl) may reset the
// counters (the lab RLS keeps them in memory; Redis without persistence
// loses them), so decisions after such a fault are judged as a new counter
// epoch, named "<key> after <fault>".
func rlsCheck(ev *evidence.ScenarioEvidence, shadowRule func(*evidence.Decision) bool) *report.RLSCheck {
	if len(ev.Decisions) == 0 {
		return nil
	}
	type boundary struct {
		at   int64
		name string
	}
	var resets []boundary
	for _, f := range ev.Faults {
		if (f.Target == "rls" || f.Target == "redis") && (f.Action == ActionStart || f.Action == ActionRestart) {
			resets = append(resets, boundary{f.EndNs, f.Name})
		}
	}
	sort.Slice(resets, func(i, j int) bool { return resets[i].at < resets[j].at })
	epochKey := func(key string, t int64) string {
		i := sort.Search(len(resets), func(i int) bool { return resets[i].at > t })
		if i == 0 {
			return key
		}
		return fmt.Sprintf("%s after %s", key, resets[i-1].name)
	}
	rc := &report.RLSCheck{ByCode: map[string]int{}, Windows: []report.RLSWindow{}}
	idx := map[string]int{}
	for _, d := range ev.Decisions {
		rc.Decisions++
		rc.ByCode[d.Code]++
		if d.Key == "" {
			continue
		}
		key := epochKey(d.Key, d.TimeNs)
		i, ok := idx[key]
		if !ok {
			rc.Windows = append(rc.Windows, report.RLSWindow{Key: key, Limit: int(d.Limit)})
			i = len(rc.Windows) - 1
			idx[key] = i
		}
		w := &rc.Windows[i]
		w.Limit = max(w.Limit, int(d.Limit))
		switch {
		case d.Code == "OK" && (d.Shadow || d.Limit > 0 && d.Current > uint64(d.Limit) && shadowRule(&d)):
			w.Shadow++
		case d.Code == "OK":
			w.OK++
		case d.Code == "OVER_LIMIT":
			w.Over++
		}
	}
	sort.Slice(rc.Windows, func(i, j int) bool { return rc.Windows[i].Key < rc.Windows[j].Key })
	return rc
}
