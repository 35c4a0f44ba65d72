package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// flowTables are the per-flow and per-key tables of the scenarios whose
// requests name flows.
func flowTables(rep *Report) []*textTable {
	repeats := repeatsByName(rep)
	flows := &textTable{title: "Flows", cols: []column{
		{head: "Scenario", trunc: 12}, {head: "Flow", trunc: 12}, {head: "Sent"}, {head: "Admitted"}, {head: "Admitted %", short: "Adm %"},
		{head: "Offered/s"}, {head: "Admitted/s", short: "Adm/s"}, {head: "Active", drop: 1}, {head: "Model", trunc: 12},
	}}
	keys := &textTable{title: "Keys", cols: []column{
		{head: "Scenario", trunc: 12}, {head: "Limiter", trunc: 12}, {head: "Bucket", trunc: 10}, {head: "Flows", trunc: 10, drop: 2}, {head: "Sent"},
		{head: "Admitted"}, {head: "Admitted %", short: "Adm %"}, {head: "Admitted/s", short: "Adm/s", drop: 1}, {head: "Limit"},
		{head: "Model"},
	}}
	for _, s := range rep.Scenarios {
		name := scenarioLabel(s, repeats)
		for _, f := range s.Flows {
			model := "-"
			switch {
			case f.Model != nil:
				model = RangeText(f.Model.Min, f.Model.Max)
			case len(f.SharedWith) > 0:
				model = "shared with " + strings.Join(f.SharedWith, ", ")
			}
			flows.rows = append(flows.rows, []string{name, f.Flow, strconv.Itoa(f.Sent), strconv.Itoa(f.Admitted), pctText(f.AdmittedPct),
				rateText(f.OfferedPerSec, f.ActiveNs), rateText(f.AdmittedPerSec, f.ActiveNs), activeText(f.ActiveNs), model})
		}
		for _, k := range s.Keys {
			adm := strconv.Itoa(k.Admitted)
			if k.Unknown > 0 {
				adm += fmt.Sprintf(" (+%d unknown)", k.Unknown)
			}
			keys.rows = append(keys.rows, []string{name, k.Limiter, k.Bucket, strings.Join(k.Flows, ", "), strconv.Itoa(k.Sent), adm,
				pctText(k.AdmittedPct), rateText(k.AdmittedPerSec, k.ActiveNs), limitText(k.RatePerSec, k.Burst), RangeText(k.Min, k.Max)})
		}
	}
	return []*textTable{flows, keys}
}

// starvedLines are the starved findings of every scenario, a line each.
func starvedLines(rep *Report) []string {
	repeats := repeatsByName(rep)
	var out []string
	for _, s := range rep.Scenarios {
		for _, st := range s.Starved {
			out = append(out, fmt.Sprintf("%s: starved: %s", scenarioLabel(s, repeats), st))
		}
	}
	return out
}

// RangeText is "lo..hi", or "lo" when lo == hi.
func RangeText(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return strconv.Itoa(lo) + ".." + strconv.Itoa(hi)
}

func pctText(p float64) string { return strconv.FormatFloat(p, 'f', 1, 64) + "%" }

// rateText is a per-second rate, "-" without an active time.
func rateText(v float64, active int64) string {
	if active <= 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func activeText(ns int64) string { return time.Duration(ns).Round(time.Millisecond).String() }

// limitText is a bucket's limit: "100/s burst 100".
func limitText(perSec, burst float64) string {
	if perSec <= 0 && burst <= 0 {
		return "-"
	}
	g := func(v float64) string {
		if v >= 1e9 {
			return "unbounded"
		}
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return g(perSec) + "/s burst " + g(burst)
}
