package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Widths of the text report in terminal columns (display cells, as
// tablewriter measures them: "≤" and "µ" are one cell each).
const (
	// MinWidth and MaxWidth bound the width a table is fitted to: a
	// narrower terminal still gets 80 columns (below that a row of the
	// main table cannot hold its figures), a wider one at most 120 (a
	// longer line is hard to read; TableOptions.Wide gives every column).
	MinWidth = 80
	MaxWidth = 120
	// DefaultWidth is the width when the terminal's is unknown (output
	// to a file or a pipe without COLUMNS).
	DefaultWidth = 100
)

// FitWidth is the width the text report is fitted to for a terminal of
// cols columns: cols clamped to MinWidth..MaxWidth, DefaultWidth when cols
// is 0 or less (unknown).
func FitWidth(cols int) int {
	switch {
	case cols <= 0:
		return DefaultWidth
	case cols < MinWidth:
		return MinWidth
	case cols > MaxWidth:
		return MaxWidth
	}
	return cols
}

// TableOptions shape WriteTableWith's text.
type TableOptions struct {
	// Width is the terminal's width in columns; the tables and reasons
	// are fitted to FitWidth(Width) (0: unknown, DefaultWidth). Ignored
	// when Wide.
	Width int
	// Wide renders every column with its full header and cells, boxed,
	// and reasons unwrapped: the tables as they were before fitting.
	Wide bool
	// Details adds the detail sections: client latency, RLS call latency,
	// backend arrivals, and a line per limiter model check and per
	// scenario's harness timing.
	Details bool
	// DetailsHint, when not empty and Details is false, is written on a
	// line of its own where the detail sections would be, when the report
	// has any (the CLI names the flag that shows them).
	DetailsHint string
}

// column is one column of a text table: its header, and how a fitted
// (not wide) table may shorten or leave it out.
type column struct {
	head string
	// short is the header of a fitted table ("" = head).
	short string
	// drop > 0: the column may be left out of a fitted table that is too
	// wide, highest drop first.
	drop int
	// zero: left out of a fitted table when every cell is "0", "-" or
	// empty (a count nothing happened to).
	zero bool
	// trunc > 0: cells may be cut with an ellipsis down to trunc cells
	// (names).
	trunc int
}

// textTable is a section of the text report: a title ("" for none), its
// columns and rows (one cell per column).
type textTable struct {
	title string
	cols  []column
	rows  [][]string
	// dropFirst: a fitted table leaves out low-value columns before it
	// cuts names (the scenario table, whose names identify its rows).
	dropFirst bool
}

// write renders t: boxed with every column when o.Wide (the tables of
// before), else fitted to FitWidth(o.Width) by shorter headers, columns
// of zeros left out, names cut with an ellipsis, low-value columns left
// out; what was left out is said on a line under the table. Nothing
// without rows.
func (t *textTable) write(w io.Writer, o TableOptions) error {
	if len(t.rows) == 0 {
		return nil
	}
	if t.title != "" {
		fmt.Fprintln(w)
		if o.Wide {
			fmt.Fprintln(w, t.title+":")
		} else if err := writeWrapped(w, t.title+":", "", FitWidth(o.Width)); err != nil {
			return err
		}
	}
	if o.Wide {
		tab := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
		head := make([]any, len(t.cols))
		for i, c := range t.cols {
			head[i] = c.head
		}
		tab.Header(head...)
		for _, r := range t.rows {
			if err := tab.Append(toAny(r)...); err != nil {
				return err
			}
		}
		return tab.Render()
	}
	width := FitWidth(o.Width)
	keep, zeros, dropped := t.fit(width)
	fitHard(keep, width)
	var buf bytes.Buffer
	tab := tablewriter.NewTable(&buf, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: strings.Repeat(" ", fitGap), Overwrite: true}),
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleLight),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off, ShowHeader: tw.On},
				Lines:      tw.Lines{ShowHeaderLine: tw.On},
			},
		})))
	head := make([]any, len(keep))
	for i, k := range keep {
		head[i] = k.header()
	}
	tab.Header(head...)
	cutAt := make([]func(string, int) string, len(keep))
	for i, k := range keep {
		cutAt[i] = cutFor(t.rows, k.index, k.width)
	}
	for _, r := range t.rows {
		cells := make([]any, len(keep))
		for i, k := range keep {
			cells[i] = cutAt[i](r[k.index], k.width)
		}
		if err := tab.Append(cells...); err != nil {
			return err
		}
	}
	if err := tab.Render(); err != nil {
		return err
	}
	// The padding after the last column is not content: lines end at
	// their last character, and the rule under the header is as wide as
	// the widest of them.
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	widest := 0
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
		if strings.Trim(lines[i], "─") != "" {
			widest = max(widest, twwidth.Width(lines[i]))
		}
	}
	for _, l := range lines {
		if l != "" && strings.Trim(l, "─") == "" {
			l = strings.Repeat("─", widest)
		}
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	var notes []string
	if len(zeros) > 0 {
		notes = append(notes, "all 0: "+strings.Join(zeros, ", "))
	}
	if len(dropped) > 0 {
		notes = append(notes, fmt.Sprintf("hidden at %d columns: %s", width, strings.Join(dropped, ", ")))
	}
	if len(notes) > 0 {
		return writeWrapped(w, "("+strings.Join(notes, "; ")+")", "", width)
	}
	return nil
}

