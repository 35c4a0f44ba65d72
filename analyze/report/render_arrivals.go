package report

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
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
		add := func(of string, st ArrivalStats) {
			if st.Count == 0 && of != "receipts" {
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
		add("receipts", a.Receipts)
		add("admissions (clients)", a.Admissions)
		for _, t := range a.Targets {
			add("receipts via "+t.Target, t.Receipts)
		}
		for _, e := range a.Endpoints {
			add("receipts at "+e.Endpoint, e.Receipts)
		}
		for _, f := range a.Forwards {
			add("forwards by "+f.Target+" (its own clock)", f.Forwards)
		}
		for _, e := range a.Expected {
			row := []string{name, "model: " + e.Model, ""}
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

// writeArrivalsTable renders the backend arrivals and, when any scenario
// has them, the amplification of retries.
func writeArrivalsTable(w io.Writer, rep *Report) error {
	if rows := arrivalRows(rep); len(rows) > 0 {
		fmt.Fprintln(w, "\nBackend arrivals (sliding-window peaks with the instant rate, inter-arrival gaps):")
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header(arrivalHeader())
		if err := t.Bulk(rows); err != nil {
			return err
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if rows := amplificationRows(rep); len(rows) > 0 {
		fmt.Fprintln(w, "\nUpstream attempts per request that passed the limiter:")
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header("Scenario", "Requests", "Passed", "Attempts", "Factor", "Max", "Proxy retries", "Client re-sends")
		if err := t.Bulk(rows); err != nil {
			return err
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	return nil
}
