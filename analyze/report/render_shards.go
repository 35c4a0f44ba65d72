package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rlbench/rlbench/evidence"
)

// writeShardsTable renders the shards of merged scenarios.
func writeShardsTable(w io.Writer, rep *Report) error {
	var rows [][]any
	for _, s := range rep.Scenarios {
		sh := s.Shards
		if sh == nil {
			continue
		}
		for _, x := range sh.Shards {
			offs := make([]string, 0, len(x.Offsets))
			for _, o := range x.Offsets {
				offs = append(offs, offsetString(o))
			}
			rows = append(rows, []any{s.Name, fmt.Sprintf("%d/%d", x.Index, sh.Count), x.Host, x.Requests,
				time.Unix(0, x.StartNs).UTC().Format("15:04:05.000000"), time.Duration(x.LateNs).String(), strings.Join(offs, "; ")})
		}
		rows = append(rows, []any{s.Name, "all", strconv.Itoa(sh.Hosts) + " host(s)", "", "spread " + time.Duration(sh.StartSpreadNs).String(),
			"max " + time.Duration(sh.MaxLateNs).String(), "widening ±" + time.Duration(sh.OffsetBoundNs).String()})
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nShards:")
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("Scenario", "Shard", "Host", "Requests", "Start (UTC)", "Late", "Clock offset vs backend")
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// offsetString is "replica: -1.2ms..+0.3ms (n pairs)".
func offsetString(o evidence.ClockOffset) string {
	if !o.Bounded {
		return o.Replica + ": unbounded"
	}
	sign := func(ns int64) string {
		if ns >= 0 {
			return "+" + time.Duration(ns).String()
		}
		return time.Duration(ns).String()
	}
	return fmt.Sprintf("%s: %s..%s (%d)", o.Replica, sign(o.MinNs), sign(o.MaxNs), o.Pairs)
}
