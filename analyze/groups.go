package analyze

import (
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// groups aggregates the repeats of each scenario name, in first-seen order:
// the observed admitted range over the repeats (no-response requests count
// as possibly admitted), the over-admission range against the intended
// limit (for a limit per window, the range of the repeats' worst-window
// over-admissions), and the largest configured bound.
func groups(srs []report.ScenarioReport) []report.Group {
	out := []report.Group{}
	idx := map[string]int{}
	for _, s := range srs {
		i, ok := idx[s.Name]
		if !ok {
			out = append(out, report.Group{Name: s.Name, Status: evidence.Pass})
			i = len(out) - 1
			idx[s.Name] = i
		}
		g := &out[i]
		g.Repeats++
		switch {
		case s.Status == evidence.Fail:
			g.Status = evidence.Fail
		case s.Status == evidence.NotRun && g.Status != evidence.Fail:
			g.Status = evidence.NotRun
		}
		if s.Status == evidence.NotRun && s.Totals.Sent == 0 {
			continue
		}
		lo, hi := s.Totals.Passed, s.Totals.PassedMax(s.Receipts.IndeterminateWithReceipt)
		if g.Admitted == nil {
			g.Admitted = &evidence.Range{Min: lo, Max: hi}
		} else {
			g.Admitted.Min = min(g.Admitted.Min, lo)
			g.Admitted.Max = max(g.Admitted.Max, hi)
		}
		switch o := s.OverAdmission; {
		case o != nil && o.PerNs > 0: // per window: the worst window's, over the repeats
			if g.OverAdmission == nil {
				g.OverAdmission = &evidence.Range{Min: o.Min, Max: o.Max}
			} else {
				g.OverAdmission.Min, g.OverAdmission.Max = min(g.OverAdmission.Min, o.Min), max(g.OverAdmission.Max, o.Max)
			}
			g.IntendedLimit = &evidence.IntendedLimit{Requests: o.Intended, Per: model.Duration(o.PerNs)}
		case o != nil:
			oa := evidence.Range{Min: g.Admitted.Min - o.Intended, Max: g.Admitted.Max - o.Intended}
			g.OverAdmission = &oa
		}
		if s.Bound != nil && (g.Bound == nil || s.Bound.Allowed > *g.Bound) {
			v := s.Bound.Allowed
			g.Bound = &v
		}
	}
	return out
}
