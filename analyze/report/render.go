package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// WriteJSON writes the report as indented JSON (schemas/report.v2.schema.json),
// without HTML escaping: "<stdin>" stays "<stdin>", not "\u003cstdin\u003e".
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// Status returns status.txt's lines, one per scenario run (the format is
// evidence.StatusLine's): the reasons of a scenario that did not pass, or its
// expectation and the number of checks passed, then the expectations not
// checked because they cannot fail ("; not checked, cannot fail: admitted
// 0..1000000000").
func Status(rep *Report) []evidence.StatusLine {
	repeats := repeatsByName(rep)
	var out []evidence.StatusLine
	for _, s := range rep.Scenarios {
		repeat := 0
		if repeats[s.Name] > 1 {
			repeat = s.Repeat
		}
		reason := "all checks passed"
		if len(s.Reasons) > 0 {
			reason = strings.Join(s.Reasons, "; ")
		} else if s.Expectation != "" {
			reason = s.Expectation
		}
		passed, notChecked := 0, []string{}
		for _, c := range s.Checks {
			switch c.Status {
			case CheckPass:
				passed++
			case CheckNotChecked:
				notChecked = append(notChecked, c.Name+" "+c.Want)
			}
		}
		if s.Status == evidence.Pass && s.Expectation != "" {
			reason = s.Expectation + " (" + strconv.Itoa(passed) + " checks passed)"
		}
		if s.Status == evidence.Pass && len(notChecked) > 0 {
			reason += "; not checked, cannot fail: " + strings.Join(notChecked, ", ")
		}
		out = append(out, evidence.NewStatusLine(s.Name, repeat, s.Status, reason))
	}
	return out
}

// StatusLines returns Status's lines as text.
func StatusLines(rep *Report) []string {
	var out []string
	for _, l := range Status(rep) {
		out = append(out, l.String())
	}
	return out
}

// WriteStatus writes Status to w (status.txt).
func WriteStatus(w io.Writer, rep *Report) error { return evidence.WriteStatus(w, Status(rep)) }

func overString(o *OverAdmission) string {
	if o == nil {
		return "-"
	}
	return admissionVsLimit(o.Min, o.Max, o.Intended) + worstWindow(o.PerNs)
}

// worstWindow is " in the worst 1m window" for a limit per window of per
// ns, "" for a limit per run.
func worstWindow(per int64) string {
	if per <= 0 {
		return ""
	}
	return " in the worst " + evidence.ShortDuration(time.Duration(per)) + " window"
}

// admissionVsLimit names admitted − intended (lo..hi) for people:
// "over-admission 5 vs 5", "under-admission 5 vs 5", "at the limit 5", or
// for a range "over-admission 0..3 vs 5", "under-admission 2 to
// over-admission 3 vs 5".
func admissionVsLimit(lo, hi, intended int) string {
	vs := " vs " + strconv.Itoa(intended)
	switch {
	case lo == 0 && hi == 0:
		return "at the limit " + strconv.Itoa(intended)
	case lo == hi && lo > 0:
		return "over-admission " + strconv.Itoa(lo) + vs
	case lo == hi:
		return "under-admission " + strconv.Itoa(-lo) + vs
	case lo >= 0:
		return "over-admission " + strconv.Itoa(lo) + ".." + strconv.Itoa(hi) + vs
	case hi <= 0:
		return "under-admission " + strconv.Itoa(-hi) + ".." + strconv.Itoa(-lo) + vs
	}
	return "under-admission " + strconv.Itoa(-lo) + " to over-admission " + strconv.Itoa(hi) + vs
}

// WriteTable renders the report for people with every column and every
// detail section: WriteTableWith with Wide and Details.
func WriteTable(w io.Writer, rep *Report) error {
	return WriteTableWith(w, rep, TableOptions{Wide: true, Details: true})
}

