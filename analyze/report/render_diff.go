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

// WriteDiffJSON writes d as indented JSON (schemas/diff.v1.schema.json),
// without HTML escaping.
func WriteDiffJSON(w io.Writer, d *Diff) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// WriteDiffTable renders d for people, fitted to o.Width as WriteTableWith
// fits the report (o.Wide: every column, boxed; o.Details is ignored): the
// two sides, the verdict flips with the reasons of each, the scenarios of
// one side only, then the counts, ranges, checks, latency percentiles and
// configuration digests that changed, and last a "Diff:" summary line.
func WriteDiffTable(w io.Writer, d *Diff, o TableOptions) error {
	width := 0
	if !o.Wide {
		width = FitWidth(o.Width)
	}
	label := diffLabeler(d)
	if err := writeLines(w, []string{"A: " + sideLine(d.A), "B: " + sideLine(d.B)}, width); err != nil {
		return err
	}
	flips := &textTable{title: "Verdict flips", dropFirst: true, cols: []column{{head: "Scenario", trunc: 16}, {head: "A"}, {head: "B"}, {head: "Change"}}}
	for _, f := range d.Flips {
		flips.rows = append(flips.rows, []string{label(f.Name, f.Repeat), f.A, f.B, f.Change})
	}
	if err := flips.write(w, o); err != nil {
		return err
	}
	var reasons []string
	for _, f := range d.Flips {
		st := f.B
		if f.B == evidence.Pass {
			st = "was " + f.A // what got fixed: A's reasons
		}
		for _, r := range f.Reasons {
			reasons = append(reasons, label(f.Name, f.Repeat)+" ("+st+"): "+r)
		}
	}
	if err := writeLines(w, reasons, width); err != nil {
		return err
	}
	only := &textTable{title: "Only on one side", dropFirst: true, cols: []column{{head: "Scenario", trunc: 16}, {head: "Side"}, {head: "Status"}}}
	for _, s := range d.OnlyA {
		only.rows = append(only.rows, []string{label(s.Name, s.Repeat), "A", s.Status})
	}
	for _, s := range d.OnlyB {
		only.rows = append(only.rows, []string{label(s.Name, s.Repeat), "B", s.Status})
	}
	counts := &textTable{title: "Counts that changed", dropFirst: true, cols: []column{{head: "Scenario", trunc: 16}, {head: "Target", trunc: 10},
		{head: "Count", trunc: 14}, {head: "A"}, {head: "B"}, {head: "Delta", short: "Δ"}}}
	ranges := &textTable{title: "Ranges that changed", dropFirst: true, cols: []column{{head: "Scenario", trunc: 16}, {head: "Range"}, {head: "A"}, {head: "B"}}}
	checks := &textTable{title: "Checks that changed", dropFirst: true, cols: []column{{head: "Scenario", trunc: 16}, {head: "Check", trunc: 20},
		{head: "A"}, {head: "B"}, {head: "Got A", trunc: 12, drop: 2}, {head: "Got B", trunc: 12, drop: 1}}}
	lat := &textTable{title: "Latency by class (client side, all targets; A → B)", dropFirst: true, cols: []column{{head: "Scenario", trunc: 16},
		{head: "Class", trunc: 12}, {head: "Count"}, {head: "p50"}, {head: "p90", drop: 2}, {head: "p99"}, {head: "max", drop: 1}}}
	config := &textTable{title: "Configuration digests that differ", dropFirst: true, cols: []column{{head: "Scenario", trunc: 16}, {head: "File", trunc: 14},
		{head: "Fields", trunc: 24}, {head: "A"}, {head: "B"}}}
	for _, c := range d.Config {
		config.rows = append(config.rows, []string{"(run)", c.Name, strings.Join(c.Keys, " "), shortDigest(c.A), shortDigest(c.B)})
	}
	for _, s := range d.Scenarios {
		name := label(s.Name, s.Repeat)
		for _, c := range s.Counts {
			counts.rows = append(counts.rows, []string{name, orDash(c.Target), c.Name, strconv.Itoa(c.A), strconv.Itoa(c.B), signed(int64(c.Delta))})
		}
		for _, r := range s.Ranges {
			ranges.rows = append(ranges.rows, []string{name, r.Name, rangeCell(r.A), rangeCell(r.B)})
		}
		for _, c := range s.Checks {
			checks.rows = append(checks.rows, []string{name, c.Name, checkStatus(c.A), checkStatus(c.B), checkGot(c.A), checkGot(c.B)})
		}
		for _, l := range s.Latency {
			lat.rows = append(lat.rows, []string{name, l.Class, latCount(l), latCell(l, pickP50), latCell(l, pickP90), latCell(l, pickP99), latCell(l, pickMax)})
		}
		for _, c := range s.Config {
			config.rows = append(config.rows, []string{name, c.Name, strings.Join(c.Keys, " "), shortDigest(c.A), shortDigest(c.B)})
		}
	}
	for _, t := range []*textTable{only, counts, ranges, checks, lat, config} {
		if err := t.write(w, o); err != nil {
			return err
		}
	}
	if !d.A.ConfigKnown || !d.B.ConfigKnown {
		if err := writeLines(w, []string{"(configuration digests: not known for a saved report)"}, width); err != nil {
			return err
		}
	}
	return writeLines(w, []string{"Diff: " + diffSummary(d)}, width)
}