// fitGap is the spaces between two columns of a fitted table.
const fitGap = 2

// keptColumn is a column of a fitted table: its index in the text table
// and its width in cells.
type keptColumn struct {
	column
	index, width int
}

func (k keptColumn) header() string {
	if k.short != "" {
		return k.short
	}
	return k.head
}

// keptWidth is the width of a fitted table's widest line.
func keptWidth(keep []keptColumn) int {
	n := 0
	for _, k := range keep {
		n += k.width
	}
	return n + fitGap*(len(keep)-1)
}

// fit chooses the columns of t fitted to width and their widths: columns
// of zeros (named in zeros) are left out, names are cut (down to their
// trunc), then columns are dropped, highest drop first (named in dropped),
// until the table is width wide or nothing more can go (write then cuts
// names further: fitHard).
func (t *textTable) fit(width int) (keep []keptColumn, zeros, dropped []string) {
	for i, c := range t.cols {
		if c.zero && allZero(t.rows, i) {
			zeros = append(zeros, c.head)
			continue
		}
		k := keptColumn{column: c, index: i, width: twwidth.Width(c.short)}
		if c.short == "" {
			k.width = twwidth.Width(c.head)
		}
		for _, r := range t.rows {
			k.width = max(k.width, twwidth.Width(r[i]))
		}
		keep = append(keep, k)
	}
	cutName := func() bool { return cutNames(keep, width, false) }
	dropColumn := func() bool { // leave out the least valuable column
		best := -1
		for i, k := range keep {
			if k.drop > 0 && (best < 0 || k.drop > keep[best].drop) {
				best = i
			}
		}
		if best < 0 {
			return false
		}
		dropped = append(dropped, keep[best].head)
		keep = append(keep[:best], keep[best+1:]...)
		return true
	}
	first, then := cutName, dropColumn
	if t.dropFirst {
		first, then = dropColumn, cutName
	}
	for keptWidth(keep) > width && (first() || then()) {
	}
	return keep, zeros, dropped
}