// WriteTableWith renders the report for people, the verdict first: one
// row per scenario and target with the response classes and receipts, a
// total row per scenario with its over-admission and verdict, and right
// under it the reasons of every scenario that did not pass; then the
// verdicts over repeats, fault windows, retries, flows and shards; with
// o.Details the latency, backend arrivals, limiter and harness lines; the
// conformance matrix when the run has one (WriteMatrixTable); last
// "Verdict: <status>". Tables and reasons are fitted to the width of
// o.Width unless o.Wide.
func WriteTableWith(w io.Writer, rep *Report, o TableOptions) error {
	width := 0 // reasons and lines unwrapped
	if !o.Wide {
		width = FitWidth(o.Width)
	}
	if err := fittedScenarioTable(rep, o).write(w, o); err != nil {
		return err
	}
	if err := writeReasons(w, rep, width); err != nil {
		return err
	}
	if err := writeLines(w, noticeLines(rep), width); err != nil {
		return err
	}
	tables := []*textTable{repeatsTable(rep, o.Wide), faultTable(rep), amplificationTable(rep)}
	tables = append(tables, flowTables(rep)...)
	tables = append(tables, shardsTable(rep))
	for _, t := range tables {
		if err := t.write(w, o); err != nil {
			return err
		}
	}
	if err := writeLines(w, starvedLines(rep), width); err != nil {
		return err
	}
	details := append(latencyTables(rep), arrivalsTable(rep))
	limiters := limiterLines(rep)
	if o.Details {
		for _, t := range details {
			if err := t.write(w, o); err != nil {
				return err
			}
		}
		if err := writeLines(w, limiters, width); err != nil {
			return err
		}
	} else if o.DetailsHint != "" && (len(limiters) > 0 || hasRows(details)) {
		fmt.Fprintln(w, o.DetailsHint)
	}
	if rep.Matrix != nil {
		fmt.Fprintln(w)
		if err := WriteMatrixTable(w, rep.Matrix, o); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "Verdict: %s\n", rep.Status)
	return err
}

// hasRows reports whether one of ts has a row.
func hasRows(ts []*textTable) bool {
	for _, t := range ts {
		if len(t.rows) > 0 {
			return true
		}
	}
	return false
}