// WriteDiffMarkdown renders d for a pull-request comment (GitHub flavoured
// Markdown): a summary line, the verdict flips first (with their reasons),
// the scenarios of one side only, then tables of the counts, ranges,
// checks, latency percentiles and configuration digests that changed.
func WriteDiffMarkdown(w io.Writer, d *Diff) error {
	label := diffLabeler(d)
	if _, err := fmt.Fprintf(w, "**rlbench diff: %s**\n\n- A: %s\n- B: %s\n", diffSummary(d), mdCell(sideLine(d.A)), mdCell(sideLine(d.B))); err != nil {
		return err
	}
	var flips, only, counts, ranges, checks, lat, config [][]string
	for _, f := range d.Flips {
		flips = append(flips, []string{mdCell(label(f.Name, f.Repeat)), statusMark(f.A), statusMark(f.B), f.Change})
	}
	for _, s := range d.OnlyA {
		only = append(only, []string{mdCell(label(s.Name, s.Repeat)), "A", statusMark(s.Status)})
	}
	for _, s := range d.OnlyB {
		only = append(only, []string{mdCell(label(s.Name, s.Repeat)), "B", statusMark(s.Status)})
	}
	for _, c := range d.Config {
		config = append(config, []string{"(run)", mdCell(c.Name), mdCell(strings.Join(c.Keys, ", ")), "`" + shortDigest(c.A) + "`", "`" + shortDigest(c.B) + "`"})
	}
	for _, s := range d.Scenarios {
		name := mdCell(label(s.Name, s.Repeat))
		for _, c := range s.Counts {
			counts = append(counts, []string{name, mdCell(orDash(c.Target)), mdCell(c.Name), strconv.Itoa(c.A), strconv.Itoa(c.B), signed(int64(c.Delta))})
		}
		for _, r := range s.Ranges {
			ranges = append(ranges, []string{name, mdCell(r.Name), rangeCell(r.A), rangeCell(r.B)})
		}
		for _, c := range s.Checks {
			checks = append(checks, []string{name, mdCell(c.Name), mdCell(checkStatus(c.A) + gotSuffix(c.A)), mdCell(checkStatus(c.B) + gotSuffix(c.B))})
		}
		for _, l := range s.Latency {
			lat = append(lat, []string{name, mdCell(l.Class), latCount(l), latCell(l, pickP50), latCell(l, pickP90), latCell(l, pickP99), latCell(l, pickMax)})
		}
		for _, c := range s.Config {
			config = append(config, []string{name, mdCell(c.Name), mdCell(strings.Join(c.Keys, ", ")), "`" + shortDigest(c.A) + "`", "`" + shortDigest(c.B) + "`"})
		}
	}
	for _, sec := range []struct {
		title string
		head  []any
		rows  [][]string
	}{
		{"Verdict flips", []any{"Scenario", "A", "B", "Change"}, flips},
		{"Only on one side", []any{"Scenario", "Side", "Status"}, only},
		{"Counts that changed", []any{"Scenario", "Target", "Count", "A", "B", "Δ"}, counts},
		{"Ranges that changed", []any{"Scenario", "Range", "A", "B"}, ranges},
		{"Checks that changed", []any{"Scenario", "Check", "A", "B"}, checks},
		{"Latency by class (client side, all targets; A → B)", []any{"Scenario", "Class", "Count", "p50", "p90", "p99", "max"}, lat},
		{"Configuration digests that differ", []any{"Scenario", "File", "Fields", "A", "B"}, config},
	} {
		if len(sec.rows) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n#### %s\n\n", sec.title); err != nil {
			return err
		}
		t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header(sec.head...)
		for _, r := range sec.rows {
			if err := t.Append(toAny(r)...); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		if sec.title == "Verdict flips" {
			if err := mdFlipReasons(w, d.Flips, label); err != nil {
				return err
			}
		}
	}
	if !d.A.ConfigKnown || !d.B.ConfigKnown {
		if _, err := fmt.Fprintln(w, "\nConfiguration digests: not known for a saved report."); err != nil {
			return err
		}
	}
	return nil
}

