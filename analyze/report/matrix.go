package report

import (
	"fmt"
	"strings"

	"github.com/rlbench/rlbench/evidence"
)

// MatrixSchema identifies the JSON form of Matrix (`rlbench conformance
// --format json`; a report's JSON holds it as Report.Matrix).
const MatrixSchema = "rlbench.matrix/v1"

// Matrix is the conformance matrix of a run (issue 23): its labelled
// scenarios (ScenarioReport.Labels) grouped by limiter and traffic shape,
// each cell the verdict of that limiter on that traffic, the admissions
// against its model's bounds, the smoothness of its forwards and why.
type Matrix struct {
	// Schema is MatrixSchema.
	Schema string `json:"schema"`
	// Status is the worst cell verdict: FAIL over NOT_RUN over PASS; at
	// best NOT_RUN when a limiter lacks a scenario of a shape (a hole in
	// the grid is not a pass: in a conformance plan every pair has one).
	Status string `json:"status"`
	// Limiters are the rows and Shapes the columns, in the order their
	// first scenario appears in the report (the plan's order).
	Limiters []string `json:"limiters"`
	Shapes   []string `json:"shapes"`
	// Cells has one entry per limiter and shape that has scenarios, row
	// by row (limiter, then shape, in the orders above).
	Cells []MatrixCell `json:"cells"`
}

// MatrixCell is one limiter under one shape: the scenario (over its
// repeats) that carries both labels.
type MatrixCell struct {
	Limiter string `json:"limiter"`
	Shape   string `json:"shape"`
	// Scenario is the scenario's name; Repeats how many runs of it the
	// report holds; Repeat the run the figures are of (the first with the
	// worst verdict; 0 for a scenario not repeated).
	Scenario string `json:"scenario"`
	Repeats  int    `json:"repeats"`
	Repeat   int    `json:"repeat"`
	// Status is the worst verdict over the repeats: FAIL over NOT_RUN over PASS.
	Status string `json:"status"`
	// Admitted is the admitted check of that run ("admitted" of
	// ScenarioReport.Checks: want the model's bounds, got the count); nil
	// when the scenario has none (it did not run, or did not ask).
	Admitted *Check `json:"admitted,omitempty"`
	// Model is the end-to-end bound of the limiters' models on the
	// admissions (ScenarioReport.Model); nil when it cannot be told.
	Model *ModelBound `json:"model,omitempty"`
	// Forwards are the checks of the forwards' smoothness: the backend
	// peak per window against the model ("backend peak per W ...") and,
	// where the limiter logs its own forward times, "limiter forwards per
	// W ..."; empty when the scenario has none.
	Forwards []Check `json:"forwards"`
	// Why explains the verdict: the scenario's reasons (failed and
	// inconclusive checks with what was wanted and got, or why it did not
	// run: the limiter model checks' findings among them), then the
	// model's explanation of every violating request: per limiter, the
	// admissions it must have rejected and the rejections it must have
	// admitted (count and the first request's why).
	// Empty for a PASS: the checks above are its explanation.
	Why []string `json:"why"`
}

// Labelled reports whether any scenario of rep carries matrix labels.
func Labelled(rep *Report) bool {
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Labels != nil {
			return true
		}
	}
	return false
}

// BuildMatrix groups rep's labelled scenarios into the conformance
// matrix; nil when none is labelled. Scenarios without labels are not in
// it.
func BuildMatrix(rep *Report) *Matrix {
	if !Labelled(rep) {
		return nil
	}
	m := &Matrix{Schema: MatrixSchema, Limiters: []string{}, Shapes: []string{}, Cells: []MatrixCell{}}
	type key struct{ l, s string }
	runs := map[key][]*ScenarioReport{}
	seenL, seenS := map[string]bool{}, map[string]bool{}
	for i := range rep.Scenarios {
		s := &rep.Scenarios[i]
		if s.Labels == nil {
			continue
		}
		l := *s.Labels
		if !seenL[l.Limiter] {
			seenL[l.Limiter] = true
			m.Limiters = append(m.Limiters, l.Limiter)
		}
		if !seenS[l.Shape] {
			seenS[l.Shape] = true
			m.Shapes = append(m.Shapes, l.Shape)
		}
		runs[key{l.Limiter, l.Shape}] = append(runs[key{l.Limiter, l.Shape}], s)
	}
	var statuses []string
	for _, l := range m.Limiters {
		for _, sh := range m.Shapes {
			rs := runs[key{l, sh}]
			if len(rs) == 0 {
				continue
			}
			c := matrixCell(l, sh, rs)
			statuses = append(statuses, c.Status)
			m.Cells = append(m.Cells, c)
		}
	}
	if len(m.Cells) < len(m.Limiters)*len(m.Shapes) {
		statuses = append(statuses, evidence.NotRun)
	}
	m.Status = worstStatus(statuses)
	return m
}