// writeLines writes lines, each wrapped to width with its continuation
// indented by two spaces (unwrapped when width is 0).
func writeLines(w io.Writer, lines []string, width int) error {
	for _, l := range lines {
		if width <= 0 {
			if _, err := fmt.Fprintln(w, l); err != nil {
				return err
			}
			continue
		}
		for i, x := range wrapText(l, "", width-2) {
			if i > 0 {
				x = "  " + x
			}
			if _, err := fmt.Fprintln(w, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// scenarioTable is the main table: per scenario a row per target (when
// it has several) and per phase, then its total row. Fitted (not wide),
// the model bound beside the admitted count and the over-admission are
// written shorter.
func scenarioTable(rep *Report, wide bool) *textTable {
	repeats := repeatsByName(rep)
	t := &textTable{dropFirst: true, cols: []column{
		{head: "Scenario", trunc: 12}, {head: "Target", trunc: 8}, {head: "Sent"}, {head: "Admitted", short: "Adm (model)"},
		{head: "Local 429", short: "429 loc", zero: true}, {head: "Global 429", short: "429 glob", zero: true},
		{head: "RLS 500", zero: true}, {head: "Other", zero: true}, {head: "No resp", zero: true},
		{head: "Receipts", short: "Rcpts", drop: 1}, {head: "Vs intended limit", short: "Vs limit"}, {head: "Status"},
	}}
	for _, s := range rep.Scenarios {
		name := scenarioLabel(s, repeats)
		row := func(target string, c Classes, receipts string, over, status string, model string) {
			adm := strconv.Itoa(c.Passed)
			if model != "" {
				adm += " " + model
			}
			t.rows = append(t.rows, []string{name, target, strconv.Itoa(c.Sent), adm, strconv.Itoa(c.N[evidence.ClassLocal429]),
				strconv.Itoa(c.N[evidence.ClassGlobal429]), strconv.Itoa(c.N[evidence.ClassRLSError]),
				strconv.Itoa(c.sum(evidence.ClassOther4xx, evidence.ClassOther5xx, evidence.ClassOther, evidence.ClassBackend4xx, evidence.ClassBackend429,
					evidence.ClassBackend5xx, evidence.ClassCircuitBreaker)), strconv.Itoa(c.N[evidence.ClassNoResponse]), receipts, over, status})
		}
		if len(s.Targets) > 1 {
			for _, tr := range s.Targets {
				row(tr.Target, tr.Classes, strconv.Itoa(tr.Receipts), "", "", "")
			}
		}
		for _, ph := range s.Phases {
			row("phase "+ph.Phase, ph.Classes, "", "", "", "")
		}
		target := "all"
		if len(s.Targets) == 1 {
			target = s.Targets[0].Target
		}
		over, model := overString(s.OverAdmission), modelString(&s)
		if !wide {
			over, model = shortAdmission(over), shortModel(model)
		}
		row(target, s.Totals, strconv.Itoa(s.Receipts.Total), over, s.Status, model)
	}
	if !slices.ContainsFunc(t.rows, func(r []string) bool { return strings.Contains(r[3], "(") }) {
		t.cols[3].short = "" // no model bound beside any count
	}
	return t
}

// fittedScenarioTable is scenarioTable as o asks: when its columns of
// refusals (local 429, global 429, RLS 500, other, no response) make a
// fitted table too wide, they become one "Not admitted" column naming the
// counts that are not 0 ("15 global, 2 no resp").
func fittedScenarioTable(rep *Report, o TableOptions) *textTable {
	t := scenarioTable(rep, o.Wide)
	if o.Wide {
		return t
	}
	width := FitWidth(o.Width)
	if keep, _, _ := t.fit(width); keptWidth(keep) <= width {
		return t
	}
	const first, last = 4, 8 // Local 429 .. No resp
	names := []string{"local", "global", "RLS 500", "other", "no resp"}
	merged := &textTable{dropFirst: true, cols: slices.Concat(t.cols[:first], []column{{head: "Not admitted"}}, t.cols[last+1:])}
	for _, r := range t.rows {
		var parts []string
		for i := first; i <= last; i++ {
			if r[i] != "0" && r[i] != "" {
				parts = append(parts, r[i]+" "+names[i-first])
			}
		}
		cell := strings.Join(parts, ", ")
		if cell == "" {
			cell = "0"
		}
		merged.rows = append(merged.rows, slices.Concat(r[:first], []string{cell}, r[last+1:]))
	}
	return merged
}

// shortAdmission is admissionVsLimit's text (and worstWindow's) for a
// fitted table: "over 5 vs 5 (worst 1m)", "under 2..3 vs 5", "at limit 5".
func shortAdmission(s string) string {
	s = strings.NewReplacer("over-admission", "over", "under-admission", "under", "at the limit", "at limit").Replace(s)
	if i := strings.Index(s, " in the worst "); i >= 0 {
		s = s[:i] + " (worst " + strings.TrimSuffix(s[i+len(" in the worst "):], " window") + ")"
	}
	return s
}

// shortModel is modelString's text for a fitted table: "(10..10)",
// "(10..10, 3 susp.)", "(suspended)".
func shortModel(s string) string {
	return strings.NewReplacer("(model: suspended by faults)", "(suspended)", "(model ", "(", " suspended)", " susp.)").Replace(s)
}

// faultTable is the fault windows of every scenario and the classes of the
// requests sent inside them.
func faultTable(rep *Report) *textTable {
	t := &textTable{title: "Fault windows", cols: []column{
		{head: "Scenario", trunc: 12}, {head: "Fault", trunc: 12}, {head: "Target", trunc: 8}, {head: "Duration"},
		{head: "Acts on", trunc: 10, drop: 2}, {head: "Recovery lag", short: "Lag"}, {head: "Sent inside", short: "Sent in"},
		{head: "Admitted", short: "Adm"}, {head: "429", zero: true}, {head: "RLS 500", zero: true}, {head: "Other", zero: true},
		{head: "No resp", zero: true}, {head: "Straddling", short: "Straddl.", zero: true, drop: 1}, {head: "Receipts", short: "Rcpts"},
	}}
	for _, s := range rep.Scenarios {
		for _, f := range s.FaultWindows {
			end := time.Duration(f.EndNs - f.BeginNs).Round(time.Millisecond).String()
			if f.Open {
				end += " (open)"
			}
			in := f.Inside
			acts := "-"
			if len(f.ActsOn) > 0 {
				acts = strings.Join(f.ActsOn, ", ")
			}
			t.rows = append(t.rows, []string{s.Name, f.Name, f.Target, end, acts, time.Duration(f.RecoveryLagNs).Round(time.Millisecond).String(),
				strconv.Itoa(in.Sent), strconv.Itoa(in.Passed), strconv.Itoa(in.N[evidence.ClassLocal429] + in.N[evidence.ClassGlobal429]),
				strconv.Itoa(in.N[evidence.ClassRLSError]),
				strconv.Itoa(in.sum(evidence.ClassOther4xx, evidence.ClassOther5xx, evidence.ClassOther, evidence.ClassBackend4xx, evidence.ClassBackend429,
					evidence.ClassBackend5xx, evidence.ClassCircuitBreaker)), strconv.Itoa(in.N[evidence.ClassNoResponse]),
				strconv.Itoa(f.Straddling.Sent), strconv.Itoa(f.Receipts)})
		}
	}
	return t
}

// repeatsTable has a row per scenario run more than once: the admitted
// range over its repeats against the intended limit.
func repeatsTable(rep *Report, wide bool) *textTable {
	t := &textTable{title: "Over the repeats", cols: []column{
		{head: "Scenario", trunc: 12}, {head: "Repeats"}, {head: "Admitted (min..max)", short: "Admitted"},
		{head: "Vs intended limit", short: "Vs limit"}, {head: "Configured bound", short: "Bound"}, {head: "Status"},
	}}
	for _, g := range rep.Groups {
		if g.Repeats < 2 {
			continue
		}
		adm, over, bound := "-", "-", "-"
		if g.Admitted != nil {
			adm = fmt.Sprintf("%d..%d", g.Admitted.Min, g.Admitted.Max)
		}
		switch {
		case g.OverAdmission != nil && g.IntendedLimit != nil:
			over = admissionVsLimit(g.OverAdmission.Min, g.OverAdmission.Max, g.IntendedLimit.Requests) + worstWindow(int64(g.IntendedLimit.Per))
		case g.OverAdmission != nil && g.Admitted != nil:
			over = admissionVsLimit(g.OverAdmission.Min, g.OverAdmission.Max, g.Admitted.Min-g.OverAdmission.Min)
		}
		if !wide {
			over = shortAdmission(over)
		}
		if g.Bound != nil {
			bound = strconv.Itoa(*g.Bound)
		}
		t.rows = append(t.rows, []string{g.Name, strconv.Itoa(g.Repeats), adm, over, bound, g.Status})
	}
	return t
}

// limiterLines are a line per limiter model check and the harness timing
// of each scenario.
func limiterLines(rep *Report) []string {
	repeats := repeatsByName(rep)
	var out []string
	for _, s := range rep.Scenarios {
		name := scenarioLabel(s, repeats)
		for _, l := range s.Limiters {
			out = append(out, fmt.Sprintf("%s: limiter %s (%s, key %s): %s", name, l.Name, l.Model, l.Key, limiterLine(&l)))
		}
		if h := s.Harness.String(); h != "" {
			out = append(out, fmt.Sprintf("%s: harness: %s", name, h))
		}
	}
	return out
}

// noticeLines are a line per notice of each scenario
// (ScenarioReport.Notices): "<scenario>: notice: <notice>".
func noticeLines(rep *Report) []string {
	repeats := repeatsByName(rep)
	var out []string
	for _, s := range rep.Scenarios {
		for _, n := range s.Notices {
			out = append(out, scenarioLabel(s, repeats)+": notice: "+n)
		}
	}
	return out
}

// writeReasons writes the reasons of every scenario that did not pass,
// each wrapped to width (0: unwrapped).
func writeReasons(w io.Writer, rep *Report, width int) error {
	for _, s := range rep.Scenarios {
		if s.Status == evidence.Pass {
			continue
		}
		if _, err := fmt.Fprintf(w, "%s %s:\n", s.Name, s.Status); err != nil {
			return err
		}
		for _, r := range s.Reasons {
			if width <= 0 {
				if _, err := fmt.Fprintf(w, "  - %s\n", r); err != nil {
					return err
				}
				continue
			}
			if err := writeWrapped(w, r, "  - ", width); err != nil {
				return err
			}
		}
	}
	return nil
}

// modelString is the end-to-end model bound beside the admitted count:
// "(model 10..10)", with the requests suspended by faults.
func modelString(s *ScenarioReport) string {
	suspended := 0
	for _, l := range s.Limiters {
		suspended += l.Suspended
	}
	if s.Model == nil {
		if suspended > 0 {
			return "(model: suspended by faults)"
		}
		return ""
	}
	out := fmt.Sprintf("(model %d..%d", s.Model.Min, s.Model.Max)
	if suspended > 0 {
		out += ", " + strconv.Itoa(suspended) + " suspended"
	}
	return out + ")"
}

// limiterLine describes one limiter's model check in a line.
func limiterLine(l *LimiterReport) string {
	switch l.Status {
	case LimiterNotChecked:
		return "not checked: " + l.Detail
	case LimiterSuspended:
		return fmt.Sprintf("suspended: all %d requests lie in fault windows acting on it", l.Offered)
	}
	out := l.Total.String()
	if l.Suspended > 0 {
		out += fmt.Sprintf(", %d of %d requests suspended by faults", l.Suspended, l.Offered)
	}
	// MustAdmit/MustReject are the model's verdicts given the other
	// requests' observed outcomes and times, not a prediction from nothing.
	out += fmt.Sprintf("; model per request, given the observed outcomes and timing: %d certainly admitted, %d certainly rejected, %d either way",
		l.MustAdmit, l.MustReject, l.Uncertainty.Either)
	if l.Uncertainty.MaxWidthNs > 0 {
		out += fmt.Sprintf("; timing uncertainty median %s, max %s", time.Duration(l.Uncertainty.MedianWidthNs).Round(time.Microsecond),
			time.Duration(l.Uncertainty.MaxWidthNs).Round(time.Microsecond))
		if l.Uncertainty.WidenNs > 0 {
			out += fmt.Sprintf(" (clock offsets ±%s)", time.Duration(l.Uncertainty.WidenNs).Round(time.Microsecond))
		}
	}
	if l.OverAdmittedCount > 0 {
		out += "; over-admitted " + VerdictsGot(l.OverAdmittedCount, l.OverAdmitted)
	}
	if l.UnderAdmittedCount > 0 {
		out += "; under-admitted " + VerdictsGot(l.UnderAdmittedCount, l.UnderAdmitted)
	}
	if l.ShadowCount > 0 {
		out += "; would have rejected " + VerdictsGot(l.ShadowCount, l.Shadow)
	}
	return out
}

// repeatsByName maps a scenario name to how many times it ran; a repeat
// number is shown only for scenarios that ran more than once.
func repeatsByName(rep *Report) map[string]int {
	m := make(map[string]int, len(rep.Groups))
	for _, g := range rep.Groups {
		m[g.Name] = g.Repeats
	}
	return m
}
