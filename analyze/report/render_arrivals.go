package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// humanRate formats a rate per second: "950/s", "20.1k/s", "1.2M/s".
func humanRate(r float64) string {
	switch {
	case r >= 1e6:
		return strconv.FormatFloat(r/1e6, 'f', 1, 64) + "M/s"
	case r >= 1e4:
		return strconv.FormatFloat(r/1e3, 'f', 1, 64) + "k/s"
	}
	return strconv.FormatFloat(r, 'f', 0, 64) + "/s"
}

// arrivalRows are the rows of the backend arrivals table: per scenario the
// receipts, the clients' admissions, per target and endpoint, and each
// limiter's prediction ("simulated ≤ bound"), for ArrivalWindows.
func arrivalRows(rep *Report) [][]string {
	repeats := repeatsByName(rep)
	var rows [][]string
	for _, s := range rep.Scenarios {
		a := s.Arrivals
		if a == nil {
			continue
		}
		name := scenarioLabel(s, repeats)
		// add adds a row for st; without arrivals only when keep (all
		// receipts, and a sender whose requests the limiter's logs time:
		// one it rejected every request of still has its widths).
		add := func(of string, st ArrivalStats, keep bool) {
			if st.Count == 0 && !keep {
				return
			}
			row := []string{name, of, strconv.Itoa(st.Count)}
			for _, w := range ArrivalWindows {
				p, _ := st.PeakOf(w)
				row = append(row, fmt.Sprintf("%d (%s)", p.Peak, humanRate(p.RatePerSec)))
			}
			g := st.InterArrival
			if g.Count == 0 {
				row = append(row, "-", "-", "-")
			} else {
				row = append(row, HumanNs(g.MinNs), HumanNs(g.P50Ns), HumanNs(g.P99Ns))
			}
			rows = append(rows, row)
		}
		add("receipts", a.Receipts, true)
		add("admissions (clients)", a.Admissions, false)
		for _, t := range a.Targets {
			add("receipts via "+t.Target, t.Receipts, false)
		}
		for _, e := range a.Endpoints {
			add("receipts at "+e.Endpoint, e.Receipts, false)
		}
		for _, f := range a.Forwards {
			add("forwards by "+f.Target+" (its own clock)", f.Forwards, false)
		}
		for _, sd := range a.Senders {
			of := fmt.Sprintf("sender %d: sent %s, landed %s", sd.Shard, HumanNs(sd.SendWidthNs), HumanNs(sd.LandedWidthNs))
			if sd.AtLimiter > 0 {
				of = fmt.Sprintf("sender %d: sent %s, at the limiter %s (%d), receipts %s", sd.Shard, HumanNs(sd.SendWidthNs),
					HumanNs(sd.LimiterWidthNs), sd.AtLimiter, HumanNs(sd.LandedWidthNs))
			}
			if sd.Phase != "" {
				of = sd.Phase + " " + of
			}
			add(of, sd.Receipts, sd.AtLimiter > 0)
		}
		for _, e := range dedupeExpected(a.Expected, s.Targets) {
			row := []string{name, e.label, ""}
			for _, w := range ArrivalWindows {
				cell := "-"
				for _, x := range e.Windows {
					if x.WindowNs == int64(w) {
						cell = fmt.Sprintf("%d ≤ %d", x.Simulated, x.Bound)
					}
				}
				row = append(row, cell)
			}
			rows = append(rows, append(row, "", "", ""))
		}
	}
	return rows
}

// arrivalHeader is the header of the backend arrivals table.
func arrivalHeader() []string {
	h := []string{"Scenario", "Arrivals", "Count"}
	for _, w := range ArrivalWindows {
		h = append(h, "Peak/"+w.String())
	}
	return append(h, "Gap min", "Gap p50", "Gap p99")
}