// cutNames cuts the widest name of keep that can still be cut, by what
// the table is wider than width: down to its trunc, or under hard down to
// its header's width. False when no name can be cut.
func cutNames(keep []keptColumn, width int, hard bool) bool {
	floor := func(k keptColumn) int {
		if hard {
			return twwidth.Width(k.header())
		}
		return max(k.trunc, twwidth.Width(k.header()))
	}
	best := -1
	for i, k := range keep {
		if k.trunc > 0 && k.width > floor(k) && (best < 0 || k.width > keep[best].width) {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	k := &keep[best]
	k.width = max(floor(*k), k.width-(keptWidth(keep)-width))
	return true
}

// fitHard is the last resort of a table still wider than width when fit
// could leave nothing more out: names are cut under their trunc, down to
// their header's width.
func fitHard(keep []keptColumn, width int) {
	for keptWidth(keep) > width && cutNames(keep, width, true) {
	}
}

// allZero reports whether every cell of column i is "0", "-" or empty.
func allZero(rows [][]string, i int) bool {
	for _, r := range rows {
		if c := strings.TrimSpace(r[i]); c != "0" && c != "-" && c != "" {
			return false
		}
	}
	return true
}

// Cut shortens s to width cells (terminal cells, wide runes count two),
// its end replaced by "…" when cut: how a fitted table cuts a name, for
// the CLI's other lines fitted to a terminal (its live progress).
func Cut(s string, width int) string { return cut(s, width) }

// cut shortens s to width cells, its end replaced by "…" when cut.
func cut(s string, width int) string {
	if twwidth.Width(s) <= width {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		rw := twwidth.Width(string(r))
		if n+rw > width-1 {
			break
		}
		b.WriteRune(r)
		n += rw
	}
	return b.String() + "…"
}

// cutFor is how the cells of column i of rows are cut to width: at the
// end (cut), or in the middle (cutMiddle) the cells that cut at the end
// would read the same as a different cell ("Redis stopp…" for "Redis
// stopped, deny" and "Redis stopped, allow"; cut in the middle
// "Redis…, deny" and "Redis…allow"), unless their middle cuts read the
// same too.
func cutFor(rows [][]string, i, width int) func(string, int) string {
	by := map[string]map[string]bool{} // cut at the end -> cells
	for _, r := range rows {
		c := cut(r[i], width)
		if by[c] == nil {
			by[c] = map[string]bool{}
		}
		by[c][r[i]] = true
	}
	middle := map[string]bool{}
	cuts := map[string]int{} // cut in the middle -> cells
	for _, cells := range by {
		if len(cells) > 1 {
			for c := range cells {
				middle[c] = true
				cuts[cutMiddle(c, width)]++
			}
		}
	}
	for c := range middle { // where the middle does not tell them apart either, the end as before
		if m := cutMiddle(c, width); cuts[m] > 1 || len(by[m]) > 0 {
			delete(middle, c)
		}
	}
	return func(s string, width int) string {
		if middle[s] {
			return cutMiddle(s, width)
		}
		return cut(s, width)
	}
}

// cutMiddle shortens s to width cells by replacing its middle with "…",
// keeping its start and (one cell more of) its end.
func cutMiddle(s string, width int) string {
	if twwidth.Width(s) <= width || width < 3 {
		return cut(s, width)
	}
	rs := []rune(s)
	head, tail := 0, len(rs)
	n := 1 // the "…"
	for take := 0; ; take++ {
		var w int
		if take%2 == 0 { // the end first: it tells the cut names apart
			w = twwidth.Width(string(rs[tail-1]))
		} else {
			w = twwidth.Width(string(rs[head]))
		}
		if n+w > width || head >= tail {
			break
		}
		n += w
		if take%2 == 0 {
			tail--
		} else {
			head++
		}
	}
	return string(rs[:head]) + "…" + string(rs[tail:])
}

// writeWrapped writes text as lines of at most width cells: the first
// begins with first, the others with as many spaces; lines break at
// spaces, and after ", " or "," inside a word longer than a line (a list
// of request IDs), else anywhere.
func writeWrapped(w io.Writer, text, first string, width int) error {
	for _, l := range wrapText(text, first, width) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// wrapText is writeWrapped's lines.
func wrapText(text, first string, width int) []string {
	indent := strings.Repeat(" ", twwidth.Width(first))
	var lines []string
	line, lineW := first, twwidth.Width(first)
	empty := true // line holds no word yet
	flush := func() {
		lines = append(lines, strings.TrimRight(line, " "))
		line, lineW, empty = indent, len(indent), true
	}
	for _, word := range strings.Fields(text) {
		for word != "" {
			ww := wordWidth(word, width)
			sep := 1
			if empty {
				sep = 0
			}
			if lineW+sep+ww <= width {
				if !empty {
					line += " "
				}
				line += word
				lineW += sep + ww
				empty = false
				break
			}
			if !empty && len(indent)+ww <= width {
				flush() // the word fits on a line of its own
				continue
			}
			// Too long for any line: split it, after a comma if one fits.
			room := width - lineW - sep
			if room < 1 {
				flush()
				continue
			}
			head := splitAt(word, room)
			if !empty {
				line += " "
			}
			line += head
			word = word[len(head):]
			flush()
		}
	}
	if !empty || len(lines) == 0 {
		lines = append(lines, strings.TrimRight(line, " "))
	}
	return lines
}

// wordWidth is word's width in cells, or a width past limit for a word
// longer than any line: a word of megabytes (a request ID of a hand-made
// evidence file) is then split a line at a time without measuring all of
// what remains of it for every line.
func wordWidth(word string, limit int) int {
	if len(word) <= 4*limit+64 { // short enough: measured whole, as before
		return twwidth.Width(word)
	}
	n := 0
	for _, r := range word {
		if n += twwidth.Width(string(r)); n > limit {
			break
		}
	}
	return n
}

// splitAt returns the longest prefix of word at most room cells wide that
// ends after a comma, else the longest prefix that fits (at least one
// rune).
func splitAt(word string, room int) string {
	n, fit, comma := 0, 0, 0
	for i, r := range word {
		rw := twwidth.Width(string(r))
		if n+rw > room {
			break
		}
		n += rw
		fit = i + len(string(r))
		if r == ',' {
			comma = fit
		}
	}
	switch {
	case comma > 0:
		return word[:comma]
	case fit > 0:
		return word[:fit]
	}
	_, size := utf8.DecodeRuneInString(word)
	return word[:size]
}
