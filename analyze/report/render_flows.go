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

// writeFlowTables renders the per-flow and per-key tables and the starved
// findings of the scenarios whose requests name flows.
func writeFlowTables(w io.Writer, rep *Report) error {
	repeats := repeatsByName(rep)
	var fr, kr [][]any
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
			fr = append(fr, []any{name, f.Flow, f.Sent, f.Admitted, pctText(f.AdmittedPct), rateText(f.OfferedPerSec, f.ActiveNs),
				rateText(f.AdmittedPerSec, f.ActiveNs), activeText(f.ActiveNs), model})
		}
		for _, k := range s.Keys {
			adm := strconv.Itoa(k.Admitted)
			if k.Unknown > 0 {
				adm += fmt.Sprintf(" (+%d unknown)", k.Unknown)
			}
			kr = append(kr, []any{name, k.Limiter, k.Bucket, strings.Join(k.Flows, ", "), k.Sent, adm, pctText(k.AdmittedPct),
				rateText(k.AdmittedPerSec, k.ActiveNs), limitText(k.RatePerSec, k.Burst), RangeText(k.Min, k.Max)})
		}
	}
	if len(fr) > 0 {
		fmt.Fprintln(w, "\nFlows:")
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header("Scenario", "Flow", "Sent", "Admitted", "Admitted %", "Offered/s", "Admitted/s", "Active", "Model")
		if err := t.Bulk(fr); err != nil {
			return err
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(kr) > 0 {
		fmt.Fprintln(w, "\nKeys:")
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header("Scenario", "Limiter", "Bucket", "Flows", "Sent", "Admitted", "Admitted %", "Admitted/s", "Limit", "Model")
		if err := t.Bulk(kr); err != nil {
			return err
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	for _, s := range rep.Scenarios {
		for _, st := range s.Starved {
			fmt.Fprintf(w, "%s: starved: %s\n", scenarioLabel(s, repeats), st)
		}
	}
	return nil
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
