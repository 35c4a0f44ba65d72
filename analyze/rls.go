package analyze

import (
	"sort"
)

// rlsCheck summarises the rate limit service's decisions of the scenario
// (rls/decisions.jsonl) per counter window (cache key): how many were OK
// against the window's limit. envoyproxy/ratelimit answers OVER_LIMIT iff the
// counter after increment exceeds the limit, so a window's OK count above its
// limit means the RLS itself over-admitted. Nil without decisions.
func rlsCheck(sd *scenarioData, start, end int64) *RLSCheck {
	if len(sd.decided) == 0 {
		return nil
	}
	rc := &RLSCheck{ByCode: map[string]int{}, Windows: []RLSWindow{}}
	idx := map[string]int{}
	for _, d := range sd.decided {
		rc.Decisions++
		rc.ByCode[d.Code]++
		if d.Key == "" {
			continue
		}
		i, ok := idx[d.Key]
		if !ok {
			rc.Windows = append(rc.Windows, RLSWindow{Key: d.Key, Limit: int(d.Limit)})
			i = len(rc.Windows) - 1
			idx[d.Key] = i
		}
		switch d.Code {
		case "OK":
			rc.Windows[i].OK++
		case "OVER_LIMIT":
			rc.Windows[i].Over++
		}
	}
	sort.Slice(rc.Windows, func(i, j int) bool { return rc.Windows[i].Key < rc.Windows[j].Key })
	return rc
}