// Cell returns the cell of limiter l and shape s, nil when none.
func (m *Matrix) Cell(l, s string) *MatrixCell {
	for i := range m.Cells {
		if m.Cells[i].Limiter == l && m.Cells[i].Shape == s {
			return &m.Cells[i]
		}
	}
	return nil
}

// worstStatus is FAIL over NOT_RUN over PASS; NOT_RUN for none.
func worstStatus(sts []string) string {
	if len(sts) == 0 {
		return evidence.NotRun
	}
	out := evidence.Pass
	for _, st := range sts {
		switch st {
		case evidence.Fail:
			return evidence.Fail
		case evidence.NotRun:
			out = evidence.NotRun
		case evidence.Pass:
		default:
			out = evidence.NotRun // an unknown verdict is not a pass
		}
	}
	return out
}

// statusRank orders verdicts worst first.
func statusRank(st string) int {
	switch st {
	case evidence.Fail:
		return 0
	case evidence.NotRun:
		return 1
	case evidence.Pass:
		return 3
	}
	return 2
}

// matrixCell is the cell of the runs rs of one scenario: the worst
// verdict, and the figures and explanations of the first run with it.
func matrixCell(l, sh string, rs []*ScenarioReport) MatrixCell {
	pick := rs[0]
	for _, r := range rs[1:] {
		if statusRank(r.Status) < statusRank(pick.Status) {
			pick = r
		}
	}
	c := MatrixCell{Limiter: l, Shape: sh, Scenario: pick.Name, Repeats: len(rs), Repeat: pick.Repeat, Status: pick.Status,
		Model: pick.Model, Forwards: []Check{}, Why: []string{}}
	if c.Status != evidence.Pass && c.Status != evidence.Fail && c.Status != evidence.NotRun {
		c.Status = evidence.NotRun
	}
	for _, ch := range pick.Checks {
		switch {
		case ch.Name == "admitted":
			ch := ch
			c.Admitted = &ch
		case strings.HasPrefix(ch.Name, "backend peak per ") || strings.HasPrefix(ch.Name, "limiter forwards per "):
			c.Forwards = append(c.Forwards, ch)
		}
	}
	if c.Status == evidence.Pass {
		return c
	}
	c.Why = append(c.Why, pick.Reasons...)
	for _, lr := range pick.Limiters {
		c.Why = append(c.Why, modelWhy(&lr)...)
	}
	return c
}

// modelWhy is a limiter model check's explanation of its violations: the
// admissions it must have rejected and the rejections it must have
// admitted, the count and the first request's why (its count findings
// are in the scenario's reasons already).
func modelWhy(lr *LimiterReport) []string {
	var out []string
	add := func(n int, vs []RequestVerdict, what string) {
		if n == 0 {
			return
		}
		s := fmt.Sprintf("model of %s: %d %s", lr.Name, n, what)
		if len(vs) > 0 {
			s += fmt.Sprintf(", e.g. %s: %s", vs[0].ID, vs[0].Why)
		}
		out = append(out, s)
	}
	add(lr.OverAdmittedCount, lr.OverAdmitted, "admitted that it must have rejected")
	add(lr.UnderAdmittedCount, lr.UnderAdmitted, "rejected that it must have admitted")
	return out
}

// AdmittedText is the cell's admitted count against the model: "12 (model
// 10..13)", the check's got and want; "-" without an admitted check.
func (c *MatrixCell) AdmittedText() string {
	if c.Admitted == nil {
		return "-"
	}
	return c.Admitted.Got + " (" + c.Admitted.Want + ")"
}

// ForwardsText is the cell's smoothness: the first forwards check that
// failed or was inconclusive, else the last one (the model's path check),
// in short: "<got> (want <want>)" with got up to its first ", " and want
// up to its first " (" (Forwards holds them whole), followed by the
// check's status unless it passed; "-" without one.
func (c *MatrixCell) ForwardsText() string {
	if len(c.Forwards) == 0 {
		return "-"
	}
	pick := c.Forwards[len(c.Forwards)-1]
	for _, f := range c.Forwards {
		if f.Status == CheckFail || f.Status == CheckUnknown {
			pick = f
			break
		}
	}
	got, _, _ := strings.Cut(pick.Got, ", ")
	want, _, _ := strings.Cut(pick.Want, " (")
	st := ""
	if pick.Status != CheckPass {
		st = " " + pick.Status
	}
	return strings.TrimSpace(got) + " (want " + strings.TrimSpace(want) + ")" + st
}
