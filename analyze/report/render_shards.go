package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// shardsTable is the shards of merged scenarios.
func shardsTable(rep *Report) *textTable {
	t := &textTable{title: "Shards", cols: []column{
		{head: "Scenario", trunc: 12}, {head: "Shard"}, {head: "Host", trunc: 12}, {head: "Requests"}, {head: "Start (UTC)", drop: 1},
		{head: "Late"}, {head: "Clock offset vs backend", short: "Clock offset", trunc: 16},
	}}
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
			t.rows = append(t.rows, []string{s.Name, fmt.Sprintf("%d/%d", x.Index, sh.Count), x.Host, strconv.Itoa(x.Requests),
				time.Unix(0, x.StartNs).UTC().Format("15:04:05.000000"), time.Duration(x.LateNs).String(), strings.Join(offs, "; ")})
		}
		hosts := strconv.Itoa(sh.Hosts) + " host(s)"
		if sh.Clocks > 0 && sh.Clocks != sh.Hosts {
			hosts += ", " + strconv.Itoa(sh.Clocks) + " clock(s)"
		}
		t.rows = append(t.rows, []string{s.Name, "all", hosts, "", "spread " + time.Duration(sh.StartSpreadNs).String(),
			"max " + time.Duration(sh.MaxLateNs).String(), "widening ±" + time.Duration(sh.OffsetBoundNs).String()})
	}
	return t
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