// amplificationRows are the rows of the retries table.
func amplificationRows(rep *Report) [][]string {
	repeats := repeatsByName(rep)
	var rows [][]string
	for _, s := range rep.Scenarios {
		a := s.Amplification
		if a == nil {
			continue
		}
		name := scenarioLabel(s, repeats)
		rows = append(rows, []string{name, "all", strconv.Itoa(a.Passed), strconv.Itoa(a.Attempts), fmt.Sprintf("%.2f×", a.Factor),
			strconv.Itoa(a.MaxAttempts), strconv.Itoa(a.ProxyRetries), strconv.Itoa(a.ClientResends)})
		for _, w := range a.Windows {
			label := w.Name
			if w.EndNs > w.BeginNs {
				label += " (" + time.Duration(w.EndNs-w.BeginNs).Round(time.Millisecond).String() + ")"
			}
			rows = append(rows, []string{name, label, strconv.Itoa(w.Passed), strconv.Itoa(w.Attempts), fmt.Sprintf("%.2f×", w.Factor), "", "", ""})
		}
	}
	return rows
}

// arrivalsTable is the backend arrivals table (a detail section).
func arrivalsTable(rep *Report) *textTable {
	// The gaps and the longest window go before the names are cut: a
	// model's label says which proxies it stands for.
	t := &textTable{title: "Backend arrivals (sliding-window peaks with the instant rate, inter-arrival gaps)", rows: arrivalRows(rep), dropFirst: true}
	for i, h := range arrivalHeader() {
		c := column{head: h}
		switch {
		case i == 0:
			c.trunc = 12
		case i == 1:
			c.trunc = 24
		case h == "Gap min":
			c.drop = 5
		case h == "Gap p99":
			c.drop = 4
		case h == "Gap p50":
			c.drop = 3
		case i == len(ArrivalWindows)+2: // the longest window
			c.drop = 2
		case i == 2: // Count
			c.drop = 1
		}
		t.cols = append(t.cols, c)
	}
	return t
}

// amplificationTable is the retries table.
func amplificationTable(rep *Report) *textTable {
	return &textTable{title: "Upstream attempts per request that passed the limiter", cols: []column{
		{head: "Scenario", trunc: 12}, {head: "Requests", trunc: 12}, {head: "Passed"}, {head: "Attempts"}, {head: "Factor"}, {head: "Max"},
		{head: "Proxy retries", short: "Retries"}, {head: "Client re-sends", short: "Re-sends"},
	}, rows: amplificationRows(rep)}
}

// expectedRow is a row of limiter predictions in the arrivals table: one
// ExpectedPeaks, or several identical ones (the same model and figures on
// each proxy) under one label.
type expectedRow struct {
	label   string
	Windows []ExpectedWindow
}

// dedupeExpected gives one row per distinct prediction of es: limiters
// with the same model and the same figures, each on its own targets (a
// per-proxy bucket declared on every proxy), make one row labelled
// "model per proxy (all proxies): <model>" when they cover every one of
// targets, else naming theirs; a prediction of its own keeps
// "model: <model>".
func dedupeExpected(es []ExpectedPeaks, targets []TargetReport) []expectedRow {
	key := func(e ExpectedPeaks) string { return fmt.Sprintf("%s\x00%v", e.Model, e.Windows) }
	groups := map[string][]ExpectedPeaks{}
	var order []string
	for _, e := range es {
		k := key(e)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	out := make([]expectedRow, 0, len(order))
	for _, k := range order {
		g := groups[k]
		if len(g) == 1 {
			out = append(out, expectedRow{label: "model: " + g[0].Model, Windows: g[0].Windows})
			continue
		}
		var on []string
		seen := map[string]bool{}
		for _, e := range g {
			for _, t := range e.Targets {
				if !seen[t] {
					seen[t] = true
					on = append(on, t)
				}
			}
		}
		all := len(targets) > 0
		for _, t := range targets {
			all = all && seen[t.Target]
		}
		who := strings.Join(on, ", ")
		switch {
		case all:
			who = "all proxies"
		case len(on) == 0:
			who = strconv.Itoa(len(g)) + " limiters"
		}
		out = append(out, expectedRow{label: "model per proxy (" + who + "): " + g[0].Model, Windows: g[0].Windows})
	}
	return out
}