// mdFlipReasons lists under the flips table the reasons of each flip: B's
// when B did not pass, else A's (what got fixed).
func mdFlipReasons(w io.Writer, flips []VerdictFlip, label func(string, int) string) error {
	for _, f := range flips {
		if len(f.Reasons) == 0 {
			continue
		}
		whose := ""
		if f.B == evidence.Pass {
			whose = " (A's reasons)"
		}
		if _, err := fmt.Fprintf(w, "\n**%s** %s → %s%s:\n", mdCell(label(f.Name, f.Repeat)), f.A, f.B, whose); err != nil {
			return err
		}
		for _, r := range f.Reasons {
			if _, err := fmt.Fprintf(w, "- %s\n", mdCell(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// diffSummary says "1 verdict worse, 1 better, 1 only in A" or "no
// verdict changed".
func diffSummary(d *Diff) string {
	worse, better := 0, 0
	for _, f := range d.Flips {
		if f.Change == ChangeWorse {
			worse++
		} else {
			better++
		}
	}
	var parts []string
	if worse > 0 {
		parts = append(parts, plural(worse, "verdict", "verdicts")+" worse")
	}
	if better > 0 {
		parts = append(parts, plural(better, "verdict", "verdicts")+" better")
	}
	if worse+better == 0 {
		parts = append(parts, "no verdict changed")
	}
	if n := len(d.OnlyA); n > 0 {
		parts = append(parts, strconv.Itoa(n)+" only in A")
	}
	if n := len(d.OnlyB); n > 0 {
		parts = append(parts, strconv.Itoa(n)+" only in B")
	}
	changed := 0
	for _, s := range d.Scenarios {
		if len(s.Counts)+len(s.Ranges)+len(s.Checks)+len(s.Config) > 0 {
			changed++
		}
	}
	noun := "scenarios"
	if len(d.Scenarios) == 1 {
		noun = "scenario"
	}
	parts = append(parts, fmt.Sprintf("%d of %d matched %s with changed counts, ranges, checks or configuration", changed, len(d.Scenarios), noun))
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// sideLine describes a side: "runs/x (run, plan demo, FAIL, 3 scenarios)".
func sideLine(in DiffInput) string {
	var parts []string
	parts = append(parts, in.Kind)
	if in.Plan != "" {
		parts = append(parts, "plan "+in.Plan)
	}
	parts = append(parts, in.Status, plural(in.Scenarios, "scenario", "scenarios"))
	return in.Path + " (" + strings.Join(parts, ", ") + ")"
}

// diffLabeler returns the label of a scenario run: its name, with " #N"
// when the name ran more than once on a side.
func diffLabeler(d *Diff) func(string, int) string {
	n := map[string]map[int]bool{}
	note := func(name string, repeat int) {
		if n[name] == nil {
			n[name] = map[int]bool{}
		}
		n[name][repeat] = true
	}
	for _, s := range d.Scenarios {
		note(s.Name, s.Repeat)
	}
	for _, s := range append(append([]ScenarioRef{}, d.OnlyA...), d.OnlyB...) {
		note(s.Name, s.Repeat)
	}
	return func(name string, repeat int) string {
		if len(n[name]) > 1 {
			return name + " #" + strconv.Itoa(repeat)
		}
		return name
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// signed writes n with its sign: "+3", "-2", "0".
func signed(n int64) string {
	if n > 0 {
		return "+" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

func rangeCell(r *evidence.Range) string {
	if r == nil {
		return "-"
	}
	return r.String()
}

func checkStatus(c *Check) string {
	if c == nil {
		return "-"
	}
	return c.Status
}

func checkGot(c *Check) string {
	if c == nil || c.Got == "" {
		return "-"
	}
	return c.Got
}

// gotSuffix is " (got X)" of a check with a measured value.
func gotSuffix(c *Check) string {
	if c == nil || c.Got == "" {
		return ""
	}
	return " (got " + c.Got + ")"
}

// shortDigest is a digest's first 12 hex digits ("sha256:" left out), "-"
// when absent.
func shortDigest(s string) string {
	if s == "" {
		return "-"
	}
	s = strings.TrimPrefix(s, "sha256:")
	if len(s) > 12 {
		s = s[:12]
	}
	return s
}

func pickP50(c *ClassLatency) int64 { return c.P50Ns }
func pickP90(c *ClassLatency) int64 { return c.P90Ns }
func pickP99(c *ClassLatency) int64 { return c.P99Ns }
func pickMax(c *ClassLatency) int64 { return c.MaxNs }

// latCount is "A → B" of the class's request counts.
func latCount(l LatencyChange) string {
	n := func(c *ClassLatency) string {
		if c == nil {
			return "-"
		}
		return strconv.Itoa(c.Count)
	}
	return n(l.A) + " → " + n(l.B)
}

// latCell is "A → B (±Δ)" of one figure, HumanNs each; a side without
// the class is "-" and the delta left out.
func latCell(l LatencyChange, f func(*ClassLatency) int64) string {
	switch {
	case l.A == nil && l.B == nil:
		return "-"
	case l.A == nil:
		return "- → " + HumanNs(f(l.B))
	case l.B == nil:
		return HumanNs(f(l.A)) + " → -"
	}
	a, b := f(l.A), f(l.B)
	delta := b - a
	if delta == 0 {
		return HumanNs(a) + " → " + HumanNs(b) + " (±0)"
	}
	sign := "+"
	if delta < 0 {
		sign, delta = "-", -delta
	}
	return HumanNs(a) + " → " + HumanNs(b) + " (" + sign + HumanNs(delta) + ")"
}
