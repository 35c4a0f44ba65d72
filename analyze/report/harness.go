package report

import (
	"fmt"
	"strings"
	"time"
)

// HarnessReport is what rlbench measured of its own timing while a scenario
// ran, shown beside its verdict: how the clients sent (the burst's spread,
// the pacing error against the intended schedule), how late the limiters saw
// the requests by their own clocks (the lab proxies' and Envoy's access log
// %START_TIME%, nginx's $msec - $request_time) and, where the runner probed
// the host (evidence.Harness), how long the host stalled, its steal time and
// load. A check whose premise this lateness broke is inconclusive (NOT_RUN)
// with these figures, never FAIL. All durations are ns.
type HarnessReport struct {
	// Parts are the parts rlbench ran itself (evidence.Scenario.HarnessParts).
	Parts []string `json:"parts,omitempty"`
	// BurstSpreadNs is the clients' send spread of an unpaced attack's burst
	// (attack.json burst.spread_ns; the largest over flows; for sender
	// processes released together, their send window over all of them); 0
	// when paced.
	BurstSpreadNs int64 `json:"burst_spread_ns,omitempty"`
	// PacingErrorP99Ns and PacingErrorMaxNs are how late paced sends were
	// against their intended times (attack.json pacing.error_ns).
	PacingErrorP99Ns int64 `json:"pacing_error_p99_ns,omitempty"`
	PacingErrorMaxNs int64 `json:"pacing_error_max_ns,omitempty"`
	// Seen counts the requests whose limiter times come from the limiter's
	// own log; SeenSources names those logs ("access log", "nginx log").
	Seen        int      `json:"seen"`
	SeenSources []string `json:"seen_sources,omitempty"`
	// SeenSpreadNs is the spread, first to last, of the requests as the
	// limiters saw them (0 when paced or not seen).
	SeenSpreadNs int64 `json:"seen_spread_ns,omitempty"`
	// SeenSpreadMaxNs is the most those requests can have been apart where
	// the limiters' logs record them to the ms (nginx, HAProxy): up to 1 ms
	// more than SeenSpreadNs, the records' difference. It is the width
	// expect.landed_within judges; 0 when it is SeenSpreadNs.
	SeenSpreadMaxNs int64 `json:"seen_spread_max_ns,omitempty"`
	// ReadLag*Ns are the limiter's time of a request minus the client's
	// send time, over the requests seen: the queueing in between.
	ReadLagP50Ns int64 `json:"read_lag_p50_ns,omitempty"`
	ReadLagP99Ns int64 `json:"read_lag_p99_ns,omitempty"`
	ReadLagMaxNs int64 `json:"read_lag_max_ns,omitempty"`
	// Inconsistent counts the limiter times outside their request's
	// [send, response] (another clock): those requests keep the clients'
	// times.
	Inconsistent int `json:"inconsistent,omitempty"`
	// Probed is true when the runner probed the host (harness.json).
	Probed bool `json:"probed"`
	// StallMaxNs and StallP99Ns are the host probe's latest and 99th
	// percentile wake-up lateness (evidence.HarnessProbe).
	StallMaxNs int64 `json:"stall_max_ns,omitempty"`
	StallP99Ns int64 `json:"stall_p99_ns,omitempty"`
	// StealPercent is the hypervisor's steal time over the scenario, percent
	// of all CPUs' time; -1 unknown.
	StealPercent float64 `json:"steal_percent"`
	// Load1 is the 1-minute load average at the scenario's end; -1 unknown.
	Load1 float64 `json:"load1"`
}

// String renders the report in one line for tables and reasons: "burst sent
// over 12ms, seen by the limiters over 510ms (read lag p50 4ms, max 480ms);
// host stall max 85ms, steal 0.0%, load 16.3".
func (h *HarnessReport) String() string {
	if h == nil {
		return ""
	}
	var parts []string
	d := func(ns int64) string { return time.Duration(ns).Round(100 * time.Microsecond).String() }
	seen := d(h.SeenSpreadNs)
	if h.SeenSpreadMaxNs > h.SeenSpreadNs {
		seen = fmt.Sprintf("at most %s (records %s apart, 1 ms resolution)", d(h.SeenSpreadMaxNs), d(h.SeenSpreadNs))
	}
	switch {
	case h.BurstSpreadNs > 0 && (h.SeenSpreadNs > 0 || h.SeenSpreadMaxNs > 0):
		parts = append(parts, fmt.Sprintf("burst sent over %s, seen by the limiters over %s", d(h.BurstSpreadNs), seen))
	case h.BurstSpreadNs > 0:
		parts = append(parts, "burst sent over "+d(h.BurstSpreadNs))
	case h.SeenSpreadNs > 0 || h.SeenSpreadMaxNs > 0:
		parts = append(parts, "seen by the limiters over "+seen)
	case h.PacingErrorMaxNs > 0:
		parts = append(parts, fmt.Sprintf("pacing error p99 %s, max %s", d(h.PacingErrorP99Ns), d(h.PacingErrorMaxNs)))
	}
	if h.Seen > 0 {
		parts = append(parts, fmt.Sprintf("limiters' read lag p50 %s, p99 %s, max %s (%d requests, %s)", d(h.ReadLagP50Ns), d(h.ReadLagP99Ns),
			d(h.ReadLagMaxNs), h.Seen, strings.Join(h.SeenSources, ", ")))
	}
	if h.Probed {
		host := "host stall max " + d(h.StallMaxNs) + ", p99 " + d(h.StallP99Ns)
		if h.StealPercent >= 0 {
			host += fmt.Sprintf(", steal %.1f%%", h.StealPercent)
		}
		if h.Load1 >= 0 {
			host += fmt.Sprintf(", load %.1f", h.Load1)
		}
		parts = append(parts, host)
	}
	return strings.Join(parts, "; ")
}
