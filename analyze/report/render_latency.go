package report

import (
	"strconv"
	"strings"
	"time"
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

// latencyTables are the client latency and RLS call latency tables (detail
// sections).
func latencyTables(rep *Report) []*textTable {
	lat := &textTable{title: "Latency (client side, by class)", rows: latencyRows(rep)}
	for _, h := range latencyHeader {
		c := column{head: h}
		switch h {
		case "Scenario":
			c.trunc = 12
		case "Target":
			c.trunc = 10
		case "p99.9":
			c.drop = 2
		case "Mean":
			c.drop = 1
		}
		lat.cols = append(lat.cols, c)
	}
	rls := &textTable{title: "RLS call latency", rows: rlsLatencyRows(rep)}
	for _, h := range rlsLatencyHeader {
		c := column{head: h}
		switch h {
		case "Scenario", "Measured by", "Name":
			c.trunc = 10
		case "Quantiles":
			c.trunc = 20
		case "Since":
			c.drop = 1
		}
		rls.cols = append(rls.cols, c)
	}
	return []*textTable{lat, rls}
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
