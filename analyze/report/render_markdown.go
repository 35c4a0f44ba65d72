package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rlbench/rlbench/evidence"
)

// WriteMarkdown renders the report for a pull-request comment (GitHub
// flavoured Markdown): a verdict summary line, a table with one row per
// scenario run (verdict first, the classes, receipts and admission against
// the intended limit), then the reasons of every scenario that did not pass,
// then the conformance matrix when the run has one (WriteMatrixMarkdown).
func WriteMarkdown(w io.Writer, rep *Report) error {
	repeats := repeatsByName(rep)
	if _, err := fmt.Fprintf(w, "**rlbench: %s** — %s (`%s`)\n\n", rep.Status, countVerdicts(rep), strings.ReplaceAll(rep.Dir, "`", "'")); err != nil {
		return err
	}
	t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("Status", "Scenario", "Sent", "Admitted", "Local 429", "Global 429", "RLS 500", "Other", "No resp", "Receipts", "Vs intended limit", "p99 admitted")
	for _, s := range rep.Scenarios {
		c := s.Totals
		p99 := "-"
		if s.Latency != nil {
			for _, l := range s.Latency.Classes {
				if l.Class == evidence.ClassAdmitted.String() {
					p99 = HumanNs(l.P99Ns)
				}
			}
		}
		if err := t.Append(statusMark(s.Status), mdCell(scenarioLabel(s, repeats)), c.Sent, c.N[evidence.ClassAdmitted], c.N[evidence.ClassLocal429], c.N[evidence.ClassGlobal429], c.N[evidence.ClassRLSError],
			c.N[evidence.ClassOther4xx]+c.N[evidence.ClassOther5xx]+c.N[evidence.ClassOther], c.N[evidence.ClassNoResponse], s.Receipts.Total, overString(s.OverAdmission), p99); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, s := range rep.Scenarios {
		if s.Status == evidence.Pass && len(s.Notices) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n**%s** %s:\n", mdCell(scenarioLabel(s, repeats)), s.Status); err != nil {
			return err
		}
		for _, r := range s.Reasons {
			if _, err := fmt.Fprintf(w, "- %s\n", mdCell(r)); err != nil {
				return err
			}
		}
		for _, n := range s.Notices {
			if _, err := fmt.Fprintf(w, "- notice: %s\n", mdCell(n)); err != nil {
				return err
			}
		}
	}
	return WriteMatrixMarkdown(w, rep.Matrix)
}

// countVerdicts says "5 scenarios: 4 PASS, 1 FAIL".
func countVerdicts(rep *Report) string {
	n := map[string]int{}
	for _, s := range rep.Scenarios {
		n[s.Status]++
	}
	var parts []string
	for _, st := range []string{evidence.Pass, evidence.Fail, evidence.NotRun} {
		if n[st] > 0 {
			parts = append(parts, strconv.Itoa(n[st])+" "+st)
		}
	}
	noun := "scenarios"
	if len(rep.Scenarios) == 1 {
		noun = "scenario"
	}
	return fmt.Sprintf("%d %s: %s", len(rep.Scenarios), noun, strings.Join(parts, ", "))
}

// statusMark is the verdict with a mark a reader sees at a glance.
func statusMark(st string) string {
	switch st {
	case evidence.Pass:
		return "✅ PASS"
	case evidence.Fail:
		return "❌ FAIL"
	}
	return "⚠️ NOT_RUN"
}

// mdCell escapes text for a Markdown table cell or line: '|' would end the
// cell, '<', '>' and '&' could start HTML, '*', '_', '`', '[' and '\' markup.
var mdEscaper = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "&", "&amp;", "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, `\`, `\\`, "\n", " ")

func mdCell(s string) string { return mdEscaper.Replace(s) }
