package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rlbench/rlbench/evidence"
)

// WriteMatrixJSON writes the matrix as indented JSON
// (schemas/matrix.v1.schema.json), without HTML escaping.
func WriteMatrixJSON(w io.Writer, m *Matrix) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// shapeKey is the short header of the i-th shape column of a fitted
// matrix ("S1", ...), explained by a legend under the table.
func shapeKey(i int) string { return "S" + strconv.Itoa(i+1) }

// cellMark is a grid cell: the verdict, "·" where the limiter has no
// scenario of the shape.
func cellMark(c *MatrixCell) string {
	if c == nil {
		return "·"
	}
	return c.Status
}

// matrixGrid is the limiter × shape table of verdicts. Fitted, the shape
// columns are headed S1, S2 ... (matrixLegend names them).
func matrixGrid(m *Matrix) *textTable {
	t := &textTable{title: "Conformance matrix (limiter × shape)", cols: []column{{head: "Limiter", trunc: 16}}}
	for i, s := range m.Shapes {
		t.cols = append(t.cols, column{head: s, short: shapeKey(i)})
	}
	for _, l := range m.Limiters {
		row := []string{l}
		for _, s := range m.Shapes {
			row = append(row, cellMark(m.Cell(l, s)))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// matrixLegend names the shapes of a fitted grid: "S1 = burst 1.5x capacity; ...".
func matrixLegend(m *Matrix) string {
	parts := make([]string, len(m.Shapes))
	for i, s := range m.Shapes {
		parts[i] = shapeKey(i) + " = " + s
	}
	return "(" + strings.Join(parts, "; ") + ")"
}

// matrixCells is the table of every cell's figures: the verdict, the
// admissions against the model's bounds and the forwards' peak against
// the model's.
func matrixCells(m *Matrix) *textTable {
	t := &textTable{title: "Conformance cells", cols: []column{{head: "Limiter", trunc: 14}, {head: "Shape", trunc: 14},
		{head: "Verdict"}, {head: "Admitted (model)", trunc: 18}, {head: "Forwards peak (model)", short: "Peak (model)", trunc: 18, drop: 1}}}
	for _, c := range m.Cells {
		t.rows = append(t.rows, []string{c.Limiter, c.Shape, c.Status, c.AdmittedText(), c.ForwardsText()})
	}
	return t
}

// matrixWhy is one line per explanation of every cell that did not pass:
// "<limiter> × <shape> <verdict>: <why>".
func matrixWhy(m *Matrix) []string {
	var out []string
	for _, c := range m.Cells {
		if c.Status == evidence.Pass {
			continue
		}
		if len(c.Why) == 0 {
			out = append(out, fmt.Sprintf("%s × %s %s", c.Limiter, c.Shape, c.Status))
		}
		for _, w := range c.Why {
			out = append(out, fmt.Sprintf("%s × %s %s: %s", c.Limiter, c.Shape, c.Status, w))
		}
	}
	return out
}

// WriteMatrixTable renders the matrix for people: the grid of verdicts
// (limiter × shape; fitted, the shapes headed S1 ... with a legend), the
// table of each cell's admissions against the model and forwards' peak
// against the model, the explanation of every cell that did not pass,
// then "Conformance: <status>". Fitted to o's width like the report's
// other tables (TableOptions).
func WriteMatrixTable(w io.Writer, m *Matrix, o TableOptions) error {
	if m == nil {
		return nil
	}
	width := 0
	if !o.Wide {
		width = FitWidth(o.Width)
	}
	if err := matrixGrid(m).write(w, o); err != nil {
		return err
	}
	if !o.Wide {
		if err := writeWrapped(w, matrixLegend(m), "", width); err != nil {
			return err
		}
	}
	if err := matrixCells(m).write(w, o); err != nil {
		return err
	}
	if why := matrixWhy(m); len(why) > 0 {
		fmt.Fprintln(w)
		if err := writeLines(w, why, width); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "Conformance: %s\n", m.Status)
	return err
}

// WriteMatrixMarkdown renders the matrix as GitHub flavoured Markdown:
// the grid of verdicts with the shapes' full names, a table of each
// cell's figures, and the explanations of the cells that did not pass.
func WriteMatrixMarkdown(w io.Writer, m *Matrix) error {
	if m == nil {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\n**Conformance matrix: %s**\n\n", m.Status); err != nil {
		return err
	}
	t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithHeaderAutoFormat(tw.Off))
	head := []any{"Limiter"}
	for _, s := range m.Shapes {
		head = append(head, mdCell(s))
	}
	t.Header(head...)
	for _, l := range m.Limiters {
		row := []any{mdCell(l)}
		for _, s := range m.Shapes {
			c := m.Cell(l, s)
			if c == nil {
				row = append(row, "·")
				continue
			}
			row = append(row, statusMark(c.Status))
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("Limiter", "Shape", "Verdict", "Admitted (model)", "Forwards peak (model)")
	for _, c := range m.Cells {
		if err := t.Append(mdCell(c.Limiter), mdCell(c.Shape), statusMark(c.Status), mdCell(c.AdmittedText()), mdCell(c.ForwardsText())); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	why := matrixWhy(m)
	if len(why) > 0 {
		fmt.Fprintln(w)
	}
	for _, l := range why {
		if _, err := fmt.Fprintf(w, "- %s\n", mdCell(l)); err != nil {
			return err
		}
	}
	return nil
}
