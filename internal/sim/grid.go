package sim

import (
	"fmt"
	"io"
	"strconv"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/runner"
)

// Grid is the summary the scenarios' simulate row and column place them
// in: per cell, what passed every limiter per second of the scenario's
// active time (first send to last send), averaged over its repeats.
type Grid struct {
	Rows    []string `json:"rows"`
	Columns []string `json:"columns"`
	// Cells are row-major; a cell without a scenario has Scenario "".
	Cells [][]Cell `json:"cells"`
}

// Cell is one scenario of the grid.
type Cell struct {
	Scenario string `json:"scenario"`
	// Admitted is the passed count (analyze Classes.Passed), summed over
	// the repeats; ActiveNs their active time, summed.
	Admitted int     `json:"admitted"`
	ActiveNs int64   `json:"active_ns"`
	PerSec   float64 `json:"per_sec"`
	Status   string  `json:"status"`
}

// GridOf builds the grid of the plan's scenarios that name a row and a
// column, from the simulated bundle and its report; nil when none does.
func GridOf(p *runner.Plan, b *evidence.Bundle, rep *report.Report) *Grid {
	type pos struct{ r, c int }
	g := &Grid{}
	rows, cols := map[string]int{}, map[string]int{}
	where := map[string]pos{}
	for i := range p.Scenarios {
		s := p.Scenarios[i].Simulate
		if s == nil || s.Row == "" {
			continue
		}
		if _, ok := rows[s.Row]; !ok {
			rows[s.Row] = len(g.Rows)
			g.Rows = append(g.Rows, s.Row)
		}
		if _, ok := cols[s.Column]; !ok {
			cols[s.Column] = len(g.Columns)
			g.Columns = append(g.Columns, s.Column)
		}
		where[p.Scenarios[i].Name] = pos{rows[s.Row], cols[s.Column]}
	}
	if len(where) == 0 {
		return nil
	}
	g.Cells = make([][]Cell, len(g.Rows))
	for r := range g.Cells {
		g.Cells[r] = make([]Cell, len(g.Columns))
	}
	for k, ev := range b.Scenarios {
		if k >= len(rep.Scenarios) {
			break
		}
		at, ok := where[ev.Scenario.Name]
		if !ok {
			continue
		}
		c := &g.Cells[at.r][at.c]
		sr := &rep.Scenarios[k]
		c.Scenario, c.Status = ev.Scenario.Name, worse(c.Status, sr.Status)
		c.Admitted += sr.Totals.Passed
		first, last := int64(0), int64(0)
		for i, t := range ev.Requests.SentNs.All() {
			if i == 0 || t < first {
				first = t
			}
			last = max(last, t)
		}
		c.ActiveNs += last - first
		if c.ActiveNs > 0 {
			c.PerSec = float64(c.Admitted) / (float64(c.ActiveNs) / 1e9)
		}
	}
	return g
}

// worse is the worse of two verdicts (FAIL over NOT_RUN over PASS; "" is none).
func worse(a, b string) string {
	rank := map[string]int{"": 0, evidence.Pass: 1, evidence.NotRun: 2, evidence.Fail: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// WriteGrid renders the grid: admitted per second in each cell, a cell
// that did not pass marked with its verdict.
func WriteGrid(w io.Writer, g *Grid) error {
	if g == nil {
		return nil
	}
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header(append([]string{"admitted/s"}, g.Columns...))
	for r, row := range g.Rows {
		line := []string{row}
		for _, c := range g.Cells[r] {
			switch {
			case c.Scenario == "":
				line = append(line, "-")
			case c.Status != evidence.Pass:
				line = append(line, fmt.Sprintf("%s (%s)", strconv.FormatFloat(c.PerSec, 'f', 1, 64), c.Status))
			default:
				line = append(line, strconv.FormatFloat(c.PerSec, 'f', 1, 64))
			}
		}
		if err := t.Append(line); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintln(w, "\nSimulated admitted per second (first send to last send):"); err != nil {
		return err
	}
	return t.Render()
}
