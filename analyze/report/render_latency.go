package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// HumanNs formats ns as a duration rounded to 3 significant digits
// ("32.4ms", "1.86s", "850µs"); "-" for a negative value.
func HumanNs(ns int64) string {
	if ns < 0 {
		return "-"
	}
	d, r := time.Duration(ns), time.Duration(1)
	for d/r >= 1000 {
		r *= 10
	}
	return d.Round(r).String()
}

// latencyRows are the rows of the latency table: per target, then per
// phase, then per flow, each class with its count and figures.
func latencyRows(rep *Report) [][]string {
	repeats := repeatsByName(rep)
	var rows [][]string
	for _, s := range rep.Scenarios {
		if s.Latency == nil {
			continue
		}
		name := scenarioLabel(s, repeats)
		add := func(group string, cls []ClassLatency) {
			for _, c := range cls {
				rows = append(rows, []string{name, group, c.Class, strconv.Itoa(c.Count), HumanNs(c.P50Ns), HumanNs(c.P90Ns),
					HumanNs(c.P99Ns), HumanNs(c.P999Ns), HumanNs(c.MaxNs), HumanNs(c.MeanNs)})
			}
		}
		for _, t := range s.Latency.Targets {
			add(t.Target, t.Classes)
		}
		for _, p := range s.Latency.Phases {
			add("phase "+p.Phase, p.Classes)
		}
		for _, f := range s.Latency.Flows {
			add("flow "+f.Flow, f.Classes)
		}
	}
	return rows
}

// latencyHeader is the header of the latency table.
var latencyHeader = []string{"Scenario", "Target", "Class", "Count", "p50", "p90", "p99", "p99.9", "Max", "Mean"}

// rlsLatencyRows are the rows of the RLS call latency table.
func rlsLatencyRows(rep *Report) [][]string {
	repeats := repeatsByName(rep)
	var rows [][]string
	for _, s := range rep.Scenarios {
		if s.Latency == nil {
			continue
		}
		for _, l := range s.Latency.RLS {
			calls, mean := "-", "-"
			if l.Count > 0 {
				calls = strconv.FormatUint(l.Count, 10)
			}
			if l.MeanNs > 0 {
				mean = HumanNs(l.MeanNs)
			}
			var qs []string
			for _, q := range l.Quantiles {
				qs = append(qs, "p"+strconv.FormatFloat(q.Percent, 'f', -1, 64)+" "+HumanNs(q.Ns))
			}
			rows = append(rows, []string{scenarioLabel(s, repeats), l.Source, l.Name, l.Since, calls, mean, strings.Join(qs, " ")})
		}
	}
	return rows
}

var rlsLatencyHeader = []string{"Scenario", "Measured by", "Name", "Since", "Calls", "Mean", "Quantiles"}

// scenarioLabel is the scenario's name, with #<repeat> when it ran more than once.
func scenarioLabel(s ScenarioReport, repeats map[string]int) string {
	if repeats[s.Name] > 1 {
		return s.Name + " #" + strconv.Itoa(s.Repeat)
	}
	return s.Name
}

// writeLatencyTable writes the latency tables of WriteTable.
func writeLatencyTable(w io.Writer, rep *Report) error {
	for _, tab := range []struct {
		title  string
		header []string
		rows   [][]string
	}{
		{"\nLatency (client side, by class):", latencyHeader, latencyRows(rep)},
		{"\nRLS call latency:", rlsLatencyHeader, rlsLatencyRows(rep)},
	} {
		if len(tab.rows) == 0 {
			continue
		}
		fmt.Fprintln(w, tab.title)
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header(toAny(tab.header)...)
		for _, r := range tab.rows {
			if err := t.Append(toAny(r)...); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	return nil
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
