package analyze

import (
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// checkStats: proxy counters are compared whenever snapshots exist, unless
// scenario.json's stats_agree is false; a missing one of a pair (or of a
// proxy the scenario names), or none at all under stats_agree true, is
// incomplete evidence.
func checkStats(in *Input) (r Result) {
	sr := in.Report
	if statsOff(in) {
		return r
	}
	if in.Scenario.Expect.StatsAgree != nil && len(sr.Stats) == 0 {
		r.Incomplete = append(r.Incomplete, "stats_agree expected but no stats snapshots under "+evidence.StatsDir+"/")
	}
	for _, ps := range sr.Stats {
		if ps.Status == report.StatsMissing {
			r.Incomplete = append(r.Incomplete, ps.Detail)
			continue
		}
		for _, c := range ps.Checks {
			r.add(ps.Proxy+": "+c.Name, c.Status, c.Want, c.Got)
		}
	}
	return r
}

// statsOff reports whether scenario.json's stats_agree is false: the
// proxies' counters are then compared with nothing (checkStats,
// checkRLSLogged), only reported.
func statsOff(in *Input) bool {
	a := in.Scenario.Expect.StatsAgree
	return a != nil && !*a
}
