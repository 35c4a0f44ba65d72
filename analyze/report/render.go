package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
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

// WriteTable renders the report for people: one row per scenario and target
// with the response classes and receipts, a total row per scenario with its
// over-admission and verdict, then fault windows and the reasons of every
// scenario that did not pass.
func WriteTable(w io.Writer, rep *Report) error {
	for _, section := range []func(io.Writer, *Report) error{
		writeScenarioTable, writeFaultTable, writeRepeatsTable,
		writeLatencyTable, writeArrivalsTable, writeFlowTables, writeShardsTable,
		writeLimiterLines, writeReasons,
	} {
		if err := section(w, rep); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "Verdict: %s\n", rep.Status)
	return err
}

// writeScenarioTable writes the main table: per scenario a row per target
// (when it has several) and per phase, then its total row.
func writeScenarioTable(w io.Writer, rep *Report) error {
	repeats := repeatsByName(rep)
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("Scenario", "Target", "Sent", "Admitted", "Local 429", "Global 429", "RLS 500", "Other", "No resp", "Receipts", "Vs intended limit", "Status")
	for _, s := range rep.Scenarios {
		name := scenarioLabel(s, repeats)
		row := func(target string, c Classes, receipts string, over, status string, model string) error {
			adm := strconv.Itoa(c.Passed)
			if model != "" {
				adm += " " + model
			}
			return t.Append(name, target, c.Sent, adm, c.N[evidence.ClassLocal429], c.N[evidence.ClassGlobal429], c.N[evidence.ClassRLSError],
				c.sum(evidence.ClassOther4xx, evidence.ClassOther5xx, evidence.ClassOther, evidence.ClassBackend4xx, evidence.ClassBackend429,
					evidence.ClassBackend5xx, evidence.ClassCircuitBreaker), c.N[evidence.ClassNoResponse], receipts, over, status)
		}
		if len(s.Targets) > 1 {
			for _, tr := range s.Targets {
				if err := row(tr.Target, tr.Classes, strconv.Itoa(tr.Receipts), "", "", ""); err != nil {
					return err
				}
			}
		}
		for _, ph := range s.Phases {
			if err := row("phase "+ph.Phase, ph.Classes, "", "", "", ""); err != nil {
				return err
			}
		}
		target := "all"
		if len(s.Targets) == 1 {
			target = s.Targets[0].Target
		}
		if err := row(target, s.Totals, strconv.Itoa(s.Receipts.Total), overString(s.OverAdmission), s.Status, modelString(&s)); err != nil {
			return err
		}
	}
	return t.Render()
}

// writeTitledTable writes "\n<title>:" and a table of rows under header;
// nothing without rows.
func writeTitledTable(w io.Writer, title string, header []any, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\n"+title+":")
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header(header...)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// writeFaultTable writes the fault windows of every scenario and the
// classes of the requests sent inside them.
func writeFaultTable(w io.Writer, rep *Report) error {
	var fw [][]any
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
			fw = append(fw, []any{s.Name, f.Name, f.Target, end, acts, time.Duration(f.RecoveryLagNs).Round(time.Millisecond).String(),
				in.Sent, in.Passed, in.N[evidence.ClassLocal429] + in.N[evidence.ClassGlobal429], in.N[evidence.ClassRLSError],
				in.sum(evidence.ClassOther4xx, evidence.ClassOther5xx, evidence.ClassOther, evidence.ClassBackend4xx, evidence.ClassBackend429,
					evidence.ClassBackend5xx, evidence.ClassCircuitBreaker), in.N[evidence.ClassNoResponse], f.Straddling.Sent, f.Receipts})
		}
	}
	return writeTitledTable(w, "Fault windows", []any{"Scenario", "Fault", "Target", "Duration", "Acts on", "Recovery lag", "Sent inside", "Admitted", "429", "RLS 500", "Other", "No resp", "Straddling", "Receipts"}, fw)
}

// writeRepeatsTable writes a row per scenario run more than once: the
// admitted range over its repeats against the intended limit.
func writeRepeatsTable(w io.Writer, rep *Report) error {
	var gr [][]any
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
		if g.Bound != nil {
			bound = strconv.Itoa(*g.Bound)
		}
		gr = append(gr, []any{g.Name, g.Repeats, adm, over, bound, g.Status})
	}
	return writeTitledTable(w, "Over the repeats", []any{"Scenario", "Repeats", "Admitted (min..max)", "Vs intended limit", "Configured bound", "Status"}, gr)
}

// writeLimiterLines writes a line per limiter model check and the harness
// timing of each scenario.
func writeLimiterLines(w io.Writer, rep *Report) error {
	repeats := repeatsByName(rep)
	for _, s := range rep.Scenarios {
		name := scenarioLabel(s, repeats)
		for _, l := range s.Limiters {
			fmt.Fprintf(w, "%s: limiter %s (%s, key %s): %s\n", name, l.Name, l.Model, l.Key, limiterLine(&l))
		}
		if h := s.Harness.String(); h != "" {
			fmt.Fprintf(w, "%s: harness: %s\n", name, h)
		}
	}
	return nil
}

// writeReasons writes the reasons of every scenario that did not pass.
func writeReasons(w io.Writer, rep *Report) error {
	for _, s := range rep.Scenarios {
		if s.Status == evidence.Pass {
			continue
		}
		fmt.Fprintf(w, "%s %s:\n", s.Name, s.Status)
		for _, r := range s.Reasons {
			fmt.Fprintf(w, "  - %s\n", r)
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
